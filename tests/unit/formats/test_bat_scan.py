"""The two readers of a current-format BAT descriptor on one table of cases: the fast scan
(formats.bat_scan, its maps decoded when asked for) gives the same table as the full decoder
(formats.bat.decode_current), or the same DecodeError (offset and wording): the spec's worked
example, random tables (hypothesis), mutated and truncated descriptors, random bytes."""

from __future__ import annotations

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


def test_worked_example_and_its_truncations() -> None:
    desc = bat.encode_payload(t_bolt())
    assert _same(desc)
    assert not any(_same(desc[:n]) for n in range(len(desc)))


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(bat_tables())
def test_random_tables(table: bat.BatTable) -> None:
    assert _same(bat.encode_payload(table))


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
