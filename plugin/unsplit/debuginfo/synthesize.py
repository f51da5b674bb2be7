"""What the core knows of a split module, written as DWARF 5 in a separate debug file: each
procedure a DW_TAG_subprogram whose ranges cover all its fragments (entry first), and a line
table with a row wherever ``ModuleIndex.line_at``'s answer changes, so that every reader gets
`unsplit where`'s line at every instruction. Code no line source covers gets no rows."""

from __future__ import annotations

import mmap
import os
import re
import struct
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import compress
from operator import ge, gt, itemgetter

from unsplit import __version__
from unsplit.debuginfo.dwarf import abbrev as A
from unsplit.debuginfo.dwarf.abbrev import AbbrevTable
from unsplit.debuginfo.dwarf.aranges import ArangesWriter
from unsplit.debuginfo.dwarf.elf import write_debug_file
from unsplit.debuginfo.dwarf.info import InfoWriter
from unsplit.debuginfo.dwarf.line import LineProgram
from unsplit.debuginfo.dwarf.rnglists import RangeLists
from unsplit.debuginfo.dwarf.strings import StringTable
from unsplit.elf.binary import Binary
from unsplit.formats.leb128 import encode_uleb128 as uleb
from unsplit.index.code_lines import CodeWalker, InlinedRun, Row
from unsplit.index.module_index import ModuleIndex
from unsplit.index.names.demangle import demangle

_LANGUAGES = {  # DW_LANG_* by the primary file's extension, DWARF 5 §7.12 Table 7.17
    ".c": 0x1D, ".cc": 0x21, ".cpp": 0x21, ".cxx": 0x21, ".C": 0x21, ".rs": 0x1C,
}
DW_LANG_C_plus_plus = 0x04
# Rust's legacy mangling is Itanium's with a hash as the last name part: not C++.
_RUST_LEGACY = re.compile(r"17h[0-9a-f]{16}E$")


class Summary:
    """What was written and what no source described."""

    __slots__ = (
        "procedures",
        "rows",
        "split_procedures",
        "uncovered_bytes",
        "units",
        "without_lines",
    )

    def __init__(self) -> None:
        self.units = 0
        self.procedures = 0
        self.split_procedures = 0
        self.rows = 0
        self.without_lines: list[str] = []  # split procedures, no line at all
        self.uncovered_bytes = 0  # bytes of moved fragments no source of lines covers


Spans = list[tuple[int, int]]
ProcedureSpans = tuple[str, str | None, Spans]  # one of ModuleIndex.procedure_spans()


class _Unit:
    """One compile unit being filled: its subprograms (those without inlined calls as
    (name, external, spans), encoded together with _Writer.subprograms; those with them as
    attributes, kept until the unit's abstract instances are placed), its code ranges as
    arrays, and its line program (rows are encoded, not kept)."""

    def __init__(self, name: str | None, line_strings: StringTable) -> None:
        self.name = name
        self.comp_dir = os.path.dirname(name) if name and os.path.isabs(name) else ""
        # None: the next of `plain`
        self.dies: list[tuple[list[tuple[int, int, int | bytes]], list[InlinedRun]] | None] = []
        self.plain: list[tuple[str, bool, Spans]] = []
        self.starts, self.ends = array("Q"), array("Q")
        self.callees: dict[str, int] = {}  # inlined function -> its abstract DIE (later)
        self.program = None if name is None else LineProgram(self.comp_dir, name, line_strings)
        self.rows = 0
        self.languages: Counter[int] = Counter()  # its procedures' units' DW_AT_language
        self.mangled = False  # a procedure's name is Itanium C++'s

    def add(self, die: tuple[str, bool] | list[tuple[int, int, int | bytes]], spans: Spans,
            sequences: list[list[Row]], inlined: list[InlinedRun]) -> None:
        """One procedure: its DIE ((name, external) of one without children, or attributes
        to write with its `inlined` runs), its code, and its rows (`sequences`: one list per
        span, or none at all)."""
        for start, end in spans:
            self.starts.append(start)
            self.ends.append(end)
        if isinstance(die, tuple):
            self.dies.append(None)
            self.plain.append((die[0], die[1], spans))
        else:
            self.dies.append((die, inlined))
            stack = list(inlined)
            while stack:
                node = stack.pop()
                self.callees.setdefault(node.call[0], 0)
                stack += node.children
        if self.program is None or not sequences:
            return
        for (_, end), rows in zip(spans, sequences, strict=True):
            for address, path, line, column, is_stmt in rows:
                self.program.row(address, path, line, column, is_stmt)
            self.rows += len(rows)
            self.program.end_sequence(end)


