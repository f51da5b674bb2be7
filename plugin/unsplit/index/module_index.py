"""The index of one binary: which procedure and fragment holds an address, and what a procedure
is made of. Built once per binary from every fragment source (index.sources), then answered by
bisection over a sorted array of fragment starts.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import chain
from typing import TYPE_CHECKING

from unsplit.elf.binary import Binary
from unsplit.elf.dwarf_lines import DwarfLines
from unsplit.errors import AddressLookupError, BinaryError, UnsplitError
from unsplit.index.cache.store import IndexStore
from unsplit.index.inlines import DwarfFrames
from unsplit.index.line_table import LineSource, LineTable
from unsplit.index.model.records import (
    HOT,
    BatFacts,
    Block,
    Fragment,
    InlineFrame,
    LineRow,
    Location,
    Procedure,
    bolt_original_of,
)
from unsplit.index.sources import LazyProcedures, SourceSet, StoredParts, open_sources

if TYPE_CHECKING:
    from unsplit.index.sources.symbols import PlainFunctions

__all__ = ["IndexCache", "LineSource", "ModuleIndex", "ProcedureTable"]


class ModuleIndex:
    """Procedures, fragments and lines of one ELF file (file addresses throughout)."""

    def __init__(self, binary: Binary, store: IndexStore | None = None,
                 progress: Callable[[str], None] | None = None) -> None:
        self.binary = binary
        self.sources_used: list[str] = []
        self.warnings: list[str] = []
        # The last address looked up and its answer: naming a location asks for its procedure
        # again (symbolize's outer name, a frame's entry).
        self._last_lookup: tuple[int, tuple[Procedure, Fragment] | None] | None = None
        stored = None if store is None else store.load(binary)
        if stored is None and progress is not None:
            _announce(binary, progress)
        self.sources: SourceSet = open_sources(binary, stored, self.fragment_at, self.warnings)
        merged, self._bat, parts = self._merge_sources(stored)
        if store is not None and stored is None and parts is not None:
            store.save(binary, parts)
        for source in self.sources.all:  # a section ignored (the others still name fragments)
            self.warnings.extend(source.problems())
        owned = sorted(
            ((f, p) for p in merged.values() for f in p.fragments),
            key=lambda fp: (fp[0].start, -fp[0].end),
        )
        self._starts = array("Q", (f.start for f, _ in owned))
        self._fragments = [f for f, _ in owned]
        self._owners = [p for _, p in owned]  # names repeat (static functions): keep the object
        by_name: dict[str, Procedure] = {}
        homonyms: dict[str, list[Procedure]] = {}  # a name's procedures after the first
        for proc in merged.values():
            if by_name.setdefault(proc.name, proc) is not proc:
                homonyms.setdefault(proc.name, []).append(proc)
        plain = self.sources.plain() if parts is None else parts.plain
        self.procedures = ProcedureTable(by_name, plain, self.sources.blocks_at, self._bat,
                                         homonyms)
        self.dwarf_lines = DwarfLines(binary, self.warnings)
        self.line_table = LineTable(self.sources, self.dwarf_lines, self.warnings)
        self.line_sources = self.line_table.sources
        self._frames: tuple[Binary | None, DwarfFrames] | None = None  # (input, its frames)

    @classmethod
    def open(cls, path: str) -> ModuleIndex:
        return cls(Binary(path))

    def input_binary(self) -> Binary | None:
        """The pre-BOLT input of a BOLTed module (None for any other, or none found)."""
        return self.sources.bat.input_binary()

    def bolt_original(self, name: str) -> str | None:
        """The function whose patched original entry (``foo.org.0``, unsplit.index.model.records)
        the procedure `name` is, in a BOLT output; None for any other procedure."""
        base = bolt_original_of(name)
        return base if base is not None and self.binary.is_bolt_output else None

    def bat_input_address(self, file_address: int) -> int | None:
        """The address in the pre-BOLT binary whose line (and inlined frames) BOLT's own
        line table gives ``file_address``; None without BAT, an input binary or a translation."""
        return self.sources.bat.input_address(file_address)

    def input_location(self, file_address: int) -> tuple[str, int, int | None] | None:
        """(procedure, input offset, input function address) for BOLTed code, else None."""
        return self.sources.bat.input_location(file_address)

    def _merge_sources(self, stored: StoredParts | None) -> tuple[
            dict[tuple[str, int], Procedure], LazyProcedures | None, StoredParts | None]:
        """Procedures by (name, entry) from every source (two units' static functions may
        share a name), BAT's kept apart as a lazy set, and the parts a persistent index keeps
        (None when a source failed: a file with a bad section is not cached).

        A later source's procedure keeps only the fragments no earlier source placed, and is
        left out when its entry was placed (BAT pairs a fragment with its input function; a
        name-based source might pair it with another). BAT's fragments count as placed by
        address (LazyProcedures.places), without making its procedures."""
        merged: dict[tuple[str, int], Procedure] = {}
        placed: set[int] = set()
        lazy: LazyProcedures | None = None
        failed = False

        def taken(start: int) -> bool:
            return start in placed or (lazy is not None and lazy.places(start))

        for source in self.sources.all:
            try:
                found = source.procedures()
            except UnsplitError as e:  # one bad section must not hide what the others know
                self.warnings.append(f"{source.name}: {e}")
                failed = True
                continue
            failed = failed or bool(source.problems())
            if found:
                self.sources_used.append(source.name)
            if not isinstance(found, list):
                lazy = found
                lazy.placed = set(placed)  # what split_info placed stays split_info's
                continue
            mine: set[int] = set()
            for proc in found:
                key = (proc.name, proc.entry)
                have = merged.get(key)
                if have is None and lazy is not None and lazy.places(proc.entry):
                    # BAT's procedure at that entry; only the blocks of one of its name count
                    # (read in that order: a symbols procedure has none, BAT's are decoded)
                    have = lazy.at_entry(proc.entry) if proc.blocks else None
                    if have is None or have.name != proc.name:
                        continue
                if have is None:
                    kept = [f for f in proc.fragments if not taken(f.start)]
                    if len(kept) < len(proc.fragments) and kept[:1] == proc.fragments[:1]:
                        proc = Procedure(proc.name, kept, proc.blocks)
                    if kept[:1] == proc.fragments[:1]:
                        merged[key] = proc
                        mine.update(f.start for f in proc.fragments)
                elif not have.blocks and proc.blocks:
                    have.blocks = proc.blocks
            placed |= mine
        if stored is not None:
            return merged, lazy, stored
        if failed:
            return merged, lazy, None
        return merged, lazy, self.sources.parts_to_store()

    # -- questions ----------------------------------------------------------------------

    def fragment_at(self, address: int) -> Fragment | None:
        """The innermost fragment that contains file address `address`."""
        found = self._lookup(address)
        return None if found is None else found[1]

    def procedure_at(self, address: int) -> Procedure | None:
        """The procedure whose code holds file address `address` (by address: no table of
        names is made, and two static functions of one name are told apart)."""
        found = self._lookup(address)
        return None if found is None else found[0]

    def _lookup(self, address: int) -> tuple[Procedure, Fragment] | None:
        last = self._last_lookup
        if last is not None and last[0] == address:
            return last[1]
        found = self._find(address)
        self._last_lookup = (address, found)
        return found

    def _find(self, address: int) -> tuple[Procedure, Fragment] | None:
        found = self._lookup_known(address)
        if found is not None and (self._bat is None or found[1].source == "split_info"):
            return found
        in_bat = None if self._bat is None else self._bat.at(address)
        if in_bat is not None:
            return in_bat
        if found is not None:
            return found
        proc = self.procedures.plain_at(address)
        return None if proc is None else (proc, proc.fragments[0])

    def _lookup_known(self, address: int) -> tuple[Procedure, Fragment] | None:
        i = bisect_right(self._starts, address) - 1
        # Fragments may nest (an alias symbol over a range); walk back to one that contains it.
        while i >= 0:
            frag = self._fragments[i]
            if frag.contains(address):
                return self._owners[i], frag
            if address - frag.start > 1 << 24:  # far past any plausible enclosing fragment
                break
            i -= 1
        return None

    def moved_fragments(self) -> list[Fragment]:
        """Every fragment that is not its procedure's entry, in address order: code entered by
        a jump from elsewhere in its procedure, which unwinders must not take for a function
        start."""
        out = [f for f, p in zip(self._fragments, self._owners, strict=True)
               if p.fragments[0] is not f]
        if self._bat is not None:
            out = sorted(out + self._bat.moved_fragments(), key=lambda f: (f.start, -f.end))
        return out

    def moved_starts(self) -> list[int]:
        """The starts of moved_fragments, ascending, without making BAT's fragments."""
        out = [f.start for f, p in zip(self._fragments, self._owners, strict=True)
               if p.fragments[0] is not f]
        if self._bat is not None:
            out += self._bat.moved_starts()
        return sorted(set(out))

    def has_moved_fragments(self) -> bool:
        """Whether :meth:`moved_starts` has any (a module split at all), without listing them."""
        return any(p.fragments[0] is not f for f, p in zip(self._fragments, self._owners,
                                                             strict=True)) or \
            (self._bat is not None and self._bat.has_moved())

    def all_procedures(self) -> Iterator[Procedure]:
        """Every procedure once, by entry (two statics may share a name): those a fragment
        source knows, BAT's (made as they are asked for), then each one-piece function of the
        symbol table."""
        seen: set[int] = set()
        sources: list[Iterable[Procedure]] = [self._owners]
        if self._bat is not None:
            sources.append(self._bat)
        sources.append(self.procedures.plain())
        for proc in chain.from_iterable(sources):
            entry = proc.fragments[0].start
            if entry not in seen:
                seen.add(entry)
                yield proc

    def procedure_spans(self) -> Iterator[tuple[str, str | None, list[tuple[int, int]]]]:
        """:meth:`all_procedures` as (name, its entry fragment's symbol, its fragments'
        [start, end) in order), without making BAT's or the symbol table's procedures: a
        whole-module debug file of a BOLTed libLLVM asks for 129k."""
        seen: set[int] = set()
        for proc in self._owners:
            entry = proc.fragments[0]
            if entry.start not in seen:
                seen.add(entry.start)
                yield proc.name, entry.symbol, [(f.start, f.end) for f in proc.fragments]
        for name, symbol, spans in [] if self._bat is None else self._bat.spans():
            if spans[0][0] not in seen:
                seen.add(spans[0][0])
                yield name, symbol, spans
        plain = self.procedures.plain_functions
        for i, start in enumerate(plain.starts):
            if start not in seen:
                seen.add(start)
                name = plain.name(i)
                yield name, name, [(start, plain.ends[i])]

    def unnamed_fragments(self) -> Iterator[tuple[str, int, int, bool]]:
        """The fragments of :meth:`procedure_spans` the module has no symbol of their
        procedure's name for, as (procedure name, start, end, whether moved): every fragment
        but the first of a procedure, and a first one without a symbol (the symbol table's
        one-piece functions have theirs). BAT's in one pass over its columns."""
        seen: set[int] = set()
        for proc in self._owners:
            entry = proc.fragments[0]
            if entry.start in seen:
                continue
            seen.add(entry.start)
            for k, f in enumerate(proc.fragments):
                if k or entry.symbol is None:
                    yield proc.name, f.start, f.end, k > 0
        if self._bat is not None:
            yield from self._bat.unnamed_fragments(seen)

    def addresses_of(self, procedure: Procedure, offset: int) -> list[int]:
        """Every address logical `offset` of `procedure` lies at now (`break PROC+OFF`): as
        its source maps it (BAT: every copy BOLT made; split_info: §1's exact mapping), else
        by its fragments' layout. AddressLookupError where the source knows there is none."""
        return self.sources.addresses_of(procedure, offset)

    def logical_ranges(self, procedure: Procedure) -> tuple[list[tuple[int, int]], int]:
        """`procedure`'s code as [start, end) ranges in the order it lay before the split, and
        its logical size: as its source records them (split_info: §1's ranges), else by its
        fragments' layout."""
        return self.sources.logical_ranges(procedure)

    def procedure(self, name: str) -> Procedure:
        proc = self.procedures.get(name)
        if proc is None:
            raise AddressLookupError(f"no procedure named {name!r} in {self.binary.path}")
        return proc

    def line_at(self, address: int) -> LineRow | None:
        """The best line row for `address`; line 0 ("no source") lets the next source answer
        (the module's LineTable)."""
        return self.line_table.line_at(address)

    def locate(self, file_address: int, bias: int = 0, *, lines: bool | None = True,
               blocks: bool = True, offsets: bool = True, frame: bool = False) -> Location:
        """What `bb where` says of an address; `bias` turns file addresses into runtime ones.
        `lines`: False skips the line (a scan of big DWARF the first time), None gives it in
        moved code only (frame names). `blocks=False` leaves ``block`` None and `offsets=False`
        ``offset``, ``input_address`` and BAT's facts (both decode BAT maps). `frame`: the line
        as GDB reads a debugger frame's at line-0 rows (LineTable.line_at)."""
        found = self._lookup(file_address)
        if lines is None:
            lines = found is not None and found[1].name != HOT
        row = self.line_table.line_at(file_address, frame=frame) if lines else None
        module = self.binary.path
        if found is None:
            return Location(bias + file_address, file_address, module, None,
                            file=row.file if row else None, line=row.line if row else None,
                            column=row.column if row else None, path=row.path if row else None,
                            warnings=tuple(self.warnings))
        proc, frag = found
        offset: int | None = None
        input_address = None
        bat: BatFacts | None = None
        if offsets:
            bolted = self.input_location(file_address)
            offset = self._offset(frag, file_address, bolted)
            if bolted is not None:
                input_address = None if bolted[2] is None else bolted[2] + bolted[1]
                bat = self.sources.facts(file_address)
        return Location(
            address=bias + file_address,
            file_address=file_address,
            module=module,
            procedure=proc.name,
            fragment=frag.name,
            fragment_symbol=frag.symbol,
            fragment_start=bias + frag.start,
            offset=offset,
            input_address=input_address,
            file=row.file if row else None,
            line=row.line if row else None,
            column=row.column if row else None,
            path=row.path if row else None,
            block=proc.block_at(file_address) if blocks else None,
            sources=(frag.source,) + ((row.source,) if row else ()),
            warnings=tuple(self.warnings),
            inline_chain=self.inline_chain(file_address) if lines else (),
            bat=bat,
        )

    def inline_chain(self, file_address: int) -> tuple[InlineFrame, ...]:
        """DWARF's frames at `file_address` where code is inlined there (innermost first, the
        procedure's own last), else (): the module's DWARF or, for BOLTed code, the pre-BOLT
        input's at BAT's input address (unsplit.index.inlines)."""
        dwarf = self._dwarf_frames()
        if not dwarf.may_inline(file_address):  # no DIE parsed where no call is inlined
            return ()
        frames = dwarf.frames(file_address)
        if len(frames) < 2:
            return ()
        return tuple(InlineFrame(f.function, f.path, f.line, f.column) for f in frames)

    def _dwarf_frames(self) -> DwarfFrames:
        """The module's DWARF frames, made again when `bb input` names another input."""
        found = self.input_binary()
        if self._frames is None or self._frames[0] is not found:
            self._frames = (found, DwarfFrames(self, found, None))  # linkage names
        return self._frames[1]

    def offset_at(self, file_address: int) -> int | None:
        """The offset of `file_address` in its procedure, the one every command shows (`where`,
        `frames`, `blocks`, `ranges`, `break PROC+OFF`): BAT's input offset for BOLTed code,
        split_info's exact mapping, else the fragment's place in the procedure as first laid
        out; None outside every procedure."""
        found = self._lookup(file_address)
        if found is None:
            return None
        return self._offset(found[1], file_address, self.input_location(file_address))

    def _offset(self, frag: Fragment, file_address: int,
                bolted: tuple[str, int, int | None] | None) -> int:
        if bolted is not None:  # BOLT: the offset in the input function, as BAT says
            return bolted[1]
        source = self.sources.named(frag.source)
        exact = None if source is None else source.logical_offset(file_address)
        if exact is not None:  # split_info: a piece may hold branches, §1's exact mapping
            return exact
        return frag.logical_start + file_address - frag.start


