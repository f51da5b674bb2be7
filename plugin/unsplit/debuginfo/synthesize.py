"""What the core knows of a split module, written as DWARF 5 in a separate debug file.

Every procedure becomes a DW_TAG_subprogram whose ranges cover all its fragments (entry
fragment first: GDB and LLDB take the first range of a non-contiguous function as its entry);
the line table holds, for each byte of its code, the row ``ModuleIndex.line_at`` answers (ESL,
the module's own DWARF, BOLTed code through BAT to the pre-BOLT binary's DWARF) — a row is
written only where the answer changes, so llvm-symbolizer and the debuggers, which take the last
row at or below an address, get exactly ``unsplit where``'s line at every instruction. Code no
source of lines covers gets no rows (and is listed), never a guessed line.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from unsplit import __version__
from unsplit.debuginfo.dwarf import abbrev as A
from unsplit.debuginfo.dwarf.abbrev import AbbrevTable
from unsplit.debuginfo.dwarf.aranges import ArangesWriter
from unsplit.debuginfo.dwarf.elf import write_debug_file
from unsplit.debuginfo.dwarf.info import InfoWriter
from unsplit.debuginfo.dwarf.line import LineProgram
from unsplit.debuginfo.dwarf.rnglists import RangeLists
from unsplit.debuginfo.dwarf.strings import StringTable
from unsplit.index.code_lines import CodeWalker, InlinedRun, Row
from unsplit.index.demangle import demangle
from unsplit.index.model import Procedure
from unsplit.index.module_index import ModuleIndex

_LANGUAGES = {  # DW_LANG_* by the primary file's extension, DWARF 5 §7.12 Table 7.17
    ".c": 0x1D, ".cc": 0x21, ".cpp": 0x21, ".cxx": 0x21, ".C": 0x21, ".rs": 0x1C,
}
DW_LANG_C_plus_plus = 0x04
# Rust's legacy mangling is Itanium's with a hash as the last name part: not C++.
_RUST_LEGACY = re.compile(r"17h[0-9a-f]{16}E$")


@dataclass
class Summary:
    """What was written and what no source described."""

    units: int = 0
    procedures: int = 0
    split_procedures: int = 0
    rows: int = 0
    without_lines: list[str] = field(default_factory=list)  # split procedures, no line at all
    uncovered_bytes: int = 0  # bytes of moved fragments no source of lines covers


class _Unit:
    """One compile unit being filled: its procedures' spans and its line program (rows are
    encoded as each procedure's are found, and not kept)."""

    def __init__(self, name: str | None, line_strings: StringTable) -> None:
        self.name = name
        self.comp_dir = os.path.dirname(name) if name and os.path.isabs(name) else ""
        self.procedures: list[tuple[Procedure, list[tuple[int, int]], list[InlinedRun]]] = []
        self.callees: dict[str, int] = {}  # inlined function -> its abstract DIE (later)
        self.program = None if name is None else LineProgram(self.comp_dir, name, line_strings)
        self.rows = 0
        self.languages: Counter[int] = Counter()  # its procedures' units' DW_AT_language

    def add(self, proc: Procedure, spans: list[tuple[int, int]], sequences: list[list[Row]],
            inlined: list[InlinedRun]) -> None:
        if self.program is None or not any(sequences):
            inlined = []  # a call site's file is a number in a line table
        self.procedures.append((proc, spans, inlined))
        stack = list(inlined)
        while stack:
            node = stack.pop()
            self.callees.setdefault(node.call[0], 0)
            stack += node.children
        if self.program is None:
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
    moved = index.moved_fragments()
    return any(lines.lookup(f.start) is not None for f in moved) if moved else True


def build(index: ModuleIndex, also: list[tuple[str, bytes]] | None = None
          ) -> tuple[bytes, Summary]:
    """The debug file's bytes for the module `index` describes (with the sections `also`),
    and what went into it."""
    data, summary = sections(index)
    with open(index.binary.path, "rb") as f:
        module = f.read()
    return write_debug_file(module, index.binary.path, [*data, *(also or [])]), summary


def sections(index: ModuleIndex, keep: Callable[[Procedure], bool] | None = None,
             after: Mapping[str, int] | None = None) -> tuple[list[tuple[str, bytes]], Summary]:
    """The DWARF sections describing the module's procedures (those `keep` says, else all),
    to be appended to sections of the sizes `after` gives (offsets in them count from
    there), and what went into them."""
    at = dict(after or {})
    summary = Summary()
    units: dict[str | None, _Unit] = {}
    line_strings = StringTable(at.get(".debug_line_str", 0))
    walker = CodeWalker(index)
    for proc, spans in _disjoint(index):
        if keep is not None and not keep(proc):
            continue
        walked = [walker.walk(start, end) for start, end in spans]
        sequences = [rows for rows, _ in walked]
        name = _unit_name(index, proc, sequences)
        unit = units.get(name)
        if unit is None:
            unit = units[name] = _Unit(name, line_strings)
        unit.add(proc, spans, sequences, [r for _, roots in walked for r in roots])
        language = walker.language(proc.entry)
        if language is not None:
            unit.languages[language] += 1
        summary.procedures += 1
        if proc.is_split:
            summary.split_procedures += 1
            if not any(sequences):
                summary.without_lines.append(proc.name)
            for (start, end), rows in zip(spans[1:], sequences[1:], strict=True):
                summary.uncovered_bytes += _uncovered(rows, start, end)
    data = _encode(index, [units[k] for k in sorted(units, key=lambda n: (n is None, n or ""))],
                   line_strings, summary, at)
    return data, summary