def has_own_dwarf(index: ModuleIndex) -> bool:
    """True when the module's DWARF (in it or its separate debug file) already covers its moved
    code: then that is the truth, and nothing is written."""
    lines = index.dwarf_lines
    if not lines.available:
        return False
    moved = index.moved_starts()
    return any(lines.lookup(start) is not None for start in moved) if moved else True


def build(index: ModuleIndex, also: list[tuple[str, bytes]] | None = None,
          progress: Callable[[str], None] | None = None,
          procedures: Iterable[ProcedureSpans] | None = None) -> tuple[bytes, Summary]:
    """The debug file's bytes for the module `index` describes (with the sections `also`),
    and what went into it (`progress` hears how far a long walk has come; `procedures`:
    index.procedure_spans() when the caller has them already)."""
    data, summary = sections(index, progress=progress, procedures=procedures)
    with open(index.binary.path, "rb") as f, \
            mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as module:
        # mapped, not read: only its headers, notes and symbols are copied (a BOLTed
        # libLLVM is 236 MB)
        return write_debug_file(module, index.binary.path, [*data, *(also or [])]), summary


PROGRESS_EVERY = 2.0  # seconds between progress lines


def sections(index: ModuleIndex, keep: Callable[[int], bool] | None = None,
             after: Mapping[str, int] | None = None,
             progress: Callable[[str], None] | None = None,
             walker: CodeWalker | None = None, asks: Callable[[int], bool] | None = None,
             procedures: Iterable[ProcedureSpans] | None = None
             ) -> tuple[list[tuple[str, bytes]], Summary]:
    """The DWARF sections describing the module's procedures (those whose entry `keep`
    says, else all), to be appended to sections of the sizes `after` gives (offsets in them
    count from there), and what went into them; `walker`: what gives a procedure's lines and
    inlined calls (the index's, by default); `asks`: whether the line sources may know the
    procedure at an entry (else it is described by name alone, none asked)."""
    at = dict(after or {})
    summary = Summary()
    units: dict[str | None, _Unit] = {}
    line_strings = StringTable(at.get(".debug_line_str", 0))
    out = _Writer(at)
    walker = CodeWalker(index) if walker is None else walker
    symbols = _Symbols(index.binary)
    disjoint = _disjoint(index.procedure_spans() if procedures is None else procedures)
    has_lines = walker.has_lines
    language_at = walker.language if walker.has_dwarf else None
    said = time.monotonic()
    for k, (name, symbol, spans, split) in enumerate(disjoint):
        entry = spans[0][0]
        if keep is not None and not keep(entry):
            continue
        if progress is not None and not k % 1024 and time.monotonic() - said > PROGRESS_EVERY:
            said = time.monotonic()
            progress(f"unsplit: describing {os.path.basename(index.binary.path)}: "
                     f"{k:,} of {len(disjoint):,} procedures…")
        found = symbols.at(symbol or name, entry)
        sequences: list[list[Row]] = []  # none: no source of lines (a stripped library)
        inlined: list[InlinedRun] = []
        asked = asks is None or asks(entry)
        if has_lines and asked:
            walked = [walker.walk(start, end) for start, end in spans]
            sequences = [rows for rows, _ in walked]
            inlined = [r for _, roots in walked for r in roots]
            unit_name = _unit_name(sequences, found)
        else:
            unit_name = found[1] if found[0] else None
        unit = units.get(unit_name)
        if unit is None:
            unit = units[unit_name] = _Unit(unit_name, line_strings)
        external = not found[0]
        if inlined and unit.program is not None and any(sequences):
            unit.add(out.subprogram_attributes(name, external, spans), spans, sequences,
                     inlined)
        else:
            unit.add((name, external), spans, sequences, [])
        if not unit.mangled:
            unit.mangled = _is_cplusplus(name)
        language = None if language_at is None or not asked else language_at(entry)
        if language is not None:
            unit.languages[language] += 1
        summary.procedures += 1
        if split:
            summary.split_procedures += 1
            if not any(sequences):
                summary.without_lines.append(name)
            for m, (start, end) in enumerate(spans[1:], 1):
                summary.uncovered_bytes += _uncovered(sequences[m], start, end) \
                    if sequences else end - start
    data = _encode(out, [units[k] for k in sorted(units, key=lambda n: (n is None, n or ""))],
                   line_strings, summary, at)
    return data, summary


