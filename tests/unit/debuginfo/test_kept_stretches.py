"""translate/lines.py: the rows of code BOLT left in place are found a stretch at a time by
bisection over the sequence's addresses (LineTables._segments); the segments so found are
those of the row-by-row walk the file had before (the one it still takes for a sequence
whose addresses go down), on random sequences over a map of kept, moved and missing code."""

from __future__ import annotations

from array import array

from hypothesis import given, settings
from hypothesis import strategies as st
from unsplit.debuginfo.translate import lines
from unsplit.debuginfo.translate.lists import Mover
from unsplit.formats.line_program import Row
from unsplit.index.bolt.input_map import InputMap

# Input code [0x1000, 0x1100): [0x1000, 0x1040) and [0x10a0, 0x1100) kept in place, [0x1040,
# 0x1070) moved to 0x5000, [0x1070, 0x10a0) placed nowhere.
_MAP = ([(0x1000, 0x1040, 0x1000, 0x1040), (0x1040, 0x1070, 0x5000, 0x5030),
         (0x10A0, 0x1100, 0x10A0, 0x1100)], [(0x1000, 0x1100)],
        [(0x1040, 0x1070)], [(0x1000, 0x1040), (0x10A0, 0x1100)], [])

_SEQUENCE = st.lists(st.tuples(st.integers(0, 0x10), st.integers(1, 9)), min_size=1,
                     max_size=30)


def _segments(sequences: list[tuple[list[Row], int]], bisect: bool) -> list[lines.Segment]:
    tables = lines.LineTables(b"", Mover(InputMap(*(list(part) for part in _MAP))))
    if bisect:
        return tables._segments(sequences)
    before = lines._in_order
    lines._in_order = lambda rows: array("Q")  # type: ignore[assignment]
    try:
        return tables._segments(sequences)
    finally:
        lines._in_order = before


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0xFF0, 0x1100), _SEQUENCE, st.booleans()),
                min_size=1, max_size=3))
def test_stretches_found_by_bisection_are_the_row_by_row_ones(
        made: list[tuple[int, list[tuple[int, int]], bool]]) -> None:
    sequences = []
    for start, steps, ordered in made:
        address, rows = start, []
        for step, line in steps:
            address += step if ordered or step % 3 else -step  # some go down
            rows.append((address, 1, line, 0, 1, 0, 0))
        sequences.append((rows, address + 4))
    assert _segments(sequences, True) == _segments(sequences, False)


def test_a_stretch_ends_where_the_kept_run_does() -> None:
    rows: list[Row] = [(a, 1, n, 0, 1, 0, 0) for n, a in enumerate(
        (0x1000, 0x1010, 0x1010, 0x1030, 0x1040, 0x1050), 1)]
    found = _segments([(rows, 0x1060)], True)
    assert found[:2] == [(0x1000, 0x1040, rows[:4], (0, 0, 4)),
                         (0x5000, 0x5010, rows[4:5], None)]