def _disjoint(index: ModuleIndex) -> list[tuple[Procedure, list[tuple[int, int]]]]:
    """Each procedure with its fragments' [start, end), less any whose code overlaps code an
    earlier one holds (an alias symbol, a symbol over a range): DWARF's subprograms of a unit
    must not overlap (llvm-dwarfdump --verify)."""
    candidates = []
    for proc in index.all_procedures():
        spans = [(f.start, f.end) for f in proc.fragments if f.end > f.start]
        if spans:
            candidates.append((proc, spans))
    order = sorted(((s, e, i) for i, (_, spans) in enumerate(candidates) for s, e in spans))
    rejected: set[int] = set()
    end, holder = -1, -1
    for s, e, i in order:
        if i in rejected:
            continue
        if s < end and holder != i:
            rejected.add(max(i, holder))  # the later-listed one (known sources come first)
            if holder in rejected:
                end, holder = e, i
            continue
        if e > end:
            end, holder = e, i
    return [c for i, c in enumerate(candidates) if i not in rejected]


def _uncovered(rows: list[Row], start: int, end: int) -> int:
    if not rows:
        return end - start
    bounds = [r[0] for r in rows] + [end]
    missing = rows[0][0] - start
    for (address, _, line, _, _), nxt in zip(rows, bounds[1:], strict=True):
        if line == 0:
            missing += nxt - address
    return missing


def _unit_name(index: ModuleIndex, proc: Procedure, sequences: list[list[Row]]) -> str | None:
    """The source file most of the procedure's code comes from; else the STT_FILE the symbol
    table puts a local function under; else None (a unit with no name and no lines)."""
    weight: Counter[str] = Counter()
    for rows in sequences:
        for row in rows:
            if row[2]:
                weight[row[1]] += 1
    if weight:
        return weight.most_common(1)[0][0]
    frag = proc.fragments[0]
    symbol = index.binary.function_at(frag.symbol or proc.name, frag.start)
    return symbol.file if symbol is not None and symbol.local else None


def _encode(index: ModuleIndex, units: list[_Unit], line_strings: StringTable,
            summary: Summary, at: dict[str, int]) -> list[tuple[str, bytes]]:
    abbrevs, aranges = AbbrevTable(), ArangesWriter()
    ranges = RangeLists(at.get(".debug_rnglists", 0))
    strings = StringTable(at.get(".debug_str", 0))
    info = InfoWriter(abbrevs, at.get(".debug_info", 0), at.get(".debug_abbrev", 0))
    lines = bytearray()
    line_base = at.get(".debug_line", 0)
    producer = strings.offset(f"unsplit {__version__} debuginfo")
    for unit in units:
        unit_spans = _merge([s for _, spans, _ in unit.procedures for s in spans])
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
        for proc, spans, inlined in unit.procedures:
            info.die(A.DW_TAG_subprogram, bool(inlined),
                     _subprogram(index, proc, spans, strings, ranges))
            if inlined:
                _write_inlined(info, unit, inlined)
                info.end_children()
        info.end_unit()
        if unit.rows and unit.program is not None:  # after the DIEs: call sites add files
            lines += unit.program.encode()
            summary.rows += unit.rows
        aranges.add(unit_offset, unit_spans)
        summary.units += 1
    return [(".debug_abbrev", abbrevs.finish()), (".debug_info", bytes(info.data)),
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
    if any(p.name.startswith("_Z") and not _RUST_LEGACY.search(p.name)
           for p, _, _ in unit.procedures):
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


def _subprogram(index: ModuleIndex, proc: Procedure, spans: list[tuple[int, int]],
                strings: StringTable, ranges: RangeLists) -> list[tuple[int, int, int | bytes]]:
    frag = proc.fragments[0]
    symbol = index.binary.function_at(frag.symbol or proc.name, frag.start)
    out: list[tuple[int, int, int | bytes]] = [
        (A.DW_AT_name, A.DW_FORM_strp, strings.offset(_plain_name(proc.name))),
        (A.DW_AT_linkage_name, A.DW_FORM_strp, strings.offset(proc.name))]
    if symbol is None or not symbol.local:
        out.append((A.DW_AT_external, A.DW_FORM_flag_present, 0))
    if len(spans) == 1:
        out += [(A.DW_AT_low_pc, A.DW_FORM_addr, spans[0][0]),
                (A.DW_AT_high_pc, A.DW_FORM_data8, spans[0][1] - spans[0][0])]
    else:
        out.append((A.DW_AT_ranges, A.DW_FORM_sec_offset, ranges.add(spans)))
    return out


def _plain_name(name: str) -> str:
    """DW_AT_name: a C++ function's demangled name without its parameters (§2.15: the name as it
    appears in the source); anything else as it is."""
    if not name.startswith("_Z"):
        return name
    text = demangle(name)
    depth = 0
    for i in range(len(text) - 1, -1, -1):  # drop the last balanced "(...)" and what follows
        c = text[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return text[:i]
    return text


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out