def _disjoint(procedures: Iterable[ProcedureSpans]
              ) -> list[tuple[str, str | None, Spans, bool]]:
    """Each procedure (name, entry fragment's symbol, fragments' [start, end), split or not),
    less any whose code overlaps code an earlier one holds (an alias symbol, a symbol over a
    range): DWARF's subprograms of a unit must not overlap (llvm-dwarfdump --verify)."""
    procedures = list(procedures)
    flat = [span for _, _, spans in procedures for span in spans]
    starts, ends = list(map(itemgetter(0), flat)), list(map(itemgetter(1), flat))
    if flat and 0 not in map(len, map(itemgetter(2), procedures)) \
            and not any(map(ge, starts, ends)):
        # Non-empty [start, end) runs are disjoint when the k-th least end is at most the
        # k+1-th least start (else two cover the k+1-th start): told in C loops, as for
        # every procedure of a BOLTed libLLVM; else each run in turn.
        starts.sort()
        ends.sort()
        if not any(map(gt, ends[:-1], starts[1:])):
            return [(name, symbol, spans, len(spans) > 1)
                    for name, symbol, spans in procedures]
    return _disjoint_one_by_one(procedures)


def _disjoint_one_by_one(procedures: list[ProcedureSpans]
                         ) -> list[tuple[str, str | None, Spans, bool]]:
    candidates: list[tuple[str, str | None, Spans, bool]] = []
    starts, ends, owners = array("Q"), array("Q"), array("L")
    for name, symbol, fragments in procedures:
        i = len(candidates)
        kept = 0
        for s, e in fragments:
            if e > s:
                starts.append(s)
                ends.append(e)
                owners.append(i)
                kept += 1
        if kept:  # the caller's list, not a copy (129k in libLLVM), unless an empty span goes
            spans = fragments if kept == len(fragments) else [(s, e) for s, e in fragments
                                                               if e > s]
            candidates.append((name, symbol, spans, len(fragments) > 1))
    # By start, then end, then order listed (ties are rare: an alias, a symbol over a range;
    # none at all is told by a set, without a pass in Python).
    order = sorted(range(len(starts)), key=starts.__getitem__)
    k = 0 if len(set(starts)) < len(starts) else len(order)
    while k < len(order):
        j = k + 1
        while j < len(order) and starts[order[j]] == starts[order[k]]:
            j += 1
        if j - k > 1:
            order[k:j] = sorted(order[k:j], key=lambda m: (ends[m], owners[m]))
        k = j
    rejected: set[int] = set()
    end, holder = -1, -1
    for m in order:
        s, e, i = starts[m], ends[m], owners[m]
        if i in rejected:
            continue
        if s < end and holder != i:
            rejected.add(max(i, holder))  # the later-listed one (known sources come first)
            if holder in rejected:
                end, holder = e, i
            continue
        if e > end:
            end, holder = e, i
    if not rejected:
        return candidates
    return [c for i, c in enumerate(candidates) if i not in rejected]


class _Symbols:
    """The module's function symbols by (name, address), from its symbol columns (as
    Binary.function_at answers, without a symbol object each): (local, STT_FILE name)."""

    def __init__(self, binary: Binary) -> None:
        self.cols = binary.function_columns
        self.first: dict[int, int] = {}  # address -> the first symbol there
        self.more: dict[int, list[int]] = {}  # address -> the others, in table order
        for i, value in enumerate(self.cols.values):
            if self.first.setdefault(value, i) != i:
                self.more.setdefault(value, []).append(i)
        self.local_at = set(compress(self.cols.values, self.cols.locals))

    def at(self, name: str, address: int) -> tuple[bool, str | None]:
        """(local, its file) of the first function symbol `name` at `address`; (False, None)
        when there is none, or only global ones there (no name read: a global symbol has no
        STT_FILE, a stripped library's are all global)."""
        if address not in self.local_at:
            return _GLOBAL
        i = self.first[address]
        cols = self.cols
        for j in (i, *self.more.get(address, ())):
            if cols.name(j) == name:
                file = cols.files[j]
                return bool(cols.locals[j]), None if file < 0 else cols.name_at(file)
        return _GLOBAL


_GLOBAL = (False, None)


def _uncovered(rows: list[Row], start: int, end: int) -> int:
    if not rows:
        return end - start
    bounds = [r[0] for r in rows] + [end]
    missing = rows[0][0] - start
    for (address, _, line, _, _), nxt in zip(rows, bounds[1:], strict=True):
        if line == 0:
            missing += nxt - address
    return missing


def _unit_name(sequences: list[list[Row]], symbol: tuple[bool, str | None]) -> str | None:
    """The source file most of the procedure's code comes from; else the STT_FILE the symbol
    table puts a local function under; else None (a unit with no name and no lines)."""
    weight: Counter[str] = Counter()
    for rows in sequences:
        for row in rows:
            if row[2]:
                weight[row[1]] += 1
    if weight:
        return weight.most_common(1)[0][0]
    return symbol[1] if symbol[0] else None


