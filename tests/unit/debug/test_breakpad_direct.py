"""The two translations of an FDE body to Breakpad rules on one table of cases: the direct one
(breakpad._direct, straight from the bytes) gives the general one's text (breakpad._general:
eh_frame.decode_rows, then the rules; held to llvm-dwarfdump-22 by test_breakpad) or refuses,
never another text: every instruction it takes and some it leaves, then random sequences."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from unsplit.debug import breakpad
from unsplit.errors import DecodeError
from unsplit.formats import eh_frame
from unsplit.formats.leb128 import encode_sleb128, encode_uleb128

# x86-64's usual CIE: code alignment 1, data alignment -8, return address in r16 (rip),
# CFA = rsp + 8, rip saved at CFA - 8.
_CIE_INITIAL = bytes([0x0C, 7, 8, 0x90, 1])


def _cie() -> eh_frame.Cie:
    reader = eh_frame.EntryReader(".eh_frame", _CIE_INITIAL, 0, True, 8)
    return eh_frame.Cie(1, -8, 16, b"zR", 0x1B, reader.instructions(0, len(_CIE_INITIAL)))


Answer = list[tuple[int, str]] | None


def _both(body: bytes) -> tuple[Answer, Answer]:
    """(the direct translation's rows, None where it refuses; the general one's)."""
    cie = _cie()
    initial = breakpad._cie_state(cie)
    assert initial is not None
    try:
        direct: Answer = breakpad._direct(body, 0, len(body), cie, initial)
    except (breakpad._Unusual, DecodeError):
        direct = None
    reader = eh_frame.EntryReader(".eh_frame", body, 0, True, 8)
    return direct, breakpad._general(reader, cie, 0, len(body))


def u(n: int) -> bytes:
    return encode_uleb128(n)


def s(n: int) -> bytes:
    return encode_sleb128(n)


# (what, FDE body, whether the direct translation takes it)
CASES: list[tuple[str, bytes, bool]] = [
    ("nothing: the CIE's rules", b"", True),
    ("push rbp: def_cfa_offset, offset", bytes([0x41, 0x0E, 16, 0x86, 2]), True),
    ("frame pointer: def_cfa_register", bytes([0x41, 0x0E, 16, 0x86, 2, 0x43, 0x0D, 6]), True),
    ("def_cfa", bytes([0x41, 0x0C]) + u(6) + u(16), True),
    ("advance_loc1, 2, 4", bytes([0x02, 200, 0x0E, 16, 0x03, 0x10, 0x27, 0x0E, 24,
                                  0x04, 0x40, 0x42, 0x0F, 0, 0x0E, 8]), True),
    ("offset_extended", bytes([0x41, 0x05]) + u(3) + u(3), True),
    ("offset_extended_sf", bytes([0x41, 0x11]) + u(12) + s(-2), True),
    ("same_value", bytes([0x41, 0x83, 2, 0x41, 0x08, 3]), True),
    ("register", bytes([0x41, 0x09, 3, 0]), True),
    ("restore to the CIE's rule and to none",
     bytes([0x41, 0x86, 2, 0x90, 3, 0x41, 0xC6, 0xD0]), True),
    ("restore a register to none", bytes([0x41, 0x86, 2, 0x41, 0xC6]), True),
    ("remember and restore state",
     bytes([0x41, 0x0E, 16, 0x86, 2, 0x0A, 0x41, 0x0E, 8, 0xC6, 0x41, 0x0B, 0x41]), True),
    ("GNU_args_size", bytes([0x41, 0x2E, 16, 0x41]), True),
    ("nop padding", bytes([0x41, 0x0E, 16, 0, 0, 0]), True),
    ("undefined: left to the general path", bytes([0x41, 0x07, 3]), False),
    ("val_offset: left", bytes([0x41, 0x14, 3, 2]), False),
    ("expression: left", bytes([0x41, 0x10, 3, 2, 0x77, 0x08]), False),
    ("def_cfa_expression: left", bytes([0x41, 0x0F, 2, 0x77, 0x08]), False),
    ("a register Breakpad has no name for", bytes([0x41, 0x05, 17, 1]), False),
    ("the CFA in a register without a name", bytes([0x41, 0x0D, 20]), False),
    ("restore_state with nothing remembered", bytes([0x41, 0x0B]), False),
    ("a truncated advance_loc2", bytes([0x41, 0x03, 1]), False),
    ("a truncated operand", bytes([0x41, 0x0E, 0x80]), False),
    ("restore_state drops a rule set after remember_state",
     bytes([0x41, 0x0A, 0x86, 2, 0x41, 0x0B]), True),
    ("set_loc: left (rows not a function of the body alone)", bytes([0x41, 0x01]) + bytes(4),
     False),
]


def test_the_table_of_cases_in_both_translations() -> None:
    for what, body, taken in CASES:
        direct, general = _both(body)
        assert (direct is not None) == taken, what
        if taken:
            assert direct == general, what


_REG = st.integers(0, 20)
_INSTRUCTION = st.one_of(
    st.integers(0, 63).map(lambda d: bytes([0x40 | d])),  # advance_loc
    st.tuples(st.integers(0, 20), st.integers(0, 40)).map(lambda t: bytes([0x80 | t[0]])
                                                          + u(t[1])),  # offset
    st.integers(0, 20).map(lambda r: bytes([0xC0 | r])),  # restore
    st.sampled_from([b"\x00", b"\x0a", b"\x0b", b"\x2e\x08"]),  # nop, remember, restore, args
    st.integers(0, 255).map(lambda d: bytes([0x02, d])),  # advance_loc1
    st.tuples(_REG, st.integers(0, 300)).map(lambda t: b"\x0c" + u(t[0]) + u(t[1])),
    _REG.map(lambda r: b"\x0d" + u(r)),  # def_cfa_register
    st.integers(0, 300).map(lambda o: b"\x0e" + u(o)),  # def_cfa_offset
    st.tuples(_REG, st.integers(0, 40)).map(lambda t: b"\x05" + u(t[0]) + u(t[1])),
    st.tuples(_REG, st.integers(-40, 40)).map(lambda t: b"\x11" + u(t[0]) + s(t[1])),
    _REG.map(lambda r: b"\x08" + u(r)),  # same_value
    st.tuples(_REG, _REG).map(lambda t: b"\x09" + u(t[0]) + u(t[1])),  # register
    _REG.map(lambda r: b"\x07" + u(r)),  # undefined: never taken directly
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_INSTRUCTION, max_size=12).map(b"".join))
def test_random_sequences_say_the_same_or_are_refused(body: bytes) -> None:
    direct, general = _both(body)
    assert direct is None or direct == general


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=24))
def test_random_bytes_say_the_same_or_are_refused(body: bytes) -> None:
    direct, general = _both(body)
    assert direct is None or direct == general
