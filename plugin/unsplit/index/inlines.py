"""What DWARF says of an address: its line and the chain of inlined calls around it
(``DW_TAG_inlined_subroutine``, innermost first, each outer frame at its ``DW_AT_call_*``
place), from the module's DWARF or, for BOLTed code, the pre-BOLT input's at BAT's input
address. ``unsplit symbolize --inlines`` prints it; synthesized debug files (debuginfo/) copy it.
Only the compile unit covering an address is read, once.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, NamedTuple

from unsplit.elf.binary import Binary
from unsplit.elf.derived import PerInput
from unsplit.elf.dwarf_lines import DwarfLines, die_ranges, number
from unsplit.errors import DecodeError, reading
from unsplit.index.model.records import LineInfo
from unsplit.index.names.demangle import shown

if TYPE_CHECKING:
    from unsplit.index.module_index import ModuleIndex

UNKNOWN = "??"


_SUBROUTINES = ("DW_TAG_subprogram", "DW_TAG_inlined_subroutine")


class InlineChains:
    """DW_TAG_subprogram / DW_TAG_inlined_subroutine chains of one binary, per CU, lazily."""

    def __init__(self, lines: DwarfLines) -> None:
        self.lines = lines
        self._subprograms: dict[int, list[tuple[int, int, Any]]] = {}
        self._subprogram_spans: dict[int, _Spans] = {}  # CU offset -> its subprograms' ranges
        self._files: dict[int, list[str]] = {}
        self._languages: dict[int, int | None] = {}  # CU offset -> DW_AT_language
        self._bases: dict[int, int] = {}  # CU offset -> its base address
        # DIE offset -> its ranges: an address's chain walks the same DIEs as its neighbours'
        # (decoding range lists was 95% of symbolizing Lua's luaV_execute.cold, bench/realworld)
        self._range_cache: dict[int, list[tuple[int, int]]] = {}
        # DIE offset -> the children an inline chain can go through (pyelftools walks a DIE's
        # children anew each time, and every address of a function walks the same ones)
        self._kids: dict[int, list[tuple[Any, bool, list[tuple[int, int]]]]] = {}
        self._inlined: dict[int, list[tuple[int, int]]] = {}  # CU offset -> its inlined calls
        # DIE offset -> where its children's ranges are (a big function has thousands)
        self._kid_spans: dict[int, _Spans] = {}

    def _ranges(self, die: Any, base: int) -> list[tuple[int, int]]:
        found = self._range_cache.get(die.offset)
        if found is None:
            found = self._range_cache[die.offset] = list(die_ranges(die.dwarfinfo, die, base))
        return found

    def chain(self, address: int) -> tuple[list[Any], list[str]]:
        """(DIEs innermost first, ending with the subprogram; the CU's file paths) or ([], [])."""
        cu_offset = self.lines.cu_offset_at(address)
        if cu_offset is None:
            return [], []
        try:
            with self.reading_dies(cu_offset):
                found = self._subprogram_at(cu_offset, address)
                if found is None:
                    return [], []
                outer = [found]

                def children(die: Any, base: int) -> list[tuple[Any, bool, list[tuple[int, int]]]]:
                    return self._children_at(die, base, address)

                while True:
                    inner = _child_at(outer[-1], address, self._base(cu_offset), children)
                    if inner is None:
                        break
                    if any(d.offset == inner.offset for d in outer):
                        raise DecodeError(".debug_info", inner.offset,
                                          "the DIE tree loops back on itself")
                    outer.append(inner)
        except DecodeError as e:
            self.lines.warn(e)
            return [], []
        if cu_offset not in self._files:
            self._files[cu_offset] = self.lines.file_paths(cu_offset)
        return outer[::-1], self._files[cu_offset]

    def may_inline(self, address: int) -> bool:
        """Whether an inlined call's code may cover `address`: False where no
        DW_TAG_inlined_subroutine of its CU covers it (unit_ranges.inlined_ranges, read from
        the bytes: no DIE parsed, pyelftools not imported), True where that cannot be read."""
        cu_offset = self.lines.cu_offset_at(address)
        if cu_offset is None:
            return False
        spans = self._inlined.get(cu_offset)
        if spans is None:
            spans = [(0, 1 << 64)]  # a big-endian file or bytes that do not parse: the DIEs
            binary = self.lines.binary  # are read as before, and say what is wrong
            if binary.little_endian:
                from unsplit.formats import unit_ranges  # (with a unit's first look)

                data = binary.section_data
                try:
                    spans = unit_ranges.inlined_ranges(unit_ranges.Sections(
                        *(data(name) or b"" for name in (".debug_info", ".debug_abbrev",
                                                         ".debug_addr", ".debug_rnglists",
                                                         ".debug_ranges"))), cu_offset)
                except DecodeError:
                    pass
            self._inlined[cu_offset] = spans
        return any(lo <= address < hi for lo, hi in spans)

    def scope(self, address: int) -> int | None:
        """The DIE offset of the innermost scope a debugger makes a block of at `address`: its
        subprogram, an inlined call, or a lexical block that declares something (GDB's
        read_lexical_block_scope makes none of one that only holds other scopes); None where
        no subprogram covers it."""
        cu_offset = self.lines.cu_offset_at(address)
        if cu_offset is None:
            return None
        try:
            with self.reading_dies(cu_offset):
                found = self._subprogram_at(cu_offset, address)
                if found is None:
                    return None
                base = self._base(cu_offset)
                node, seen = found, {found.offset}
                scope = int(node.offset)
                while (child := _child_at(node, address, base, self._children, blocks=True)) \
                        is not None:
                    if child.offset in seen:
                        raise DecodeError(".debug_info", child.offset,
                                          "the DIE tree loops back on itself")
                    seen.add(child.offset)
                    if child.tag == "DW_TAG_inlined_subroutine" or any(
                            kid.tag not in _NOT_DECLARATIONS for kid in child.iter_children()):
                        scope = int(child.offset)
                    node = child
        except DecodeError as e:
            self.lines.warn(e)
            return None
        return scope

    @staticmethod
    def reading_dies(cu_offset: int) -> AbstractContextManager[None]:
        """What pyelftools raises on the CU's DIEs: bad input, said at the CU."""
        return reading(".debug_info", cu_offset, f"DIEs of the CU at {cu_offset:#x}")

    def _children(self, die: Any, base: int) -> list[tuple[Any, bool, list[tuple[int, int]]]]:
        """(child, is it an inlined call, its ranges) of the children of `die` an inline chain
        can go through: inlined subroutines, and what holds children but a subprogram."""
        kids = self._kids.get(die.offset)
        if kids is None:
            kids = self._kids[die.offset] = [
                (child, child.tag == "DW_TAG_inlined_subroutine", self._ranges(child, base))
                for child in die.iter_children()
                if child.tag == "DW_TAG_inlined_subroutine"
                or (child.tag != "DW_TAG_subprogram" and child.has_children)]
        return kids

    def _children_at(self, die: Any, base: int, address: int
                     ) -> list[tuple[Any, bool, list[tuple[int, int]]]]:
        """The children of `die` (_children) a walk to `address` may go into: those whose
        ranges cover it and the scopes without ranges that hold any (not GCC's thousands of
        call sites, whose children are parameters), in DIE order (_child_at passes over the
        others), found by bisection: symbolizing sqlite3's big functions spent most of its
        time testing every child's ranges at every address (docs/benchmarks.md)."""
        kids = self._children(die, base)
        spans = self._kid_spans.get(die.offset)
        if spans is None:
            spans = self._kid_spans[die.offset] = _Spans(
                [(lo, hi, i) for i, (_, _, ranges) in enumerate(kids) for lo, hi in ranges],
                [i for i, (kid, inlined, ranges) in enumerate(kids)
                 if not ranges and not inlined and self._children(kid, base)])
        return [kids[i] for i in spans.covering(address)]

    def _subprogram_at(self, cu_offset: int, address: int) -> Any:
        """The CU's subprogram DIE whose code holds `address` (the last in DIE order where
        several do: a nested subprogram comes after its parent), or None."""
        spans = self._subprogram_spans.get(cu_offset)
        subs = self._subprograms_of(cu_offset)
        if spans is None:
            spans = self._subprogram_spans[cu_offset] = _Spans(
                [(lo, hi, i) for i, (lo, hi, _) in enumerate(subs)], [])
        found = spans.covering(address)
        return subs[found[-1]][2] if found else None

    def language(self, address: int) -> int | None:
        """DW_AT_language of the CU covering `address` (a DW_LANG_* code), or None."""
        cu_offset = self.lines.cu_offset_at(address)
        if cu_offset is None:
            return None
        if cu_offset not in self._languages:
            try:
                with self.reading_dies(cu_offset):
                    top = self.lines.binary.dwarf.get_CU_at(cu_offset).get_top_DIE()
                value = number(top, "DW_AT_language")
            except DecodeError as e:
                self.lines.warn(e)
                value = None
            self._languages[cu_offset] = value
        return self._languages[cu_offset]

    def _base(self, cu_offset: int) -> int:
        """The CU's base address (DW_AT_low_pc of its DIE), read once per CU."""
        base = self._bases.get(cu_offset)
        if base is None:
            top = self.lines.binary.dwarf.get_CU_at(cu_offset).get_top_DIE()
            base = self._bases[cu_offset] = number(top, "DW_AT_low_pc") or 0
        return base

    def _subprograms_of(self, cu_offset: int) -> list[tuple[int, int, Any]]:
        """[lo, hi) and DIE of each range of each of the CU's subprograms with code, in DIE
        order. Only those DIEs are parsed by pyelftools (unsplit.formats.die_scan finds them);
        a unit the scan cannot read is walked DIE by DIE as pyelftools parses it."""
        subs = self._subprograms.get(cu_offset)
        if subs is None:
            base = self._base(cu_offset)
            cu = self.lines.binary.dwarf.get_CU_at(cu_offset)
            try:
                dies = [cu.get_DIE_from_refaddr(offset) for offset in _code_subprograms(cu)]
            except DecodeError:
                dies = [die for die in cu.iter_DIEs() if die.tag == "DW_TAG_subprogram"]
            subs = [(lo, hi, die) for die in dies for lo, hi in die_ranges(cu.dwarfinfo, die, base)]
            self._subprograms[cu_offset] = subs
        return subs


class _Spans:
    """Which of a list's items have a [lo, hi) range holding an address: bisection over the
    ranges by start, walking back while a range so far may still reach it (siblings' ranges
    are disjoint in DWARF, so the walk is short), plus items that always answer."""

    def __init__(self, ranges: list[tuple[int, int, int]], always: list[int]) -> None:
        ranges = sorted(r for r in ranges if r[1] > r[0])
        self.starts = [lo for lo, _, _ in ranges]
        self.ends = [hi for _, hi, _ in ranges]
        self.items = [i for _, _, i in ranges]
        self.reach: list[int] = []  # the furthest end of the ranges up to each one
        for hi in self.ends:
            self.reach.append(max(hi, self.reach[-1]) if self.reach else hi)
        self.always = always

    def covering(self, address: int) -> list[int]:
        """The items holding `address` and those that always answer, in ascending order."""
        found = set()
        j = bisect_right(self.starts, address) - 1
        while j >= 0 and self.reach[j] > address:
            if self.ends[j] > address:
                found.add(self.items[j])
            j -= 1
        return sorted(found.union(self.always)) if found else self.always


def _code_subprograms(cu: Any) -> list[int]:
    """Offsets of the DW_TAG_subprogram DIEs of pyelftools CU `cu` that say where their code
    is (DW_AT_low_pc or DW_AT_ranges)."""
    from unsplit.formats import die_scan

    dwarf = cu.dwarfinfo
    info = dwarf.debug_info_sec.stream.getbuffer()
    abbrev = dwarf.debug_abbrev_sec.stream.getbuffer()
    unit = die_scan.Unit(die_start=cu.cu_die_offset, end=cu.cu_offset + cu.size,
                         version=int(cu["version"]), address_size=int(cu["address_size"]),
                         offset_size=8 if cu.dwarf_format() == 64 else 4)
    abbrevs = die_scan.abbreviations(abbrev, int(cu["debug_abbrev_offset"]))
    return die_scan.offsets_with(info, unit, abbrevs, die_scan.DW_TAG_subprogram,
                                 frozenset((die_scan.DW_AT_low_pc, die_scan.DW_AT_ranges)))


def _child_at(die: Any, address: int, base: int,
              children: Callable[[Any, int], list[tuple[Any, bool, list[tuple[int, int]]]]],
              blocks: bool = False) -> Any:
    """The first DW_TAG_inlined_subroutine under `die` covering `address` (`blocks`: or lexical
    block), depth first in DIE order, looking through the scopes it does not return that have
    no ranges or cover it, as GDB does. A walk, not a recursion: damaged sibling links can make
    a DIE its own descendant (a DecodeError here) or nest scopes deeper than Python's stack."""
    pending = [iter(children(die, base))]
    seen = {die.offset}
    while pending:
        step = next(pending[-1], None)
        if step is None:
            pending.pop()
            continue
        child, inlined, spans = step
        covers = any(lo <= address < hi for lo, hi in spans)
        if covers and (inlined or blocks):
            return child
        if not inlined and (not spans or covers):
            if child.offset in seen:
                raise DecodeError(".debug_info", child.offset,
                                  "the DIE tree loops back on itself")
            seen.add(child.offset)
            pending.append(iter(children(child, base)))
    return None


_NOT_DECLARATIONS = frozenset(("DW_TAG_lexical_block", "DW_TAG_inlined_subroutine",
                               "DW_TAG_call_site", "DW_TAG_GNU_call_site"))
"""Children of a lexical block that declare nothing in it (scopes of their own, calls)."""


def _find(die: Any, names: tuple[str, ...]) -> Any:
    """An attribute of `die` or of what it refers to (abstract origin, specification)."""
    seen = 0
    while die is not None and seen < 8:
        for name in names:
            if name in die.attributes:
                return die.attributes[name]
        ref = next((r for r in ("DW_AT_abstract_origin", "DW_AT_specification")
                    if r in die.attributes), None)
        die = die.get_DIE_from_attribute(ref) if ref else None
        seen += 1
    return None


def _die_name(die: Any, style: str | None) -> str:
    attr = _find(die, ("DW_AT_linkage_name", "DW_AT_MIPS_linkage_name"))
    if attr is None:
        attr = _find(die, ("DW_AT_name",))
    if attr is None:
        return UNKNOWN
    value = attr.value
    return shown(value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value),
                 style)


