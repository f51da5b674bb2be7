"""The debug file of a BOLTed module whose pre-BOLT input has DWARF: the input's whole DWARF
(units, types, functions, scopes, variables, call sites, lines) with every code address moved
to where BOLT put that code (unsplit.index.bolt.input_map), as BOLT's own --update-debug-sections
would have written it. Strings and string offsets are the input's. Procedures no input unit
describes (startup code, assembly) get a unit of names and lines (unsplit.debuginfo.synthesize)
after the input's."""

from __future__ import annotations

import mmap
from bisect import bisect_right
from typing import NamedTuple

from unsplit.debuginfo import synthesize
from unsplit.debuginfo.dwarf.aranges import ArangesWriter
from unsplit.debuginfo.dwarf.elf import write_debug_file
from unsplit.debuginfo.translate import refs
from unsplit.debuginfo.translate.described import TranslatedLines
from unsplit.debuginfo.translate.lists import Mover
from unsplit.debuginfo.translate.strings import own_strings
from unsplit.debuginfo.translate.units import Rewritten, UnitRewriter
from unsplit.elf.binary import Binary
from unsplit.index.bolt import bat_translate, prebolt
from unsplit.index.bolt.input_map import InputMap, merge
from unsplit.index.module_index import ModuleIndex

COPIED = (".debug_str", ".debug_line_str", ".debug_str_offsets")
READ = (".debug_info", ".debug_types", ".debug_abbrev", ".debug_addr", ".debug_line",
        ".debug_rnglists", ".debug_loclists", ".debug_ranges", ".debug_loc", *COPIED)


class Summary(NamedTuple):
    """What was written and what BAT gave no place to."""

    input: str
    units: int
    functions: int  # input functions BAT places
    described: int  # procedures no input unit describes, given a unit of names
    left_out: list[str]  # units, one line each
    dropped: dict[str, int]
    warnings: list[str]  # lists and line tables left out
    unplaced_functions: list[str]


def input_with_dwarf(binary: Binary) -> tuple[Binary, Binary] | None:
    """The BOLT output's pre-BOLT input and the file holding its DWARF, when both exist (and
    the output has BAT to move that DWARF through): then its debug file is translated."""
    found = prebolt.input_for(binary) if bat_translate.has_bat(binary) else None
    if found is None:
        return None
    dwarf = found.dwarf_binary
    return None if dwarf is None else (found, dwarf)


def build(index: ModuleIndex, input_binary: Binary, dwarf: Binary,
          also: list[tuple[str, bytes]] | None = None) -> tuple[bytes, Summary]:
    """The debug file's bytes (with the sections `also` besides the DWARF moved), and what
    went into it."""
    imap = InputMap.of(index.binary, input_binary)
    if imap is None:
        raise ValueError(f"{index.binary.path} has no BAT")
    inputs = {name: data for name in READ if (data := dwarf.section_data(name)) is not None}
    mover = Mover(imap)
    rewriter = UnitRewriter(inputs, mover)
    info = rewriter.section(".debug_info")
    types = rewriter.section(".debug_types") if ".debug_types" in inputs else None
    rewriter.units -= refs.settle(info, [types] if types else [], rewriter.left_out)
    addr, unplaced = rewriter.addr.write(imap, info.data)
    mover.dropped["addresses"] += unplaced
    sections: list[tuple[str, bytes]] = [(".debug_abbrev", bytes(rewriter.abbrev))]
    info_bytes, aranges = _kept(info, info)
    sections.append((".debug_info", info_bytes))
    if types is not None:
        sections.append((".debug_types", _kept(types, info)[0]))
    if ".debug_str" in inputs and ".debug_str_offsets" in inputs:
        strings, offsets, problems = own_strings(inputs[".debug_str"],
                                                 inputs[".debug_str_offsets"])
        inputs = {**inputs, ".debug_str": strings, ".debug_str_offsets": offsets}
        mover.warnings += problems
    sections += [(name, inputs[name]) for name in COPIED if name in inputs]
    sections.append((".debug_line", bytes(rewriter.lines.out)))
    if addr:
        sections.append((".debug_addr", addr))
    sections += [(name, bytes(data)) for name, data in rewriter.outputs.items() if data]
    sections.append((".debug_aranges", aranges))
    covered = merge([r for _, ranges in info.aranges for r in ranges])
    kept = {start for start, _ in info.kept}
    walker = TranslatedLines.of(
        index, imap, [(rewriter.facts[unit], ranges) for unit, ranges in info.aranges
                      if unit in kept and unit in rewriter.facts], rewriter.lines,
        (rewriter.inputs.get(".debug_str", b""), rewriter.inputs.get(".debug_line_str", b"")))
    extra, names = synthesize.sections(index, lambda entry: not _covered(covered, entry),
                                       {name: len(data) for name, data in sections},
                                       walker=walker,
                                       asks=lambda entry: _described(index, imap, covered, entry))
    by_name = dict(sections)
    for name, data in extra:
        by_name[name] = by_name.get(name, b"") + data
    summary = Summary(input_binary.path, rewriter.units, imap.functions, names.procedures,
                      rewriter.left_out, {k: v for k, v in sorted(mover.dropped.items()) if v},
                      mover.warnings, imap.unplaced)
    with open(index.binary.path, "rb") as f, \
            mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as module:
        # mapped, not read: only its headers, notes and symbols are copied
        return write_debug_file(module, index.binary.path,
                                [*by_name.items(), *(also or [])]), summary


def _described(index: ModuleIndex, imap: InputMap, covered: list[tuple[int, int]],
               entry: int) -> bool:
    """Whether the input's lines of a procedure no translated unit covers are worth asking:
    only where its code stands for input code that a unit describes (BOLT's patched original
    foo.org.0 stands for foo's entry, which foo's unit covers where foo went). Other code
    (crt code, _start, moved or not) has no unit's line in the input either: asking would
    import pyelftools and read the input's DWARF to find none."""
    at = index.bat_input_address(entry)
    if at is None:
        return False
    placed = imap.start(at)
    return placed is None or _covered(covered, placed)


def _covered(ranges: list[tuple[int, int]], entry: int) -> bool:
    """Whether a unit of the input covers a procedure's entry."""
    i = bisect_right(ranges, (entry, 1 << 64)) - 1
    return i >= 0 and entry < ranges[i][1]


def _kept(done: Rewritten, info: Rewritten) -> tuple[bytes, bytes]:
    """The section without the units left out, and .debug_aranges for its units (offsets as
    they are in it); references into `info` moved with their units."""
    for at, size, table in done.addr_bases:
        done.data[at:at + size] = table.new_base.to_bytes(size, "little")
    refs.patch(info, done)
    new_offset: dict[int, int] = {}
    out = bytearray()
    for start, end in done.kept:
        new_offset[start] = len(out)
        out += done.data[start:end]
    aranges = ArangesWriter()
    for unit, ranges in done.aranges:
        if unit in new_offset and ranges:
            aranges.add(new_offset[unit], merge(list(ranges)))
    return bytes(out), aranges.finish()