class _Writer:
    """The file-wide tables (abbreviations, strings, range lists, .debug_info) and the
    subprogram DIEs, each encoded straight to bytes (one of four shapes)."""

    def __init__(self, at: dict[str, int]) -> None:
        self.abbrevs = AbbrevTable()
        self.strings = StringTable(at.get(".debug_str", 0))
        self.ranges = RangeLists(at.get(".debug_rnglists", 0))
        self.info = InfoWriter(self.abbrevs, at.get(".debug_info", 0),
                               at.get(".debug_abbrev", 0))
        self._codes: dict[tuple[bool, bool], bytes] = {}

    def subprogram_attributes(self, name: str, external: bool, spans: Spans
                              ) -> list[tuple[int, int, int | bytes]]:
        out: list[tuple[int, int, int | bytes]] = [
            (A.DW_AT_name, A.DW_FORM_strp, self.strings.offset(_plain_name(name))),
            (A.DW_AT_linkage_name, A.DW_FORM_strp, self.strings.offset(name))]
        if external:
            out.append((A.DW_AT_external, A.DW_FORM_flag_present, 0))
        if len(spans) == 1:
            out += [(A.DW_AT_low_pc, A.DW_FORM_addr, spans[0][0]),
                    (A.DW_AT_high_pc, A.DW_FORM_data8, spans[0][1] - spans[0][0])]
        else:
            out.append((A.DW_AT_ranges, A.DW_FORM_sec_offset, self.ranges.add(spans)))
        return out

    def subprograms(self, plain: list[tuple[str, bool, Spans]]) -> Iterator[bytes]:
        """subprogram_attributes' DIEs without children, as bytes, for each (name, external,
        spans), in turn; the strings of a few thousand stored together (StringTable.offsets),
        so that their names, offsets and DIEs are not all held at once (128k in libLLVM)."""
        codes = self._codes
        one, ranges, add_ranges = _ONE_RANGE.pack, _RANGES.pack, self.ranges.add
        for lo in range(0, len(plain), _DIES_AT_ONCE):
            chunk = plain[lo:lo + _DIES_AT_ONCE]
            names = [p[0] for p in chunk]
            named = self.strings.offsets(list(map(_plain_name, names)))
            linkage = self.strings.offsets(names)
            for (_, external, spans), a, b in zip(chunk, named, linkage, strict=True):
                shape = (external, len(spans) == 1)
                code = codes.get(shape) or self._code(shape)
                if shape[1]:
                    start, end = spans[0]
                    yield code + one(a, b, start, end - start)
                else:
                    yield code + ranges(a, b, add_ranges(spans))

    def _code(self, shape: tuple[bool, bool]) -> bytes:
        """The abbreviation code of a subprogram without children, (external, one range)."""
        forms = [(A.DW_AT_name, A.DW_FORM_strp), (A.DW_AT_linkage_name, A.DW_FORM_strp)]
        if shape[0]:
            forms.append((A.DW_AT_external, A.DW_FORM_flag_present))
        forms += [(A.DW_AT_low_pc, A.DW_FORM_addr), (A.DW_AT_high_pc, A.DW_FORM_data8)] \
            if shape[1] else [(A.DW_AT_ranges, A.DW_FORM_sec_offset)]
        code = self._codes[shape] = uleb(self.abbrevs.code(A.DW_TAG_subprogram, False,
                                                           tuple(forms)))
        return code


_DIES_AT_ONCE = 4096
_ONE_RANGE = struct.Struct("<IIQQ")  # name, linkage name, low_pc, high_pc
_RANGES = struct.Struct("<III")  # name, linkage name, ranges


def _is_cplusplus(name: str) -> bool:
    return name.startswith("_Z") and not _RUST_LEGACY.search(name, max(len(name) - 20, 0))


