"""The two readers of a current-format BAT descriptor on one table of cases: the fast scan
(formats.bat_scan, its maps decoded when asked for) gives the same table as the full decoder
(formats.bat.decode_current), or the same DecodeError (offset and wording): the spec's worked
example, random tables (hypothesis), mutated and truncated descriptors, random bytes."""

from __future__ import annotations

import random
from array import array

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unsplit.errors import DecodeError
from unsplit.formats import bat, bat_scan

from .test_bat import bat_tables, t_bolt

Answer = tuple[bat.BatTable | None, tuple[int, str] | None]


def _full(desc: bytes) -> Answer:
    try:
        return bat.decode_current(desc), None
    except DecodeError as e:
        return None, (e.offset, e.message)


def _fast(desc: bytes) -> Answer:
    try:
        found = bat_scan.scan(desc)
        if isinstance(found, bat.BatTable):
            return found, None
        table = bat_scan.table(found, lambda offset, size: desc[offset:offset + size])
        for address in table.maps:  # every map decoded: a lazy one may fail only now
            table.maps[address]
        return table, None
    except DecodeError as e:
        return None, (e.offset, e.message)


def _same(desc: bytes) -> bool:
    """Both readers agree on `desc`; whether it decoded."""
    (full, full_error), (fast, fast_error) = _full(desc), _fast(desc)
    assert fast_error == full_error
    if full is None or fast is None:
        assert full is fast is None
        return False
    assert list(fast.hot) == list(full.hot)
    assert list(fast.starts()) == list(full.starts())
    assert list(fast.parents()) == list(full.parents())
    assert list(fast.split_parents()) == list(full.split_parents())
    assert sorted(fast.maps) == sorted(full.maps)
    for address, want in full.maps.items():
        got = fast.maps[address]
        assert list(got.entries()) == list(want.entries())
        assert (got.kind, got.parent, got.func_hash, got.num_blocks, got.input_skew,
                got.secondary_entry_points) == (want.kind, want.parent, want.func_hash,
                                                want.num_blocks, want.input_skew,
                                                want.secondary_entry_points)
    return True


def bolt_like_map(rnd: random.Random, kind: str, address: int, parent: int | None
                  ) -> bat.BatMap:
    """A map as BOLT writes them for real code: a long deduplicated prefix (output offset =
    input offset - skew), small deltas (one-byte LEB128s) with a few long ones, block indices
    that go back (ten-byte deltas)."""
    n = rnd.randint(0 if kind == "hot" else 1, 40)

    def step() -> int:
        return rnd.randint(0x80, 0x4000) if rnd.random() < 0.05 else rnd.randint(0, 0x7F)

    outs = [0]
    while len(outs) < n:
        outs.append(outs[-1] + step())
    outs = outs[:n]
    skew = rnd.randint(0, 0x200) if kind == "cold" else 0
    same = n if rnd.random() < 0.5 else rnd.randint(0, n)
    values = []
    for j in range(n):
        moved = 0 if j < same else rnd.choice((step(), -rnd.randint(1, 0x40)))
        values.append(max(outs[j] + skew + moved, 0) << 1 | rnd.randint(0, 1))
    return bat.BatMap(
        address=address,
        kind=kind,  # type: ignore[arg-type]
        output_offsets=array("I", outs),
        input_values=array("I", values),
        bb_hashes=array("Q", [0 if v & 1 else rnd.getrandbits(64) for v in values]),
        bb_indices=array("I", _block_indices(rnd, values)),
        func_hash=rnd.getrandbits(64) if kind == "hot" else None,
        num_blocks=rnd.randint(0, 300) if kind == "hot" else None,
        secondary_entry_points=tuple(sorted(rnd.sample(range(1, 0x100), rnd.randint(0, 2))))
        if kind == "hot" else (),
        parent=parent,
        input_skew=skew,
    )


def _block_indices(rnd: random.Random, values: list[int]) -> list[int]:
    """Mostly ascending, as blocks keep their order; now and then one that goes back."""
    out, index = [], 0
    for v in values:
        index = max(index + rnd.randint(-3, 3) if rnd.random() < 0.1 else index + 1, 0)
        out.append(0 if v & 1 else index)
    return out


