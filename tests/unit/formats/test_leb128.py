"""The bounded LEB128 readers every DWARF decoder uses (formats/leb128.py read_uleb,
read_sleb, skip_leb): each reads back what the encoders write, stops at `end` whatever follows
it, and raises only DecodeError (at the number's start, plus `base`) on any bytes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from unsplit.errors import DecodeError
from unsplit.formats.leb128 import (
    encode_sleb128,
    encode_uleb128,
    read_sleb,
    read_uleb,
    skip_leb,
)


@given(st.integers(min_value=0, max_value=2**70), st.binary(max_size=3))
def test_read_uleb_reads_back_what_is_encoded_and_stops_at_end(v: int, after: bytes) -> None:
    enc = encode_uleb128(v)
    data = b"\x80" + enc + after  # a continuation byte before it: reading starts at 1
    assert read_uleb(data, 1, 1 + len(enc), "s") == (v, 1 + len(enc))
    assert skip_leb(data, 1, 1 + len(enc), "s") == 1 + len(enc)
    with pytest.raises(DecodeError) as e:
        read_uleb(data, 1, len(enc), "s", base=0x100)  # `end` one byte short
    assert e.value.offset == 0x101
    with pytest.raises(DecodeError):
        skip_leb(data, 1, len(enc), "s")


@given(st.integers(min_value=-(2**70), max_value=2**70), st.binary(max_size=3))
def test_read_sleb_reads_back_what_is_encoded(v: int, after: bytes) -> None:
    enc = encode_sleb128(v)
    assert read_sleb(enc + after, 0, len(enc), "s") == (v, len(enc))
    with pytest.raises(DecodeError):
        read_sleb(enc, 0, len(enc) - 1, "s")


@given(st.binary(max_size=12), st.integers(0, 13), st.integers(0, 13))
def test_any_bytes_only_raise_decode_error(data: bytes, pos: int, end: int) -> None:
    end = min(end, len(data))
    for read in (read_uleb, read_sleb):
        try:
            _, after = read(data, pos, end, "s")
            assert pos < after <= end
        except DecodeError:
            pass
    try:
        assert pos < skip_leb(data, pos, end, "s") <= end
    except DecodeError:
        pass
