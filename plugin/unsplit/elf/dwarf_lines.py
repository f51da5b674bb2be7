"""Source lines for addresses from DWARF line programs (pyelftools 0.33), decoding only the CU that
covers an address, once; the row is the last one at or below it in its sequence, as LLVM's
DWARFDebugLine::lookupAddress decides. A CU that cannot be read has no lines and says so once in
``warnings``; an error raised by our own code is a bug and propagates."""

from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal

from unsplit.elf.binary import Binary
from unsplit.elf.line_row import LineRow
from unsplit.errors import DecodeError, reading
from unsplit.formats.leb128 import leb128

if TYPE_CHECKING:  # the byte readers come with the first read: a session whose frames' lines
    from unsplit.formats import line_program  # are GDB's own (the debug file) reads none

# One decoded row, kept small until asked for: (file index, line, column, is_stmt), or None
# where a sequence ended.
_Key = tuple[int, int, int, bool] | None
_MASK = (1 << 64) - 1


class _CULines:
    """The rows of one CU: sorted addresses; a LineRow is made only for a row asked for."""

    def __init__(self, rows: list[tuple[int, _Key]], names: list[tuple[str, str]],
                 first_file: int) -> None:
        # A sequence may begin exactly where another ended: its end marker must sort before the
        # new sequence's rows. Stable otherwise: the program's order at equal addresses.
        rows.sort(key=lambda r: (r[0], r[1] is not None))
        self.addresses = array("Q", (a for a, _ in rows))
        self.keys = [k for _, k in rows]
        self.names, self.first_file = names, first_file
        self._rows: list[LineRow | None] | None = None

    def row(self, i: int) -> LineRow | None:
        key = self.keys[i]
        if key is None:
            return None
        k = key[0] - self.first_file
        name, path = self.names[k] if 0 <= k < len(self.names) else ("??", "??")
        return LineRow(self.addresses[i], name, key[1], key[2], "dwarf", key[3], path)

    @property
    def rows(self) -> list[LineRow | None]:
        """Every row (made once, for the questions that walk them all)."""
        if self._rows is None:
            self._rows = [self.row(i) for i in range(len(self.keys))]
        return self._rows

    def lookup(self, address: int, past_line_0: bool = False) -> LineRow | None:
        """The row describing `address`; `past_line_0`: a line-0 row (code "not attributable
        to any source line", DWARF 5 §6.2.2: clang's merged calls) is passed over as GDB's
        reader drops it (dwarf2/read.c, lnp_state_machine::record_line), the row before it in
        its sequence going on over its bytes."""
        i = bisect_right(self.addresses, address) - 1
        while past_line_0 and i >= 0 and (key := self.keys[i]) is not None and key[1] == 0:
            i -= 1
        return None if i < 0 else self.row(i)


