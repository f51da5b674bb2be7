"""LLDB's own view of moved code once the plugin hands it unsplit's debug file: a BOLTed program
without DWARF, the plugin imported and nothing else done. `image lookup`, `breakpoint set -f
FILE -l LINE` and LLDB's own unwinding (SBFrame: what lldb-dap shows) name the procedure and
the source markers' lines, at the addresses facts.json's fragment symbols say; the command
line's session has no `___lldb_unnamed_symbol` the plain input's session does not have, lists
source at a stop in moved code, and unwinds with the file's CFI (no Breakpad file made)."""

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
from ..variants import DEBUG_FILE
from .driver_lldb import LLDB, LldbDriver

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("lldb-22") is None, reason="lldb-22 is not installed"),
]


@pytest.mark.parametrize("variant", DEBUG_FILE)
def test_lldb_native_view_of_moved_code(lldb: Callable[..., LldbDriver], zoo: dict[str, Any],
                                        variant: str, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
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
    first, f = facts(zoo, "bolt-all", "crash"), facts(zoo, "bolt-random2", "crash")
    assert first["build_id"] == f["build_id"]
    session = lldb(ROOT / first["binary"], args=["crash"])
    session.run()
    _check_stop(session, first, first["markers"]["crash.c"])
    session.close()
    site = f["markers"]["crash.c"]["crash site"]
    session = lldb(ROOT / f["binary"], args=["crash"])  # nothing asked of the plugin yet
    listed = session.command("image list crash")
    assert str(cache) not in listed or "/debuginfo-v" in listed, listed
    lookup = session.command(f"image lookup -a {f['crash']['link_pc']}")
    lines = re.findall(r"crash\.c:(\d+)", lookup)
    assert lines in ([], [str(site)]), lookup
    assert "debuginfo on" in session.command("bb debuginfo status")
    lookup = session.command(f"image lookup -a {f['crash']['link_pc']}")
    assert re.search(rf"Summary: crash`transfer \+ \d+ at crash\.c:{site}:", lookup), lookup
    session.run()
    _check_stop(session, f, f["markers"]["crash.c"])
    assert not list(cache.glob("lldb-cfi-v*/.build-id/*/*")), list(cache.rglob("*"))


def _batch(binary: Path, commands: list[str], plugin: bool, cache: Path) -> str:
    """LLDB 22's command line run to the crash (`-k`: batch mode's commands after a crash)."""
    argv = [LLDB, "--no-lldbinit", "-b", "-O", "settings set use-color false"]
    if plugin:
        argv += ["-O", f"command script import {ROOT / 'lldb' / 'unsplit_lldb.py'}"]
    argv += ["-o", f"target create {binary}", "-o", "process launch -- crash"]
    for command in commands:
        argv += ["-k", command]
    env = {k: v for k, v in os.environ.items() if k != "UNSPLIT_LLDB_DEBUGINFO"}
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**env, "UNSPLIT_CACHE": str(cache)}).stdout


@pytest.mark.parametrize("variant", ["bolt-all", "bolt-cdsplit"])
def test_lldb_command_line_session_is_the_debug_files(zoo: dict[str, Any], variant: str,
                                                      tmp_path: Path) -> None:
    """Nothing but the import: the stop in the cold fragment lists its source (as LLDB does
    with DWARF), bt's pcs are the core's (fixtures/gdb_probe.py's frames), `_start`, libc's
    `main=` and image lookup/disassemble name what the plain input's session names, and no
    Breakpad file of the module is made."""
    f = facts(zoo, variant, "crash")
    site = f["markers"]["crash.c"]["crash site"]
    start = int(f["crash"]["frames"][-1]["link_pc"], 16)  # _start's call of libc
    commands = ["bt", f"image lookup -a {start:#x}", "disassemble -n _start",
                "image lookup -a $pc", "frame select 2", "disassemble -f"]
    cache = tmp_path / "cache"
    ours = _batch(ROOT / f["binary"], commands, True, cache)
    theirs = _batch(ROOT / f["input"], commands, False, tmp_path / "plain")
    stop = ours.split("(lldb) bt")[0]
    assert re.search(rf"^-> {site}\s.*BB: crash site", stop, re.M), stop
    pcs = [int(p, 16) for p in re.findall(r"frame #\d+: (0x[0-9a-f]+)",
                                          ours.split("(lldb) bt")[1].split("(lldb) ")[0])]
    assert pcs == [int(fr["pc"], 16) for fr in f["crash"]["frames"]], ours
    assert "main=(crash`main at crash.c:" in ours, ours  # libc's frames name it
    unnamed = re.compile(r"___lldb_unnamed_symbol\w*")
    assert "crash`___lldb" not in ours and \
        len(unnamed.findall(ours)) <= len(unnamed.findall(theirs)), ours
    assert re.search(r"Summary: crash`_start \+ \d+", ours), ours
    assert re.search(rf"Summary: crash`transfer \+ \d+ at crash\.c:{site}:", ours), ours
    texts = [p.read_bytes().split(b"\n", 1)[0] for p in cache.glob("lldb-cfi-v*/**/*")
             if p.is_file() and p.read_bytes().startswith(b"MODULE ")]
    assert not [t for t in texts if t.endswith(b" crash")], texts


def test_an_lldb_of_spans_keeps_the_breakpad_file(zoo: dict[str, Any], tmp_path: Path) -> None:
    """LLDB 19 takes a function in several DWARF ranges as one span, and its bt would end in
    moved code with the debug file: the plugin probes that on the first module and gives the
    Breakpad CFI file instead (bt whole: the core's pcs, fixtures/gdb_probe.py's), and `bb
    debuginfo status` says why; `bb debuginfo on` is still the user's to ask."""
    lldb19 = ROOT / ".debuggers" / "bin" / "lldb-19"
    if not lldb19.exists():
        pytest.fail("no LLDB 19: run `make debuggers` (LLDB 19 into .debuggers/)")
    f = facts(zoo, "bolt-all", "crash")
    env = {k: v for k, v in os.environ.items() if k != "UNSPLIT_LLDB_DEBUGINFO"}
    run = subprocess.run([str(lldb19), "--no-lldbinit", "-b", "-O", "settings set use-color false",
                          "-O", f"command script import {ROOT / 'lldb' / 'unsplit_lldb.py'}",
                          "-o", f"target create {ROOT / f['binary']} --core "
                          f"{ROOT / f['crash']['core']}", "-o", "bt", "-o",
                          "bb debuginfo status"], capture_output=True, text=True, timeout=120,
                         env={**env, "UNSPLIT_CACHE": str(tmp_path / "cache")})
    pcs = [int(p, 16) for p in re.findall(r"frame #\d+: (0x[0-9a-f]+)", run.stdout)]
    assert pcs == [int(fr["pc"], 16) for fr in f["crash"]["frames"]], run.stdout
    assert re.search(r"^debuginfo off: .*one span.*`bb debuginfo on`", run.stdout, re.M), \
        run.stdout
