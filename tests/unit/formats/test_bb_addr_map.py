"""The bb address map decoder on the worked examples of shared/specs/llvm-bb-addr-map.md §14,
its error semantics (§12), and property tests: encode → decode round trips, and arbitrary or
mutated bytes only ever raise DecodeError."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unsplit.errors import DecodeError, UnsupportedVersion
from unsplit.formats import bb_addr_map as fmt
from unsplit.formats.bb_addr_map import (
    SHT_LLVM_BB_ADDR_MAP_V0,
    BBEntry,
    BBRange,
    Feature,
    FunctionMap,
    PGOAnalysis,
    PGOBlock,
    Successor,
    decode,
    encode,
    iter_records,
)


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", "").replace("|", ""))


Z8 = "0000000000000000"

# §14.1 .. §14.8, byte for byte.
V0_FOO_BAR = h(f"{Z8} 03 000408 041001 140601 {Z8} 01 000503")
V1_YAML = h("01 00 2000000000000000 01 010203")
V2_FOO = h(f"02 00 {Z8} 03 00000408 01001401 03000601")
V3_FOO = h(f"03 20 {Z8} 03 0000000408 01000208070f01 0300000601")
V5_FOO = h(f"05 2000 {Z8} 03 0000000408 0100020d070a01 0300000601")
V5_BAR = h(f"05 2000 {Z8} 01 0000010a0003")
MFS = h(f"05 2f00 02 {Z8} 02 0000000908 01000205060003 {Z8} 01 02000205060003 d836"
        "8080808080808020 02 018080808008 0200 808080fcffffff1f 00 80808004 00")
ALL = h("05 e700 0010000000000000 02 000001020308 8877665544332211 0101000201 9900000000000000"
        "64 640a0101808080800807 640300")
OMIT = h(f"05 3100 {Z8} 03 00")
EXAMPLES = [V1_YAML, V2_FOO, V3_FOO, V5_FOO, V5_BAR, MFS, ALL, OMIT]


def only(data: bytes, **kw: object) -> FunctionMap:
    sm = decode(data, **kw)  # type: ignore[arg-type]
    assert sm.ok, sm
    assert len(sm.functions) == 1
    return sm.functions[0]


def test_sizes_match_the_spec() -> None:
    assert (len(V0_FOO_BAR), len(V3_FOO), len(V5_FOO), len(MFS), len(ALL)) == (30, 28, 29, 74, 53)


def test_v0_absolute_offsets_and_index_ids() -> None:
    sm = decode(V0_FOO_BAR, sh_type=SHT_LLVM_BB_ADDR_MAP_V0)
    foo, bar = sm.functions
    assert foo.version is None
    assert [(e.id, e.offset, e.size, e.metadata) for e in foo.ranges[0].entries] == [
        (0, 0, 4, 8), (1, 4, 0x10, 1), (2, 0x14, 6, 1)]
    assert bar.ranges[0].entries[0].flags == ("return", "tail_call")
    assert bar.offset == 18 and bar.ranges[0].address_offset == 18


def test_v0_is_skipped_by_strict_llvm22() -> None:
    sm = decode(V0_FOO_BAR, sh_type=SHT_LLVM_BB_ADDR_MAP_V0, strict=True)
    assert sm.functions == () and sm.error is None


def test_v1_delta_offsets() -> None:
    fm = only(V1_YAML)
    assert fm.address == 0x20
    assert fm.ranges[0].entries == (BBEntry(0, 1, 2, 3),)
    sm = decode(V1_YAML, strict=True)
    assert isinstance(sm.error, UnsupportedVersion)
    assert sm.error.message == "unsupported SHT_LLVM_BB_ADDR_MAP version: 1"


def test_v2_ids() -> None:
    fm = only(V2_FOO)
    assert [(e.id, e.offset) for e in fm.ranges[0].entries] == [(0, 0), (1, 4), (3, 0x18)]


def test_v3_and_v5_callsites() -> None:
    for data, cs in ((V3_FOO, (8, 15)), (V5_FOO, (13, 20))):
        e = only(data).ranges[0].entries
        assert e[1].callsite_offsets == cs and e[1].size == 30 and e[1].offset == 4
        assert e[2].offset == 0x22
    bar = only(V5_BAR).ranges[0].entries[0]
    assert bar.callsite_offsets == (10,) and bar.size == 10 and bar.metadata == 3


def test_multi_range_pgo() -> None:
    fm = only(MFS)
    assert fm.feature == (Feature.FUNC_ENTRY_COUNT | Feature.BB_FREQ | Feature.BR_PROB
                          | Feature.MULTI_BB_RANGE | Feature.CALLSITE_OFFSETS)
    r0, r1 = fm.ranges
    assert (r0.address_offset, r1.address_offset) == (4, 0x19)
    assert [e.id for e in r0.entries] == [0, 1] and r1.entries[0] == BBEntry(2, 0, 11, 3, (5, 11))
    assert fm.pgo == PGOAnalysis(7000, (
        PGOBlock(1 << 54, None, (Successor(1, 0x80000000), Successor(2, 0))),
        PGOBlock(18014398501093376, None, ()),
        PGOBlock(8388608, None, ()),
    ))


def test_all_features() -> None:
    fm = only(ALL)
    a, b = fm.ranges[0].entries
    assert a == BBEntry(0, 0, 5, 8, (2,), 0x1122334455667788)
    assert b == BBEntry(1, 6, 2, 1, (), 0x99)
    assert fm.pgo == PGOAnalysis(100, (
        PGOBlock(100, 10, (Successor(1, 0x80000000, 7),)), PGOBlock(100, 3, ())))


def test_omit_bb_entries() -> None:
    fm = only(OMIT)
    assert fm.ranges[0].num_blocks == 3 and fm.ranges[0].entries == ()
    assert fm.pgo == PGOAnalysis(0, ())


@pytest.mark.parametrize("data", EXAMPLES)
def test_examples_reencode_exactly(data: bytes) -> None:
    assert encode(decode(data).functions) == data
    assert encode(decode(V0_FOO_BAR, sh_type=SHT_LLVM_BB_ADDR_MAP_V0).functions) == V0_FOO_BAR


def test_relocations_give_addresses() -> None:
    sm = decode(MFS, relocations={4: 0x40, 0x19: 0x1000})
    assert [r.base_address for r in sm.functions[0].ranges] == [0x40, 0x1000]
    sm = decode(MFS, relocations={4: 0x40}, strict=True)
    assert sm.error is not None and sm.error.message == (
        "failed to get relocation data for offset: 19 in section .llvm_bb_addr_map")


def test_32_bit_big_endian() -> None:
    fm = FunctionMap(2, 0, (BBRange(0x12345678, 1, (BBEntry(7, 0, 4, 1),)),))
    data = encode([fm], address_size=4, little_endian=False)
    assert data[2:6] == b"\x12\x34\x56\x78"
    assert decode(data, address_size=4, little_endian=False).functions == (fm,)


# --- errors (§12) ---------------------------------------------------------------------------


def message(data: bytes, **kw: object) -> str:
    sm = decode(data, strict=True, **kw)  # type: ignore[arg-type]
    assert sm.error is not None and sm.functions == ()
    assert sm.error.section == ".llvm_bb_addr_map"
    return sm.error.message


def test_llvm_messages() -> None:
    assert message(h("06 00")) == "unsupported SHT_LLVM_BB_ADDR_MAP version: 6"
    assert message(h("05 0001")) == "invalid encoding for BBAddrMap::Features: 0x100"
    assert message(h("02 20")) == (
        "version should be >= 3 for SHT_LLVM_BB_ADDR_MAP when callsite offsets feature is "
        "enabled: version = 2 feature = 32")
    assert message(h("03 40")).startswith("version should be >= 4")
    assert message(h("04 80")).startswith("version should be >= 5")
    assert message(h("02 08 00")) == (
        "invalid zero number of BB ranges at offset 3 in .llvm_bb_addr_map")
    assert message(h(f"02 00 {Z8} 01 00 00 00 20")) == (
        "invalid encoding for BBEntry::Metadata: 0x20")
    assert message(h(f"02 00 {Z8} 01 00 00 00")) == (
        "unable to decode LEB128 at offset 0x0000000e: malformed uleb128, extends past end")
    assert message(h(f"02 00 {Z8} 01 00 00 8080808010 00")) == (
        "ULEB128 value at offset 0xd exceeds UINT32_MAX (0x100000000)")
    assert message(h(f"02 01 {Z8} 00 ffffffffffffffffff7f")) == (
        "unable to decode LEB128 at offset 0x0000000b: uleb128 too big for uint64")
    assert message(h("02 00 0000")) == (
        "unexpected end of data at offset 0x4 while reading [0x2, 0xa)")


GOOD = h(f"02 00 {Z8} 01 00 00 04 01")


@pytest.mark.parametrize("bad", [
    h(f"02 00 {Z8} 01 00 00 04 20"),  # metadata bit 5
    h("02 08 00"),  # zero ranges (and no PGO): the record ends after the count
    h(f"02 00 {Z8} 01 8080808010 00 04 01"),  # ID > UINT32_MAX
    h(f"02 01 {Z8} 00 ffffffffffffffffff7f"),  # entry count > UINT64_MAX
])
def test_archival_mode_skips_one_bad_record(bad: bytes) -> None:
    sm = decode(GOOD + bad + GOOD)
    assert len(sm.functions) == 2 and sm.error is None
    assert len(sm.rejected) == 1 and sm.rejected[0].offset >= len(GOOD)
    assert decode(GOOD + bad + GOOD, strict=True).functions == ()


def test_archival_mode_stops_where_layout_is_lost() -> None:
    sm = decode(GOOD + h("07 00") + GOOD)
    assert len(sm.functions) == 1 and isinstance(sm.error, UnsupportedVersion)
    assert sm.error.offset == len(GOOD)


def test_version_0_1_with_features_is_rejected_as_llvm_18_20_did() -> None:
    sm = decode(h(f"01 01 {Z8} 00 00"))
    assert sm.error is not None and "version should be >= 2" in sm.error.message


def test_v1_metadata_is_not_validated_as_in_llvm_16() -> None:
    fm = only(h(f"01 00 {Z8} 01 00 04 ff01"))
    assert fm.ranges[0].entries[0].metadata == 0xFF


@pytest.mark.parametrize("data", EXAMPLES)
def test_truncation_at_every_offset(data: bytes) -> None:
    for cut in range(1, len(data)):
        for strict in (False, True):
            sm = decode(data[:cut], strict=strict)
            assert sm.error is not None, cut
            assert 0 <= sm.error.offset <= cut


# --- properties ------------------------------------------------------------------------------

u32 = st.integers(0, 0xFFFFFFFF)
u64 = st.integers(0, 0xFFFFFFFFFFFFFFFF)


@st.composite
def function_maps(draw: st.DrawFn) -> FunctionMap:
    version = draw(st.sampled_from([None, 0, 1, 2, 3, 4, 5]))
    if version is None or version < 2:
        feature = 0
    else:
        allowed = 0x1F | (0x20 if version >= 3 else 0) | (0x40 if version >= 4 else 0) | (
            0x80 if version >= 5 else 0)
        feature = draw(st.integers(0, 0xFF)) & allowed
    omit = bool(feature & Feature.OMIT_BB_ENTRIES)
    n_ranges = draw(st.integers(1, 3)) if feature & Feature.MULTI_BB_RANGE else 1
    ranges = []
    for _ in range(n_ranges):
        n = draw(st.integers(0, 4))
        entries: list[BBEntry] = []
        for i in range(0 if omit else n):
            cs: tuple[int, ...] = ()
            if feature & Feature.CALLSITE_OFFSETS:
                cs = tuple(draw(st.lists(u32, max_size=3)))
            md = draw(st.integers(0, 0x1F) if version is not None and version >= 2 else u32)
            entries.append(BBEntry(
                draw(u32) if version is not None and version >= 2 else i,
                draw(u32), draw(u32), md, cs,
                draw(u64) if feature & Feature.BB_HASH else None))
        ranges.append(BBRange(draw(u64), n, tuple(entries)))
    pgo = None
    if feature & fmt.PGO_FEATURES:
        blocks = []
        post = bool(feature & Feature.POST_LINK_CFG)
        if feature & (Feature.BB_FREQ | Feature.BR_PROB):
            for _ in range(sum(len(r.entries) for r in ranges)):
                succ = None
                if feature & Feature.BR_PROB:
                    succ = tuple(Successor(draw(u32), draw(u32), draw(u32) if post else None)
                                 for _ in range(draw(st.integers(0, 2))))
                blocks.append(PGOBlock(draw(u64) if feature & Feature.BB_FREQ else None,
                                       draw(u32) if post else None, succ))
        pgo = PGOAnalysis(draw(u64) if feature & Feature.FUNC_ENTRY_COUNT else None,
                          tuple(blocks))
    return FunctionMap(version, feature, tuple(ranges), pgo)


@given(st.data())
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_encode_decode_round_trip(data: st.DataObject) -> None:
    v0 = data.draw(st.booleans())
    maps = data.draw(st.lists(function_maps(), min_size=0, max_size=4))
    maps = [m for m in maps if (m.version is None) == v0]
    wide = data.draw(st.booleans())
    if not wide:
        maps = [FunctionMap(m.version, m.features, tuple(
            BBRange(r.base_address & 0xFFFFFFFF, r.num_blocks, r.entries) for r in m.ranges),
            m.pgo) for m in maps]
    sh_type = SHT_LLVM_BB_ADDR_MAP_V0 if v0 else fmt.SHT_LLVM_BB_ADDR_MAP
    raw = encode(maps, address_size=8 if wide else 4)
    sm = decode(raw, sh_type=sh_type, address_size=8 if wide else 4)
    assert sm.ok and list(sm.functions) == maps


def only_decode_errors(raw: bytes, **kw: object) -> None:
    try:
        for _ in iter_records(raw, **kw):  # type: ignore[arg-type]
            pass
    except DecodeError as e:
        assert isinstance(e.offset, int) and e.section


@given(st.binary(max_size=200), st.sampled_from([fmt.SHT_LLVM_BB_ADDR_MAP,
       SHT_LLVM_BB_ADDR_MAP_V0]), st.sampled_from([4, 8]), st.booleans(), st.booleans())
@settings(max_examples=500)
def test_random_bytes_only_raise_decode_error(
    raw: bytes, sh_type: int, size: int, little: bool, strict: bool
) -> None:
    only_decode_errors(raw, sh_type=sh_type, address_size=size, little_endian=little,
                       strict=strict)
    only_decode_errors(raw, relocations={3: 5}, strict=strict)


@st.composite
def damaged_examples(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """(one of EXAMPLES, a copy of it with one to four bytes overwritten)."""
    base = draw(st.sampled_from(EXAMPLES))
    raw = bytearray(base)
    for pos, byte in draw(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)),
                                   min_size=1, max_size=4)):
        raw[pos % len(raw)] = byte
    return base, bytes(raw)


@given(damaged_examples(), st.booleans())
@settings(max_examples=500)
def test_mutated_sections_only_raise_decode_error(example: tuple[bytes, bytes],
                                                  strict: bool) -> None:
    base, raw = example
    only_decode_errors(raw, strict=strict)
    only_decode_errors(raw + base, strict=strict)


def test_a_clang_size_map_decodes_whole() -> None:
    # clang-size maps are ~10 MB (spec §16); this one is ~2 MB. Its speed is bench/bbmap.py's
    # to measure, not a test's.
    record = V5_FOO + MFS + ALL
    data = record * (2_000_000 // len(record))
    sm = decode(data)
    assert sm.ok and len(sm.functions) == 3 * (2_000_000 // len(record))
