"""Translate between a BOLTed binary's addresses and its input functions, through BAT.

Specification: ``shared/specs/bolt-bat.md`` §3 (semantics), §3.2 (BOLT's ``translate``), §3.5
(input addresses need the input binary's symbols) and §6.1 (fragment symbols).

BAT knows fragments only by their start address; their names and sizes come from the output's
ELF symbols (``foo``, ``foo.cold.N``, ``foo.warm``, ``foo.cold``), as perf2bolt finds them.
Decoding is done once per :class:`~unsplit.elf.binary.Binary` and cached.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import compress
from operator import eq, not_
from typing import NamedTuple

from unsplit.elf.binary import Binary
from unsplit.elf.cfi_table import table_for
from unsplit.elf.derived import PerFile
from unsplit.formats import bat, bat_scan, nops
from unsplit.index.bolt import scan_ahead
from unsplit.index.model.records import HOT, FragmentName, parse_fragment_name

_BINDING_RANK = {"STB_GLOBAL": 0, "STB_WEAK": 1, "STB_LOCAL": 2}
_BINDINGS = {0: "STB_LOCAL", 1: "STB_GLOBAL", 2: "STB_WEAK"}
_STT_NOTYPE, _STT_FUNC = 0, 2
_SHF_COMPRESSED = 0x800
_SHT_NOBITS = 8
# The gap between a fragment's FDE and the next fragment is judged once per distinct bytes
# when it is at most this long: alignment (of a stripped libLLVM's 168k gaps, 130k are, in
# 111 distinct ones: docs/benchmarks.md); a longer one is matched where it is.
_SHORT_GAP = 64


class FragmentInfo(NamedTuple):
    """One BOLT fragment in the output: where it is, what BAT and the symbols call it."""

    procedure: str
    name: str  # "hot", "cold.0", "warm", "cold"
    start: int
    end: int
    symbol: str | None
    parent: int  # output address of the main (hot) fragment


class Translation(NamedTuple):
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


class OutputSite(NamedTuple):
    """One output address that input code came to live at."""

    address: int
    fragment: str
    fragment_symbol: str | None
    exact: bool  # an entry starts here (a block or branch start), not an interpolation


class Placement(NamedTuple):
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


class FragmentColumns:
    """Every fragment of a BAT table as arrays in address order (BatIndex.all_fragments):
    the k-th fragment starts at ``starts[k]``, ends at ``ends[k]``, belongs to the input
    function whose main fragment starts at ``parents[k]`` (named ``procedures[parent]``), is
    ``kinds[k]`` ("hot", "cold.0", ...; None: a split fragment without a symbol, "cold.N"
    for its place N among its procedure's split fragments by address) and has the symbol
    ``symbols[k]`` (None: none)."""

    __slots__ = ("ends", "kinds", "parents", "procedures", "starts", "symbols")

    def __init__(self, starts: Sequence[int], ends: array[int], parents: Sequence[int],
                 kinds: list[str | None], symbols: list[str | None],
                 procedures: dict[int, str]) -> None:
        self.starts, self.ends, self.parents = starts, ends, parents
        self.kinds, self.symbols, self.procedures = kinds, symbols, procedures


class BatIndex:
    """BAT of one binary joined with its symbols: fragments, names, both directions.

    Nothing is made per map up front: a fragment's name, symbol and end are worked out from the
    table's arrays and the symbol columns when an address in it is asked about, then kept.
    """

    def __init__(self, binary: Binary, table: bat.BatTable,
                 symbol_order: array[int] | None = None) -> None:
        self.binary = binary
        self.table = table
        self._symbols = _SymbolsByAddress(binary, symbol_order)
        self._fragments: dict[int, FragmentInfo] = {}
        self._names: dict[int, str] = {}
        self._procedures: dict[str, int] | None = None
        self._homonyms: dict[str, list[int]] = {}  # a name's main fragments after the first
        self._columns: FragmentColumns | None = None  # all_fragments, made once
        # The last address translated and its answer: a location asks twice (its offset, then
        # BAT's facts), and so does a line question's inserted-jump check.
        self._last: tuple[int, Translation | None] | None = None

    @property
    def procedures(self) -> dict[str, int]:
        """Input function name -> main fragment address (the first of a name), made when a
        name is first looked up."""
        if self._procedures is None:
            self._procedures = {}
            for addr in self.table.hot:
                first = self._procedures.setdefault(self.name_of(addr), addr)
                if first != addr:
                    self._homonyms.setdefault(self.name_of(addr), []).append(addr)
        return self._procedures

    def hots_named(self, name: str) -> list[int]:
        """Every main fragment of that input function name (two units' static functions may
        share one), first as :attr:`procedures` gives it."""
        first = self.procedures.get(name)
        return [] if first is None else [first, *self._homonyms.get(name, ())]

    def symbol_order(self) -> array[int]:
        """The positions of the function symbols it names fragments by, sorted by address
        (for the persistent index to keep)."""
        return self._symbols.order()

    def name_of(self, hot: int) -> str:
        """The input function name of the main fragment at ``hot``."""
        name = self._names.get(hot)
        if name is None:
            name = self._names[hot] = _procedure_name(self._symbols.at(hot), hot)
        return name

    def fragment(self, addr: int, keep: bool = True) -> FragmentInfo | None:
        """The fragment whose map starts at ``addr``, or None (kept for the next question
        unless ``keep`` is False: a walk over every fragment keeps nothing)."""
        info = self._fragments.get(addr)
        if info is not None:
            return info
        parent = self.table.parent_of(addr)
        if parent is None:
            return None
        proc = self.name_of(parent)
        syms = self._symbols.at(addr)
        if parent == addr:
            frag, symbol = HOT, next((s for s in syms if s.name == proc), None)
        else:
            frag, symbol = _fragment_name(syms, proc, addr, self.table)
        size = symbol.size if symbol is not None and symbol.size else 0
        if size and not _in_code(self.binary, addr, addr + size):
            size = 0  # a damaged size (past the section's end, gigabytes): BAT's own limit
        end = addr + size if size else _limit(self.binary, self.table, addr)
        info = FragmentInfo(proc, frag, addr, end, None if symbol is None else symbol.name, parent)
        if keep:
            self._fragments[addr] = info
        return info

    def all_fragments(self) -> FragmentColumns:
        """Every fragment as :meth:`fragment` describes it, in address order, made once in a
        pass over the table and one over the sorted symbols (what a whole-module debug file
        needs: 218k fragments of a BOLTed libLLVM without an object or a search each)."""
        if self._columns is None:
            self._columns = self._all_fragments()
        return self._columns

    def _all_fragments(self) -> FragmentColumns:
        table, symbols = self.table, self._symbols
        starts, parents = table.starts(), table.parents()
        runs = symbols.runs()
        n = len(starts)
        procedures: dict[int, str] = {}
        made: dict[int, list[_Sym]] = {}  # the symbols at each main fragment, read once
        known = self._names
        for addr in compress(starts, map(eq, starts, parents)):  # the main fragments
            found = runs.get(addr)
            if found is None:
                procedures[addr] = known.get(addr) or f"{addr:#x}"
                continue
            syms = made[addr] = symbols.made(found)
            procedures[addr] = known.get(addr) or _procedure_name(syms, addr)
        # Without a sized symbol a fragment runs to the next one's start, or its section's end
        # when that comes first (_limit): the next start for all but the last of a section.
        ends = array("Q", starts[1:])
        ends.append(0)
        last = {n - 1} if n else set()
        for lo, hi in self.binary.text_address_ranges():
            k = bisect_left(starts, hi) - 1
            if k >= 0 and starts[k] >= lo:
                last.add(k)
        for k in last:
            following = starts[k + 1] if k + 1 < n else None
            ends[k] = _unbounded_limit(self.binary, table, starts[k], following)
        sized = bytearray(n)  # 1: the fragment's end is its symbol's size
        kinds: list[str | None] = [HOT if p == a else None
                                   for a, p in zip(starts, parents, strict=True)]
        names: list[str | None] = [None] * n
        for addr, found in runs.items():
            k = bisect_left(starts, addr)
            if k == n or starts[k] != addr:
                continue
            parent = parents[k]
            syms = made.pop(addr) if addr in made else symbols.made(found)
            proc = procedures[parent]
            if parent == addr:
                kind, symbol = HOT, next((s for s in syms if s.name == proc), None)
            else:
                kind, symbol = _fragment_name(syms, proc, addr, table)
            size = symbol.size if symbol is not None and symbol.size else 0
            if size and not _in_code(self.binary, addr, addr + size):
                size = 0  # a damaged size (past the section's end): BAT's own limit, as above
            if size:
                ends[k], sized[k] = addr + size, 1
            kinds[k] = kind
            names[k] = None if symbol is None else symbol.name
        unsized = list(compress(range(n), map(not_, sized)))
        cfi = table_for(self.binary).fde_ends_at(list(map(starts.__getitem__, unsized)))
        _past_fde_ends(self.binary, starts, ends, unsized, cfi)
        return FragmentColumns(starts, ends, parents, kinds, names, procedures)

    def split_procedures(self) -> Iterator[tuple[int, list[FragmentInfo]]]:
        """Each split input function's main fragment and its fragments as :meth:`fragments_at`
        gives them, by main fragment address, from :meth:`all_fragments`' columns (89k split
        functions of a BOLTed libLLVM without a look-up per fragment)."""
        cols = self.all_fragments()
        starts, ends, kinds, symbols = cols.starts, cols.ends, cols.kinds, cols.symbols
        split: dict[int, list[int]] = {}
        for k, (start, parent) in enumerate(zip(starts, cols.parents, strict=True)):
            if start != parent:
                split.setdefault(parent, []).append(k)
        for parent in sorted(split):
            h = bisect_left(starts, parent)
            if h == len(starts) or starts[h] != parent:
                yield parent, []
                continue
            proc = cols.procedures[parent]
            infos = [FragmentInfo(proc, HOT, parent, ends[h], symbols[h], parent)]
            infos += [FragmentInfo(proc, kinds[k] or f"cold.{i}", starts[k], ends[k], symbols[k],
                                   parent) for i, k in enumerate(split[parent])]
            yield parent, infos

    # -- output -> input ---------------------------------------------------------------------

    def fragment_at(self, address: int) -> FragmentInfo | None:
        start = self.table.start_before(address)
        frag = None if start is None else self.fragment(start)
        return frag if frag is not None and address < frag.end else None

    def translate(self, address: int) -> Translation | None:
        """Output file address -> input function and offset, or None outside BAT's fragments.

        None also for lite-mode functions BOLT left alone: their code is unchanged (spec §3.5).
        """
        last = self._last
        if last is not None and last[0] == address:
            return last[1]
        found = self._translate(address)
        self._last = (address, found)
        return found

    def _translate(self, address: int) -> Translation | None:
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

    def fragments_at(self, hot: int, keep: bool = True) -> list[FragmentInfo]:
        """The fragments of the input function whose main fragment starts at ``hot``."""
        if self.table.parent_of(hot) != hot:
            return []
        return [f for a in (hot, *self.table.split_fragments(hot))
                if (f := self.fragment(a, keep)) is not None]

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


def _load(binary: Binary) -> BatIndex | None:
    table = bat_table(binary)
    return None if table is None else BatIndex(binary, table)


_INDEXES = PerFile(_load)


def has_bat(binary: Binary) -> bool:
    return binary.has_section(bat.SECTION)


def load(binary: Binary) -> BatIndex | None:
    """The BAT index of ``binary`` (None without ``.note.bolt_bat``); raises DecodeError once
    per call on a malformed note, and keeps the good ones (on the Binary)."""
    return _INDEXES(binary)


def bat_table(binary: Binary, scan: bat_scan.BatScan | None = None) -> bat.BatTable | None:
    """The BAT of ``binary`` as a lazily decoded table (None without the note). ``scan`` is
    the descriptor's scan when a persistent index already holds it; the descriptor is then
    read from the file a record at a time, as its maps are asked for."""
    if not binary.has_section(bat.SECTION):
        return None
    if scan is not None:
        where = note_descriptor_place(binary)
        if where is not None:
            file_offset, base = where
            return bat_scan.table(scan, lambda off, n: binary.read_at(file_offset + off, n),
                                  base)
    data = binary.section_data(bat.SECTION)
    assert data is not None
    desc, base = bat.note_descriptor(data)
    found = bat_scan.scan(desc, base, scanned=scan_ahead.take(binary))
    if isinstance(found, bat.BatTable):
        return found
    if len(desc) < (64 << 10):  # small: no need to re-read the file for each record
        return bat_scan.table(found, lambda off, n: desc[off: off + n], base)
    return bat_table(binary, found)


def note_descriptor_place(binary: Binary) -> tuple[int, int] | None:
    """(file offset, section offset) of the BAT descriptor, when it can be read from the file
    directly (not compressed); else None."""
    sec = binary.section_header(bat.SECTION)
    if sec is None or sec.flags & _SHF_COMPRESSED or sec.type == _SHT_NOBITS:
        return None
    # The note header alone (spec §1): the descriptor follows the 4-aligned owner name.
    head = binary.read_at(sec.offset, 12)
    if len(head) < 12:
        return None
    namesz, descsz, ntype = struct.unpack("<III", head)
    name = binary.read_at(sec.offset + 12, namesz).rstrip(b"\0")
    base = 12 + ((namesz + 3) & ~3)
    if name != bat.NOTE_OWNER or ntype != bat.NT_BOLT_BAT or base + descsz > sec.size:
        return None  # another note first: read the section whole
    return sec.offset + base, base


def load_with_scan(binary: Binary) -> tuple[BatIndex | None, bat_scan.BatScan | None]:
    """:func:`load`, and the scan behind it (for the persistent index to keep)."""
    index = load(binary)
    maps = None if index is None else index.table.maps
    return index, maps.scan if isinstance(maps, bat_scan.LazyMaps) else None


def load_from_scan(binary: Binary, scan: bat_scan.BatScan,
                   symbol_order: array[int] | None = None) -> BatIndex | None:
    """:func:`load` from a scan the persistent index kept: the note is not read whole
    (``symbol_order``: the function symbols by address, as :meth:`BatIndex.symbol_order`)."""
    if not _INDEXES.known(binary):
        table = bat_table(binary, scan)
        _INDEXES.set(binary, None if table is None else BatIndex(binary, table, symbol_order))
    return _INDEXES(binary)


def translate(binary: Binary, address: int) -> Translation | None:
    index = load(binary)
    return None if index is None else index.translate(address)


def placements(binary: Binary, procedure: str, input_offset: int) -> Placement | None:
    index = load(binary)
    return None if index is None else index.placements(procedure, input_offset)


# --------------------------------------------------------------------------------------------
# Symbols


class _SymbolsByAddress:
    """The defined STT_FUNC symbols of .symtab (else .dynsym) at an address, from the symbol
    columns. The first few questions search the values array in C; after that a sorted index
    is made once (a bt of 20 frames asks ~70)."""

    _SEARCHES_BEFORE_SORTING = 16

    def __init__(self, binary: Binary, order: array[int] | None = None) -> None:
        table = ".symtab" if binary.has_section(".symtab") else ".dynsym"
        self._cols = binary.symbol_columns(table)
        self._searches = 0
        self._order: array[int] | None = None
        self._values = array("Q")
        if order is not None and (not order or max(order) < len(self._cols)):
            self._sort(order)

    def order(self) -> array[int]:
        if self._order is None:
            values = self._cols.values
            self._sort(array("L", sorted(range(len(values)), key=values.__getitem__)))
        assert self._order is not None
        return self._order

    def _sort(self, order: array[int]) -> None:
        self._order = order
        self._values = array("Q", map(self._cols.values.__getitem__, order))

    def at(self, address: int) -> list[_Sym]:
        """The symbols at ``address``, in table order."""
        return self.made(self._positions(address))

    def made(self, positions: Iterable[int]) -> list[_Sym]:
        """The defined function symbols among table ``positions`` (in the order given); where
        there is none, the STT_NOTYPE labels: BAT has a function there, and code written in
        assembly without `.type` (zstd's Huffman loops) has only a label to name it."""
        cols = self._cols
        defined = [i for i in positions if cols.shndx[i]
                   and cols.values[i] + cols.sizes[i] < 1 << 64]  # else damaged, as functions()
        picked = [i for i in defined if cols.infos[i] & 0xF == _STT_FUNC] or [
            i for i in defined if cols.infos[i] & 0xF == _STT_NOTYPE
            and not cols.name(i).startswith(("$", ".L"))]  # mapping symbols, local labels
        return [_Sym(cols.name(i), cols.sizes[i], _BINDINGS.get(cols.infos[i] >> 4,
                                                                str(cols.infos[i] >> 4)))
                for i in picked]

    def runs(self) -> dict[int, array[int]]:
        """Each symbol value and the table positions of its symbols, in table order (what
        :meth:`at` gives for every address at once)."""
        order = self.order()
        out: dict[int, array[int]] = {}
        values = self._values
        k, n = 0, len(values)
        while k < n:
            value, j = values[k], k + 1
            while j < n and values[j] == value:
                j += 1
            out[value] = order[k:j]
            k = j
        return out

    def _positions(self, address: int) -> list[int]:
        values = self._cols.values
        if self._order is None and self._searches < self._SEARCHES_BEFORE_SORTING:
            self._searches += 1
            out: list[int] = []
            i = -1
            while True:
                try:
                    i = values.index(address, i + 1)
                except ValueError:
                    return out
                out.append(i)
        order = self.order()
        lo, hi = bisect_left(self._values, address), bisect_right(self._values, address)
        return sorted(order[lo:hi])


class _Sym(NamedTuple):
    name: str
    size: int
    binding: str


def _procedure_name(syms: list[_Sym], address: int) -> str:
    """The main fragment keeps the input function's symbol (spec §6.1); ICF aliases
    (``.icf.0``) and fragment-looking names are the last choice."""
    if not syms:
        return f"{address:#x}"
    if len(syms) == 1:
        return syms[0].name

    def rank(s: _Sym) -> tuple[int, int, int, int, str]:
        return (
            ".icf." in s.name,
            _bolt_fragment(s.name) is not None,
            s.size == 0,
            _BINDING_RANK.get(s.binding, 3),
            s.name,
        )

    return min(syms, key=rank).name


def _bolt_fragment(symbol: str) -> FragmentName | None:
    """A fragment name BOLT gives (<name>.cold.<k>, <name>.warm, <name>.cold: spec §6.1, the
    names perf2bolt recognizes, §5.2); clang's ``.__part.N`` is an input function's name."""
    m = parse_fragment_name(symbol)
    return m if m is not None and m.kind != "part" else None


def _fragment_name(
    syms: list[_Sym], procedure: str, address: int, table: bat.BatTable
) -> tuple[str, _Sym | None]:
    for s in syms:
        m = _bolt_fragment(s.name)
        if m is not None and m.base == procedure:
            return m.tag, s
    # No symbol (stripped symtab): number the split fragments in address order.
    parent = table.parent_of(address)
    siblings = table.split_fragments(parent if parent is not None else address)
    return f"cold.{siblings.index(address)}", None


def _past_fde_ends(binary: Binary, starts: Sequence[int], ends: array[int],
                   unsized: list[int], fde_ends: list[int | None]) -> None:
    """``ends[k]`` of each fragment ``unsized[k]`` (no sized symbol) as :func:`_limit` gives
    it: where its FDE ends and the padding after that, when before the next fragment. A
    short gap's padding is judged once per distinct bytes, the code read a window at a
    time (168k gaps of a stripped libLLVM in 111 distinct runs of bytes)."""
    code, machine = binary.code_window(), binary.machine
    padded: dict[bytes, int] = {}  # a short gap's bytes -> its padding's size
    data, low, high = b"", 0, 0  # the window: file addresses [low, high) are data[:]
    for k, fde_end in zip(unsized, fde_ends, strict=True):
        if fde_end is None:
            continue
        end = ends[k]
        if not starts[k] < fde_end < end:  # _limit's rule
            continue
        if end - fde_end > _SHORT_GAP:
            window, pos, stop = code.at(fde_end, end - fde_end)
            ends[k] = fde_end + nops.padding_end(window, machine, pos, stop) - pos
            continue
        if not (low <= fde_end and end <= high):
            data, pos, _ = code.at(fde_end, end - fde_end)
            low, high = fde_end - pos, fde_end - pos + len(data)
            if end > high:  # the code stops inside the gap (a section's end)
                gap = data[pos:]
                ends[k] = fde_end + nops.padding_end(gap, machine)
                continue
        gap = data[fde_end - low: end - low]
        padding = padded.get(gap)
        if padding is None:
            padding = padded[gap] = nops.padding_end(gap, machine)
        ends[k] = fde_end + padding


def _in_code(binary: Binary, start: int, end: int) -> bool:
    """Whether [start, end) lies inside one executable section."""
    return any(lo <= start and end <= hi for lo, hi in binary.text_address_ranges())


_UNSET = -1


def _limit(binary: Binary, table: bat.BatTable, addr: int,
           following: int | None = _UNSET) -> int:
    """Fallback end of a fragment without a sized symbol: the end of the FDE that starts
    there and the padding after it, else the next fragment (``following``, looked up when not
    given) or section end, whichever comes first. Past that the code is another function's,
    one without a BAT entry (a stripped library's hand-written assembly, crt1's helpers): the
    next fragment's start alone would take it in."""
    end = _unbounded_limit(binary, table, addr, following)
    fde_end = table_for(binary).fde_ends_at([addr])[0]
    if fde_end is None or not addr < fde_end < end:
        return end
    return _past_padding(binary, fde_end, end)


def _past_padding(binary: Binary, address: int, limit: int) -> int:
    """`address`, past the padding that follows it (up to `limit`): the linker's alignment
    after a function is its symbol's (perf2bolt, the symbolizers), the next code is not."""
    return address + nops.padding_end(binary.code_bytes(address, limit - address),
                                      binary.machine)


def _unbounded_limit(binary: Binary, table: bat.BatTable, addr: int,
                     following: int | None) -> int:
    if following == _UNSET:
        following = table.next_start(addr)
    end = addr if following is None else following
    for lo, hi in binary.text_address_ranges():
        if lo <= addr < hi:
            end = min(end, hi) if following is not None else hi
            break
    return max(end, addr)
