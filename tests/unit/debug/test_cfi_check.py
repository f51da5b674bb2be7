"""unsplit.debug.cfi_check on bolt-nonreloc's crash, where BOLT's in-place rewrite leaves the
input's FDE beside the new one at each rewritten function's start: the one-pass FDE scan, the
ranges several FDEs cover, where their rules differ, the ranges kept on disk, and the module's
policy read back from them without its index.

Oracle: llvm-dwarfdump-22 --eh-frame (tests/cfi_oracle.py), never unsplit.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from unsplit.debug import cfi_check
from unsplit.elf import cfi_table
from unsplit.elf.binary import Binary
from unsplit.index.module_index import ModuleIndex

from ...cfi_oracle import dwarfdump_fdes, row_at
from ...conftest import ROOT

BINARY = ROOT / "fixtures/build/bolt-nonreloc/crash"


@pytest.fixture(scope="module")
def fdes() -> list[dict[str, Any]]:
    if not BINARY.exists():
        pytest.fail(f"{BINARY} is not built (fixtures/build.py makes it)")
    return dwarfdump_fdes(BINARY)


def test_every_fde_is_what_dwarfdump_lists(fdes: list[dict[str, Any]]) -> None:
    every = cfi_table.table_for(Binary(str(BINARY))).section_named(".eh_frame").every_fde()
    got = list(zip(every.starts, every.ends, every.offsets, strict=True))
    assert got == sorted((f["start"], f["end"], f["offset"]) for f in fdes)


def _covered_twice(fdes: list[dict[str, Any]]) -> set[int]:
    """Every address at least two of dwarfdump's FDEs cover."""
    seen: dict[int, int] = {}
    for f in fdes:
        for a in range(f["start"], f["end"]):
            seen[a] = seen.get(a, 0) + 1
    return {a for a, n in seen.items() if n > 1}


def test_contested_ranges(fdes: list[dict[str, Any]]) -> None:
    found = cfi_check.Contested.scan(Binary(str(BINARY)))
    got = {a for lo, hi in zip(found.los, found.his, strict=True) for a in range(lo, hi)}
    assert got == _covered_twice(fdes) and got


def test_others_differ_where_dwarfdump_rows_differ(fdes: list[dict[str, Any]]) -> None:
    binary = Binary(str(BINARY))
    twice = _covered_twice(fdes)
    checked = 0
    for address in sorted(twice):
        covering = [f for f in fdes if f["start"] <= address < f["end"]]
        rows = {row_at(f, address) for f in covering}
        assert cfi_check.others_differ(binary, address) == (len(rows) > 1), hex(address)
        checked += len(rows) > 1
    assert checked  # some do differ (bolt-nonreloc's epilogues)
    outside = next(a for f in fdes for a in range(f["start"], f["end"]) if a not in twice)
    assert not cfi_check.others_differ(binary, outside)


def test_ranges_are_kept_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    copy = tmp_path / "crash"
    shutil.copy2(BINARY, copy)
    first = cfi_check.contested(Binary(str(copy)))

    def no_scan(binary: Binary) -> cfi_check.Contested:
        raise AssertionError("scanned again")

    monkeypatch.setattr(cfi_check.Contested, "scan", classmethod(lambda cls, b: no_scan(b)))
    again = cfi_check.contested(Binary(str(copy)))
    assert (list(again.los), list(again.his)) == (list(first.los), list(first.his))
    # The file changed: what was kept is not trusted.
    os.utime(copy, ns=(1, 1))
    with pytest.raises(AssertionError, match="scanned again"):
        cfi_check.contested(Binary(str(copy)))


def test_a_counted_policy_is_read_back_without_the_index(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    copy = tmp_path / "crash"
    shutil.copy2(BINARY, copy)
    assert cfi_check.stored_policy(Binary(str(copy))) is None  # never counted
    counted = cfi_check.module_policy(ModuleIndex(Binary(str(copy))))
    assert counted.moved and counted.contested  # (bolt-nonreloc: both FDEs at each start)
    again = Binary(str(copy))
    assert cfi_check.stored_policy(again) == counted
    # ... and the ranges come with it, as a scan would find them
    scanned = cfi_check.Contested.scan(Binary(str(copy)))
    kept = cfi_check.contested(again)
    assert (list(kept.los), list(kept.his)) == (list(scanned.los), list(scanned.his))
