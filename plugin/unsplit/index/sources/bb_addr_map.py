"""Fragments and blocks from LLVM basic-block address maps (``.llvm_bb_addr_map``;
shared/specs/llvm-bb-addr-map.md §1.2, §1.3, §6, §7), decoded by
:mod:`unsplit.formats.bb_addr_map`: this module finds the sections, their relocations and
symbols. A map BOLT copied from its input (linked to ``.bolt.org.text``) is skipped."""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left
from collections import defaultdict
from typing import TYPE_CHECKING, Any, NamedTuple

from unsplit.elf.binary import Binary
from unsplit.errors import DecodeError, reading
from unsplit.formats import section_ids
from unsplit.index.model.records import HOT, Block, Fragment, Procedure, split_fragment_name
from unsplit.index.sources import BaseSource, has_bb_addr_map

if TYPE_CHECKING:  # the decoder itself only for a file with a map (section_ids says why)
    from unsplit.formats import bb_addr_map as fmt

SOURCE = "bb_addr_map"
_STT_NOTYPE, _STT_FUNC = 0, 2
_SHT_RELA, _SHT_REL = 4, 9
_SHT_CREL = 0x40000014
_BOLT_ORIGINAL_TEXT = ".bolt.org.text"


class FunctionSymbol:
    """An STT_FUNC (or STT_NOTYPE) of .symtab as llvm-readobj sees it (any value, any size)."""

    __slots__ = ("index", "is_func", "name", "shndx", "size", "value")

    def __init__(self, index: int, name: str, value: int, size: int, shndx: int,
                 is_func: bool = True) -> None:
        self.index, self.name, self.value, self.size = index, name, value, size
        self.shndx, self.is_func = shndx, is_func


class MapSection:
    """One bb address map section with what decoding it needs."""

    __slots__ = ("data", "index", "link", "link_name", "name", "relocations", "sh_type",
                 "skip_silently", "target_sections", "unreadable")

    def __init__(self, index: int, name: str, sh_type: int, link: int, link_name: str,
                 data: bytes) -> None:
        self.index, self.name, self.sh_type, self.link = index, name, sh_type, link
        self.link_name, self.data = link_name, data
        # ET_REL: r_offset -> addend, and r_offset -> section index of the relocation's symbol.
        self.relocations: dict[int, int] | None = None
        self.target_sections: dict[int, int] = {}
        # Why LLVM 22 would not decode this section at all (missing or unreadable relocations).
        self.unreadable: str | None = None
        self.skip_silently = False  # readobj-22 prints nothing for it (no relocation section)

    @property
    def description(self) -> str:
        """LLVM's describe(): how readobj names the section in messages."""
        v0 = self.sh_type == section_ids.SHT_LLVM_BB_ADDR_MAP_V0
        kind = "SHT_LLVM_BB_ADDR_MAP_V0" if v0 else "SHT_LLVM_BB_ADDR_MAP"
        return f"{kind} section with index {self.index}"


def map_sections(binary: Binary) -> list[MapSection]:
    """Every bb address map section, in section order, contents decompressed."""
    if not has_bb_addr_map(binary):
        return []  # without making every section (a .gnu.hash is parsed whole)
    elf = binary.elf
    is_rel = elf["e_type"] == "ET_REL"
    out: list[MapSection] = []
    relocs_for: dict[int, list[int]] = defaultdict(list)
    sections = list(elf.iter_sections())
    for i, sec in enumerate(sections):
        if sec["sh_type"] in ("SHT_RELA", "SHT_REL", _SHT_CREL, _SHT_RELA, _SHT_REL):
            relocs_for[sec["sh_info"]].append(i)
    for i, sec in enumerate(sections):
        # pyelftools names the types it knows and leaves LLVM's as plain ints.
        sh_type = sec["sh_type"]
        if not isinstance(sh_type, int) or sh_type not in section_ids.BB_ADDR_MAP_TYPES:
            continue
        link = sec["sh_link"]
        link_name = sections[link].name if 0 < link < len(sections) else ""
        with reading(sec.name, 0, "cannot read section contents"):
            data = bytes(sec.data())  # pyelftools decompresses SHF_COMPRESSED sections
        ms = MapSection(i, sec.name, sh_type, link, link_name, data)
        if is_rel:
            _attach_relocations(binary, ms, [sections[j] for j in relocs_for.get(i, [])])
        out.append(ms)
    return out


