"""formats.dwarf_lists.span_v5_list, the translator's walk over a DWARF 5 list that makes no
entry, against read_v5_list on the same bytes: lists of every entry kind built from their
encodings (DWARF 5 §7.28-§7.29), and random bytes. Where it gives a span, read_v5_list reads
the list and its entries give the same end, bounds, count and ranges; where it raises,
read_v5_list raises too; it refuses (None) exactly the lists whose bytes hold only where they
are (a start-end index pair, a GNU view pair) and those with an empty entry; it says which
lists use the unit's base address."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st
from unsplit.errors import DecodeError
from unsplit.formats import dwarf_lists as L
from unsplit.formats.leb128 import encode_uleb128 as uleb

ADDRESSES = [0x1000 + 0x40 * i for i in range(16)]
UNIT_BASE = 0x5000


def _address_at(index: int) -> int:
    if index >= len(ADDRESSES):
        raise DecodeError(".debug_addr", 0, f"index {index} past the table")
    return ADDRESSES[index]


def _entry(kind: int, a: int, b: int, expr: bytes, locations: bool) -> bytes:
    """One entry of `kind` (its codes in a location list; a range list's base_address,
    start_end and start_length are 5, 6 and 7) with operands a and b."""
    if not locations and kind in (8, 7, 6):
        kind -= 1
    if kind == 1:
        return bytes([1]) + uleb(a)
    if kind in (2, 3):
        return bytes([kind]) + uleb(a) + uleb(b) + (_expr(expr) if locations else b"")
    if kind == 4:
        return bytes([4]) + uleb(a) + uleb(b) + (_expr(expr) if locations else b"")
    if kind == 9:
        return bytes([9]) + uleb(a) + uleb(b)
    if locations and kind == 5:
        return bytes([5]) + _expr(expr)
    if kind == (6 if locations else 5):
        return bytes([kind]) + struct.pack("<Q", 0x1000 + a)
    if kind == (7 if locations else 6):
        return bytes([kind]) + struct.pack("<QQ", 0x1000 + a, 0x1000 + a + b) + \
            (_expr(expr) if locations else b"")
    return bytes([kind]) + struct.pack("<Q", 0x1000 + a) + uleb(b) + \
        (_expr(expr) if locations else b"")


def _expr(expr: bytes) -> bytes:
    return uleb(len(expr)) + expr


_ENTRIES = st.lists(st.tuples(st.sampled_from([1, 2, 3, 4, 5, 6, 7, 8, 9]),
                              st.integers(0, 40_000), st.integers(0, 300),
                              st.binary(max_size=5)), max_size=8)


def _agree(data: bytes, locations: bool) -> None:
    try:
        span = L.span_v5_list(data, 0, ".debug_loclists", locations, 8, UNIT_BASE, _address_at)
    except DecodeError:
        span = "raised"
    try:
        entries = L.read_v5_list(data, 0, ".debug_loclists", locations, 8, UNIT_BASE,
                                 _address_at)
    except DecodeError:
        assert span in ("raised", None)
        return
    assert span != "raised"
    if span is None:
        return
    assert isinstance(span, L.ListSpan)
    bounded = [(b, e) for b, e, _ in entries if b != L.DEFAULT]
    assert span.bounded == len(bounded)
    if bounded:
        assert (span.lo, span.hi) == (min(b for b, _ in bounded), max(e for _, e in bounded))
    else:
        assert span.hi < 0
    assert span.ranges == ([] if locations else bounded)
    assert span.addr_op == any(3 in expr for _, _, expr in entries)
    assert L.read_v5_list(data[:span.end], 0, ".debug_loclists", locations, 8, UNIT_BASE,
                          _address_at) == entries  # the list's bytes end where it says


@settings(max_examples=400, deadline=None)
@given(_ENTRIES, st.booleans())
def test_span_agrees_with_the_reader_on_built_lists(entries: list[tuple[int, int, int, bytes]],
                                                   locations: bool) -> None:
    data = b"".join(_entry(kind, a, b, expr, locations) for kind, a, b, expr in entries)
    _agree(data + b"\x00" + b"\x07trailing", locations)
    _agree(data, locations)  # no end entry: both raise


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=40), st.booleans())
def test_span_on_random_bytes_raises_only_where_the_reader_does(data: bytes,
                                                                locations: bool) -> None:
    _agree(data, locations)


def test_span_refuses_lists_bound_to_where_they_are() -> None:
    base_then_pair = b"\x01\x02" + b"\x04\x00\x10\x01\x50" + b"\x00"
    span = L.span_v5_list(base_then_pair, 0, ".debug_loclists", True, 8, UNIT_BASE,
                          _address_at)
    assert span is not None and (span.lo, span.hi, span.bases) == (0x1080, 0x1090, [(0, 2, 2)])
    assert not span.unit_base
    on_the_unit = L.span_v5_list(b"\x04\x00\x10\x01\x50\x00", 0, ".debug_loclists", True, 8,
                                 UNIT_BASE, _address_at)
    assert on_the_unit is not None and on_the_unit.unit_base
    assert (on_the_unit.lo, on_the_unit.hi) == (UNIT_BASE, UNIT_BASE + 0x10)
    for bound in (b"\x02\x00\x01\x01\x50\x00",  # a start-end index pair
                  b"\x01\x02\x09\x00\x01\x04\x00\x10\x01\x50\x00",  # a GNU view pair
                  b"\x01\x02\x04\x10\x10\x01\x50\x00"):  # an empty entry
        assert L.span_v5_list(bound, 0, ".debug_loclists", True, 8, UNIT_BASE, _address_at) is None