def _merged(unit: _Unit) -> Spans:
    """The unit's code ranges, sorted and merged."""
    starts, ends = unit.starts, unit.ends
    out: Spans = []
    for k in sorted(range(len(starts)), key=starts.__getitem__):
        start, end = starts[k], ends[k]
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _encode(out: _Writer, units: list[_Unit], line_strings: StringTable,
            summary: Summary, at: dict[str, int]) -> list[tuple[str, bytes]]:
    aranges = ArangesWriter()
    info, strings, ranges = out.info, out.strings, out.ranges
    lines = bytearray()
    line_base = at.get(".debug_line", 0)
    producer = strings.offset(f"unsplit {__version__} debuginfo")
    for unit in units:
        unit_spans = _merged(unit)
        attributes: list[tuple[int, int, int | bytes]] = [
            (A.DW_AT_producer, A.DW_FORM_strp, producer)]
        language = _language(unit)
        if language is not None:
            attributes.append((A.DW_AT_language, A.DW_FORM_data2, language))
        if unit.name is not None:
            attributes += [
                (A.DW_AT_name, A.DW_FORM_strp, strings.offset(unit.name)),
                (A.DW_AT_comp_dir, A.DW_FORM_line_strp, line_strings.offset(unit.comp_dir))]
            if unit.rows and unit.program is not None:
                attributes.append((A.DW_AT_stmt_list, A.DW_FORM_sec_offset,
                                   line_base + len(lines)))
        attributes += [(A.DW_AT_low_pc, A.DW_FORM_addr, 0),
                       (A.DW_AT_ranges, A.DW_FORM_sec_offset, ranges.add(unit_spans))]
        unit_offset = info.begin_unit()
        info.die(A.DW_TAG_compile_unit, True, attributes)
        for callee in unit.callees:  # abstract instances, §3.3.8.1
            unit.callees[callee] = info.unit_relative(info.die(A.DW_TAG_subprogram, False, [
                (A.DW_AT_name, A.DW_FORM_strp, strings.offset(callee)),
                (A.DW_AT_inline, A.DW_FORM_udata, DW_INL_inlined)]))
        plain = out.subprograms(unit.plain)
        for die in unit.dies:
            if die is None:
                info.data += next(plain)
                continue
            attributes_, inlined = die
            info.die(A.DW_TAG_subprogram, bool(inlined), attributes_)
            if inlined:
                _write_inlined(info, unit, inlined)
                info.end_children()
        unit.dies, unit.plain = [], []
        info.end_unit()
        if unit.rows and unit.program is not None:  # after the DIEs: call sites add files
            lines += unit.program.encode()
            summary.rows += unit.rows
        aranges.add(unit_offset, unit_spans)
        summary.units += 1
    return [(".debug_abbrev", out.abbrevs.finish()), (".debug_info", bytes(info.data)),
            (".debug_str", bytes(strings.data)), (".debug_line", bytes(lines)),
            (".debug_line_str", bytes(line_strings.data)), (".debug_rnglists", ranges.finish()),
            (".debug_aranges", aranges.finish())]


DW_INL_inlined = 1  # §3.3.8, Table 3.4


def _language(unit: _Unit) -> int | None:
    """The unit's DW_AT_language: its procedures' own units' (a unit named after a header, say
    simdjson.h or basic_string.h, holds C++ procedures), else by the file's extension, else C++
    where a procedure's name is Itanium-mangled. Without it GDB takes a unit's language as
    unknown and shows the linkage names (`_ZL4walk…`) of its functions in `bt`."""
    if unit.languages:
        return unit.languages.most_common(1)[0][0]
    if unit.name is not None and (by_name := _LANGUAGES.get(os.path.splitext(unit.name)[1])):
        return by_name
    if unit.mangled:
        return DW_LANG_C_plus_plus
    return None


def _write_inlined(info: InfoWriter, unit: _Unit, nodes: list[InlinedRun]) -> None:
    """Concrete inlined instances, §3.3.8.2: origin, the code run, the call site (§3.4)."""
    assert unit.program is not None
    for node in nodes:
        callee, path, line, column = node.call
        attributes: list[tuple[int, int, int | bytes]] = [
            (A.DW_AT_abstract_origin, A.DW_FORM_ref4, unit.callees[callee]),
            (A.DW_AT_low_pc, A.DW_FORM_addr, node.start),
            (A.DW_AT_high_pc, A.DW_FORM_data8, node.end - node.start)]
        if path:
            attributes.append((A.DW_AT_call_file, A.DW_FORM_udata, unit.program.file(path)))
        attributes += [(A.DW_AT_call_line, A.DW_FORM_udata, line),
                       (A.DW_AT_call_column, A.DW_FORM_udata, column)]
        info.die(A.DW_TAG_inlined_subroutine, bool(node.children), attributes)
        if node.children:
            _write_inlined(info, unit, node.children)
            info.end_children()


def _plain_name(name: str) -> str:
    """DW_AT_name: a C++ function's demangled name without its parameters (§2.15: the name as it
    appears in the source); anything else as it is."""
    if not name.startswith("_Z"):
        return name
    text = demangle(name)
    depth = 0
    at = len(text)
    while True:  # the last balanced "(...)" goes: parentheses found from the end
        at = max(text.rfind("(", 0, at), text.rfind(")", 0, at))
        if at < 0:
            return text
        if text[at] == ")":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return text[:at]