class DwarfLines:
    """Line look-ups in one Binary's DWARF. What it cannot read goes to `warnings` (one line
    each, once; a caller may pass its own list), and the look-up answers "no line"."""

    def __init__(self, binary: Binary, warnings: list[str] | None = None,
                 label: str = "") -> None:
        # A stripped file's lines live in its separate debug file.
        self.binary = binary.dwarf_binary or binary
        self.warnings: list[str] = [] if warnings is None else warnings
        self._label = label  # put before each warning: which file, when not the caller's own
        self._cu_ranges: tuple[array[int], array[int], list[int]] | None = None
        self._aranges: tuple[array[int], array[int], list[int]] | None = None
        self._line_data: bytes | None = None
        self._cu_lines: dict[int, _CULines] = {}
        self._cu_files: dict[int, tuple[int, list[tuple[str, str]]]] = {}
        self._names_blob: bytes | None = None
        self._plain: dict[int, tuple[line_program.LineHeader, list[tuple[str, str]]] | None] = {}
        self._bases: dict[str, set[int]] | None = None  # base name -> units naming such a file

    @property
    def available(self) -> bool:
        return self.binary.has_dwarf and self.binary.has_section(".debug_line")

    def warn(self, error: DecodeError) -> None:
        """Record what could not be read, once."""
        text = f"{self._label}{error}; its lines are ignored"
        if text not in self.warnings:
            self.warnings.append(text)

    def lookup(self, address: int) -> LineRow | None:
        """The line row describing file address `address` as the table has it (line 0 too, as
        llvm-symbolizer-22 reports it), or None."""
        return self._lookup(address, False)

    def line_as_gdb(self, address: int) -> LineRow | None:
        """The row GDB takes for `address` (`info line`, a frame's line): past a line-0 row,
        whose bytes GDB gives the line before it (a call clang gave line 0 is on the line of
        the code before it in the caller's frame)."""
        return self._lookup(address, True)

    def _lookup(self, address: int, past_line_0: bool) -> LineRow | None:
        if not self.available:
            return None
        cu_offset = self.cu_offset_at(address)
        if cu_offset is None:
            return None
        return self._lines_or_none(cu_offset).lookup(address, past_line_0)

    def change_points(self, start: int, end: int) -> list[int] | None:
        """Where lookup's answer may change in [start, end): `start` and the addresses of the
        rows there (end-of-sequence markers too); None when one CU does not cover both ends
        (then ask byte by byte)."""
        if not self.available:
            return [start]
        cu_offset = self.cu_offset_at(start)
        if cu_offset is None or self.cu_offset_at(end - 1) != cu_offset:
            return None
        table = self._lines_or_none(cu_offset)
        lo = bisect_right(table.addresses, start)
        hi = bisect_right(table.addresses, end - 1)
        return [start, *sorted(set(table.addresses[lo:hi]))]

    def rows_in(self, start: int, end: int) -> list[LineRow]:
        """Rows whose address lies in [start, end), in address order."""
        cu_offset = self.cu_offset_at(start) if self.available else None
        if cu_offset is None:
            return []
        table = self._lines_or_none(cu_offset)
        lo = bisect_right(table.addresses, start - 1)
        hi = bisect_right(table.addresses, end - 1)
        return [r for r in (table.row(i) for i in range(lo, hi)) if r is not None]

    def cu_offset_at(self, address: int) -> int | None:
        """Offset in .debug_info of the CU whose ranges cover `address` (None if none does)."""
        if not self.available:
            return None
        try:
            return self._cu_offset_at(address)
        except DecodeError as e:
            self.warn(e)
            return None

    def file_paths(self, cu_offset: int) -> list[str]:
        """Full paths of a CU's line-table files, by DW_AT_decl_file/call_file number.

        DWARF 5 numbers files from 0, earlier versions from 1 (index 0 is then "").
        """
        try:
            version, names = self._header(cu_offset)
        except DecodeError as e:
            self.warn(e)
            return []
        paths = [path for _, path in names]
        return paths if version >= 5 else ["", *paths]

    def statements(self, file: str, line: int) -> list[LineRow]:
        """Where `file`:`line` begins: the first is_stmt row of each run of rows of that line, in
        every CU whose line table names the file; when the compiler marked no row of the line
        as a statement (clang may, in cold code), the first row of each run, as GDB does.
        `file` may be a base name, a path suffix or a full path."""
        runs: list[list[LineRow]] = []
        for cu_offset in self._cus_naming(file):
            run: list[LineRow] = []
            for row in [*self._lines_or_none(cu_offset).rows, None]:
                if run and (row is None or (row.line, row.file) != (run[0].line, run[0].file)):
                    if run[0].line == line and _same_file(run[0], file):
                        runs.append(run)
                    run = []
                if row is not None:
                    run.append(row)
        stmts = [next(r for r in run if r.is_stmt) for run in runs if any(r.is_stmt for r in run)]
        return sorted(stmts or [run[0] for run in runs], key=lambda r: r.address)

    def next_line(self, file: str, line: int) -> int | None:
        """The first line of `file` after `line` that has a row: where `break FILE:LINE` goes
        for a line without code (GDB's and LLDB's rule); None when there is none."""
        found = [row.line for cu_offset in self._cus_naming(file)
                 for row in self._lines_or_none(cu_offset).rows
                 if row is not None and row.line > line and _same_file(row, file)]
        return min(found, default=None)

    def _cus_naming(self, file: str) -> list[int]:
        """The CUs whose line table names `file` (damaged ones warned about and left out)."""
        if not self.available or not self._may_name(file):
            return []
        try:
            cu_offsets = self._cu_offsets()
        except DecodeError as e:
            self.warn(e)
            return []
        out = []
        for cu_offset in self._units_maybe_naming(file, cu_offsets):
            try:
                names = self._file_names(cu_offset)
            except DecodeError as e:
                self.warn(e)
                continue
            if any(_same_name(name, path, file) for name, path in names):
                out.append(cu_offset)
        return out

    def _units_maybe_naming(self, file: str, cu_offsets: list[int]) -> list[int]:
        """The units among `cu_offsets` whose line table may name `file`: those with a file of
        its base name, or that the fast reader cannot read (pyelftools then reads and warns).
        Reading each unit's header through pyelftools costs seconds on a libc with debug info."""
        if self._bases is None:
            self._bases = self._read_bases(cu_offsets)
        wanted = {file.rsplit("/", 1)[-1], file.lstrip("./").rsplit("/", 1)[-1], _ANY_FILE}
        found = set().union(*(self._bases.get(base, ()) for base in wanted))
        return [cu for cu in cu_offsets if cu in found]

    def _read_bases(self, cu_offsets: list[int]) -> dict[str, set[int]]:
        """base name -> the units whose line table has a file of that name, from .debug_info's
        top DIEs and .debug_line's headers; units it cannot tell of under _ANY_FILE (all of them
        for a big-endian file or one whose unit headers do not parse)."""
        if not self.binary.little_endian:
            return {_ANY_FILE: set(cu_offsets)}
        from unsplit.formats import unit_ranges

        data = self.binary.section_data
        sections = unit_ranges.Sections(data(".debug_info") or b"", data(".debug_abbrev") or b"")
        line, strings = data(".debug_line") or b"", (data(".debug_str") or b"",
                                                     data(".debug_line_str") or b"")
        by_base: dict[str, set[int]] = {_ANY_FILE: set()}
        tables: dict[int, set[str]] = {}
        try:
            for cu_offset, at in unit_ranges.line_programs(sections):
                if isinstance(at, DecodeError):
                    by_base[_ANY_FILE].add(cu_offset)
                elif at is not None:
                    if at not in tables:
                        tables[at] = _file_bases(line, at, strings)
                    for base in tables[at]:
                        by_base.setdefault(base, set()).add(cu_offset)
        except DecodeError:
            return {_ANY_FILE: set(cu_offsets)}
        return by_base

    def _may_name(self, file: str) -> bool:
        """A line table stores each file name whole and NUL-terminated in .debug_line,
        .debug_line_str or .debug_str: when none holds the base name, no row can match, and
        decoding every line program to learn that costs seconds on a libc with debug info."""
        if self._names_blob is None:
            self._names_blob = b"".join(self.binary.section_data(s) or b"" for s in
                                        (".debug_line", ".debug_line_str", ".debug_str"))
        base = file.rstrip("/").rsplit("/", 1)[-1].encode("utf-8", "surrogateescape")
        return base + b"\0" in self._names_blob

    def _file_names(self, cu_offset: int) -> list[tuple[str, str]]:
        return self._header(cu_offset)[1]

    def _header(self, cu_offset: int) -> tuple[int, list[tuple[str, str]]]:
        """(version, (name, full path) of each file) of the CU's line table header, read once;
        DecodeError at the CU's DW_AT_stmt_list when it cannot be read."""
        found = self._cu_files.get(cu_offset)
        if found is None:
            found = self._cu_files[cu_offset] = self._read_header(cu_offset)
        return found

    def _read_header(self, cu_offset: int) -> tuple[int, list[tuple[str, str]]]:
        plain = self._plain_header(cu_offset)
        if plain is not None:
            return plain[0].version, plain[1]
        at = _stmt_list(self.binary, cu_offset)
        what = f"line table header of CU at {cu_offset:#x}"
        with reading(".debug_line", at, what):
            dwarf = self.binary.dwarf
            cu = dwarf.get_CU_at(cu_offset)
            program = dwarf.line_program_for_CU(cu)
            if program is None:
                return 5, []
            version = program.header["version"]
            top = cu.get_top_DIE().attributes
            comp_dir = top["DW_AT_comp_dir"].value if "DW_AT_comp_dir" in top else ""
            files = program.header["file_entry"]
            dirs = program.header["include_directory"]
            # DWARF 5 entries name their directory by index; earlier ones by index from 1.
            entries = [(e.name, e.dir_index) for e in files] if _is_list(files) else files
        header = _Header(at, what, version)
        directories = header.entries(dirs, "include_directory")
        comp = header.text(comp_dir, "DW_AT_comp_dir")
        names = [header.file_name(name, index, directories, comp)
                 for name, index in header.entries(entries, "file_entry")]
        return version, names

    def _plain_header(self, cu_offset: int
                      ) -> tuple[line_program.LineHeader, list[tuple[str, str]]] | None:
        """The CU's line table header and file names read from the bytes (formats/), so that a
        session's first `bt` need not import pyelftools and set up its DWARF; None where
        anything is unusual (a big-endian or relocatable file, a form or a table it does not
        read, a damaged field): pyelftools then reads it and says what is wrong, as before."""
        if cu_offset not in self._plain:
            self._plain[cu_offset] = None
            b = self.binary
            if b.little_endian and b.read_at(16, 2) != b"\x01\x00":  # not ET_REL: no relocations
                try:
                    self._plain[cu_offset] = _header_from_bytes(b, cu_offset)
                except DecodeError:
                    pass
        return self._plain[cu_offset]

    def _cu_offsets(self) -> list[int]:
        return [cu.cu_offset for cu in _units(self.binary.dwarf)]

    # -- which CU -------------------------------------------------------------------------

    def _cu_offset_at(self, address: int) -> int | None:
        """The CU that covers `address`: from ``.debug_aranges`` first (read with struct, no
        DIE parsed), then, only for an address it does not cover, from the top DIEs of the
        CUs it leaves out (assembly files, clang's CUs: each costs its abbreviation table)."""
        if self._aranges is None:
            try:
                self._aranges = self._read_aranges()
            except DecodeError as e:  # each CU's own ranges say the same, more slowly
                self._aranges = _spans([])
                self.warn(e)
        found = _in_spans(self._aranges, address)
        if found is not None:
            return found
        if self._cu_ranges is None:
            self._cu_ranges = self._build_cu_ranges(set(self._aranges[2]))
        return _in_spans(self._cu_ranges, address)

    def _read_aranges(self) -> tuple[array[int], array[int], list[int]]:
        data = self.binary.section_data(".debug_aranges") or b""
        return _spans(sorted(_parse_aranges(data, self.binary.little_endian)))

    def _build_cu_ranges(self, covered: set[int]) -> tuple[array[int], array[int], list[int]]:
        """CUs that cannot be read are left out (one warning each); a damaged CU header ends the
        walk (what follows it cannot be found). Read from the bytes (formats.unit_ranges), but
        for a big-endian file (through pyelftools)."""
        if not self.binary.little_endian:
            return self._parsed_cu_ranges(covered)
        from unsplit.formats import unit_ranges

        data = self.binary.section_data
        sections = unit_ranges.Sections(*(data(name) or b"" for name in (
            ".debug_info", ".debug_abbrev", ".debug_addr", ".debug_rnglists", ".debug_ranges")))
        spans: list[tuple[int, int, int]] = []
        try:
            for at, ranges in unit_ranges.unit_ranges(sections):
                if at in covered:
                    continue
                if isinstance(ranges, DecodeError):  # said at the unit, as what it points at
                    self.warn(DecodeError(".debug_info", at,
                                          f"ranges of the CU at {at:#x}: {ranges}"))
                elif any(hi > _MASK for _, hi in ranges):
                    self.warn(DecodeError(".debug_info", at, f"ranges of the CU at {at:#x}: "
                                          "a range runs past 2^64"))
                else:
                    spans.extend((lo, hi, at) for lo, hi in ranges)
        except DecodeError as e:
            self.warn(e)
        spans.sort()
        return _spans(spans)

    def _parsed_cu_ranges(self, covered: set[int]) -> tuple[array[int], array[int], list[int]]:
        spans: list[tuple[int, int, int]] = []
        dwarf = self.binary.dwarf
        try:
            for cu in _units(dwarf):
                at = cu.cu_offset
                if at in covered:
                    continue
                try:
                    with reading(".debug_info", at, f"ranges of the CU at {at:#x}"):
                        ranges = _cu_ranges(dwarf, cu)
                    if any(hi > _MASK for _, hi in ranges):
                        raise DecodeError(".debug_info", at, f"ranges of the CU at {at:#x}: "
                                          "a range runs past 2^64")
                    spans.extend((lo, hi, at) for lo, hi in ranges)
                except DecodeError as e:
                    self.warn(e)
        except DecodeError as e:
            self.warn(e)
        spans.sort()
        return _spans(spans)

    # -- one CU's rows ----------------------------------------------------------------------

    def _lines_or_none(self, cu_offset: int) -> _CULines:
        """The CU's rows; none (and a warning, once) when its line program is damaged."""
        try:
            return self._lines_of(cu_offset)
        except DecodeError as e:
            self.warn(e)
            table = self._cu_lines[cu_offset] = _CULines([], [], 0)
            return table

    def _lines_of(self, cu_offset: int) -> _CULines:
        table = self._cu_lines.get(cu_offset)
        if table is None:
            self._file_names(cu_offset)  # a damaged header says so itself, as it is
            try:
                rows, names, first = self._decode(cu_offset)
                table = _CULines(rows, names, first)
            except DecodeError as e:  # a number cut short: say whose program it was
                raise DecodeError(e.section, e.offset,
                                  f"line program of CU at {cu_offset:#x}: {e.message}") from None
            self._cu_lines[cu_offset] = table
        return table

    def _decode(self, cu_offset: int) -> tuple[list[tuple[int, _Key]], list[tuple[str, str]],
                                               int]:
        """The CU's rows, its file names and the number of its first file: the program's header
        read from the bytes (pyelftools where _plain_header leaves it), _run_program its opcodes
        (pyelftools' own state machine is slow on a big CU)."""
        plain = self._plain_header(cu_offset)
        if plain is not None:
            h = plain[0]
            if self._line_data is None:
                self._line_data = self.binary.section_data(".debug_line") or b""
            names = list(plain[1])  # DW_LNE_define_file may add to them
            fields = {"version": h.version, "minimum_instruction_length": h.min_inst_length,
                      "default_is_stmt": h.default_is_stmt, "line_base": h.line_base,
                      "line_range": h.line_range, "opcode_base": h.opcode_base,
                      "standard_opcode_lengths": h.opcode_lengths}
            rows = list(_run_program(self._line_data, h.program_start, h.end, fields, names,
                                     True))
            return rows, names, 0 if h.version >= 5 else 1
        dwarf = self.binary.dwarf
        with reading(".debug_line", lambda: _stmt_list(self.binary, cu_offset), "its header"):
            program = dwarf.line_program_for_CU(dwarf.get_CU_at(cu_offset))
            if self._line_data is None:
                self._line_data = bytes(dwarf.debug_line_sec.stream.getbuffer())
        names = self._file_names(cu_offset)
        if program is None:
            return [], names, 1
        names = list(names)  # DW_LNE_define_file may add to them
        rows = list(_run_program(self._line_data, program.program_start_offset,
                                 program.program_end_offset, program.header, names,
                                 self.binary.little_endian))
        return rows, names, 0 if program.header["version"] >= 5 else 1


