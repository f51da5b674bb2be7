"""Translate between a BOLTed binary's addresses and its input functions, through BAT.

Specification: ``shared/specs/bolt-bat.md`` §3 (semantics), §3.2 (BOLT's ``translate``), §3.5
(input addresses need the input binary's symbols) and §6.1 (fragment symbols).

BAT knows fragments only by their start address; their names and sizes come from the output's
ELF symbols (``foo``, ``foo.cold.N``, ``foo.warm``, ``foo.cold``), as perf2bolt finds them.
Decoding is done once per :class:`~unsplit.binary.Binary` and cached.
"""

from __future__ import annotations

import re
import weakref
from bisect import bisect_right
from dataclasses import dataclass
from typing import NamedTuple

from .binary import Binary
from .formats import bat
from .model import HOT

# BOLT names split fragments <name>.cold.<k>, <name>.warm, <name>.cold (spec §6.1); perf2bolt
# recognizes them with this very pattern (spec §5.2).
FRAGMENT_SUFFIX = re.compile(r"^(?P<base>.*)\.(?P<tag>(?:cold|warm)(?:\.[0-9]+)?)$")

_BINDING_RANK = {"STB_GLOBAL": 0, "STB_WEAK": 1, "STB_LOCAL": 2}
_BINDINGS = {0: "STB_LOCAL", 1: "STB_GLOBAL", 2: "STB_WEAK"}
_STT_FUNC = 2


@dataclass(frozen=True, slots=True)
class FragmentInfo:
    """One BOLT fragment in the output: where it is, what BAT and the symbols call it."""

    procedure: str
    name: str  # "hot", "cold.0", "warm", "cold"
    start: int
    end: int
    symbol: str | None
    parent: int  # output address of the main (hot) fragment


@dataclass(frozen=True, slots=True)
class Translation:
    """What BAT says about one output address (spec §3.2)."""

    address: int  # output file address asked about
    procedure: str  # input function name
    fragment: str  # "hot", "warm", "cold", "cold.N"
    fragment_symbol: str | None
    fragment_start: int
    input_offset: int  # offset in the input function, BOLT's rule (non-branch mode)
    is_branch: bool  # the anchor entry is a branch/call entry (else a basic-block entry)
    exact: bool  # the address is the anchor entry itself
    anchor_output: int  # output address of the anchor entry
    bb_index: int | None  # input block index of the nearest preceding BB entry, if encoded
    parent_address: int  # output address of the main fragment


@dataclass(frozen=True, slots=True)
class OutputSite:
    """One output address that input code came to live at."""

    address: int
    fragment: str
    fragment_symbol: str | None
    exact: bool  # an entry starts here (a block or branch start), not an interpolation


@dataclass(frozen=True, slots=True)
class Placement:
    """Where input function + offset went (several sites when BOLT duplicated code)."""

    procedure: str
    input_offset: int
    sites: tuple[OutputSite, ...]
    deleted: bool  # BAT records the block as deleted (spec §2.3 deleted-block entries)

    def describe(self) -> str:
        if self.sites:
            return ", ".join(f"{s.address:#x} [{s.fragment}]" for s in self.sites)
        if self.deleted:
            return f"{self.procedure}+{self.input_offset:#x}: block deleted by BOLT"
        return f"{self.procedure}+{self.input_offset:#x}: not present in the output"


