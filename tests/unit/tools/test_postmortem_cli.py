"""`unsplit frames` (CFI by default, or `--debugger gdb|lldb`) and its alias `unsplit bt` on the
session-built cores of tests/postmortem.py: a 3-thread GCC PGO program (one thread dead in a
cold fragment, the others waiting in cold fragments of other procedures) and a PIE whose shared
library's cold fragment is on the stack. Against gdb's own frames and lines of the live crash
and nm's fragment symbols."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from typing import Any

import pytest

from ...conftest import ROOT


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "unsplit", *args], capture_output=True,
                          text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT / "plugin"), "PATH": "/usr/bin:/bin"})


def _threads(fixture: dict[str, Any], *extra: str) -> list[dict[str, Any]]:
    r = _cli("frames", fixture["core"], "--exe", fixture["binary"], "--json", *extra)
    assert r.returncode == 0, r.stderr
    threads: list[dict[str, Any]] = json.loads(r.stdout)["threads"]
    return threads


def _check(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    """Every frame gdb unwound in the fixture's own modules is there, named as nm says, with
    gdb's line, in gdb's order; each thread matched by its own frames' pcs."""
    assert len(got) == len(want)
    for w in want:
        own = [f for f in w["frames"] if f["module"] is not None]
        pcs = [f["pc"] for f in own]
        thread = next(t for t in got if pcs[0] in [int(f["pc"], 16) for f in t["frames"]])
        assert thread["lwp"] == w["lwp"]
        frames = [f for f in thread["frames"] if int(f["pc"], 16) in pcs]
        assert [int(f["pc"], 16) for f in frames] == pcs
        assert [(f["module"], f["procedure"], f["fragment"], f["fragment_symbol"], f["line"])
                for f in frames] == \
            [(o["module"], o["procedure"], o["fragment"], o["symbol"], o["gdb_line"])
             for o in own]


def test_threads_cfi_and_gdb(mt: dict[str, Any]) -> None:
    cfi = _threads(mt)
    _check(cfi, mt["threads"])
    assert [t["signal"] for t in cfi] == [11, 11, 11]  # every thread's note says SIGSEGV
    # Each thread's CFI walk ends at its outermost frame (clone3 or _start).
    assert all(f["cfa"] for t in cfi for f in t["frames"])
    assert all("outermost" in (t["error"] or "") for t in cfi)
    _check(_threads(mt, "--debugger", "gdb"), mt["threads"])
    marks = mt["markers"]
    lines = {f["procedure"]: f["line"] for t in cfi for f in t["frames"]
             if f["module"] == mt["binary"]}
    assert lines["apply"] == marks["mt crash site"] and lines["waiter"] == marks["waiter call"]
    assert lines["main"] == marks["main cold join"] and lines["worker"] == marks["worker call"]


def test_threads_lldb(mt: dict[str, Any]) -> None:
    if shutil.which("lldb-22") is None:
        pytest.skip("lldb-22 not installed")
    _check(_threads(mt, "--debugger", "lldb"), mt["threads"])


def test_threads_table_and_alias(mt: dict[str, Any]) -> None:
    r = _cli("frames", mt["core"], "--exe", mt["binary"])
    assert r.returncode == 0, r.stderr
    heads = [x for x in r.stdout.splitlines() if x.startswith("Thread ")]
    assert len(heads) == 3 and all("signal 11 (SIGSEGV)" in h for h in heads)
    for label in ("apply [cold]", "await_work [cold]", "main [cold]"):
        assert r.stdout.count(f"  {label}  +") == 1, r.stdout
    assert _cli("bt", mt["core"], "--exe", mt["binary"]).stdout == r.stdout


def test_pie_and_library(pie: dict[str, Any]) -> None:
    for extra in ((), ("--debugger", "gdb")):
        threads = _threads(pie, *extra)
        _check(threads, pie["threads"])
        chain = [f for f in threads[0]["frames"] if f["procedure"] in ("check", "visit", "main")]
        assert [(f["procedure"], f["fragment"]) for f in chain] == \
            [("check", "cold"), ("visit", "cold"), ("main", "cold")]
        assert chain[1]["module"] == pie["library"] and chain[1]["file"].endswith("libvisit.c")
        assert chain[1]["line"] == pie["markers"]["visit cold call"]
    text = _cli("bt", pie["core"], "--exe", pie["binary"]).stdout
    assert "visit [cold]" in text and "(libvisit.so)" in text


def test_pie_library_missing(pie: dict[str, Any], tmp_path: Any) -> None:
    """The library gone from disk: its frame is shown unnamed, the program's still named."""
    work = tmp_path / "copy"
    work.mkdir()
    exe = shutil.copy2(pie["binary"], work / "pie")
    core = shutil.copy2(pie["core"], work / "pie.core")
    lib = pie["library"]
    moved = shutil.move(lib, str(work / "libvisit.so.away"))
    try:
        r = _cli("frames", str(core), "--exe", str(exe), "--json")
    finally:
        shutil.move(moved, lib)
    assert r.returncode == 1 and r.stderr == f"unsplit: {lib}: no such file: its frames are " \
        "not named\n", r.stderr
    frames = json.loads(r.stdout)["threads"][0]["frames"]
    assert (frames[0]["procedure"], frames[0]["fragment"]) == ("check", "cold")
    # in libvisit.so, which is not there to read (nor its CFI: the walk ends there)
    assert len(frames) == 2 and frames[1]["procedure"] is None
    assert frames[1]["module"] == lib
