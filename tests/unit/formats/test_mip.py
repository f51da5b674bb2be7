"""`__llvm_mipmap` (shared/seeds/machine-ir-profile-mip.txt): the seed's `_Z3foov` record
assembled by hand, PC-relative fields resolved, round trips, random bytes."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from unsplit.errors import DecodeError, UnsupportedVersion
from unsplit.formats import mip
from unsplit.formats.mip import MipFunction, MipHeader
from unsplit.index.sources.mip import map_procedures

RAW = 0x404000  # sh_addr of __llvm_mipraw
FOO = 0x401130  # _Z3foov
MAP = 0x7000_0000  # where the map would be if it were loaded: only differences matter


def _seed_example() -> bytes:
    """The seed's `_Z3foov$MAP`, field by field, after a 24-byte map header."""
    header = struct.pack("<IHHIIII", 0x50494DFB, 8, 2, 1, 0xDEADBEEF, 0, 24)
    ref = MAP + 24
    record = struct.pack(
        "<iiiIIIIII",
        RAW - ref,  # __start___llvm_mipraw - .Lref
        RAW + 3 - ref,  # _Z3foov$RAW - .Lref (its byte is the 4th of the raw section)
        FOO - ref,  # _Z3foov - .Lref
        0x30,  # [[FOO_END]] - _Z3foov
        0x70C9FA27,  # CFG signature
        2,  # non-entry block count
        0x0C,  # block 0 offset
        0x20,  # block 1 offset
        7,  # name length
    )
    return header + record + b"_Z3foov"


FOO_FUNC = MipFunction("_Z3foov", FOO, 0x30, 0x70C9FA27, (0x0C, 0x20), 3)


def test_seed_example_decodes() -> None:
    m = mip.decode(_seed_example(), RAW)
    assert m.header == MipHeader(8, 2, 1, 0xDEADBEEF)
    assert m.functions == (FOO_FUNC,)
    assert m.functions[0].offset == 24


def test_seed_example_encodes_byte_for_byte() -> None:
    assert mip.encode([FOO_FUNC], RAW, MipHeader(8, 2, 1, 0xDEADBEEF), MAP) == _seed_example()


def test_without_raw_address_addresses_are_relative_to_it() -> None:
    [f] = mip.decode(_seed_example()).functions
    assert f.address == FOO - RAW and f.raw_offset == 3


def test_blocks_and_procedures() -> None:
    [proc] = map_procedures(mip.decode(_seed_example(), RAW))
    assert proc.name == "_Z3foov" and proc.entry == FOO and not proc.is_split
    assert proc.fragments[0].source == "mip"
    assert [(b.id, b.start - FOO, b.end - FOO) for b in proc.blocks] == [
        (0, 0, 0x0C),
        (1, 0x0C, 0x20),
        (2, 0x20, 0x30),
    ]


def test_records_are_eight_aligned() -> None:
    bar = MipFunction("bar", FOO + 0x40, 8, 1, (), 4)
    data = mip.encode([FOO_FUNC, bar], RAW)
    # 24 + 36 + 7 = 67: the second record starts at 72, after five bytes of padding.
    assert data[67:72] == bytes(5)
    m = mip.decode(data, RAW)
    assert m.functions == (FOO_FUNC, bar) and m.functions[1].offset == 72
    assert mip.decode(data + bytes(13), RAW) == m  # trailing padding is ignored


@pytest.mark.parametrize("cut", [10, 30, 50, 60, 66])
def test_truncated(cut: int) -> None:
    with pytest.raises(DecodeError, match="truncated"):
        mip.decode(_seed_example()[:cut])


_func = st.builds(
    MipFunction,
    st.text(min_size=1, max_size=12),
    st.integers(RAW - 0x10000, RAW + 0x10000),
    st.integers(0, 0x1000),
    st.integers(0, 0xFFFFFFFF),
    st.lists(st.integers(0, 0x1000), max_size=5).map(tuple),
    st.integers(0, 0x1000),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_func, max_size=6), st.integers(0, 0xFFFF))
