"""The writer's pause of the cycle collector (unsplit.collector.collector_paused) gives the
collector back as it found it, an error or not: `unsplit debuginfo` can run in-process
(cli.main), and a collector left off there would stay off for the rest of that process. What
GDB's load made is spared the collector's later passes (spare_what_lives_on), what comes after
is not."""

from __future__ import annotations

import gc

import pytest
from unsplit.collector import collector_paused, spare_what_lives_on


def test_off_inside_and_on_again_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_on_again_after_an_error() -> None:
    with pytest.raises(KeyError), collector_paused():
        raise KeyError("x")
    assert gc.isenabled()


def test_a_collector_already_off_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_what_lives_on_is_spared_and_what_comes_after_is_not() -> None:
    before: list[object] = [object()]
    try:
        spare_what_lives_on()
        after: list[object] = [object()]
        tracked = gc.get_objects()
        assert not any(o is before for o in tracked)  # frozen: no pass looks at it again
        assert any(o is after for o in tracked)
        assert gc.isenabled()
    finally:
        gc.unfreeze()
