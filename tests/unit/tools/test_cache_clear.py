"""`unsplit cache info|clear` cover everything unsplit keeps under the cache root: the index, the
debug file the adapters give a split module without DWARF, LLDB's CFI symbol file, the ranges
where its FDEs compete (GDB's unwinder), and older formats' folders; never a file of another
program that shares ``$UNSPLIT_CACHE``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from unsplit.debug import breakpad, cfi_check
from unsplit.debuginfo import cache as debuginfo_cache
from unsplit.index.module_index import ModuleIndex

from ...conftest import ROOT, facts


def _cli(*args: str, cache: Path) -> Any:
    out = subprocess.run([sys.executable, "-m", "unsplit", "cache", *args, "--json"],
                         capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "plugin"), "UNSPLIT_CACHE": str(cache)})
    return json.loads(out.stdout)


def test_clear_removes_what_is_kept_for_a_binary_then_everything(
        zoo: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("UNSPLIT_CACHE", str(cache))
    binary = tmp_path / "crash"  # split by GCC, no DWARF: it gets a debug file
    shutil.copy2(ROOT / facts(zoo, "gcc-pgo-nodebug", "crash")["binary"], binary)
    _cli("warm", str(binary), cache=cache)
    made = debuginfo_cache.debug_file_for(str(binary))
    assert made.path is not None, made.reason
    index = ModuleIndex.open(str(binary))
    text = breakpad.for_index(index)
    assert text is not None
    cfi, _ = breakpad.save(index, text)
    contested = cfi_check.stored_path(index.binary)
    cfi_check.module_policy(index)  # what GDB's unwinder keeps for a module with moved code
    assert os.path.isfile(contested)
    stale = cache / "index-v1" / "ab" / "old.idx"
    other = cache / "someone-else" / "keep.txt"
    for p in (stale, other):
        p.parent.mkdir(parents=True)
        p.write_text("x")

    kinds = {(e["kind"], e.get("index") or e["file"])
             for e in _cli("info", cache=cache)["info"]}
    assert {k for k, _ in kinds} == {"index", "lldb-cfi", "debuginfo", "contested-cfi"}
    assert ("debuginfo", made.path) in kinds and ("lldb-cfi", cfi) in kinds
    assert ("contested-cfi", contested) in kinds
    assert ("index", str(stale)) in kinds and str(other) not in {p for _, p in kinds}

    (mine,) = _cli("clear", str(binary), cache=cache)["clear"]
    assert made.path in mine["removed"] and cfi in mine["removed"]
    assert contested in mine["removed"]
    assert len(mine["removed"]) == 4  # and the index
    assert not any(os.path.exists(p) for p in mine["removed"])
    assert stale.exists()

    assert [e["removed"] for e in _cli("clear", cache=cache)["clear"]] == [str(stale)]
    assert other.exists()
