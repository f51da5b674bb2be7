"""What a session says of a BOLTed module's missing pre-BOLT input costs no second decoding of
its BAT note: the persistent index already holds the note's scan (a BOLTed libLLVM's 36 MB
note took 2 s to scan in every later session, bench/libllvm.py --dap-only)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts


def test_a_later_session_says_the_input_is_missing_without_scanning_bat(
        zoo: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from unsplit.formats import bat_scan
    from unsplit.session import Session

    f = facts(zoo, "bolt-dlopen", "libwork")
    (tmp_path / "alone").mkdir()
    lib = tmp_path / "alone" / "libwork.so"
    shutil.copy2(ROOT / f["binary"], lib)  # no input beside it
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    first = Session(progress=None)
    notes = first.input_notes(str(lib))
    assert len(notes) == 1 and "not found" in notes[0]
    assert first.indexes.get(str(lib)).moved_starts()  # the first session's index is kept
    scans: list[int] = []
    real = bat_scan.scan

    def counted(*args: Any, **kwargs: Any) -> Any:
        scans.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(bat_scan, "scan", counted)
    later = Session(progress=None)
    assert later.input_notes(str(lib)) == notes
    assert scans == []
