"""GDB's own commands in moved code once the plugin hands it unsplit's debug file (issue 16
item 2): a BOLTed program without DWARF, the plugin sourced and nothing else done. `frame`,
`info line`, `list` and `break FILE:LINE` are GDB's (the plugin renames frames in `bt` and the
stop line only): they name the procedure and the line the source's markers say, at the
addresses llvm-readelf-22's fragment symbols (facts.json) say."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts
from ..variants import DEBUG_FILE_GDB
from .conftest import gdb_at_least
from .driver_gdb import GdbDriver

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed"),
]


def _fragment(f: dict[str, Any], proc: str, address: int) -> str:
    for frag in f["split_functions"][proc]["fragments"]:
        if int(frag["start"], 16) <= address < int(frag["end"], 16):
            return str(frag["fragment"])
    raise AssertionError(f"{address:#x} is in no fragment of {proc}")


@pytest.mark.parametrize("variant", DEBUG_FILE_GDB)
def test_gdb_native_commands_in_moved_code(gdb: Callable[..., GdbDriver], zoo: dict[str, Any],
                                           variant: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    f = facts(zoo, variant, "crash")
    assert not f["has_debug_info"]
    site, call = f["markers"]["crash.c"]["crash site"], f["markers"]["crash.c"]["run cold call"]
    session = gdb(ROOT / f["binary"], args=["crash"])
    info = session.command(f"info line crash.c:{site}")
    # written in the background on this empty cache: `info line` waits for it
    assert "unsplit: debug info for split module crash" in session.startup + info
    m = re.search(rf'Line {site} of ".*crash\.c" starts at address (0x[0-9a-f]+) <transfer\+',
                  info)
    assert m, info
    assert _fragment(f, "transfer", int(m[1], 16)) != "hot"
    made = session.command(f"break crash.c:{site}")
    assert re.search(rf"Breakpoint 1 at {m[1]}: file .*crash\.c, line {site}\.", made), made
    session.run()
    frame = session.command("frame")
    # The input's arguments too (test_debuginfo_variables.py compares them with plain GDB's).
    assert re.search(rf"^#0\s+transfer \(a=.*, amount=amount@entry=1000, mode=mode@entry=1\) "
                     rf"at .*crash\.c:{site}$", frame, re.M), frame
    assert "BB: crash site" in frame
    up = session.command("up")
    assert re.search(rf"^#1\s+0x[0-9a-f]+ in run \(a=.*, n=n@entry=1, mode=mode@entry=1\) at "
                     rf".*crash\.c:{call}$", up, re.M), up
    listing = session.command("list")
    assert "BB: run cold call" in listing, listing
    status = session.command("bb debuginfo status")
    assert "debuginfo on" in status and f["build_id"][2:] in status, status
    assert list((tmp_path / "cache").rglob("*.debug"))


def test_gdb_leaves_a_module_with_dwarf_alone(gdb: Callable[..., GdbDriver],
                                              zoo: dict[str, Any], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    f = facts(zoo, "bolt-all-dbg", "crash")
    session = gdb(ROOT / f["binary"], args=["crash"])
    assert "debug info for split module" not in session.startup
    assert not list((tmp_path / "cache").rglob("*.debug"))
    off = session.command("bb debuginfo off")
    assert "debuginfo off" in off


def test_gdb_missing_debug_handler_gives_the_file(zoo: dict[str, Any], tmp_path: Path) -> None:
    """GDB >= 15 asks its missing-debug handlers for a file without debug info: the plugin's
    answers with unsplit's file once it is kept (the first session's is written in the
    background, and loaded before the program runs), `info missing-debug-handler` lists it, and
    GDB's own stop line and bt name the procedure and the true line."""
    f = facts(zoo, "bolt-all", "crash")
    site = f["markers"]["crash.c"]["crash site"]
    said = [subprocess.run(
        [gdb_at_least(15), "-nx", "-batch", "-iex", "set debuginfod enabled off",
         "-iex", f"source {ROOT / 'gdb' / 'unsplit_gdb.py'}",
         "-ex", "info missing-debug-handler", "-ex", "run", "-ex", "bb debuginfo status",
         "--args", str(ROOT / f["binary"]), "crash"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "UNSPLIT_CACHE": str(tmp_path / "cache")}).stdout for _ in range(2)]
    for out in said:
        assert re.search(r"^Global:\n\s+unsplit$", out, re.M), out
        assert re.search(rf"^transfer \(a=.*\) at .*crash\.c:{site}$", out, re.M), out
    assert re.search(r"crash: .*\.debug \(GDB's missing-debug handler\)$", said[1], re.M), \
        said[1]


def test_gdb_native_next_into_moved_code(gdb: Callable[..., GdbDriver], zoo: dict[str, Any],
                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GDB's own `next` from the hot part of a BOLTed procedure into its cold fragment stops on
    the cold path's first line, as on the unsplit program (the fragment starts on a statement
    in bolt-random2; where the input has line 0 there, clang's shrink-wrapped prologue, GDB
    stops at the fragment's start with no line, as with BOLT's own debug info:
    docs/toolchain-notes.md)."""
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    f = facts(zoo, "bolt-random2", "crash")
    markers = f["markers"]["crash.c"]
    session = gdb(ROOT / f["binary"], args=["crash"])
    session.command("break transfer")
    session.run()
    out = ""
    for _ in range(3):
        out = session.command("next")
        if re.search(rf"^{markers['transfer cold path']}\t", out, re.M):
            break
    assert re.search(rf"^{markers['transfer cold path']}\t.*BB: transfer cold path", out,
                     re.M), out
    where = session.command("bb where")
    assert re.search(r"^  fragment  cold", where, re.M), where


def test_gdb_frames_come_back_once_the_pre_bolt_input_is_found(
        gdb: Callable[..., GdbDriver], zoo: dict[str, Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy of bolt-dlopen without its pre-BOLT input: the debug file GDB gets has no line.
    With the input put beside the library (input/), the next session's file is made from it,
    not the one kept from before: GDB's own stop line and `up` name the inlined
    quarantine_record and verify_record on the pre-BOLT crash's lines (llvm-symbolizer-22)."""
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    f = facts(zoo, "bolt-dlopen", "libwork")
    app = tmp_path / "app"
    app.mkdir()
    for name in ("executable", "binary"):
        shutil.copy2(ROOT / f[name], app)
    inner, outer = f["crash"]["input_crash"]["chain"][:2]
    session = gdb(app / "workers", args=["crash"])
    stop = session.run()
    assert re.search(r"^0x[0-9a-f]+ in verify_record \(\) from .*libwork\.so$", stop, re.M), stop
    session.close()
    (app / "input").mkdir()
    shutil.copy2(ROOT / f["input"], app / "input")
    session = gdb(app / "workers", args=["crash"])
    stop = session.run()
    assert re.search(rf"^0x[0-9a-f]+ in {inner['function']} \([^)]*\) at .*libwork\.c:"
                     rf"{inner['line']}$", stop, re.M), stop
    up = session.command("up")
    assert re.search(rf"^#1\s+{outer['function']} \([^)]*\) at .*libwork\.c:{outer['line']}$", up,
                     re.M), up
    assert len(list((tmp_path / "cache").rglob("*.debug"))) == 2