def _int_attr(die: Any, name: str) -> int:
    """A number the frame shows (a line, a column, a file index); 0 when absent. DecodeError
    at the DIE when a damaged form made it something else."""
    attr = _find(die, (name,)) if name == "DW_AT_decl_line" else die.attributes.get(name)
    if attr is None:
        return 0
    if not isinstance(attr.value, int):
        raise DecodeError(".debug_info", die.offset, f"{name} of the DIE is not a number")
    return int(attr.value)


class _DieFacts(NamedTuple):
    """What a frame shows of an inlined call's DIE, read once per DIE."""

    name: str
    decl_line: int
    call_file: int
    call_line: int
    call_column: int


class DwarfFrames:
    """The DWARF frames of one module's addresses: its own DWARF, then (BOLTed code) the
    pre-BOLT ``input_binary``'s at BAT's input address; names shown in ``style``."""

    def __init__(self, index: ModuleIndex, input_binary: Binary | None,
                 style: str | None) -> None:
        self.index = index
        self.style = style
        self._own = InlineChains(index.dwarf_lines)
        self._die_facts: dict[tuple[int, int], _DieFacts] = {}  # (DWARF, DIE offset) -> facts
        self._input: InlineChains | None = None
        if input_binary is not None:
            self._input = InlineChains(DwarfLines(input_binary, index.warnings,
                                                  f"pre-BOLT {input_binary.path}: "))

    @classmethod
    def of(cls, index: ModuleIndex, style: str | None) -> DwarfFrames:
        """A module's, with the pre-BOLT input the index uses for a BOLTed module."""
        return cls(index, index.input_binary(), style)

    def frames(self, address: int, inlines: bool = True) -> list[LineInfo]:
        """What DWARF says of `address`, innermost frame first, the last one the function's
        own (not yet named by procedure); [] when no DWARF covers it."""
        frames: list[LineInfo] = []
        for source, at in self._dwarf_sources(address):
            found = self._dwarf_frames(source, at, inlines)
            if found and (not frames or found[0].line):
                frames = found
            if frames and frames[0].line:
                break
        return frames

    def may_inline(self, address: int) -> bool:
        """Whether :meth:`frames` may find an inlined call at `address` (InlineChains.may_inline
        of each DWARF it reads); False: it would give one frame at most."""
        return any(source.may_inline(at) for source, at in self._dwarf_sources(address))

    def input_frames(self, input_address: int, inlines: bool = True) -> list[LineInfo]:
        """What the pre-BOLT input's DWARF says of its own `input_address` ([] without one)."""
        return [] if self._input is None else self._dwarf_frames(self._input, input_address,
                                                                 inlines)

    def scope(self, address: int) -> tuple[int, int, int] | None:
        """Where `address`'s innermost scope is (:meth:`InlineChains.scope`), keyed by the DWARF
        that describes it (0: the module's, 1: the pre-BOLT input's), with the address there
        (BAT's input address for BOLTed code); None where no DWARF covers it."""
        for source, at in self._dwarf_sources(address):
            found = source.scope(at)
            if found is not None:
                return (0 if source is self._own else 1), at, found
        return None

    def language(self, address: int) -> int | None:
        """DW_AT_language of the unit `address` was compiled in (the pre-BOLT input's for
        BOLTed code), or None where no DWARF covers it."""
        for source, at in self._dwarf_sources(address):
            found = source.language(at)
            if found is not None:
                return found
        return None

    def _dwarf_sources(self, address: int) -> list[tuple[InlineChains, int]]:
        out = [(self._own, address)] if self._own.lines.available else []
        if self._input is not None:
            # The index's rule, as `where` gives it: BAT's translation, except for the jumps
            # BOLT inserted and the functions lite mode left alone.
            input_address = self.index.bat_input_address(address)
            if input_address is not None:
                out.append((self._input, input_address))
        return out

    def _dwarf_frames(self, chains: InlineChains, address: int, inlines: bool) -> list[LineInfo]:
        row = chains.lines.lookup(address)
        path = None if row is None else row.path
        line, column = (0, 0) if row is None else (row.line, row.column)
        dies, files = chains.chain(address)
        if dies:
            cu = chains.lines.cu_offset_at(address)
            try:
                with chains.reading_dies(0 if cu is None else cu):
                    return self._inlined_frames(dies, files, path, line, column, inlines)
            except DecodeError as e:  # a damaged DIE on the chain: the line alone
                chains.lines.warn(e)
        return [LineInfo(UNKNOWN, path, line, column)] if row is not None else []

    def _inlined_frames(self, dies: list[Any], files: list[str], path: str | None, line: int,
                        column: int, inlines: bool) -> list[LineInfo]:
        if not inlines:
            return [LineInfo(self._facts(dies[0]).name, path, line, column,
                             self._facts(dies[-1]).decl_line)]
        frames = []
        for k, die in enumerate(dies):
            facts = self._facts(die)
            frames.append(LineInfo(facts.name, path, line, column, facts.decl_line))
            # The next frame out is at this one's call site.
            if k + 1 < len(dies):
                call_file = facts.call_file
                path = files[call_file] if 0 <= call_file < len(files) and files[call_file] \
                    else None
                line, column = facts.call_line, facts.call_column
        return frames

    def _facts(self, die: Any) -> _DieFacts:
        """What a frame takes from `die`, read once per DIE: the same DIEs are on the chains of
        every address of a function (unsplit debuginfo asks for each line row of a module)."""
        key = (id(die.dwarfinfo), die.offset)
        found = self._die_facts.get(key)
        if found is None:
            found = self._die_facts[key] = _DieFacts(
                _die_name(die, self.style), _int_attr(die, "DW_AT_decl_line"),
                _int_attr(die, "DW_AT_call_file"), _int_attr(die, "DW_AT_call_line"),
                _int_attr(die, "DW_AT_call_column"))
        return found


