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


def _plain_agrees(data: bytes, locations: bool) -> L.PlainSpan | None:
    """plain_v5_lists' answer for a list at 0 of `data`, checked against span_v5_list's."""
    [plain] = L.plain_v5_lists(data, [0], locations, ADDRESSES)
    if plain is None:
        return None
    end, lo, hi, index, bounded = plain
    span = L.span_v5_list(data, 0, ".debug_loclists", locations, 8, UNIT_BASE, _address_at)
    assert span is not None  # a plain list is one span_v5_list takes too
    assert (span.end, span.lo, span.hi, span.bounded) == (end, lo, hi, bounded)
    assert span.bases == [(0, 1 + len(uleb(index)), index)]
    assert not (span.indices or span.literal or span.unit_base or span.addr_op)
    return plain


# Lists of offset pairs and default locations alone (what clang writes), besides any entries.
_PAIRS = st.lists(st.tuples(st.sampled_from([4, 4, 4, 5]), st.integers(0, 40_000),
                            st.integers(0, 3_000_000), st.binary(max_size=5)),
                  min_size=1, max_size=8)


@settings(max_examples=600, deadline=None)
@given(st.one_of(_PAIRS, _ENTRIES), st.booleans(), st.integers(0, len(ADDRESSES) + 200))
def test_a_plain_list_is_what_the_span_says(entries: list[tuple[int, int, int, bytes]],
                                            locations: bool, base: int) -> None:
    data = bytes([1]) + uleb(base) + \
        b"".join(_entry(kind, a, b, expr, locations) for kind, a, b, expr in entries)
    _plain_agrees(data + b"\x00" + bytes(16), locations)
    _plain_agrees(data, locations)  # no end entry: not plain (and no exception)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=60), st.booleans())
def test_plain_lists_of_random_bytes_agree_and_never_raise(data: bytes, locations: bool) -> None:
    _plain_agrees(data, locations)


def test_clangs_lists_are_plain_and_others_are_not() -> None:
    pair = b"\x04\x00\x10\x01\x50"  # [0, 0x10): DW_OP_reg0
    tail = bytes(16)  # what follows the list in the section
    clang = b"\x01\x02" + pair + b"\x04\x10\x90\x01\x01\x51" + b"\x00"
    assert L.plain_v5_lists(clang + tail, [0], True, ADDRESSES) == [
        (len(clang), 0x1080, 0x1080 + 0x90, 2, 2)]
    ranges = b"\x01\x81\x00" + b"\x04\x00\x10" + b"\x00"  # a two-byte index, range list
    wide = list(range(0x1000, 0x1000 + 0x82 * 8, 8))
    assert L.plain_v5_lists(ranges + tail, [0], False, wide) == [
        (len(ranges), wide[1], wide[1] + 0x10, 1, 1)]
    for not_plain in (pair + b"\x00",  # on the unit's base
                      b"\x01\x02\x04\x00\x10\x02\x03\x00" + b"\x00",  # a DW_OP_addr byte
                      b"\x01\x02\x03\x01\x10\x01\x50\x00",  # a start index and length
                      b"\x01\x02\x04\x10\x10\x01\x50\x00",  # an empty entry
                      b"\x01\x40" + pair + b"\x00",  # an index past the table
                      b"\x01\x02\x00"):  # no entry with a range
        assert L.plain_v5_lists(not_plain + tail, [0], True, ADDRESSES) == [None]
    assert L.plain_v5_lists(clang, [0], True, ADDRESSES) == [None]  # at the section's end
