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
    # A new session: the plugin gives the file at its first chance (here a bb command), before
    # anything runs; never LLDB by itself, by a build-id every BOLT layout of the input has.
    session = lldb(ROOT / f["binary"], args=["crash"])
    assert "debuginfo on" in session.command("bb debuginfo status")
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


def test_two_bolt_layouts_share_a_cache(lldb: Callable[..., LldbDriver], zoo: dict[str, Any],
                                        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bolt-all, then bolt-random2 (one input, one build-id: facts) in LLDB sessions sharing a
    cache: the second never reads the first's DWARF file (LLDB searches the cache by build-id),
    and once the plugin gives it its own, its moved code reads the source's line."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("UNSPLIT_CACHE", str(cache))
    monkeypatch.setenv("UNSPLIT_LLDB_DEBUGINFO", "1")
    first, f = facts(zoo, "bolt-all", "crash"), facts(zoo, "bolt-random2", "crash")
    assert first["build_id"] == f["build_id"]
    session = lldb(ROOT / first["binary"], args=["crash"])
    session.run()
    _check_stop(session, first, first["markers"]["crash.c"])
    session.close()
    site = f["markers"]["crash.c"]["crash site"]
    session = lldb(ROOT / f["binary"], args=["crash"])  # nothing asked of the plugin yet
    listed = session.command("image list crash")
    assert str(cache) not in listed or "debuginfo-v2" in listed, listed
    lookup = session.command(f"image lookup -a {f['crash']['link_pc']}")
    lines = re.findall(r"crash\.c:(\d+)", lookup)
    assert lines in ([], [str(site)]), lookup
    assert "debuginfo on" in session.command("bb debuginfo status")
    lookup = session.command(f"image lookup -a {f['crash']['link_pc']}")
    assert re.search(rf"Summary: crash`transfer \+ \d+ at crash\.c:{site}:", lookup), lookup
    session.run()
    _check_stop(session, f, f["markers"]["crash.c"])
    assert not list(cache.glob("lldb-cfi-v*/.build-id/*/*")), list(cache.rglob("*"))