_KEPT: PerInput[DwarfFrames] = PerInput()  # the module's DwarfFrames for its pre-BOLT input


def module_frames(index: ModuleIndex) -> DwarfFrames:
    """`index`'s DwarfFrames with linkage names, made once per pre-BOLT input (`bb input`
    changes it) and kept on the module's Binary: stepping and frame lists ask it often."""
    current = index.input_binary()
    return _KEPT(index.binary, current, lambda: DwarfFrames(index, current, None))


def inlined_only(index: ModuleIndex, name: str) -> tuple[str, int] | None:
    """Where `name` is declared (file base name, line) when the module has no code of its own
    for it: no function symbol of that name, and its DWARF (for BOLTed code, the pre-BOLT
    input's too) has it only as an abstract inline instance (DW_TAG_subprogram with
    DW_AT_inline, DWARF 5 §3.3.8.1): every call of it was inlined. None otherwise. A DWARF
    whose strings do not hold the name is not walked."""
    if any(f.name == name for f in index.binary.functions):
        return None
    sources = [index.dwarf_lines]
    input_binary = index.input_binary()
    if input_binary is not None:
        sources.append(DwarfLines(input_binary, index.warnings, f"pre-BOLT {input_binary.path}: "))
    for lines in sources:
        found = _abstract_subprogram(lines, name) if lines.available else None
        if found is not None:
            return found
    return None


