"""The pre-BOLT input of a library loaded by dlopen() (bolt-dlopen's libwork.so): a BOLTed
module whose input is nowhere is said once as it loads, with every way to give it one; `bb
input PATH` names the input of a library that is not loaded yet (--module NAME, or by the
build-id BOLT derived from the input's), also before any program, as in ~/.gdbinit and
~/.lldbinit. Oracles: llvm-readelf-22's build-ids and the source's markers (facts.json)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts
from .conftest import json_lines
from .driver_gdb import GDB
from .driver_gdb import PLUGIN as GDB_PLUGIN
from .driver_lldb import LLDB
from .driver_lldb import PLUGIN as LLDB_PLUGIN

pytestmark = pytest.mark.e2e


def _app(f: dict[str, Any], where: Path) -> Path:
    """The program and the BOLTed library, copied without the library's input/."""
    where.mkdir()
    for name in ("executable", "binary"):
        shutil.copy2(ROOT / f[name], where)
    return where / Path(f["executable"]).name


def test_missing_input_is_said_once_at_load(debugger: Callable[..., Any], zoo: dict[str, Any],
                                            tmp_path: Path) -> None:
    f = facts(zoo, "bolt-dlopen", "libwork")
    session = debugger(_app(f, tmp_path / "app"), args=["crash"])
    session.run()
    session.backtrace()
    session.command("bb where")
    said = [line for line in session.transcript.splitlines()
            if "pre-BOLT input" in line and "was not found" in line]
    assert len(said) == 1, said
    assert said[0].startswith("unsplit: libwork.so: ") and f["input_build_id"] in said[0]
    for way in ("input/", "UNSPLIT_INPUT_PATH", "/usr/lib/debug/.build-id", "debuginfod",
                "bb input PATH --module libwork.so"):
        assert way in said[0], (way, said[0])


def test_bb_input_names_a_library_before_it_loads(debugger: Callable[..., Any],
                                                  zoo: dict[str, Any], tmp_path: Path) -> None:
    f = facts(zoo, "bolt-dlopen", "libwork")
    session = debugger(_app(f, tmp_path / "app"), args=["crash"])
    said = session.command(f"bb input {ROOT / f['input']} --module libwork.so")
    assert said.strip() == (f"libwork.so is not loaded: {ROOT / f['input']} will be its "
                            "pre-BOLT input when it loads"), said
    session.run()
    where = json_lines(session.command("bb where --json"))[0]
    assert (where["procedure"], where["fragment"]) == ("verify_record", "cold")
    _at_the_inlined_crash(f, where)
    transcript = session.transcript
    assert f"unsplit: libwork.so: pre-BOLT input {ROOT / f['input']} (bb input)" in transcript
    assert "was not found" not in transcript


@pytest.mark.parametrize("name", ["gdb", "lldb"])
def test_bb_input_in_an_init_file(zoo: dict[str, Any], tmp_path: Path, name: str) -> None:
    """`bb input PATH` before any program (where ~/.gdbinit or ~/.lldbinit runs it): the module
    is the one whose build-id PATH's names, when it loads; GDB's own stop line then reads the
    debug file made from it (the pre-BOLT crash's innermost frame, llvm-symbolizer-22)."""
    f = facts(zoo, "bolt-dlopen", "libwork")
    exe, given = _app(f, tmp_path / "app"), ROOT / f["input"]
    env = {**os.environ, "UNSPLIT_CACHE": str(tmp_path / "cache")}
    if name == "gdb":
        argv = [GDB, "-nx", "-batch", "-iex", "set debuginfod enabled off",
                "-iex", f"source {GDB_PLUGIN}", "-iex", f"bb input {given}",
                "-ex", "run", "-ex", "bb where --json", "--args", str(exe), "crash"]
    else:
        argv = [LLDB, "--no-lldbinit", "-b", "-O", f'command script import "{LLDB_PLUGIN}"',
                "-O", f"bb input {given}", "-o", f'target create "{exe}"',
                "-o", "process launch -- crash", "-k", "bb where --json"]
    ran = subprocess.run(argv, capture_output=True, text=True, timeout=180, env=env)
    out = ran.stdout + ran.stderr  # LLDB gives a command's warnings to stderr
    build_id = format(int(f["build_id"], 16), "x").rjust(len(f["build_id"]), "0")
    assert (f"the module with build-id {build_id} is not loaded: {given} will be its pre-BOLT "
            "input when it loads") in out, out
    assert f"unsplit: libwork.so: pre-BOLT input {given} (bb input)" in out, out
    where = json_lines(out)[-1]
    _at_the_inlined_crash(f, where)
    if name == "gdb":
        inner = f["crash"]["input_crash"]["chain"][0]
        assert f"in {inner['function']} (" in out and f"libwork.c:{inner['line']}" in out


def _at_the_inlined_crash(f: dict[str, Any], where: dict[str, Any]) -> None:
    """The pre-BOLT input's lines: verify_record at its call of the inlined quarantine_record,
    which is at the crash site (the input's inline chain, llvm-symbolizer-22 in the facts)."""
    marks = f["markers"]["libwork.c"]
    assert where["line"] == marks["verify cold calls quarantine"], where
    assert [(i["function"], i["line"]) for i in where["inlined"]] == \
        [("quarantine_record", marks["quarantine crash site"])], where
