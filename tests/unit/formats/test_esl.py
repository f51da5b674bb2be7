"""`.opt_table` and ESL programs (shared/specs/split-info-and-esl.md §2, §3): the worked
example byte for byte, every mode and command, the error list, and round trips."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from unsplit.errors import DecodeError, EslError
from unsplit.formats import esl
from unsplit.formats import split_info as si
from unsplit.formats.esl import EslRow, EslWriter, OptProc

EXAMPLE_ESL = bytes.fromhex("03 13 80 C6 05 0F F1")
EXAMPLE_PROC = OptProc(0x401000, 1, 10, 1, ("example.c",), EXAMPLE_ESL)


def _run(program: bytes, size: int | None = None, **kw: Any) -> esl.EslResult:
    fields: dict[str, Any] = {
        "entry": 0x401000,
        "file": 1,
        "start_line": 10,
        "min_insn_length": 1,
        "files": ("a.c", "b.h"),
        "esl": program,
    }
    fields.update(kw)
    return esl.run_program(OptProc(**fields), size)


def test_worked_example_rows() -> None:
    result = esl.run_program(EXAMPLE_PROC, 30)
    assert not result.partial
    assert [(r.pc, r.line) for r in result.rows] == [(0, 10), (4, 11), (13, 26), (13, 25)]
    assert {(r.file, r.column) for r in result.rows} == {(1, 0)}


def test_worked_example_addresses() -> None:
    [proc] = si.sp_init([si.SplitRecord(0x401006, 0x405000, 0x10, 2)], [("f", 0x401000, 0x10)])
    rows = esl.run_program(EXAMPLE_PROC, proc.size).rows
    ranges = [(r.start, r.end, r.logical_start) for r in proc.ranges]
    placed = [(p.address, p.row.line) for p in esl.map_rows(rows, ranges, proc.branches)]
    # The three addresses of the spec, the later of two rows at one pc last (it wins) ...
    assert (0x401000, 10) in placed and (0x401004, 11) in placed
    assert placed.index((0x405007, 26)) + 1 == placed.index((0x405007, 25))
    # ... and where a row's code continues in another range, the row again at its start.
    assert (0x405000, 11) in placed  # logical 6..12 is line 11 (row at pc 4)
    assert (0x401006, 11) in placed  # the branch stands for the moved code
    assert (0x401008, 25) in placed  # logical 22.. is the last row's
    assert placed == sorted(placed, key=lambda p: p[0])


def test_worked_example_in_a_table_byte_for_byte() -> None:
    table = esl.encode_opt_table([EXAMPLE_PROC])
    assert table == bytes.fromhex(
        "01 0b 01 6578616d706c652e6300"  # FILES: 1, "example.c"
        "02 0b 0010400000000000 01 0a 01"  # PROC: entry, file 1, line 10, unit 1
        "03 07 031380c6050ff1"  # ESL
        "00 00"  # END
    )
    [proc] = esl.decode_opt_table(table)
    assert proc == EXAMPLE_PROC and proc.offset == 13 and proc.esl_offset == 28


def test_unknown_tags_are_skipped_and_files_carry_over() -> None:
    a = OptProc(0x1000, 1, 5, 1, ("x.c",), b"\x00")
    b = OptProc(0x2000, 1, 7, 4, ("x.c",), None)
    table = bytearray(esl.encode_opt_table([a, b]))
    unknown = bytes([0x7F, 3, 1, 2, 3, 0x80, 0x01, 0])  # tags 127 and 128 (a 2-byte ULEB)
    table[0:0] = unknown
    procs = esl.decode_opt_table(bytes(table))
    assert procs == [a, b]
    assert esl.run_program(procs[1]).rows == ()  # no ESL: a warning, not an error


def test_every_mode_and_command() -> None:
    w = EslWriter()
    w.data(0, 2)  # row (0, a.c:10:0), pc 8 (unit 4)
    w.escape()
    w.command(esl.SET_FILE, 2)
    w.command(esl.SET_COL, 3)
    w.command(esl.ADD_LINE, 90, mark=True)  # row (8, b.h:100:3)
    w.command(esl.ADD_PC, 1)
    w.command(esl.SET_DATA_MODE, 2, resume=True)
    w.data(-2, 1, 7)  # mode 2: row (12, b.h:98:7), pc 16
    w.escape()
    w.command(esl.ADD_PC_LINE, -1, 2, mark=True)  # row (12, b.h:100:7)
    w.command(esl.ADD_PC_LINE_COL, 2, -50, 1, mark=True)  # row (20, b.h:50:1)
    w.command(esl.SET_DATA_MODE, 1)
    w.command(esl.SET_FILE, 1, resume=True)
    w.data(7, 16)  # mode 1 again: row (20, a.c:57:1), pc 84
    result = _run(w.getvalue(), 84, min_insn_length=4)
    assert result.error is None
    assert result.rows == (
        EslRow(0, 1, 10, 0),
        EslRow(8, 2, 100, 3),
        EslRow(12, 2, 98, 7),
        EslRow(12, 2, 100, 7),
        EslRow(20, 2, 50, 1),
        EslRow(20, 1, 57, 1),
    )


@pytest.mark.parametrize(
    ("program", "at", "words"),
    [
        (b"\x03\x80\x00", 2, "opcode 0"),
        (b"\x03\x80\x08", 2, "opcode 8"),
        (b"\x03\x80\x05\x03", 2, "data mode 3"),
        (b"\x03\x80\x05\x00", 2, "data mode 0"),
        (b"\x03\x80\x01\x80", 3, "truncated"),
        (b"\x03\x80\x07\x01", 4, "truncated"),
        (b"\x03\x80\x04\x03", 2, "file 3"),
        (b"\x03\x80\x02\x76", 2, "below 1"),  # add_line -10 from line 10
        (b"\x03\x80\x01\x7a", 2, "negative"),  # add_pc -6 from pc 4
        (b"\x03\x80\x01\x20", 2, "past the logical size"),  # pc 4 + 32 > 30
        (b"\x03\x81", 1, "low nibble 1"),
    ],
)
def test_errors_keep_rows_and_say_where(program: bytes, at: int, words: str) -> None:
    result = _run(program, 30)
    assert result.partial and result.error is not None
    assert result.rows == (EslRow(0, 1, 10, 0),)  # the row before the error is kept
    e = result.error
    assert isinstance(e, DecodeError) and e.section == ".opt_table"
    assert e.entry == 0x401000 and e.program_offset == at
    assert words in str(e) and "0x401000" in str(e)


def test_table_structure_errors() -> None:
    good = esl.encode_opt_table([EXAMPLE_PROC])
    for bad, words in [
        (good[:-1], "truncated"),
        (good[:-2], "not closed"),
        (b"\x00\x00", "END outside"),
        (b"\x03\x00", "ESL outside"),
        (b"\x02\x03abc", "PROC value"),
        (b"\x01\x02\x01a", "NUL"),
        (good[:-2] + good, "before the END"),
        (b"\x05\x10ab", "needs 16 bytes"),
    ]:
        with pytest.raises(DecodeError, match=words) as e:
            esl.decode_opt_table(bad)
        assert e.value.section == ".opt_table"


# --- round trips ------------------------------------------------------------------------------

_rows = st.lists(
    st.builds(
        EslRow,
        st.integers(0, 400),
        st.integers(1, 3),
        st.integers(1, 300),
        st.integers(0, 200),
    ),
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(_rows, st.integers(1, 300), st.integers(1, 3), st.sampled_from([1, 4]))
def test_rows_round_trip(rows: list[EslRow], start_line: int, file: int, unit: int) -> None:
    rows = [EslRow(r.pc * unit, r.file, r.line, r.column) for r in rows]
    program = esl.encode_rows(rows, start_line, file, unit)
    proc = OptProc(0x1000, file, start_line, unit, ("a", "b", "c"), program)
    [back] = esl.decode_opt_table(esl.encode_opt_table([proc]))
    result = esl.run_program(back, 401 * unit)
    assert result.error is None
    assert list(result.rows) == rows


def _op() -> st.SearchStrategy[tuple[Any, ...]]:
    s, u = st.integers(-40, 40), st.integers(0, 50)
    return st.one_of(
        st.tuples(st.just("data"), st.integers(-7, 7), st.integers(1, 16), u),
        st.tuples(st.just("cmd"), st.just(esl.ADD_PC), s),
        st.tuples(st.just("cmd"), st.just(esl.ADD_LINE), s),
        st.tuples(st.just("cmd"), st.just(esl.SET_COL), u),
        st.tuples(st.just("cmd"), st.just(esl.SET_FILE), st.integers(1, 3)),
        st.tuples(st.just("cmd"), st.just(esl.SET_DATA_MODE), st.integers(1, 2)),
        st.tuples(st.just("cmd"), st.just(esl.ADD_PC_LINE), s, s),
        st.tuples(st.just("cmd"), st.just(esl.ADD_PC_LINE_COL), s, s, u),
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_op(), st.booleans(), st.booleans()), max_size=30))
def test_programs_round_trip_against_a_model(ops: list[tuple[Any, bool, bool]]) -> None:
    """Random programs with every mode and command, checked against a direct model of §3."""
    w = EslWriter()
    pc, line, file, col, mode, prev = 0, 100, 1, 0, 1, 1
    expected: list[EslRow] = []
    for op, mark, resume in ops:
        if op[0] == "data":
            _, dline, units, column = op
            if mode == 0:
                w.command(esl.ADD_PC, 0, resume=True)
                mode = prev
            if not (line + dline >= 1 and pc + units * 2 <= 10_000):
                continue
            line += dline
            col = column if mode == 2 else col
            w.data(dline, units, column if mode == 2 else None)
            expected.append(EslRow(pc, file, line, col))
            pc += units * 2
            continue
        _, opcode, *args = op
        dpc = args[0] if opcode in (esl.ADD_PC, esl.ADD_PC_LINE, esl.ADD_PC_LINE_COL) else 0
        dline = {esl.ADD_LINE: args[0], esl.ADD_PC_LINE: args[-1]}.get(opcode, 0)
        if opcode == esl.ADD_PC_LINE_COL:
            dline = args[1]
        if pc + dpc * 2 < 0 or line + dline < 1:
            continue
        if mode != 0:
            w.escape()
            prev, mode = mode, 0
        w.command(opcode, *args, mark=mark, resume=resume)
        pc, line = pc + dpc * 2, line + dline
        if opcode == esl.SET_COL:
            col = args[0]
        elif opcode == esl.ADD_PC_LINE_COL:
            col = args[2]
        elif opcode == esl.SET_FILE:
            file = args[0]
        elif opcode == esl.SET_DATA_MODE:
            prev = args[0]
        if mark:
            expected.append(EslRow(pc, file, line, col))
        if resume:
            mode = prev
    result = _run(w.getvalue(), 10_000, start_line=100, min_insn_length=2, files=("a", "b", "c"))
    assert result.error is None
    assert list(result.rows) == expected


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=80))
def test_random_programs_never_raise(program: bytes) -> None:
    result = _run(program, 64)
    assert result.error is None or isinstance(result.error, EslError)
    assert all(0 <= r.pc <= 64 and r.line >= 1 and 1 <= r.file <= 2 for r in result.rows)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=80))
def test_random_tables_only_raise_decode_error(data: bytes) -> None:
    try:
        procs = esl.decode_opt_table(data)
    except DecodeError:
        return
    for p in procs:
        esl.run_program(p, 100)


def test_map_rows_without_layout_is_identity_plus_entry() -> None:
    rows = _run(bytes.fromhex("0313"), 8).rows
    placed = esl.map_rows(rows, [(0x2000, 0x2008, 0)])
    assert [(p.address, p.row.line) for p in placed] == [(0x2000, 10), (0x2004, 11)]