def test_round_trip(funcs: list[MipFunction], module_hash: int) -> None:
    header = MipHeader(8, 2, 1, module_hash)
    m = mip.decode(mip.encode(funcs, RAW, header), RAW)
    assert m.header == header and list(m.functions) == funcs


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=120))
def test_random_bytes_only_raise_decode_error(data: bytes) -> None:
    for blob in (data, _seed_example()[:24] + data):
        try:
            mip.decode(blob, RAW)
        except DecodeError:
            pass


# -- block ids and the raw profile -----------------------------------------------------------


def test_block_ids_follow_the_map_not_the_addresses() -> None:
    """Non-entry blocks are %1..%n in map order (the order of their coverage bytes); blocks
    outside the function or at the start of another give none."""
    f = MipFunction("f", FOO, 0x40, 0, (0x30, 0x10, 0x50, 0x10), 24)
    assert [(b.id, b.start - FOO, b.end - FOO) for b in f.blocks()] == [
        (0, 0, 0x10),
        (4, 0x10, 0x30),
        (1, 0x30, 0x40),
    ]


PROFILE = mip.FUNCTION_COVERAGE | mip.BLOCK_COVERAGE


def _raw_header(profile_type: int = PROFILE) -> MipHeader:
    return MipHeader(8, mip.FILE_TYPE_RAW, profile_type, 0xDEADBEEF)


def test_raw_profile_flags_blocks() -> None:
    funcs = mip.lay_out_raw([FOO_FUNC, MipFunction("bar", FOO + 0x40, 8, 1, (), 0)], PROFILE)
    assert [f.raw_offset for f in funcs] == [24, 27]  # 1 + 2 bytes, then bar's one byte
    coverage = {24: mip.Coverage(True, (False, True)), 27: mip.Coverage(False, ())}
    raw = mip.encode_raw(funcs, coverage, _raw_header())
    assert raw[24:] == bytes([0x00, 0xFF, 0x00, 0xFF])  # 0 once run, all ones before
    m = mip.MipMap(MipHeader(8, 2, PROFILE, 0xDEADBEEF), tuple(funcs))
    profile = mip.decode_raw(raw, m)
    assert profile.coverage == coverage
    [foo, bar] = map_procedures(m, profile)
    assert [b.flags for b in foo.blocks] == [("covered",), ("not-covered",), ("covered",)]
    assert [b.flags for b in bar.blocks] == [("not-covered",)]


def test_function_coverage_alone_flags_the_entry_block() -> None:
    funcs = mip.lay_out_raw([FOO_FUNC], mip.FUNCTION_COVERAGE)
    m = mip.MipMap(MipHeader(8, 2, mip.FUNCTION_COVERAGE, 0xDEADBEEF), tuple(funcs))
    raw = mip.encode_raw(funcs, {24: mip.Coverage(True)}, _raw_header(mip.FUNCTION_COVERAGE))
    assert len(raw) == 25
    [proc] = map_procedures(m, mip.decode_raw(raw, m))
    assert [b.flags for b in proc.blocks] == [("covered",), (), ()]


def test_the_compilers_image_is_no_profile() -> None:
    """A raw section still all ones is what the compiler emitted, before any run: no flags."""
    funcs = mip.lay_out_raw([FOO_FUNC], PROFILE)
    m = mip.MipMap(MipHeader(8, 2, PROFILE, 0xDEADBEEF), tuple(funcs))
    raw = mip.encode_raw(funcs, {}, _raw_header())
    [proc] = map_procedures(m, mip.decode_raw(raw, m))
    assert all(b.flags == () for b in proc.blocks)


def _patched(data: bytes, patch: tuple[int, bytes]) -> bytes:
    at, value = patch
    return data[:at] + value + data[at + len(value):]


def _decode_map(patch: tuple[int, bytes]) -> object:
    return mip.decode(_patched(_seed_example(), patch))


