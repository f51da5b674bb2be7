"""The names-only file's tables made in bulk answer as made one at a time: StringTable.offsets
stores and places strings as StringTable.offset does, and synthesize._disjoint's test in C
loops keeps what the run-by-run sweep keeps, the kept runs pairwise disjoint (brute force)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from unsplit.debuginfo import synthesize
from unsplit.debuginfo.dwarf.strings import StringTable

_TEXT = st.text(alphabet=st.sampled_from("ab_Z\u00e9\udc80"), max_size=4)


@settings(max_examples=300, deadline=None)
@given(before=st.lists(_TEXT, max_size=6), texts=st.lists(_TEXT, max_size=12),
       start=st.integers(0, 100))
def test_offsets_are_offset_one_at_a_time(before: list[str], texts: list[str],
                                          start: int) -> None:
    bulk, single = StringTable(start), StringTable(start)
    for text in before:
        assert bulk.offset(text) == single.offset(text)
    assert bulk.offsets(texts) == [single.offset(t) for t in texts]
    assert bulk.data == single.data
    for text, at in zip(texts, bulk.offsets(texts), strict=True):  # each where it is
        raw = text.encode("utf-8", "surrogateescape") + b"\0"
        assert bulk.data[at - start:at - start + len(raw)] == raw


_SPANS = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 6)).map(
    lambda p: (p[0], p[0] + p[1])), min_size=0, max_size=3)


@settings(max_examples=500, deadline=None)
@given(spans=st.lists(_SPANS, max_size=8))
def test_disjoint_keeps_what_the_sweep_keeps(spans: list[list[tuple[int, int]]]) -> None:
    procedures = [(f"p{k}", None, s) for k, s in enumerate(spans)]
    kept = synthesize._disjoint(procedures)
    assert kept == synthesize._disjoint_one_by_one(procedures)
    runs = [(s, e, name) for name, _, ss, _ in kept for s, e in ss if e > s]
    for a in runs:
        for b in runs:
            assert a is b or a[2] == b[2] or a[1] <= b[0] or b[1] <= a[0], (a, b)