def _abstract_subprogram(lines: DwarfLines, name: str) -> tuple[str, int] | None:
    dwarf = lines.binary
    needle = name.encode()
    strings = b"\0" + (dwarf.section_data(".debug_str") or b"")
    if b"\0" + needle + b"\0" not in strings \
            and needle + b"\0" not in (dwarf.section_data(".debug_info") or b""):
        return None
    offset = 0
    found: tuple[Any, Any] | None = None
    try:
        with reading(".debug_info", lambda: offset, "its units' DIEs"):
            for cu in dwarf.dwarf.iter_CUs():
                offset = cu.cu_offset
                for die in cu.iter_DIEs():
                    attr = die.attributes.get("DW_AT_name")
                    if die.tag == "DW_TAG_subprogram" and "DW_AT_inline" in die.attributes \
                            and attr is not None and attr.value == needle:
                        found = cu, die
                        break
                if found is not None:
                    break
    except DecodeError as e:
        lines.warn(e)
    if found is None:
        return None
    cu, die = found
    files = lines.file_paths(cu.cu_offset)
    try:
        at, line = _int_attr(die, "DW_AT_decl_file"), _int_attr(die, "DW_AT_decl_line")
    except DecodeError as e:
        lines.warn(e)
        return UNKNOWN, 0
    return (os.path.basename(files[at]) if 0 <= at < len(files) else UNKNOWN), line
