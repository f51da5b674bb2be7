"""The fast reader (formats.bb_addr_map_flat) against the strict one it stands in for: on the
spec's worked examples, on random maps (hypothesis), on mutated and truncated sections, the
same functions and values, or the same DecodeError (offset and LLVM's wording)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unsplit.errors import DecodeError
from unsplit.formats import bb_addr_map as fmt
from unsplit.formats import bb_addr_map_flat as flat

from ..formats.test_bb_addr_map import ALL, EXAMPLES, MFS, V5_FOO, function_maps


def _columns(fn: flat.FlatFunction) -> flat.FlatFunction:
    """`fn` with every column a list (the fast reader may keep the section's bytes, and share
    one empty tuple for blocks without successors)."""
    pgo = fn.pgo
    if pgo is not None and pgo.successors is not None:
        pgo = replace(pgo, successors=[list(s) for s in pgo.successors])
    return replace(fn, pgo=pgo, ranges=tuple(replace(
        r, ids=list(r.ids), sizes=list(r.sizes), metadata=list(r.metadata)) for r in fn.ranges))


def _strict(raw: bytes, **kw: Any) -> tuple[list[flat.FlatFunction], tuple[int, str] | None]:
    out = []
    try:
        for fm in fmt.iter_records(raw, strict=True, **kw):
            assert isinstance(fm, fmt.FunctionMap)
            out.append(flat.flatten(fm))
    except DecodeError as e:
        return out, (e.offset, e.message)
    return out, None


def _fast(raw: bytes, **kw: Any) -> tuple[list[flat.FlatFunction], tuple[int, str] | None]:
    out = []
    try:
        for fn in flat.iter_functions(raw, **kw):
            out.append(_columns(fn))
    except DecodeError as e:
        return out, (e.offset, e.message)
    return out, None


def _same(raw: bytes, **kw: Any) -> None:
    assert _fast(raw, **kw) == _strict(raw, **kw)


def test_worked_examples() -> None:
    for raw in EXAMPLES:
        _same(raw)
        fast, error = _fast(raw)
        assert (error is None and fast) if raw[0] >= 2 else error is not None  # v1: LLVM 22 no
    _same(V5_FOO + MFS + ALL, relocations={1 + 2 + 1: 0x1234})  # a missing relocation, too


def test_the_usual_range_is_read_as_columns() -> None:
    """Four one-byte numbers per block (the path read as byte columns) and a range with a
    two-byte ID next to it (the loop) give the strict reader's values."""
    entries = tuple(fmt.BBEntry(i, 3 * i + i * i, 2 + i, i % 32) for i in range(8))
    wide = tuple(fmt.BBEntry(200 + i, 300 * i, 130, 1) for i in range(3))
    fm = fmt.FunctionMap(3, 0x08, (fmt.BBRange(0x1000, 8, entries),
                                   fmt.BBRange(0x9000, 3, wide)))
    raw = fmt.encode([fm])
    (got,) = flat.iter_functions(raw)
    assert isinstance(got.ranges[0].ids, bytes)  # read as columns of the section's bytes
    assert _columns(got) == flat.flatten(fm)
    assert got.ranges[0].offsets == [e.offset for e in entries]


@given(st.lists(function_maps(), min_size=1, max_size=4), st.booleans())
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_random_maps(maps: list[fmt.FunctionMap], wide: bool) -> None:
    maps = [m for m in maps if m.version is not None and m.version >= 2]
    raw = fmt.encode(maps, address_size=8 if wide else 4) if wide else fmt.encode(
        [fmt.FunctionMap(m.version, m.features, tuple(
            fmt.BBRange(r.base_address & 0xFFFFFFFF, r.num_blocks, r.entries)
            for r in m.ranges), m.pgo) for m in maps], address_size=4)
    _same(raw, address_size=8 if wide else 4)


@given(st.sampled_from(EXAMPLES), st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)),
       min_size=1, max_size=4))
@settings(max_examples=600)
def test_mutated_sections(base: bytes, edits: list[tuple[int, int]]) -> None:
    raw = bytearray(base)
    for pos, byte in edits:
        raw[pos % len(raw)] = byte
    _same(bytes(raw))
    _same(bytes(raw) + base)


@given(st.binary(max_size=200), st.sampled_from([4, 8]), st.booleans())
@settings(max_examples=400)
def test_random_bytes(raw: bytes, size: int, little: bool) -> None:
    _same(raw, address_size=size, little_endian=little)


def test_truncation_at_every_offset() -> None:
    data = V5_FOO + MFS + ALL
    for cut in range(1, len(data)):
        _same(data[:cut])


def test_v0_sections_are_skipped_and_bad_arguments_raise() -> None:
    assert _fast(EXAMPLES[0], sh_type=fmt.SHT_LLVM_BB_ADDR_MAP_V0) == ([], None)
    _same(V5_FOO, address_size=2)
    _same(V5_FOO, sh_type=0x1234)
