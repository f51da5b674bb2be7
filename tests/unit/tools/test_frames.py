"""`unsplit frames CORE --exe BINARY` on the zoo's crash cores, against their facts
(``crash.frames``: gdb's unwind named by nm and llvm-symbolizer, never by unsplit), and the
one-line errors of bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ...conftest import ROOT, facts

VARIANTS = ["gcc-pgo", "gcc-pgo-nodebug", "clang-mfs", "clang-mfs-nodebug", "clang-bbsections",
            "bolt-all", "bolt-random2-dbg", "bolt-cdsplit"]

pytestmark = pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb not installed")


def _frames(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "unsplit", "frames", *args],
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT / "plugin"), "PATH": "/usr/bin:/bin"})


def _expected_lines(f: dict[str, Any]) -> list[int | None]:
    """The true lines of transfer/run/main: gdb's when it had DWARF; for a BOLTed binary
    without DWARF, the markers' (its lines come from the pre-BOLT input in input/)."""
    if f["has_debug_info"]:
        return [fr["line"] for fr in f["crash"]["frames"][:3]]
    if f["has_bat"]:
        m = f["markers"]["crash.c"]
        return [m["crash site"], m["run cold call"], m["main cold call"]]
    return [None, None, None]


@pytest.mark.parametrize("variant", VARIANTS)
def test_crash_chain(zoo: dict[str, Any], variant: str) -> None:
    f = facts(zoo, variant, "crash")
    r = _frames(str(ROOT / f["crash"]["core"]), "--exe", str(ROOT / f["binary"]), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["unwinder"] == "cfi"  # the default: no debugger
    threads = out["threads"]
    assert len(threads) == 1
    got = threads[0]["frames"][:3]
    want = f["crash"]["frames"][:3]
    assert [g["pc"] for g in got] == [w["pc"] for w in want]
    assert [(g["procedure"], g["fragment"], g["fragment_symbol"]) for g in got] == \
        [(w["procedure"], w["fragment"], w["symbol"]) for w in want]
    assert [g["procedure"] for g in got] == f["crash"]["expected_chain"]
    assert [g["line"] for g in got] == _expected_lines(f)


def test_table_and_lldb(zoo: dict[str, Any]) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    args = [str(ROOT / f["crash"]["core"]), "--exe", str(ROOT / f["binary"])]
    text = _frames(*args)
    assert text.returncode == 0
    lines = text.stdout.splitlines()
    assert lines[0].startswith("Thread 1 (LWP ")
    assert "transfer [cold]" in lines[1] and lines[1].rstrip().endswith("crash.c:32  (crash)")
    if shutil.which("lldb-22") is None:
        pytest.skip("lldb-22 not installed")
    cfi = json.loads(_frames(*args, "--json").stdout)["threads"]
    gdb = json.loads(_frames(*args, "--json", "--debugger", "gdb").stdout)["threads"]
    assert _frames(*args, "--debugger", "gdb").stdout.splitlines()[1] == lines[1]
    lldb = _frames(*args, "--json", "--debugger", "lldb")
    assert lldb.returncode == 0, lldb.stderr
    # LLDB unwinds past main (GDB stops there): the three named frames agree, and with the
    # CFI's (which also has each frame's CFA and registers).
    assert json.loads(lldb.stdout)["threads"][0]["frames"][:3] == gdb[0]["frames"][:3]
    assert [{**f, "cfa": None, "registers": None} for f in cfi[0]["frames"][:3]] == \
        gdb[0]["frames"][:3]
    assert all(f["cfa"] and f["registers"]["rsp"] for f in cfi[0]["frames"][:3])


def _one_error(r: subprocess.CompletedProcess[str], *words: str) -> None:
    assert r.returncode == 1
    err = r.stderr.splitlines()
    assert len(err) == 1 and err[0].startswith("unsplit: "), r.stderr
    for w in words:
        assert w in err[0]


def test_core_of_another_program(zoo: dict[str, Any]) -> None:
    """Said in one line; the frames are still named, from the program the core names."""
    f = facts(zoo, "gcc-pgo", "crash")
    other = facts(zoo, "gcc-pgo", "loop")
    r = _frames(str(ROOT / f["crash"]["core"]), "--exe", str(ROOT / other["binary"]))
    _one_error(r, "is not a core of", "the crashed program was")
    assert "transfer [cold]" in r.stdout


def test_core_of_another_build(zoo: dict[str, Any]) -> None:
    """Same name, other build-id: one line; frames shown raw, never misnamed."""
    f = facts(zoo, "gcc-pgo", "crash")
    other = facts(zoo, "clang-mfs", "crash")
    r = _frames(str(ROOT / f["crash"]["core"]), "--exe", str(ROOT / other["binary"]))
    _one_error(r, "another build", f["build_id"])
    assert "Thread 1" in r.stdout and "transfer" not in r.stdout


def test_missing_binary(zoo: dict[str, Any], tmp_path: Path) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    r = _frames(str(ROOT / f["crash"]["core"]), "--exe", str(tmp_path / "crash"))
    _one_error(r, "cannot open")
    assert "transfer [cold]" in r.stdout  # the core's own mapping of the program still names it


def test_truncated_core(zoo: dict[str, Any], tmp_path: Path) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    core = tmp_path / "crash.core"
    core.write_bytes((ROOT / f["crash"]["core"]).read_bytes()[:300_000])
    _one_error(_frames(str(core), "--exe", str(ROOT / f["binary"])), "truncated core")


@pytest.mark.parametrize("what", ["missing", "not-a-core"])
def test_bad_core(zoo: dict[str, Any], tmp_path: Path, what: str) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    core = str(tmp_path / "none.core") if what == "missing" else str(ROOT / f["binary"])
    r = _frames(core, "--exe", str(ROOT / f["binary"]))
    _one_error(r, "cannot open" if what == "missing" else "not a core file")
    assert r.stdout == ""
