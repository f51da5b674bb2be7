"""formats/line_program.sequences reads back what ProgramWriter writes: random rows (line
jumps of one, two and more SLEB128 bytes either way, file numbers of one and two ULEB128
bytes, columns, flags, discriminators) encoded for a clang-like header, then decoded, are the
same rows and end address (the decoder reads the commonest operands inline, besides its
general LEB128 readers)."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st
from unsplit.formats import line_program as LP

# DWARF 5 header: min_inst_length 1, maximum_operations_per_instruction 1, default_is_stmt 1,
# line_base -5, line_range 14, opcode_base 13 (clang-22's), standard opcode lengths, empty
# directory and file tables.
_LENGTHS = bytes([0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1])
_AFTER_LENGTH = struct.pack("<BBBbBB", 1, 1, 1, -5, 14, 13) + _LENGTHS + bytes([0, 0, 0, 0])


def _program(body: bytes) -> bytes:
    header = struct.pack("<HBB", 5, 8, 0) + struct.pack("<I", len(_AFTER_LENGTH)) + \
        _AFTER_LENGTH
    unit = header + body
    return struct.pack("<I", len(unit)) + unit


_ROWS = st.lists(st.tuples(st.integers(0, 300), st.integers(1, 300),
                           st.integers(-20_000, 20_000), st.integers(0, 200),
                           st.sampled_from([0, 1, 3, 5, 9]), st.integers(0, 300)),
                 min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(_ROWS, st.integers(0, 1 << 40))
def test_rows_written_are_the_rows_read(steps: list[tuple[int, int, int, int, int, int]],
                                        start: int) -> None:
    header = LP.read_header(_program(b""), 0)
    writer = LP.ProgramWriter(header)
    rows: list[LP.Row] = []
    address, line = start, 1
    for advance, file, jump, column, flags, disc in steps:
        address += advance
        line = max(1, line + jump)
        rows.append((address, file, line, column, flags, 0, disc))
        writer.row(rows[-1])
    writer.end_sequence(address + 1)
    data = _program(bytes(writer.out))
    decoded = LP.sequences(data, LP.read_header(data, 0))
    # a row's prologue/epilogue/basic-block flags last for that row only, as written
    assert decoded == [(rows, address + 1)]
