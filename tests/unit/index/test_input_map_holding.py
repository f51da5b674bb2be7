"""index.bolt.input_map.InputMap.holding, which the translator asks once for a row of lists
and DIE ranges in the same run of code: every range it says the run holds moves as shift()
moves it, and it answers None exactly where shift() does (runs BOLT kept in order, runs it
moved, duplicated code overlapping a run, a run whose end does not move with it)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from unsplit.index.bolt.input_map import InputMap

_RUNS = st.lists(st.tuples(st.integers(0, 40), st.integers(1, 12), st.integers(0, 60),
                           st.integers(0, 3)), min_size=1, max_size=8)


def _map(runs: list[tuple[int, int, int, int]]) -> InputMap:
    """Input [lo, lo + n) placed at out; its tail `extra` bytes past its moved end."""
    made = [(0x100 + lo, 0x100 + lo + n, 0x1000 + out, 0x1000 + out + n + extra)
            for lo, n, out, extra in runs]
    code = [(0x100, 0x200)]
    return InputMap(made, code, [], [], [])


@settings(max_examples=500, deadline=None)
@given(_RUNS, st.integers(0x100, 0x140), st.integers(0, 16), st.data())
def test_holding_answers_as_shift_does(runs: list[tuple[int, int, int, int]], lo: int,
                                       length: int, data: st.DataObject) -> None:
    imap = _map(runs)
    hi = lo + length
    held = imap.holding(lo, hi)
    delta = imap.shift(lo, hi)
    if held is None:
        assert delta is None
        return
    run_lo, limit, moved = held
    assert delta == moved and run_lo <= lo < hi <= limit
    b = data.draw(st.integers(run_lo, limit - 1))
    e = data.draw(st.integers(b + 1, limit))
    assert imap.shift(b, e) == moved  # any range the run holds


def test_a_run_whose_end_moves_elsewhere_holds_up_to_its_last_byte() -> None:
    imap = _map([(0, 16, 0, 2)])  # BOLT added 2 bytes after the run: its end is not +delta
    assert imap.shift(0x100, 0x110) is None
    assert imap.holding(0x100, 0x110) is None
    assert imap.holding(0x100, 0x10F) == (0x100, 0x10F, 0x1000 - 0x100)