class ProcedureTable(Mapping[str, Procedure]):
    """Procedures by name: the split ones (and any a precise source knows) as objects, BAT's
    made when asked for, functions in one piece as sorted arrays, made into a Procedure only
    when asked for. A name gives the first procedure of that name (the sources' order, then
    address); :meth:`all_named` gives every one (static functions of several units)."""

    def __init__(self, known: dict[str, Procedure], plain: PlainFunctions,
                 blocks_at: Callable[[int], list[Block] | None] | None = None,
                 bat: LazyProcedures | None = None,
                 homonyms: dict[str, list[Procedure]] | None = None) -> None:
        self._known = known
        self._homonyms = homonyms or {}  # known procedures of a name after the first
        self._bat = bat
        self._blocks_at = blocks_at  # a one-piece function's blocks, by its start
        self._plain = plain
        self._by_name: dict[str, int] | None = None
        self._more_plain: dict[str, list[int]] = {}  # a name's one-piece functions after the first
        self._made: dict[int, Procedure] = {}

    def _make(self, i: int) -> Procedure:
        proc = self._made.get(i)
        if proc is None:
            name, start, end = self._plain.name(i), self._plain.starts[i], self._plain.ends[i]
            blocks_at = self._blocks_at
            load = None if blocks_at is None else (lambda: blocks_at(start) or [])
            proc = Procedure(name, [Fragment(name, HOT, start, end, name, 0, "symbols")],
                             load_blocks=load)
            self._made[i] = proc
        return proc

    @property
    def plain_functions(self) -> PlainFunctions:
        """The one-piece functions as arrays."""
        return self._plain

    def plain(self) -> Iterator[Procedure]:
        """Every one-piece function, in address order (made as they are asked for)."""
        for i in range(len(self._plain)):
            yield self._make(i)

    def plain_at(self, address: int) -> Procedure | None:
        """The one-piece function that contains `address`, if any."""
        i = bisect_right(self._plain.starts, address) - 1
        return self._make(i) if i >= 0 and address < self._plain.ends[i] else None

    def _index_of(self, name: str) -> int | None:
        if self._by_name is None:
            self._by_name = {}
            for i in range(len(self._plain)):
                name_i = self._plain.name(i)
                if self._by_name.setdefault(name_i, i) != i:
                    self._more_plain.setdefault(name_i, []).append(i)
        return self._by_name.get(name)

    def all_named(self, name: str) -> list[Procedure]:
        """Every procedure of that name, one per entry, as `break NAME` in GDB sets a location
        in each: split_info's, BAT's, the other sources', then the one-piece functions."""
        out: dict[int, Procedure] = {}
        first_known = self._known.get(name)
        known = [] if first_known is None else [first_known, *self._homonyms.get(name, ())]
        for proc in known:
            if self._bat is None or proc.fragments[0].source == "split_info":
                out.setdefault(proc.entry, proc)
        for proc in [] if self._bat is None else self._bat.all_named(name):
            out.setdefault(proc.entry, proc)
        for proc in known:
            out.setdefault(proc.entry, proc)
        first = self._index_of(name)
        for i in [] if first is None else [first, *self._more_plain.get(name, ())]:
            out.setdefault(self._plain.starts[i], self._make(i))
        return list(out.values())

    def __getitem__(self, name: str) -> Procedure:
        proc = self._known.get(name)  # the sources' order: split_info, then BAT, the rest
        if proc is not None and (self._bat is None or proc.fragments[0].source == "split_info"):
            return proc
        made = None if self._bat is None else self._bat.get(name)
        if made is not None:
            return made
        if proc is not None:
            return proc
        i = self._index_of(name)
        if i is None:
            raise KeyError(name)
        return self._make(i)

    def __iter__(self) -> Iterator[str]:
        yield from self._known
        seen = set(self._known)
        for n in [] if self._bat is None else self._bat.names():
            if n not in seen:
                seen.add(n)
                yield n
        for i in range(len(self._plain)):
            n = self._plain.name(i)
            if n not in seen:
                seen.add(n)
                yield n

    def __len__(self) -> int:
        return sum(1 for _ in self)