def _attach_relocations(binary: Binary, ms: MapSection, relocs: list[object]) -> None:
    if not relocs:
        # readobj warns "unable to get relocation section for ..." and prints nothing.
        ms.unreadable = f"unable to get relocation section for {ms.description}"
        ms.skip_silently = True
        return
    rsec = relocs[-1]  # LLVM's MapVector keeps the last relocation section that targets it
    elf = binary.elf
    sh_type = rsec["sh_type"]  # type: ignore[index]
    rel_index = elf.get_section_index(rsec.name)  # type: ignore[attr-defined]
    wide = elf.elfclass == 64
    endian = "<" if elf.little_endian else ">"
    rela = sh_type in ("SHT_RELA", _SHT_RELA)
    if sh_type in ("SHT_REL", _SHT_REL):
        # LLVM reads SHT_REL as RELA and fails on the entry size; the addend is in place, so
        # archival decoding reads the field itself (relocations=None).
        got, want = (16, 24) if wide else (8, 12)
        ms.unreadable = (f"unable to read relocations for section {ms.description}: section "
                         f"[index {rel_index}] has invalid sh_entsize: expected {want}, "
                         f"but got {got}")
        fmt_s = endian + ("QQ" if wide else "II")
    elif rela:
        fmt_s = endian + ("QQq" if wide else "IIi")
    else:
        ms.unreadable = f"CREL relocations of {ms.description} are not supported"
        return
    data = bytes(rsec.data())  # type: ignore[attr-defined]
    size = struct.calcsize(fmt_s)
    symtab = elf.get_section(rsec["sh_link"])  # type: ignore[index]
    sym_shndx = _symbol_sections(binary, symtab)
    addends: dict[int, int] = {}
    for entry in struct.iter_unpack(fmt_s, data[: len(data) - len(data) % size]):
        r_offset, r_info = entry[0], entry[1]
        sym = r_info >> 32 if wide else r_info >> 8
        if rela:
            addends[r_offset] = entry[2]
        if 0 <= sym < len(sym_shndx):
            ms.target_sections[r_offset] = sym_shndx[sym]
    ms.relocations = addends if rela else None


def _symbol_sections(binary: Binary, symtab: object) -> list[int]:
    """st_shndx of every symbol of `symtab` (by index)."""
    if symtab is None or not hasattr(symtab, "data"):
        return []
    wide = binary.elf.elfclass == 64
    endian = "<" if binary.elf.little_endian else ">"
    fmt_s, at = (endian + "IBBHQQ", 3) if wide else (endian + "IIIBBH", 5)
    data = bytes(symtab.data())
    size = struct.calcsize(fmt_s)
    return [e[at] for e in struct.iter_unpack(fmt_s, data[: len(data) - len(data) % size])]


def function_symbols(binary: Binary) -> dict[int, list[FunctionSymbol]]:
    """Defined STT_FUNC and STT_NOTYPE symbols of the SHT_SYMTAB by value, in table order.

    llvm-readobj's getSymbolIndexesForFunctionAddress searches the STT_FUNC ones (.symtab only,
    any size); STT_NOTYPE ones are kept because clang labels basic-block-section parts with
    them (``foo.__part.1`` is NOTYPE after linking).
    """
    out: dict[int, list[FunctionSymbol]] = defaultdict(list)
    for sym in binary.symbol_entries(".symtab"):
        if sym.type in (_STT_FUNC, _STT_NOTYPE) and sym.defined:
            out[sym.value].append(FunctionSymbol(sym.index, sym.name, sym.value, sym.size,
                                                 sym.shndx, sym.type == _STT_FUNC))
    return out


