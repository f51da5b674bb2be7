"""elf.dwarf_lines: `.debug_aranges` read with struct says what pyelftools' reader says, and an
address outside them still finds its CU through the CUs' own ranges."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import struct
import subprocess
from contextlib import closing
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unsplit.elf.binary import Binary
from unsplit.elf.dwarf_lines import DwarfLines, _parse_aranges

from ...conftest import ROOT, facts

LIBC_DEBUG = "/usr/lib/debug/.build-id"


def _pyelftools(binary: Binary) -> list[tuple[int, int, int]]:
    return sorted((e.begin_addr, e.begin_addr + e.length, e.info_offset)
                  for e in binary.dwarf.get_aranges().entries if e.length)


@pytest.mark.parametrize("variant", ["gcc-pgo", "bolt-all-dbg"])
def test_aranges_equal_pyelftools(zoo: dict[str, Any], variant: str) -> None:
    with closing(Binary(str(ROOT / facts(zoo, variant, "crash")["binary"]))) as b:
        data = b.section_data(".debug_aranges")
        assert data is not None, f"{variant}: the toolchain wrote no .debug_aranges"
        assert sorted(_parse_aranges(data, True)) == _pyelftools(b)


def test_aranges_of_libc_debug_file() -> None:
    """glibc's debug file (libc6-dbg): two thousand ranges, compressed section."""
    with closing(Binary("/lib/x86_64-linux-gnu/libc.so.6")) as libc:
        debug = libc.dwarf_binary
        if debug is None or not os.path.isdir(LIBC_DEBUG):
            pytest.skip("no libc6-dbg")
        data = debug.section_data(".debug_aranges")
        assert data is not None
        ours = sorted(_parse_aranges(data, True))
        assert len(ours) > 100 and ours == _pyelftools(debug)


def test_a_short_or_odd_section_stops_without_inventing_ranges() -> None:
    unit = struct.pack("<IHIBB", 44, 2, 0x10, 8, 0) + bytes(4) + struct.pack(
        "<QQQQ", 0x1000, 0x20, 0, 0)
    assert list(_parse_aranges(unit, True)) == [(0x1000, 0x1020, 0x10)]
    assert list(_parse_aranges(unit[:30], True)) == []  # the unit runs past the end
    assert list(_parse_aranges(b"", True)) == []


@pytest.mark.parametrize("variant", ["gcc-pgo", "clang-mfs"])
def test_every_marker_line_found_with_or_without_aranges(zoo: dict[str, Any],
                                                         variant: str) -> None:
    """GCC writes aranges, clang does not: lines are found either way (the CU of each
    marker's address); the marker table comes from the facts (llvm-symbolizer-22)."""
    f = facts(zoo, variant, "crash")
    with closing(Binary(str(ROOT / f["binary"]))) as b:
        lines = DwarfLines(b)
        frame = f["crash"]["frames"][0]
        row = lines.lookup(int(frame["link_pc"], 16))
        assert row is not None and row.file.endswith("crash.c"), row


def _pyelftools_rows(lines: DwarfLines, cu_offset: int) -> list[tuple[int, Any]]:
    """The rows as pyelftools' own state machine gives them (the reader it replaced)."""
    dwarf = lines.binary.dwarf
    program = dwarf.line_program_for_CU(dwarf.get_CU_at(cu_offset))
    if program is None:
        return []
    version = program.header["version"]
    names = lines._file_names(cu_offset)
    out: list[tuple[int, Any]] = []
    sequence: list[tuple[int, Any]] = []
    for entry in program.get_entries():
        state = entry.state
        if state is None:
            continue
        if state.end_sequence:
            out += [r for r in sequence if r[0] < state.address] + [(state.address, None)]
            sequence = []
            continue
        k = state.file if version >= 5 else state.file - 1
        name, path = names[k] if 0 <= k < len(names) else ("??", "??")
        sequence.append((state.address, (name, state.line, state.column,
                                         bool(state.is_stmt), path)))
    return out + sequence


