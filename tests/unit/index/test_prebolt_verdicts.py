"""index.bolt.prebolt remembers a pre-BOLT input it found good, by both files' paths, sizes and
times, so that a later session does not decode BAT again to check the same pair; a file that
changed is checked again, and a refused candidate is never remembered."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from unsplit.elf.binary import Binary
from unsplit.index.bolt import prebolt

from ...conftest import ROOT, facts


def _copies(zoo: dict[str, Any], tmp_path: Path) -> tuple[Path, Path]:
    f = facts(zoo, "bolt-all", "crash")
    out = tmp_path / "app" / "crash"
    (out.parent / "input").mkdir(parents=True)
    shutil.copy2(ROOT / f["binary"], out)
    shutil.copy2(ROOT / f["input"], out.parent / "input" / "crash")
    return out, out.parent / "input" / "crash"


def test_a_pair_found_good_is_not_checked_again(zoo: dict[str, Any], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    out, given = _copies(zoo, tmp_path)
    checked: list[str] = []
    real = prebolt.mismatch

    def counting(binary: Binary, candidate: Binary) -> str | None:
        checked.append(candidate.path)
        return real(binary, candidate)

    monkeypatch.setattr(prebolt, "mismatch", counting)
    first = prebolt.find_input(Binary(str(out)))
    assert first is not None and first.path == str(given) and checked == [str(given)]
    assert list((tmp_path / "cache").glob("inputs-v*/*/*"))
    again = prebolt.find_input(Binary(str(out)))
    assert again is not None and again.path == str(given) and checked == [str(given)]
    st = given.stat()
    os.utime(given, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert prebolt.find_input(Binary(str(out))) is not None
    assert checked == [str(given), str(given)]  # the input changed: checked again


def test_a_refused_candidate_is_not_remembered(zoo: dict[str, Any], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    out, _ = _copies(zoo, tmp_path)
    monkeypatch.setattr(prebolt, "mismatch", lambda binary, candidate: "refused here")
    assert prebolt.find_input(Binary(str(out))) is None
    assert not list((tmp_path / "cache").glob("inputs-v*/*/*"))