@st.composite
def bolt_like_tables(draw: st.DrawFn) -> bat.BatTable:
    """Up to 60 maps laid out as BOLT lays them: the first ones leave enough bytes after
    them for bat_scan's walk without a bound check per read, the last ones do not."""
    rnd = draw(st.randoms(use_true_random=False))
    count = rnd.randint(1, 60)
    addresses = [0x400000]
    while len(addresses) < count:
        addresses.append(addresses[-1] + rnd.randint(1, 0x8000))
    n_hot = rnd.randint(1, count)
    hot = addresses[:n_hot]
    maps = {a: bolt_like_map(rnd, "hot", a, None) for a in hot}
    for a in addresses[n_hot:]:
        maps[a] = bolt_like_map(rnd, "cold", a, rnd.choice(hot))
    return bat.build_table(bat.CURRENT, maps, tuple(hot))


def _deduplicated_map(address: int, change: str) -> bat.BatMap:
    """A hot map of 30 entries, the first 27 deduplicated (three BranchEntries bytes and
    three entries after them), blocks and branches mixed, every LEB128 one byte but where
    ``change`` says: "long delta" (a two-byte output delta in the second group of eight),
    "index back" (a block-index delta that goes back, ten bytes, in the third), "index jump"
    (one of two bytes there)."""
    outs = [3 * j + (j % 2) for j in range(30)]
    if change == "long delta":
        outs = [o + (0x90 if j >= 11 else 0) for j, o in enumerate(outs)]
    branch = [j % 3 == 2 for j in range(30)]  # the last deduplicated one too
    values = [(o << 1) | b for o, b in zip(outs, branch, strict=True)]
    values[27:] = [(outs[27] + 2) << 1, (outs[28] + 1) << 1 | 1, (outs[29] - 3) << 1]
    indices = [0 if b else j for j, b in enumerate(branch)]
    if change == "index back":
        indices[18] = 2
    if change == "index jump":
        indices = [i + 200 if j >= 18 and i else i for j, i in enumerate(indices)]
    return bat.BatMap(
        address=address, kind="hot", output_offsets=array("I", outs),
        input_values=array("I", values),
        # every byte under 0x80: a long LEB128 is the only byte a fast path must stop at
        bb_hashes=array("Q", [0 if b else 0x3E3779397F4A7C15 + j for j, b in enumerate(branch)]),
        bb_indices=array("I", indices), func_hash=0x1234, num_blocks=30,
        secondary_entry_points=(), parent=None, input_skew=0)


@pytest.mark.parametrize("change", ["", "long delta", "index back", "index jump"])
def test_deduplicated_entries_eight_at_a_time(change: str) -> None:
    """Maps far enough from the descriptor's end that the scan reads their deduplicated
    entries eight at a time: the addresses of the maps after them are the full decoder's."""
    addresses = [0x10000 + 0x1000 * k for k in range(12)]
    maps = {a: _deduplicated_map(a, change) for a in addresses}
    desc = bat.encode_payload(bat.build_table(bat.CURRENT, maps, tuple(addresses)))
    found = bat_scan.scan(desc)
    assert isinstance(found, bat_scan.BatScan)
    assert list(found.addresses) == addresses
    assert _same(desc)


def test_worked_example_and_its_truncations() -> None:
    desc = bat.encode_payload(t_bolt())
    assert _same(desc)
    assert not any(_same(desc[:n]) for n in range(len(desc)))


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(bat_tables())
def test_random_tables(table: bat.BatTable) -> None:
    assert _same(bat.encode_payload(table))


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(bolt_like_tables())
def test_bolt_like_tables(table: bat.BatTable) -> None:
    assert _same(bat.encode_payload(table))


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_bolt_like_descriptors(data: st.DataObject) -> None:
    buf = bytearray(bat.encode_payload(data.draw(bolt_like_tables())))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i] = data.draw(st.integers(0, 255))
    _same(bytes(buf))


@settings(max_examples=300)
@given(st.data())
def test_mutated_descriptors(data: st.DataObject) -> None:
    buf = bytearray(bat.encode_payload(data.draw(bat_tables())))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i] = data.draw(st.integers(0, 255))
    _same(bytes(buf))


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_random_bytes(desc: bytes) -> None:
    _same(desc)
