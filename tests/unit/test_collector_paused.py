"""The writer's pause of the cycle collector (unsplit.collector.collector_paused) gives the
collector back as it found it, an error or not: `unsplit debuginfo` can run in-process
(cli.main), and a collector left off there would stay off for the rest of that process."""

from __future__ import annotations

import gc

import pytest
from unsplit.collector import collector_paused


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