def _run_program(data: bytes, at: int, end: int, header: Any, names: list[tuple[str, str]],
                 little: bool) -> Iterator[tuple[int, _Key]]:
    """The rows of one line program (DWARF 5 §6.2.5, versions 2-5), as (address, key), with
    (end address, None) closing each sequence; rows at a sequence's end address describe no
    byte of it and are dropped. DW_LNE_define_file appends to `names`."""
    version = header["version"]
    min_len = header["minimum_instruction_length"]
    default_stmt = bool(header["default_is_stmt"])
    line_base, line_range = header["line_base"], header["line_range"]
    opcode_base = header["opcode_base"]
    lengths = list(header["standard_opcode_lengths"])
    if not line_range:  # every special opcode divides by it (§6.2.5.1)
        raise DecodeError(".debug_line", at, "line_range 0 in the program's header")
    const_add = min_len * ((255 - opcode_base) // line_range)
    order: Literal["little", "big"] = "little" if little else "big"
    if end > len(data):
        raise DecodeError(".debug_line", at, f"the program runs {end - len(data)} bytes past "
                          "the end of the section")

    def uleb(i: int) -> tuple[int, int]:
        return leb128(data, i, ".debug_line", False)

    def sleb(i: int) -> tuple[int, int]:
        return leb128(data, i, ".debug_line", True)

    address, file, line, column, stmt = 0, 1, 1, 0, default_stmt
    sequence: list[tuple[int, _Key]] = []
    append = sequence.append
    i = at
    while i < end:
        op = data[i]
        i += 1
        if op >= opcode_base:  # a special opcode
            adjusted = op - opcode_base
            address = (address + min_len * (adjusted // line_range)) & _MASK
            line += line_base + adjusted % line_range
            append((address, (file, line, column, stmt)))
        elif op == 0:  # an extended opcode
            size, i = uleb(i)
            if i + size > end:
                raise DecodeError(".debug_line", i, f"an extended opcode of {size} bytes runs "
                                  "past the end of the program")
            sub = data[i] if size else 0
            if sub == 1:  # DW_LNE_end_sequence
                yield from (r for r in sequence if r[0] < address)
                yield address, None
                sequence.clear()
                address, file, line, column, stmt = 0, 1, 1, 0, default_stmt
            elif sub == 2:  # DW_LNE_set_address: an address of 1, 2, 4 or 8 bytes, as LLVM
                if size - 1 not in (1, 2, 4, 8):  # reads one
                    raise DecodeError(".debug_line", i, f"DW_LNE_set_address with a "
                                      f"{size - 1}-byte address")
                address = int.from_bytes(data[i + 1:i + size], order)
            elif sub == 3 and version < 5:  # DW_LNE_define_file: a file past the header's
                nul = data.find(0, i + 1, i + size)
                if nul < 0:
                    raise DecodeError(".debug_line", i, "DW_LNE_define_file without a name")
                name = data[i + 1:nul].decode("utf-8", "replace")
                names.append((name, os.path.normpath(name)))
            i += size
        elif op == 1:  # DW_LNS_copy
            append((address, (file, line, column, stmt)))
        elif op == 2:  # DW_LNS_advance_pc
            n, i = uleb(i)
            address = (address + min_len * n) & _MASK  # uint64, as LLVM keeps it
        elif op == 3:  # DW_LNS_advance_line
            n, i = sleb(i)
            line += n
        elif op == 4:  # DW_LNS_set_file
            file, i = uleb(i)
        elif op == 5:  # DW_LNS_set_column
            column, i = uleb(i)
        elif op == 6:  # DW_LNS_negate_stmt
            stmt = not stmt
        elif op == 8:  # DW_LNS_const_add_pc
            address = (address + const_add) & _MASK
        elif op == 9:  # DW_LNS_fixed_advance_pc
            address = (address + int.from_bytes(data[i:i + 2], order)) & _MASK
            i += 2
        else:  # basic_block, prologue_end, epilogue_begin, isa, and opcodes this reader
            for _ in range(lengths[op - 1] if op - 1 < len(lengths) else 0):  # does not know
                _, i = uleb(i)
    yield from sequence


def _spans(spans: list[tuple[int, int, int]]) -> tuple[array[int], array[int], list[int]]:
    return (array("Q", (s[0] for s in spans)), array("Q", (s[1] for s in spans)),
            [s[2] for s in spans])


def _in_spans(table: tuple[array[int], array[int], list[int]], address: int) -> int | None:
    starts, ends, offsets = table
    i = bisect_right(starts, address) - 1
    # Ranges of different CUs do not overlap; a CU may own several ranges.
    if i >= 0 and address < ends[i]:
        return offsets[i]
    return None


def _parse_aranges(data: bytes, little: bool) -> Iterator[tuple[int, int, int]]:
    """(start, end, CU offset) of every non-empty range of ``.debug_aranges`` (DWARF 5
    §6.1.2: a header per CU — unit length, version, .debug_info offset, address size, segment
    selector size — then (address, length) pairs from the next multiple of twice the address
    size, up to a (0, 0) pair)."""
    e = "<" if little else ">"
    at = 0
    while at + 4 <= len(data):
        (length,) = struct.unpack_from(e + "I", data, at)
        offset_size, header = (8, at + 12) if length == 0xFFFFFFFF else (4, at + 4)
        if offset_size == 8:
            if header > len(data):
                raise DecodeError(".debug_aranges", at, "truncated unit length")
            (length,) = struct.unpack_from(e + "Q", data, at + 4)
        end = header + length
        if length == 0 or end > len(data):
            return
        if header + 2 + offset_size + 2 > end:
            raise DecodeError(".debug_aranges", at, "a unit shorter than its header")
        (cu,) = struct.unpack_from(e + ("Q" if offset_size == 8 else "I"), data, header + 2)
        address_size = data[header + 2 + offset_size]
        if address_size not in (4, 8):
            raise DecodeError(".debug_aranges", at, f"address size {address_size}")
        pair = e + ("QQ" if address_size == 8 else "II")
        first = header + 2 + offset_size + 2
        tuple_size = 2 * address_size
        p = at + -(-(first - at) // tuple_size) * tuple_size  # aligned from the unit's start
        while p + tuple_size <= end:
            start, size = struct.unpack_from(pair, data, p)
            p += tuple_size
            if start == 0 and size == 0:
                break
            if start + size > _MASK:
                raise DecodeError(".debug_aranges", p - tuple_size,
                                  f"range {start:#x} + {size:#x} runs past 2^64")
            if size:
                yield start, start + size, cu
        at = end


_ANY_FILE = "*"  # the key of the units whose files' base names are not known


def _file_bases(data: bytes, at: int, strings: tuple[bytes, bytes]) -> set[str]:
    """The base names of the files the line table at `at` names; _ANY_FILE for a header that
    cannot be read, or a name whose path may end otherwise (such as "..")."""
    from unsplit.formats import line_program

    try:
        header = line_program.read_header(data, at)
        _, files = line_program.file_table(data, header, *strings)
    except DecodeError:
        return {_ANY_FILE}
    bases: set[str] = set()
    for name, _ in files:
        raw, normal = name.rsplit("/", 1)[-1], os.path.basename(os.path.normpath(name))
        bases.update((_ANY_FILE,) if {raw, normal} & {"", ".", ".."} else (raw, normal))
    return bases


def _same_file(row: LineRow, wanted: str) -> bool:
    return _same_name(row.file, row.path, wanted)


def _same_name(name: str, path: str, wanted: str) -> bool:
    if wanted in (name, path):
        return True
    return path.endswith("/" + wanted.lstrip("./"))


class _Header:
    """Checks what pyelftools decoded of one line table header (it leaves None where a form or
    a string offset was damaged): DecodeError at the header, naming the field."""

    def __init__(self, at: int, what: str, version: int) -> None:
        self.at, self.what, self.version = at, what, version

    def error(self, message: str) -> DecodeError:
        return DecodeError(".debug_line", self.at, f"{self.what}: {message}")

    def text(self, value: object, what: str) -> str:
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        if isinstance(value, str):
            return value
        raise self.error(f"{what} is not a string")

    def entries(self, found: object, field: str) -> list[Any]:
        if not isinstance(found, list | tuple):
            raise self.error(f"no {field} list")
        return list(found)

    def file_name(self, name: object, index: object, dirs: list[Any], comp_dir: str
                  ) -> tuple[str, str]:
        """(the name as the file entry gives it, the full path llvm-symbolizer would print)."""
        text = self.text(name, "a file name")
        if not isinstance(index, int):
            raise self.error("a file's directory index is not a number")
        d = index if self.version >= 5 else index - 1
        path = text
        if not os.path.isabs(text):
            directory = self.text(dirs[d], "a directory") if 0 <= d < len(dirs) else ""
            path = os.path.join(comp_dir, directory, text)
        return text, os.path.normpath(path)


def _is_list(value: object) -> bool:
    return isinstance(value, list | tuple)


_DW_AT_stmt_list, _DW_AT_comp_dir, _DW_AT_str_offsets_base = 0x10, 0x1B, 0x72
_STRX = frozenset((0x1A, 0x25, 0x26, 0x27, 0x28))  # DW_FORM_strx, strx1-4


def _header_from_bytes(binary: Binary, cu_offset: int
                       ) -> tuple[line_program.LineHeader, list[tuple[str, str]]] | None:
    """DwarfLines._plain_header's reading: the CU's top DIE (DW_AT_stmt_list, DW_AT_comp_dir)
    and its line table header (DWARF 5 §6.2.4) from the sections' bytes; None for what it
    leaves to pyelftools. DecodeError where something does not parse."""
    from unsplit.formats import die_scan, line_program
    from unsplit.formats.dwarf_unit import die_values, read_header
    from unsplit.formats.leb128 import read_uleb

    data = binary.section_data
    info, abbrev = data(".debug_info") or b"", data(".debug_abbrev") or b""
    unit = read_header(info, cu_offset, ".debug_info")
    code, pos = read_uleb(info, unit.die_start, unit.end, ".debug_info")
    decl = next((d for d in die_scan.each_declaration(abbrev, unit.abbrev_offset)
                 if d.code == code), None) if code else None
    if decl is None:
        return None
    attrs = {a: (form, value) for a, form, _, value in die_values(info, pos, unit.scan, decl)[0]}
    stmt = attrs.get(_DW_AT_stmt_list)
    if stmt is None or stmt[0] not in (0x17, 0x06, 0x07) or not isinstance(stmt[1], int):
        return None  # sec_offset, data4, data8
    debug_str, line_str = data(".debug_str") or b"", data(".debug_line_str") or b""
    comp_dir = ""
    if _DW_AT_comp_dir in attrs:
        found = _string(attrs[_DW_AT_comp_dir], attrs, unit.offset_size, debug_str, line_str,
                        binary)
        if found is None:
            return None
        comp_dir = found
    lines = data(".debug_line") or b""
    h = line_program.read_header(lines, stmt[1])
    dirs, files = line_program.file_table(lines, h, debug_str, line_str)
    if h.version >= 5 and not (dirs and files):
        return None  # (pyelftools then finds no table: a warning)
    header = _Header(h.offset, f"line table header of CU at {cu_offset:#x}", h.version)
    names = [header.file_name(name, index, dirs, comp_dir) for name, index in files]
    return h, names


def _string(attr: tuple[int, object], attrs: Mapping[int, tuple[int, object]], offset_size: int,
            debug_str: bytes, line_str: bytes, binary: Binary) -> str | None:
    """A string attribute's text in the forms GCC and clang write (None: another form)."""
    form, value = attr
    if form == 0x08 and isinstance(value, bytes):  # string: inline, NUL-terminated
        return value[:-1].decode("utf-8", "replace")
    if form in (0x0E, 0x1F) and isinstance(value, int):  # strp, line_strp
        table = debug_str if form == 0x0E else line_str
        end = table.find(b"\0", value)
        return None if end < 0 else table[value:end].decode("utf-8", "replace")
    base = attrs.get(_DW_AT_str_offsets_base)
    if form in _STRX and isinstance(value, int) and base is not None and \
            isinstance(base[1], int):
        offsets = binary.section_data(".debug_str_offsets") or b""
        at = base[1] + value * offset_size
        if at + offset_size > len(offsets):
            return None
        return _string((0x0E, int.from_bytes(offsets[at:at + offset_size], "little")), attrs,
                       offset_size, debug_str, line_str, binary)
    return None


def _units(dwarf: Any) -> Iterator[Any]:
    """pyelftools' CUs in order; DecodeError at the last good one where the next cannot be
    read (nothing after a damaged unit header can be found)."""
    units = dwarf.iter_CUs()
    at = 0
    while True:
        with reading(".debug_info", at, f"cannot read the compile unit after {at:#x}"):
            cu = next(units, None)
        if cu is None:
            return
        at = cu.cu_offset
        yield cu


def _stmt_list(binary: Binary, cu_offset: int) -> int:
    """Where the CU's line program starts in .debug_line (0 when even that is unreadable)."""
    try:
        with reading(".debug_info", cu_offset, "DW_AT_stmt_list"):
            top = binary.dwarf.get_CU_at(cu_offset).get_top_DIE().attributes
            value = top["DW_AT_stmt_list"].value if "DW_AT_stmt_list" in top else 0
    except DecodeError:
        return 0
    return value if isinstance(value, int) else 0


def number(die: Any, name: str) -> int | None:
    """The value of `die`'s attribute `name` as pyelftools decoded it, when it is a number;
    DecodeError at the DIE when it is something else (a damaged form); None when absent."""
    attrs = die.attributes
    if name not in attrs:
        return None
    value = attrs[name].value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise DecodeError(".debug_info", die.offset, f"{name} of the DIE is not a number")


def _cu_ranges(dwarf: Any, cu: Any) -> list[tuple[int, int]]:
    """[lo, hi) ranges of a CU's top DIE. Its DW_AT_low_pc is the range list's base address, and
    its DW_AT_ranges is taken before a low/high pair should it (wrongly) have both."""
    top = cu.get_top_DIE()
    base = number(top, "DW_AT_low_pc") or 0
    if "DW_AT_ranges" in top.attributes:
        return _range_list(dwarf, top, base)
    return die_ranges(dwarf, top, base)


def die_ranges(dwarf: Any, die: Any, base: int) -> list[tuple[int, int]]:
    """[lo, hi) code ranges of a DIE, as LLVM's ``DWARFDie::getAddressRanges`` finds them: its
    DW_AT_low_pc/DW_AT_high_pc pair, else its DW_AT_ranges list, which starts from ``base`` (the
    CU's DW_AT_low_pc)."""
    lo, hi = number(die, "DW_AT_low_pc"), number(die, "DW_AT_high_pc")
    if lo is not None and hi is not None:
        # DWARF 5 §2.17.2: a high_pc of class address is the end, one of class constant an
        # offset from low_pc (pyelftools gives an indexed address resolved, as LLVM does).
        address = die.attributes["DW_AT_high_pc"].form in _ADDRESS_FORMS
        end = hi if address else lo + hi
        return [(lo, end)] if end > lo else []
    return _range_list(dwarf, die, base)


_ADDRESS_FORMS = frozenset(("DW_FORM_addr", "DW_FORM_addrx", "DW_FORM_addrx1", "DW_FORM_addrx2",
                            "DW_FORM_addrx3", "DW_FORM_addrx4", "DW_FORM_GNU_addr_index"))


def _range_list(dwarf: Any, die: Any, base: int) -> list[tuple[int, int]]:
    """The non-empty entries of a DIE's DW_AT_ranges; pyelftools resolves DW_FORM_rnglistx."""
    from elftools.dwarf.ranges import BaseAddressEntry, RangeEntry

    offset = number(die, "DW_AT_ranges")
    if offset is None:
        return []
    with reading(".debug_info", die.offset, "DW_AT_ranges of the DIE"):
        rl = dwarf.range_lists()
        entries = [] if rl is None else list(rl.get_range_list_at_offset(offset, cu=die.cu))
    out = []
    for e in entries:
        if isinstance(e, BaseAddressEntry):
            base = e.base_address
        elif isinstance(e, RangeEntry):
            lo, hi = e.begin_offset, e.end_offset
            if not e.is_absolute:
                lo, hi = lo + base, hi + base
            if hi > lo:
                out.append((lo, hi))
    return out