def _decode_args(binary: Binary, ms: MapSection) -> dict[str, Any]:
    elf = binary.elf
    return {"sh_type": ms.sh_type, "address_size": 8 if elf.elfclass == 64 else 4,
            "little_endian": elf.little_endian, "relocations": ms.relocations}


def decode_section(binary: Binary, ms: MapSection, *, strict: bool) -> fmt.SectionMap:
    from unsplit.formats import bb_addr_map as fmt

    if strict and ms.unreadable is not None:
        err = DecodeError(ms.description, 0, ms.unreadable)
        return fmt.SectionMap(ms.description, (), (), err)
    return fmt.decode(ms.data, ms.description, strict=strict, **_decode_args(binary, ms))


def symbol_at(
    symbols: dict[int, list[FunctionSymbol]], address: int, shndx: int | None,
    *, any_type: bool = False,
) -> FunctionSymbol | None:
    """First STT_FUNC at `address` (in section `shndx` when given, as readobj does).

    With `any_type`, an STT_NOTYPE label does when no STT_FUNC is there.
    """
    fallback = None
    for sym in symbols.get(address, ()):
        if shndx is not None and sym.shndx != shndx:
            continue
        if sym.is_func:
            return sym
        if any_type and fallback is None:
            fallback = sym
    return fallback


class _Singles(NamedTuple):
    """Records of one-range functions that a function symbol starts, by address: the index
    keeps those functions as arrays (ProcedureTable), and their blocks come from here. Three
    numbers per function (start, map section, record offset), no object."""

    starts: array[int]
    sections: array[int]  # index into `maps`
    offsets: array[int]  # the record's byte offset in its section
    maps: list[tuple[MapSection, dict[str, Any]]]  # (section, decoding args), per section


def _procedure(
    fe: fmt.FunctionExtent, ms: MapSection, symbols: dict[int, list[FunctionSymbol]],
    is_rel: bool, args: dict[str, Any],
) -> Procedure:
    def section_of(rng: fmt.RangeExtent, i: int) -> int | None:
        if not is_rel:
            return None
        return ms.target_sections.get(rng.address_offset, ms.link if i == 0 else None)

    entry_sym = symbol_at(symbols, fe.address, section_of(fe.ranges[0], 0))
    name = entry_sym.name if entry_sym is not None else f"func_{fe.address:x}"
    fragments: list[Fragment] = []
    logical = 0
    for i, rng in enumerate(fe.ranges):
        sym = entry_sym if i == 0 else symbol_at(
            symbols, rng.base_address, section_of(rng, i), any_type=True)
        frag_name = HOT if i == 0 else f"range.{i}"
        if i and sym is not None:
            split = split_fragment_name(sym.name)
            if split is not None and split[0] == name:
                frag_name = split[1]
        # Symbol sizes cover ranges whose entries were omitted (OmitBBEntries).
        size = max(rng.end_offset, sym.size if sym is not None else 0)
        fragments.append(Fragment(
            procedure=name, name=frag_name, start=rng.base_address,
            end=rng.base_address + size, symbol=None if sym is None else sym.name,
            logical_start=logical, source=SOURCE,
        ))
        logical += size

    def load_blocks() -> list[Block]:
        from unsplit.formats import bb_addr_map as fmt

        fm = fmt.decode_record(ms.data, fe.offset, ms.description, **args)
        return _blocks(fm) if isinstance(fm, fmt.FunctionMap) else []

    return Procedure(name, fragments, load_blocks=load_blocks)