class BatIndex:
    """BAT of one binary joined with its symbols: fragments, names, both directions."""

    def __init__(self, binary: Binary, table: bat.BatTable) -> None:
        self.binary = binary
        self.table = table
        by_address = _function_symbols(binary)
        self.fragments: dict[int, FragmentInfo] = {}
        self.procedures: dict[str, int] = {}  # input function name -> main fragment address
        names: dict[int, str] = {}
        for addr in table.hot:
            name = _procedure_name(by_address.get(addr, []), addr)
            names[addr] = name
            self.procedures.setdefault(name, addr)
        limits = _limits(binary, table)
        for addr, m in table.maps.items():
            parent = addr if m.parent is None else m.parent
            proc = names[parent]
            syms = by_address.get(addr, [])
            if m.parent is None:
                frag, symbol = HOT, next((s for s in syms if s.name == proc), None)
            else:
                frag, symbol = _fragment_name(syms, proc, addr, table)
            size = symbol.size if symbol is not None and symbol.size else 0
            end = addr + size if size else limits[addr]
            self.fragments[addr] = FragmentInfo(
                proc, frag, addr, end, None if symbol is None else symbol.name, parent
            )

    # -- output -> input ---------------------------------------------------------------------

    def fragment_at(self, address: int) -> FragmentInfo | None:
        m = self.table.map_before(address)
        if m is None:
            return None
        frag = self.fragments[m.address]
        return frag if address < frag.end else None

    def translate(self, address: int) -> Translation | None:
        """Output file address -> input function and offset, or None outside BAT's fragments.

        None also for lite-mode functions BOLT left alone: their code is unchanged (spec §3.5).
        """
        frag = self.fragment_at(address)
        if frag is None:
            return None
        m = self.table.maps[frag.start]
        off = address - frag.start
        i = m.anchor(off)
        if i is None:
            # Code before the first entry: BOLT returns the offset unchanged (§3.2).
            return Translation(
                address, frag.procedure, frag.name, frag.symbol, frag.start, off, False, False,
                frag.start, None, frag.parent,
            )  # fmt: skip
        out = m.output_offsets[i]
        value = m.input_values[i]
        bb_index = None
        if m.bb_present:
            j = i
            while j >= 0 and m.input_values[j] & bat.BRANCHENTRY:
                j -= 1
            bb_index = int(m.bb_indices[j]) if j >= 0 else None
        return Translation(
            address=address,
            procedure=frag.procedure,
            fragment=frag.name,
            fragment_symbol=frag.symbol,
            fragment_start=frag.start,
            input_offset=int(off - out + (value >> 1)),
            is_branch=bool(value & bat.BRANCHENTRY),
            exact=off == out,
            anchor_output=frag.start + out,
            bb_index=bb_index,
            parent_address=frag.parent,
        )

    # -- input -> output ---------------------------------------------------------------------

    def fragments_of(self, procedure: str) -> list[FragmentInfo]:
        """The fragments of ``procedure`` (the first of that name), main fragment first."""
        hot = self.procedures.get(procedure)
        return [] if hot is None else self.fragments_at(hot)

    def fragments_at(self, hot: int) -> list[FragmentInfo]:
        """The fragments of the input function whose main fragment starts at ``hot``."""
        if hot not in self.fragments:
            return []
        return [self.fragments[a] for a in (hot, *self.table.split_fragments(hot))]

    def placements(self, procedure: str, input_offset: int) -> Placement | None:
        """Every output address input ``procedure + input_offset`` lives at, or None when BAT
        does not know the procedure (not BOLTed, or lite mode left it in place).

        Inverts the §3.2 rule: an entry anchors output bytes up to the next distinct key, and
        input bytes up to the next input offset any entry of the procedure names (a known block
        or branch start belongs to its own entry, not to an extrapolation).
        """
        frags = self.fragments_of(procedure)
        if not frags:
            return None
        maps = [self.table.maps[f.start] for f in frags]
        bounds = sorted({v >> 1 for m in maps for v in m.input_values})
        sites: list[OutputSite] = []
        deleted = False
        for frag, m in zip(frags, maps, strict=True):
            size = frag.end - frag.start
            outs, values, n = m.output_offsets, m.input_values, len(m)
            for i in range(n):
                if i + 1 < n and outs[i + 1] == outs[i]:
                    continue  # only the last of equal keys is ever an anchor
                lo = values[i] >> 1
                if outs[i] >= size:
                    continue
                out_next = outs[i + 1] if i + 1 < n else size
                hi = lo + out_next - outs[i]
                k = bisect_right(bounds, lo)
                if k < len(bounds):
                    hi = min(hi, bounds[k])
                if lo <= input_offset < hi:
                    sites.append(
                        OutputSite(
                            frag.start + outs[i] + input_offset - lo,
                            frag.name,
                            frag.symbol,
                            input_offset == lo,
                        )
                    )
            # Entries keyed at the main fragment's end stand for deleted input blocks (§2.3).
            for i in range(n):
                if outs[i] >= size and values[i] >> 1 == input_offset:
                    deleted = True
        sites.sort(key=lambda s: s.address)
        return Placement(procedure, input_offset, tuple(sites), deleted and not sites)

    def input_function_names(self) -> list[str]:
        """Names of every input function BAT has a map for (the pre-BOLT check uses them)."""
        return list(self.procedures)


