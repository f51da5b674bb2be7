"""Fragment source for LLVM Machine IR Profile binaries (``__llvm_mipmap``, ``__llvm_mipraw``;
:mod:`unsplit.formats.mip`): each map function's entry part and blocks, plus the sized
split-piece symbols (clang's STT_NOTYPE ``foo.cold``) of map functions, which the symbols
source does not take. It comes after ``symbols``: there the symbols' fragments stay and the
blocks come from here."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING

from unsplit.elf.binary import Binary
from unsplit.errors import DecodeError
from unsplit.formats import section_ids
from unsplit.index.model.records import (
    HOT,
    Block,
    Fragment,
    Procedure,
    fragment_order,
    split_fragment_name,
)
from unsplit.index.sources import BaseSource

if TYPE_CHECKING:  # the decoder itself only for a file with the map (section_ids says why)
    from unsplit.formats import mip as fmt

_STT_NOTYPE, _STT_FUNC, _STT_FILE, _STB_LOCAL = 0, 2, 4, 0


def map_procedures(
    mip: fmt.MipMap,
    raw: fmt.RawProfile | None = None,
    symbol: Callable[[fmt.MipFunction], str | None] | None = None,
) -> list[Procedure]:
    """Model procedures of a decoded map: MIP knows one fragment per function (the part that
    holds its entry), with its blocks, flagged by the raw profile's coverage when it has run.
    `symbol` says which ELF symbol names a function's fragment (default: its map name)."""
    coverage = raw.coverage if raw is not None and raw.ran_at_all else {}
    # Blocks are made on first use: a big map holds millions, and most are never asked for.
    return [
        Procedure(
            f.name,
            [Fragment(f.name, HOT, f.address, f.address + f.size,
                      f.name if symbol is None else symbol(f), 0, "mip")],
            load_blocks=_block_loader(f, coverage.get(f.raw_offset)),
        )
        for f in mip.functions
    ]


def _block_loader(f: fmt.MipFunction, coverage: fmt.Coverage | None
                  ) -> Callable[[], list[Block]]:
    return lambda: [Block(b.id, b.start, b.end, b.flags) for b in f.blocks(coverage)]


Piece = tuple[str, str, int, int]  # (symbol, fragment name, start, size)


def _split_pieces(binary: Binary) -> dict[str, dict[str | None, list[Piece]]]:
    """Sized split-piece symbols (STT_FUNC or STT_NOTYPE) by base name, then by the STT_FILE
    group of a local one (None for a global one)."""
    out: dict[str, dict[str | None, list[Piece]]] = defaultdict(lambda: defaultdict(list))
    file: str | None = None
    for sym in binary.symbol_entries(".symtab"):
        if sym.type == _STT_FILE:
            file = sym.name
            continue
        if sym.type not in (_STT_NOTYPE, _STT_FUNC) or not sym.defined or not sym.size:
            continue
        split = split_fragment_name(sym.name)
        if split is not None:
            where = file if sym.bind == _STB_LOCAL else None
            out[split[0]][where].append((sym.name, split[1], sym.value, sym.size))
    return out


def _moved(hot: Fragment, by_file: dict[str | None, list[Piece]]) -> list[Fragment]:
    """The pieces of `hot`'s procedure outside it, in their original order. Local pieces of
    one base name in several files cannot be told apart by name: none of them is taken."""
    found = list(by_file.get(None, []))
    files = [k for k in by_file if k is not None]
    if len(files) == 1:
        found += by_file[files[0]]
    found = [p for p in found if not hot.start <= p[2] < hot.end]
    found.sort(key=_order)
    out, logical = [], hot.size
    for symbol, piece, start, size in found:
        out.append(Fragment(hot.procedure, piece, start, start + size, symbol, logical,
                            "symbols"))
        logical += size
    return out


def _order(piece: Piece) -> tuple[int, int, int]:
    """The pieces' original order (as the symbols source has it)."""
    return (*fragment_order(piece[1]), piece[2])


class MipSource(BaseSource):
    """The MIP map's procedures (entry parts and their blocks) as a Source."""

    name = "mip"

    def procedures(self) -> list[Procedure]:
        """One Procedure per function of the map ([] without one): its entry part from the map,
        named by the ELF symbol there when it has the map's name, then its moved pieces."""
        binary = self.binary
        data = binary.section_data(section_ids.MIP_SECTION)
        if data is None:
            return []
        from unsplit.formats import mip as fmt

        raw_section = binary.section(fmt.RAW_SECTION)
        if raw_section is None:
            raise DecodeError(
                fmt.SECTION, 0, f"no {fmt.RAW_SECTION} section: its address places the functions"
            )
        mip = fmt.decode(data, raw_section["sh_addr"])
        for f in mip.functions:
            if not 0 <= f.address <= f.address + f.size < 1 << 64:
                raise DecodeError(fmt.SECTION, f.offset,
                                  f"{f.name}: [{f.address:#x}, +{f.size:#x}) is outside the "
                                  "address space: map and raw section disagree")
        raw = fmt.decode_raw(bytes(raw_section.data()), mip)

        def symbol(f: fmt.MipFunction) -> str | None:
            return f.name if binary.function_at(f.name, f.address) is not None else None

        procs = map_procedures(mip, raw, symbol)
        pieces = _split_pieces(binary)
        for proc in procs:
            if proc.name in pieces:
                proc.fragments += _moved(proc.fragments[0], pieces[proc.name])
        return procs
