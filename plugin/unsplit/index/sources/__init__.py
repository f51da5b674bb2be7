"""Fragment sources: each turns one on-disk format of a Binary into model procedures (and some into
blocks and lines) behind one protocol, :class:`Source`, all the index talks to. A source keeps
what it decoded on itself. :func:`open_sources` lists them most precise first; per procedure the
index keeps the fragments no earlier source placed, and the first source's blocks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

from unsplit.elf.binary import Binary
from unsplit.formats import section_ids
from unsplit.index.model.records import BatFacts, Block, Fragment, LineRow, Procedure

if TYPE_CHECKING:
    from array import array

    from unsplit.formats.bat_scan import BatScan
    from unsplit.index.sources.bat import BatSource
    from unsplit.index.sources.split_info import SplitInfoSource
    from unsplit.index.sources.symbols import PlainFunctions, SymbolsSource


class StoredParts:
    """What the sources decode by walking a whole file, as the persistent store
    (unsplit.index.cache.store) keeps it and gives it back to :func:`open_sources`."""

    __slots__ = ("bat_scan", "bat_symbol_order", "plain", "symbol_procedures")

    def __init__(self, bat_scan: BatScan | None, plain: PlainFunctions,
                 symbol_procedures: list[Procedure],
                 bat_symbol_order: array[int] | None = None) -> None:
        self.bat_scan, self.plain, self.symbol_procedures = bat_scan, plain, symbol_procedures
        self.bat_symbol_order = bat_symbol_order  # BatIndex's symbols by address


class LazyProcedures(Protocol):
    """Procedures made when asked for, by address or name (BAT's: sources.bat.BatProcedures).
    ``placed``: fragment starts an earlier source placed, which this set leaves out."""

    placed: set[int]

    def __iter__(self) -> Iterator[Procedure]: ...
    def __len__(self) -> int: ...
    def spans(self) -> Iterator[tuple[str, str | None, list[tuple[int, int]]]]: ...
    def unnamed_fragments(self, skip: set[int]) -> Iterator[tuple[str, int, int, bool]]: ...
    def places(self, start: int) -> bool: ...
    def at(self, address: int) -> tuple[Procedure, Fragment] | None: ...
    def at_entry(self, entry: int) -> Procedure | None: ...
    def get(self, name: str) -> Procedure | None: ...
    def all_named(self, name: str) -> list[Procedure]: ...
    def names(self) -> list[str]: ...
    def moved_fragments(self) -> list[Fragment]: ...
    def moved_starts(self) -> list[int]: ...
    def has_moved(self) -> bool: ...


Procedures = list[Procedure] | LazyProcedures


class Source(Protocol):
    """What the index asks of one fragment source of one binary (file addresses throughout)."""

    name: str  # what Fragment.source and ModuleIndex.sources_used call it
    lines_before_dwarf: bool  # its lines are more precise than the module's DWARF (ESL)

    def procedures(self) -> Procedures:
        """Its procedures ([] without its format); raises UnsplitError on a bad section."""
        ...

    def blocks_at(self, address: int) -> list[Block] | None:
        """The blocks of the one-piece function starting at `address` that procedures()
        left out (None: not one of those)."""
        ...

    def has_lines(self) -> bool:
        """Whether it gives lines; raises UnsplitError when its line section is damaged."""
        ...

    def lines_now(self) -> bool:
        """Whether it has any line to give now (BAT: only once a pre-BOLT input with DWARF is
        found), so that a walk over every byte of a module can be skipped."""
        ...

    def line_at(self, address: int) -> LineRow | None:
        """The line row that covers `address`, if it says."""
        ...

    def lines_in(self, start: int, end: int) -> list[LineRow]:
        """Its line rows at addresses in [start, end), by address."""
        ...

    def line_starts(self, file: str, line: int) -> set[int]:
        """Where `file`:`line` begins in its lines (`file`: a base name, a path suffix or a
        full path): what `break FILE:LINE` stops at."""
        ...

    def next_line(self, file: str, line: int) -> int | None:
        """The first line of `file` after `line` that its lines have (None: none)."""
        ...

    def change_points(self, start: int, end: int) -> list[int] | None:
        """Addresses in [start, end) where its line_at answer may change (none between two of
        them); None when it cannot say (then it is asked byte by byte)."""
        ...

    def logical_offset(self, address: int) -> int | None:
        """The exact logical offset of `address` in its procedure, where a fragment's linear
        layout is only an approximation (None: the fragment's own is right)."""
        ...

    def addresses_of(self, procedure: Procedure, offset: int) -> list[int] | None:
        """Every address `offset` of `procedure` (one of this source's) lies at now, where the
        format knows better than the fragments' linear layout (None: it does not); raises
        AddressLookupError when it knows that offset has no code now."""
        ...

    def logical_ranges(self, procedure: Procedure) -> tuple[list[tuple[int, int]], int] | None:
        """`procedure`'s code as [start, end) ranges in the order it lay before the split, and
        its logical size, where the format records them (None: its fragments' layout)."""
        ...

    def facts(self, address: int) -> BatFacts | None:
        """What BOLT's address translation says of `address` (None: nothing)."""
        ...

    def problems(self) -> list[str]:
        """What it could not read, one line each (a section it ignored)."""
        ...


class BaseSource:
    """The answers of a source that knows only procedures: the defaults of :class:`Source`."""

    name = ""
    lines_before_dwarf = False

    def __init__(self, binary: Binary) -> None:
        self.binary = binary

    def blocks_at(self, address: int) -> list[Block] | None:
        return None

    def has_lines(self) -> bool:
        return False

    def lines_now(self) -> bool:
        return self.has_lines()

    def line_at(self, address: int) -> LineRow | None:
        return None

    def lines_in(self, start: int, end: int) -> list[LineRow]:
        return []

    def line_starts(self, file: str, line: int) -> set[int]:
        return set()

    def next_line(self, file: str, line: int) -> int | None:
        return None

    def change_points(self, start: int, end: int) -> list[int] | None:
        return [] if not self.has_lines() else None

    def logical_offset(self, address: int) -> int | None:
        return None

    def addresses_of(self, procedure: Procedure, offset: int) -> list[int] | None:
        return None

    def logical_ranges(self, procedure: Procedure) -> tuple[list[tuple[int, int]], int] | None:
        return None

    def facts(self, address: int) -> BatFacts | None:
        return None

    def problems(self) -> list[str]:
        return []


class SourceSet:
    """Every source of one binary, most precise first, and those the persistent index, BOLT's
    address translation and the split_info tools need by role."""

    __slots__ = ("_by_name", "all", "bat", "split_info", "symbols")

    def __init__(self, all: list[Source], symbols: SymbolsSource, bat: BatSource,
                 split_info: SplitInfoSource) -> None:
        self.all, self.symbols, self.bat, self.split_info = all, symbols, bat, split_info
        self._by_name: dict[str, Source] = {}
        for source in all:
            self._by_name.setdefault(source.name, source)

    def named(self, name: str) -> Source | None:
        """The source a Fragment.source names (asked per `where`: a dictionary look-up)."""
        return self._by_name.get(name)

    def blocks_at(self, address: int) -> list[Block] | None:
        """The first source's blocks of a one-piece function starting at `address`."""
        for source in self.all:
            found = source.blocks_at(address)
            if found is not None:
                return found
        return None

    def addresses_of(self, procedure: Procedure, offset: int) -> list[int]:
        """Every address `offset` of `procedure` lies at now: what the source that made it
        says, else where the fragments' linear layout puts it."""
        for name in dict.fromkeys(f.source for f in procedure.fragments):
            source = self._by_name.get(name)
            found = None if source is None else source.addresses_of(procedure, offset)
            if found is not None:
                return found
        return procedure.addresses_of(offset)

    def logical_ranges(self, procedure: Procedure) -> tuple[list[tuple[int, int]], int]:
        """`procedure`'s code in the order it lay before the split, and its logical size: as
        the source that made it records them, else its fragments by logical start."""
        for name in dict.fromkeys(f.source for f in procedure.fragments):
            source = self._by_name.get(name)
            found = None if source is None else source.logical_ranges(procedure)
            if found is not None:
                return found
        fragments = sorted(procedure.fragments, key=lambda f: f.logical_start)
        return [(f.start, f.end) for f in fragments], procedure.logical_size

    def facts(self, address: int) -> BatFacts | None:
        """The first source's BAT facts of `address` (only BOLTed code has any)."""
        for source in self.all:
            found = source.facts(address)
            if found is not None:
                return found
        return None

    def plain(self) -> PlainFunctions:
        """Functions in one piece (symbols), as arrays."""
        return self.symbols.plain()

    def parts_to_store(self) -> StoredParts:
        """What the persistent index keeps of these sources (unsplit.index.cache.store)."""
        scan, order = self.bat.stored_scan()
        return StoredParts(scan, self.symbols.plain(), self.symbols.procedures(), order)


def open_sources(binary: Binary, stored: StoredParts | None = None,
                 fragment_at: Callable[[int], Fragment | None] | None = None,
                 warnings: list[str] | None = None) -> SourceSet:
    """Every source of `binary`, most precise first: formats that record the original layout
    exactly come before naming conventions. MIP's map comes last: it knows only the part of a
    function that holds its entry, so the fragments of a split function are the symbols', and
    MIP gives their blocks. `stored`: the persistent index's parts (symbols and the BAT scan
    come from it); `fragment_at`: the index's fragment look-up (BAT's lines need it);
    `warnings`: where lines found damaged later are reported (the index's warnings)."""
    from unsplit.index.sources.bat import BatSource
    from unsplit.index.sources.split_info import SplitInfoSource
    from unsplit.index.sources.symbols import SymbolsSource

    symbols = SymbolsSource(binary, stored)
    bat = BatSource(binary, stored, fragment_at, warnings)
    split_info = SplitInfoSource(binary)
    found: list[Source] = [split_info, bat]
    # A source whose section the file lacks would give nothing: its module is not imported
    # (what a debugger session's start spares for most modules, as section_ids says).
    if has_bb_addr_map(binary):
        from unsplit.index.sources.bb_addr_map import BbAddrMapSource

        found.append(BbAddrMapSource(binary))
    found.append(symbols)
    if binary.has_section(section_ids.MIP_SECTION):
        from unsplit.index.sources.mip import MipSource

        found.append(MipSource(binary))
    return SourceSet(found, symbols, bat, split_info)


def has_bb_addr_map(binary: Binary) -> bool:
    """Whether `binary` has an LLVM bb address map section (by type, without making every
    section: a .gnu.hash is parsed whole)."""
    return any(h.type in section_ids.BB_ADDR_MAP_TYPES for h in binary.raw_sections)