# --------------------------------------------------------------------------------------------
# Loading and caching


_CACHE: weakref.WeakKeyDictionary[Binary, BatIndex | None] = weakref.WeakKeyDictionary()


def has_bat(binary: Binary) -> bool:
    return binary.section(bat.SECTION) is not None


def load(binary: Binary) -> BatIndex | None:
    """The BAT index of ``binary`` (None without ``.note.bolt_bat``); raises DecodeError once
    per call on a malformed note, and caches the good ones."""
    if binary in _CACHE:
        return _CACHE[binary]
    data = binary.section_data(bat.SECTION)
    index = None if data is None else BatIndex(binary, bat.decode_note(data))
    _CACHE[binary] = index
    return index


def translate(binary: Binary, address: int) -> Translation | None:
    index = load(binary)
    return None if index is None else index.translate(address)


def placements(binary: Binary, procedure: str, input_offset: int) -> Placement | None:
    index = load(binary)
    return None if index is None else index.placements(procedure, input_offset)


# --------------------------------------------------------------------------------------------
# Symbols


def _function_symbols(binary: Binary) -> dict[int, list[_Sym]]:
    out: dict[int, list[_Sym]] = {}
    table = ".symtab" if binary.section(".symtab") is not None else ".dynsym"
    for sym in binary.symbol_entries(table):
        if sym.type == _STT_FUNC and sym.defined:
            entry = _Sym(sym.name, sym.size, _BINDINGS.get(sym.bind, str(sym.bind)))
            out.setdefault(sym.value, []).append(entry)
    return out


class _Sym(NamedTuple):
    name: str
    size: int
    binding: str


def _procedure_name(syms: list[_Sym], address: int) -> str:
    """The main fragment keeps the input function's symbol (spec §6.1); ICF aliases
    (``.icf.0``) and fragment-looking names are the last choice."""
    if not syms:
        return f"{address:#x}"

    def rank(s: _Sym) -> tuple[int, int, int, int, str]:
        return (
            ".icf." in s.name,
            FRAGMENT_SUFFIX.match(s.name) is not None,
            s.size == 0,
            _BINDING_RANK.get(s.binding, 3),
            s.name,
        )

    return min(syms, key=rank).name


def _fragment_name(
    syms: list[_Sym], procedure: str, address: int, table: bat.BatTable
) -> tuple[str, _Sym | None]:
    for s in syms:
        m = FRAGMENT_SUFFIX.match(s.name)
        if m and m.group("base") == procedure:
            return m.group("tag"), s
    # No symbol (stripped symtab): number the split fragments in address order.
    parent = table.parent_of(address)
    siblings = table.split_fragments(parent if parent is not None else address)
    return f"cold.{siblings.index(address)}", None


def _limits(binary: Binary, table: bat.BatTable) -> dict[int, int]:
    """Fallback end of each fragment without a sized symbol: the next fragment or section end."""
    ranges = binary.text_address_ranges()
    addrs = list(table.maps)
    out: dict[int, int] = {}
    for i, a in enumerate(addrs):
        end = addrs[i + 1] if i + 1 < len(addrs) else a
        for lo, hi in ranges:
            if lo <= a < hi:
                end = min(end, hi) if i + 1 < len(addrs) else hi
                break
        out[a] = max(end, a)
    return out
