"""`finish` out of an inlined call in code BOLT moved, in a BOLT output without DWARF given
unsplit's debug file (nothing done but loading the plugin): GDB's own `finish` and LLDB's own
`thread step-out`, and `bb finish` in both, stop where the debugger's own command stops on the
pre-BOLT input at the same event, in the same frame, at the same line, with no value returned.

bolt-inlined's program (fixtures/src/inlined.c): `scale` is inlined into settle's cold
fragment whole; `clamp` is inlined into settle's hot path, its rare branch moved to the cold
fragment, from which it returns into hot code; and `note`, called from the inlined `scale`,
is finished with the inlined frame above it selected."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts
from ..variants import INLINED

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("gdb") is None or shutil.which("lldb-22") is None,
                       reason="gdb or lldb-22 is not installed"),
]

# case -> (the marker of the line to stop at, or @function; commands before the finish)
CASES: dict[str, tuple[str, list[str]]] = {
    "all cold": ("scale sink", []),
    "back to hot code": ("clamp cold note", []),
    "frame above": ("@note", ["continue", "up"]),
}
GDB_FINISH, LLDB_FINISH = "finish", "thread step-out"


def _stop(f: dict[str, Any], marker: str) -> tuple[str, int] | str:
    if marker.startswith("@"):
        return marker[1:]
    return "inlined.c", f["markers"]["inlined.c"][marker]


def _gdb(binary: Path, stop: tuple[str, int] | str, commands: list[str], plugin: bool,
         cache: Path) -> dict[str, str]:
    """Each command's output, after a stop at `stop` of `binary rare`."""
    argv = ["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off", "-iex",
            "set width 0"]
    if plugin:
        argv += ["-iex", f"source {ROOT / 'gdb' / 'unsplit_gdb.py'}"]
    argv += ["-ex", f"break {stop}" if isinstance(stop, str) else f"break {stop[0]}:{stop[1]}",
             "-ex", "run"]
    for command in commands:
        argv += ["-ex", f"echo <<{command}>>\\n", "-ex", command]
    argv += ["--args", str(binary), "rare"]
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=120, env={**os.environ, "UNSPLIT_CACHE": str(cache)},
                         cwd=ROOT).stdout
    parts = re.split(r"^<<(.*)>>$", out, flags=re.M)
    said = {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    said["*"] = out
    return said


def _lldb(binary: Path, stop: tuple[str, int] | str, commands: list[str], plugin: bool,
          cache: Path) -> dict[str, str]:
    argv = ["lldb-22", "--no-lldbinit", "-b", "-O", "settings set use-color false"]
    if plugin:
        argv += ["-O", f"command script import {ROOT / 'lldb' / 'unsplit_lldb.py'}"]
    argv += ["-o", f"target create {binary}",
             "-o", f"breakpoint set -n {stop}" if isinstance(stop, str) else
             f"breakpoint set -f {stop[0]} -l {stop[1]}", "-o", "process launch -- rare"]
    for command in commands:
        argv += ["-o", command]
    env = {k: v for k, v in os.environ.items() if k != "UNSPLIT_LLDB_DEBUGINFO"}
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT,
                         env={**env, "UNSPLIT_CACHE": str(cache)}).stdout
    parts = re.split(r"^\(lldb\) (.*)$", out, flags=re.M)
    said = {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    said["*"] = out
    return said


def _gdb_stop(text: str) -> tuple[str, str]:
    """GDB's stop after a finish: the frame line without its address and the plugin's fragment
    tag, and the source line."""
    frame = re.search(r"^(?:0x[0-9a-f]+ in )?(\w+)(?: \[[\w.]+\])? (\(.*\) at \S+)$", text, re.M)
    source = re.search(r"^(\d+)\t.*$", text, re.M)
    assert frame is not None and source is not None, text
    return f"{frame[1]} {frame[2]}", source[0]


def _lldb_frame(text: str) -> str:
    """LLDB's `frame info`: the frame without its address, module and fragment tag."""
    frame = re.search(r"frame #0: 0x[0-9a-f]+ \w+`(\w+)(?: \[[\w.]+\])?(\(.*)$", text, re.M)
    assert frame is not None, text
    return f"{frame[1]}{frame[2]}"


def _pc(text: str) -> int:
    found = re.search(r"(?:= |rip = )(0x[0-9a-f]+)", text)
    assert found is not None, text
    return int(found[1], 16)


def _in_cold_code(f: dict[str, Any], pc: int) -> bool:
    return any(int(g["start"], 16) <= pc < int(g["end"], 16) and g["fragment"] != "hot"
               for g in f["split_functions"]["settle"]["fragments"])


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("finish-inlined-cache")


@pytest.mark.parametrize("case", sorted(CASES))
def test_gdb_finish_out_of_an_inlined_call_in_moved_code(zoo: dict[str, Any], case: str,
                                                         cache: Path) -> None:
    f = facts(zoo, INLINED, "inlined")
    assert not f["has_debug_info"]
    marker, before = CASES[case]
    stop = _stop(f, marker)
    commands = [*before, "print/x $pc", "bt 2", GDB_FINISH]
    theirs = _gdb(ROOT / f["input"], stop, commands, False, cache)
    # The premise: the debugger's own frame selected is the inlined call's.
    assert re.search(r"^#0 .*\b(scale|clamp) \(", theirs["bt 2"], re.M) or \
        re.search(r"^#1 .*\bscale \(", theirs["bt 2"], re.M), theirs["*"]
    expected = _gdb_stop(theirs[GDB_FINISH])
    for finish in (GDB_FINISH, "bb finish"):
        ours = _gdb(ROOT / f["binary"], stop, [*commands[:-1], finish], True, cache)
        assert "unsplit: debug info for split module" in ours["*"], ours["*"]
        if case != "frame above":  # stopped in settle's moved code
            assert _in_cold_code(f, _pc(ours["print/x $pc"])), ours["*"]
        assert _gdb_stop(ours[finish]) == expected, (finish, ours[finish], theirs[GDB_FINISH])
        assert "Value returned" not in ours[finish], ours[finish]
    assert "Value returned" not in theirs[GDB_FINISH], theirs[GDB_FINISH]


@pytest.mark.parametrize("case", sorted(CASES))
def test_lldb_step_out_of_an_inlined_call_in_moved_code(zoo: dict[str, Any], case: str,
                                                        cache: Path) -> None:
    """As GDB's, but for one case: with the inlined frame above note's selected, LLDB's own
    `thread step-out` stops as soon as note returns (in scale), and `bb finish` runs out of
    the inlined call as GDB's finish does (docs/commands.md): there the oracle is LLDB's own
    `thread step-out` twice on the input."""
    f = facts(zoo, INLINED, "inlined")
    marker, before = CASES[case]
    stop = _stop(f, marker)
    commands = [*before, "register read pc", LLDB_FINISH, "frame info"]
    theirs = _lldb(ROOT / f["input"], stop, commands, False, cache)
    assert "[inlined]" in theirs[commands[-3]] or "[inlined]" in theirs.get("up", ""), \
        theirs["*"]
    expected = {LLDB_FINISH: _lldb_frame(theirs["frame info"])}
    if case == "frame above":
        twice = _lldb(ROOT / f["input"], stop, [*commands[:-1], LLDB_FINISH, "frame info"],
                      False, cache)
        expected["bb finish"] = _lldb_frame(twice["frame info"])
        assert expected["bb finish"] != expected[LLDB_FINISH], twice["*"]
    else:
        expected["bb finish"] = expected[LLDB_FINISH]
    for finish in (LLDB_FINISH, "bb finish"):
        ours = _lldb(ROOT / f["binary"], stop, [*commands[:-2], finish, "frame info"], True,
                     cache)
        if case != "frame above":
            assert _in_cold_code(f, _pc(ours["register read pc"])), ours["*"]
        assert _lldb_frame(ours["frame info"]) == expected[finish], (finish, ours["*"])
        assert "Return value" not in ours[finish], ours[finish]
    assert "Return value" not in theirs[LLDB_FINISH], theirs[LLDB_FINISH]