def _blocks(fm: fmt.FunctionMap) -> list[Block]:
    from unsplit.formats import bb_addr_map as fmt

    pgo = fm.pgo.blocks if fm.pgo is not None else ()
    entry_freq = pgo[0].frequency if pgo else None
    blocks: list[Block] = []
    for k, (rng, e) in enumerate(fm.entries()):
        frequency = None
        successors: tuple[tuple[int, float], ...] = ()
        if k < len(pgo):
            p = pgo[k]
            if p.frequency is not None and entry_freq:
                frequency = p.frequency / entry_freq
            if p.successors:
                successors = tuple(
                    (s.id, s.probability / fmt.PROBABILITY_ONE) for s in p.successors)
        start = rng.base_address + e.offset
        blocks.append(Block(e.id, start, start + e.size, e.flags, frequency, successors))
    return blocks


class BbAddrMapSource(BaseSource):
    """The bb address maps' procedures as a Source: a Procedure per function record of every
    usable map section, but for functions in one range that a function symbol starts, which
    stay a record offset (blocks_at), so that a clang-size map does not make 150k Procedures
    at the index build. The sections are scanned once, on the first question.

    The index needs only each record's ranges: they are scanned (fmt.scan), and a procedure's
    blocks are decoded from its record when first asked for (Procedure.blocks;
    docs/benchmarks.md: bench/bbmap.py).
    """

    name = "bb_addr_map"

    def __init__(self, binary: Binary) -> None:
        super().__init__(binary)
        self._scanned: tuple[list[Procedure], _Singles | None] | None = None

    def procedures(self) -> list[Procedure]:
        return self._scan()[0]

    def blocks_at(self, address: int) -> list[Block] | None:
        """The blocks of the one-range function whose record starts at `address` (None: no
        such record)."""
        singles = self._scan()[1]
        if singles is None:
            return None
        i = bisect_left(singles.starts, address)
        if i == len(singles.starts) or singles.starts[i] != address:
            return None
        from unsplit.formats import bb_addr_map as fmt

        ms, args = singles.maps[singles.sections[i]]
        fm = fmt.decode_record(ms.data, singles.offsets[i], ms.description, **args)
        return _blocks(fm) if isinstance(fm, fmt.FunctionMap) else []

    def _scan(self) -> tuple[list[Procedure], _Singles | None]:
        if self._scanned is None:
            self._scanned = _scan(self.binary)
        return self._scanned


def _scan(binary: Binary) -> tuple[list[Procedure], _Singles | None]:
    """The procedures of the maps of code that runs (not BOLT's ``.bolt.org.text``), and the
    one-range functions they leave to the symbols."""
    sections = [s for s in map_sections(binary) if s.link_name != _BOLT_ORIGINAL_TEXT]
    if not sections:
        return [], None
    from unsplit.formats import bb_addr_map as fmt

    symbols: dict[int, list[FunctionSymbol]] | None = None
    is_rel = binary.elf["e_type"] == "ET_REL"
    plain_starts = set() if is_rel else set(binary.function_columns.values)
    starts, section_of, offsets = array("Q"), array("L"), array("Q")
    maps: list[tuple[MapSection, dict[str, Any]]] = []
    out: list[Procedure] = []
    for ms in sections:
        args = _decode_args(binary, ms)
        maps.append((ms, args))
        for fe in fmt.scan(ms.data, ms.description, **args).functions:
            if not fe.ranges:
                continue
            if len(fe.ranges) == 1 and fe.address in plain_starts:
                starts.append(fe.address)
                section_of.append(len(maps) - 1)
                offsets.append(fe.offset)
                continue
            if symbols is None:
                symbols = function_symbols(binary)
            out.append(_procedure(fe, ms, symbols, is_rel, args))
    order = sorted(range(len(starts)), key=starts.__getitem__)
    return out, _Singles(array("Q", (starts[k] for k in order)),
                         array("L", (section_of[k] for k in order)),
                         array("Q", (offsets[k] for k in order)), maps)
