"""LLDB's own view of moved code once the plugin hands it unsplit's DWARF file (issue 16 item
2): a BOLTed program without DWARF, the plugin imported and nothing else done. `image lookup`,
`breakpoint set -f FILE -l LINE` and LLDB's own unwinding (SBFrame: what lldb-dap shows) name
the procedure and the source markers' lines, at the addresses facts.json's fragment symbols say.
The file replaces the Breakpad CFI file (one symbol file per module), so it is opt-in in LLDB
(UNSPLIT_LLDB_DEBUGINFO=1 / bb debuginfo on); the frames at the crash must still be the
source's."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts
from ..variants import DEBUG_FILE
from .driver_lldb import LldbDriver

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("lldb-22") is None, reason="lldb-22 is not installed"),
]


@pytest.mark.parametrize("variant", DEBUG_FILE)
def test_lldb_native_view_of_moved_code(lldb: Callable[..., LldbDriver], zoo: dict[str, Any],
                                        variant: str, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("UNSPLIT_LLDB_DEBUGINFO", "1")  # off by default in LLDB
    f = facts(zoo, variant, "crash")
    assert not f["has_debug_info"]
    marks = f["markers"]["crash.c"]
    first = lldb(ROOT / f["binary"], args=["crash"])
    first.run()  # the first stop gives the module its file (and caches it for LLDB)
    _check_stop(first, f, marks)
    first.close()
    # A new session: LLDB finds the file by itself, before anything runs.
    session = lldb(ROOT / f["binary"], args=["crash"])
    made = session.command(f"breakpoint set -f crash.c -l {marks['crash site']}")
    m = re.search(rf"where = crash`transfer \+ \d+ at crash\.c:{marks['crash site']}:\d+, "
                  r"address = (0x[0-9a-f]+)", made)
    assert m, made
    cold = [fr for fr in f["split_functions"]["transfer"]["fragments"] if fr["fragment"] != "hot"]
    assert any(int(fr["start"], 16) <= int(m[1], 16) < int(fr["end"], 16) for fr in cold), made
    session.run()
    _check_stop(session, f, marks)
    status = session.command("bb debuginfo status")
    assert "debuginfo on" in status and f["build_id"][2:] in status, status


def _check_stop(session: LldbDriver, f: dict[str, Any], marks: dict[str, int]) -> None:
    native = session.command(
        "script f = lldb.thread.GetFrameAtIndex; print([(f(i).GetFunctionName(), "
        "f(i).GetLineEntry().GetLine()) for i in range(3)])")
    assert native.strip() == repr([("transfer", marks["crash site"]),
                                   ("run", marks["run cold call"]),
                                   ("main", marks["main cold call"])]), native
    lookup = session.command("image lookup -a $pc")
    assert re.search(rf"Summary: crash`transfer \+ \d+ at crash\.c:{marks['crash site']}:",
                     lookup), lookup