def _ours(lines: DwarfLines, cu_offset: int) -> list[tuple[int, Any]]:
    rows, names, first = lines._decode(cu_offset)
    out: list[tuple[int, Any]] = []
    for a, key in rows:
        if key is None:
            out.append((a, None))
            continue
        name, path = names[key[0] - first] if 0 <= key[0] - first < len(names) else ("??", "??")
        out.append((a, (name, key[1], key[2], key[3], path)))
    return out


@pytest.mark.parametrize("variant", ["gcc-pgo", "clang-mfs", "clang-bbsections",
                                     "bolt-all-dbg"])
def test_line_programs_equal_pyelftools(zoo: dict[str, Any], variant: str) -> None:
    """Every row of every CU (DWARF 5 from both compilers, BOLT's rewritten tables)."""
    for program in ("crash", "except", "switch"):
        with closing(Binary(str(ROOT / facts(zoo, variant, program)["binary"]))) as b:
            lines = DwarfLines(b)
            for cu in lines._cu_offsets():
                assert _ours(lines, cu) == _pyelftools_rows(lines, cu), (program, cu)


def test_line_programs_of_libc_equal_pyelftools() -> None:
    """glibc's debug file: DWARF 5 from GCC, hand-written assembly CUs among them."""
    with closing(Binary("/lib/x86_64-linux-gnu/libc.so.6")) as libc:
        if libc.dwarf_binary is None:
            pytest.skip("no libc6-dbg")
        lines = DwarfLines(libc)
        cus = lines._cu_offsets()
        for cu in cus[:: max(1, len(cus) // 40)]:
            assert _ours(lines, cu) == _pyelftools_rows(lines, cu), cu


def test_a_truncated_line_program_is_a_decode_error(zoo: dict[str, Any], tmp_path: Any) -> None:
    """.debug_line cut short: one DecodeError naming the section and the CU, no IndexError."""
    from unsplit.errors import DecodeError

    with closing(Binary(str(ROOT / facts(zoo, "gcc-pgo", "crash")["binary"]))) as b:
        lines = DwarfLines(b)
        cu = lines._cu_offsets()[0]
        program = b.dwarf.line_program_for_CU(b.dwarf.get_CU_at(cu))
        lines._line_data = bytes(b.dwarf.debug_line_sec.stream.getbuffer())[
            :program.program_start_offset + 3]
        with pytest.raises(DecodeError, match=r"\.debug_line.*CU at"):
            lines._lines_of(cu)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_line_programs_raise_only_decode_error(zoo: dict[str, Any],
                                                       data: st.DataObject) -> None:
    """Random bytes written over a line program: rows or one DecodeError, nothing else."""
    from unsplit.errors import DecodeError

    with closing(Binary(str(ROOT / facts(zoo, "clang-mfs", "crash")["binary"]))) as b:
        lines = DwarfLines(b)
        cu = lines._cu_offsets()[0]
        program = b.dwarf.line_program_for_CU(b.dwarf.get_CU_at(cu))
        raw = bytearray(b.dwarf.debug_line_sec.stream.getbuffer())
        lo, hi = program.program_start_offset, program.program_end_offset
        for _ in range(data.draw(st.integers(1, 6))):
            raw[data.draw(st.integers(lo, hi - 1))] = data.draw(st.integers(0, 255))
        lines._line_data = bytes(raw)
        try:
            table = lines._lines_of(cu)
            table.lookup(int(facts(zoo, "clang-mfs", "crash")["crash"]["frames"][0]["pc"], 16))
        except DecodeError as e:
            assert "\n" not in str(e) and str(e).startswith(".debug_line")



def _gdb_lines(path: str, addresses: list[int]) -> list[tuple[str, int] | None]:
    """Plain GDB's `info line *ADDR` for each address: (base name, line), or None."""
    said = subprocess.run(["gdb", "-nx", "-q", "-batch",
                           *(w for a in addresses for w in ("-ex", f"info line *{a:#x}")), path],
                          capture_output=True, text=True, timeout=120, check=True).stdout
    found = re.findall(r'^(?:Line (\d+) of "([^"]*)"|No line number information)', said, re.M)
    assert len(found) == len(addresses), said
    return [(file.rsplit("/", 1)[-1], int(line)) if line else None for line, file in found]


def _rows_say_line_0(path: str, addresses: list[int]) -> list[bool]:
    """Whether the row covering each address has line 0 (llvm-symbolizer-22 reports the row as
    it is)."""
    said = subprocess.run(["llvm-symbolizer-22", "--obj", path, "--no-inlines",
                           "--output-style=GNU", "--functions=none"],
                          input="".join(f"{a:#x}\n" for a in addresses), capture_output=True,
                          text=True, timeout=60, check=True).stdout
    return [line.split()[0].rsplit(":", 1)[-1] == "0" for line in said.splitlines()]


@pytest.mark.skipif(not (shutil.which("gdb") and shutil.which("llvm-symbolizer-22")),
                    reason="needs gdb and llvm-symbolizer-22")
@pytest.mark.parametrize(("variant", "key"), [("bolt-all", "input"), ("clang-mfs", "binary")])
def test_a_return_address_has_gdbs_line(zoo: dict[str, Any], variant: str, key: str) -> None:
    """The line of each call's return address (looked up at ra - 1, as a caller's frame is)
    is plain GDB's (line_as_gdb: a frame's line, `where`), also where clang gave the call
    line 0 (a call shared by two paths, a landing pad's _Unwind_Resume): GDB drops line-0 rows
    and keeps the line before them (a BOLTed Lua's lua_gc, luaD_precall and 117 more of its
    call sites had no line in `bt`)."""
    path = str(ROOT / facts(zoo, variant, "except")[key])
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True,
                             text=True, timeout=60, check=True).stdout
    insns = re.findall(r"(?m)^\s+([0-9a-f]+):\s+(\S+)", listing)
    pcs = [int(after[0], 16) - 1 for (_, op), after in itertools.pairwise(insns)
           if op.startswith("call")]
    theirs = _gdb_lines(path, pcs)
    assert any(zero and line for zero, line in zip(_rows_say_line_0(path, pcs), theirs,
                                                   strict=True)), \
        "no call in a line-0 row that GDB gives a line: the case is not exercised"
    with closing(Binary(path)) as b:
        lines = DwarfLines(b)
        rows = [lines.line_as_gdb(pc) for pc in pcs]
    assert [(r.file.rsplit("/", 1)[-1], r.line) if r is not None and r.line else None
            for r in rows] == theirs


@pytest.mark.skipif(shutil.which("gdb") is None, reason="needs gdb")
def test_a_moved_callers_frame_has_gdbs_line_on_the_input(zoo: dict[str, Any]) -> None:
    """A frame in code BOLT moved takes the pre-BOLT input's line through BAT as GDB reads the
    input there (ModuleIndex.locate(frame=True), what the frame namer asks), also at a call
    clang gave line 0; `where` keeps llvm-symbolizer's answer (no line there)."""
    from unsplit.index.module_index import ModuleIndex

    f = facts(zoo, "bolt-all", "except")
    path, given = str(ROOT / f["binary"]), str(ROOT / f["input"])
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True,
                             text=True, timeout=60, check=True).stdout
    insns = re.findall(r"(?m)^\s+([0-9a-f]+):\s+(\S+)", listing)
    with closing(Binary(path)) as b:
        index = ModuleIndex(b)
        pcs = [pc for (_, op), after in itertools.pairwise(insns) if op.startswith("call")
               and index.bat_input_address(pc := int(after[0], 16) - 1) is not None]
        inputs = [index.bat_input_address(pc) or 0 for pc in pcs]
        ours = [index.locate(pc, frame=True) for pc in pcs]
        plain = [index.locate(pc) for pc in pcs]
    theirs = _gdb_lines(given, inputs)
    assert [(loc.file, loc.line) if loc.line else None for loc in ours] == theirs
    assert any(t and not p.line for t, p in zip(theirs, plain, strict=True)), \
        "no moved call in a line-0 row: the case is not exercised"
