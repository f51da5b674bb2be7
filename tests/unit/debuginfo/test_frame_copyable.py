"""frames.copyable's one-expression path answers as the instruction-by-instruction reader does,
on call frame instructions as compilers write them and on damaged ones."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from unsplit.debuginfo import frames
from unsplit.errors import DecodeError


def _by_instruction(code: bytes) -> bool:
    try:
        return frames._copyable(code)
    except DecodeError:
        return False


_LEB = st.lists(st.integers(0x80, 0xFF), max_size=3).map(bytes).flatmap(
    lambda head: st.integers(0, 0x7F).map(lambda last: head + bytes([last])))
_INSTRUCTION = st.one_of(
    st.integers(0x40, 0x7F).map(lambda op: bytes([op])),  # advance_loc
    st.integers(0xC0, 0xFF).map(lambda op: bytes([op])),  # restore
    st.tuples(st.integers(0x80, 0xBF), _LEB).map(lambda t: bytes([t[0]]) + t[1]),  # offset
    st.sampled_from([b"\x00", b"\x0a", b"\x0b"]),  # nop, remember_state, restore_state
    st.tuples(st.sampled_from([0x02, 0x03, 0x04]), st.binary(min_size=4, max_size=4)).map(
        lambda t: bytes([t[0]]) + t[1][:1 << (t[0] - 2)]),  # advance_loc1/2/4
    st.tuples(st.sampled_from([0x05, 0x09, 0x0C, 0x11, 0x12, 0x14, 0x15]), _LEB, _LEB).map(
        lambda t: bytes([t[0]]) + t[1] + t[2]),
    st.tuples(st.sampled_from([0x06, 0x07, 0x08, 0x0D, 0x0E, 0x13]), _LEB).map(
        lambda t: bytes([t[0]]) + t[1]),
    st.tuples(st.sampled_from([0x0F, 0x10, 0x16]), st.integers(0, 4), st.binary(max_size=4))
    .map(lambda t: bytes([t[0]]) + (b"\x07" if t[0] != 0x0F else b"") + bytes([t[1]]) + t[2]),
    st.binary(min_size=1, max_size=2),  # anything: set_loc, GNU opcodes, damage
)


@settings(max_examples=600, deadline=None)
@given(st.lists(_INSTRUCTION, max_size=12).map(b"".join), st.integers(0, 6))
def test_copyable_answers_as_read_instruction_by_instruction(code: bytes, cut: int) -> None:
    for body in (code, code[:len(code) - cut]):
        assert frames.copyable(body) == _by_instruction(body), body.hex()