def _decode_raw(patch: tuple[int, bytes]) -> object:
    funcs = mip.lay_out_raw([FOO_FUNC], PROFILE)
    m = mip.MipMap(MipHeader(8, 2, PROFILE, 0xDEADBEEF), tuple(funcs))
    raw = mip.encode_raw(funcs, {24: mip.Coverage(True, (True, False))}, _raw_header())
    return mip.decode_raw(_patched(raw, patch), m)


DECODE_PATCHED = {"__llvm_mipmap": _decode_map, "__llvm_mipraw": _decode_raw}
# A section with bytes overwritten (at, value): the error, the offset it names, words it says.
DAMAGED = [
    ("__llvm_mipmap", (0, b"\xfcMIP"), DecodeError, 0, "bad magic"),
    ("__llvm_mipmap", (6, b"\x01\x00"), DecodeError, 6, "file type"),
    ("__llvm_mipmap", (20, b"\x20\x00\x00\x00"), UnsupportedVersion, 20, "24-byte header"),
    ("__llvm_mipraw", (6, b"\x02\x00"), DecodeError, 6, "expected 1"),
    ("__llvm_mipraw", (8, b"\x04\x00\x00\x00"), UnsupportedVersion, 8, "profile type 0x4"),
    ("__llvm_mipraw", (12, b"\x00\x00\x00\x00"), DecodeError, 8, "another build"),
    ("__llvm_mipraw", (25, b"\x17"), DecodeError, 25, "coverage byte 0x17"),
]


@pytest.mark.parametrize(("section", "patch", "error", "offset", "words"), DAMAGED)
def test_bad_header_or_raw_profile(section: str, patch: tuple[int, bytes],
                                   error: type[DecodeError], offset: int, words: str) -> None:
    with pytest.raises(error, match=words) as e:
        DECODE_PATCHED[section](patch)
    assert e.value.section == section and e.value.offset == offset


def test_raw_profile_too_short() -> None:
    funcs = mip.lay_out_raw([FOO_FUNC], PROFILE)
    m = mip.MipMap(MipHeader(8, 2, PROFILE, 0xDEADBEEF), tuple(funcs))
    raw = mip.encode_raw(funcs, {24: mip.Coverage(True, (True, True))}, _raw_header())
    with pytest.raises(DecodeError, match="_Z3foov: raw profile of 3 bytes at 0x18"):
        mip.decode_raw(raw[:26], m)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_func, max_size=6),
    st.sampled_from([mip.FUNCTION_COVERAGE, PROFILE]),
    st.randoms(use_true_random=False),
)
def test_raw_round_trip(funcs: list[MipFunction], profile_type: int, rnd: Any) -> None:
    funcs = mip.lay_out_raw(funcs, profile_type)
    coverage = {
        f.raw_offset: mip.Coverage(
            rnd.random() < 0.5,
            tuple(rnd.random() < 0.5 for _ in f.block_offsets)
            if profile_type & mip.BLOCK_COVERAGE else None,
        )
        for f in funcs
    }
    m = mip.MipMap(MipHeader(8, 2, profile_type, 7), tuple(funcs))
    raw = mip.encode_raw(funcs, coverage, MipHeader(8, mip.FILE_TYPE_RAW, profile_type, 7))
    assert mip.decode_raw(raw, m).coverage == coverage


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=120))
def test_random_raw_bytes_only_raise_decode_error(data: bytes) -> None:
    funcs = mip.lay_out_raw([FOO_FUNC, MipFunction("bar", FOO + 0x40, 8, 1, (4,), 0)], PROFILE)
    m = mip.MipMap(MipHeader(8, 2, PROFILE, 0xDEADBEEF), tuple(funcs))
    header = mip.encode_raw([], {}, _raw_header())
    for blob in (data, header + data):
        try:
            mip.decode_raw(blob, m)
        except DecodeError:
            pass