# What makes a first build take over a second (bench/libllvm.py: the BAT scan reads ~20 MB/s).
ANNOUNCE_BAT_BYTES = 16 << 20
ANNOUNCE_SYMBOL_BYTES = 32 << 20


def _announce(binary: Binary, progress: Callable[[str], None]) -> None:
    """Say once that a first index will take a while: the BAT note (the long pass) or the
    symbol tables are big."""
    bat = binary.section_header(".note.bolt_bat")
    bat_size = 0 if bat is None else bat.size
    symbols = sum(s.size for name in (".symtab", ".dynsym")
                  if (s := binary.section_header(name)) is not None)
    if bat_size >= ANNOUNCE_BAT_BYTES:
        what = f" ({bat_size / 1e6:.0f} MB BAT)"
    elif symbols >= ANNOUNCE_SYMBOL_BYTES:
        what = f" ({symbols / 1e6:.0f} MB of symbols)"
    else:
        return
    progress(f"unsplit: indexing {os.path.basename(binary.path)}{what}…")


class IndexCache:
    """One Binary and (when first asked for) one ModuleIndex per file; both are dropped when
    the file changes on disk. Indexes come from, and go to, the persistent ``store``
    (None: built every time); ``progress`` hears about a first build that takes a while."""

    def __init__(self, store: IndexStore | None = None,
                 progress: Callable[[str], None] | None = None,
                 opened: Callable[[Binary], None] | None = None) -> None:
        self._by_path: dict[str, tuple[tuple[int, int], Binary, ModuleIndex | None]] = {}
        self.store = store
        self.progress = progress
        self.opened = opened  # hears of each Binary as it is opened, before any index of it

    def _entry(self, path: str) -> tuple[tuple[int, int], Binary, ModuleIndex | None]:
        st = os.stat(path)
        stamp = (st.st_size, st.st_mtime_ns)
        hit = self._by_path.get(path)
        if hit is None or hit[0] != stamp:
            hit = (stamp, Binary(path), None)
            self._by_path[path] = hit
            if self.opened is not None:
                self.opened(hit[1])
        return hit

    def binaries(self) -> list[Binary]:
        """The files opened so far."""
        return [binary for _, binary, _ in self._by_path.values()]

    def binary(self, path: str) -> Binary:
        """The opened file alone: cheap, for questions like "is this address its code"."""
        return self._entry(path)[1]

    def open(self, path: str) -> ModuleIndex:
        """:meth:`get`, a missing or unreadable file said as a BinaryError."""
        try:
            return self.get(path)
        except FileNotFoundError:
            raise BinaryError(f"{path}: no such file") from None
        except OSError as e:
            raise BinaryError(f"{path}: {e.strerror}") from None

    def get(self, path: str) -> ModuleIndex:
        stamp, binary, index = self._entry(path)
        if index is None:
            index = ModuleIndex(binary, self.store, self.progress)
            self._by_path[path] = (stamp, binary, index)
        return index
