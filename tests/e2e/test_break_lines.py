"""`bb break FILE:LINE` where the debugger's own `break` would go:

- a line without code inside a function (a comment, a blank line) moves to the next line with
  code, as GDB 13's `break` and LLDB's (move-to-nearest-code) do; the oracle is the debugger's
  own line breakpoint in the same session;
- FILE names every file of that name in every module (a library's own file too), and the
  line is chosen over all of them as GDB's `break` chooses it: the line itself where any module
  has code for it, else the first line after it that any has; the oracle is plain GDB's `break`
  on the same program;
- a line of a function BOLT left where it was (lite mode: an unprofiled function keeps its
  address, and BAT says nothing of it) is found in a BOLTed binary without DWARF, from the
  pre-BOLT input's lines; the oracle is the debugger's own `break` on the `-dbg` twin, whose
  DWARF BOLT rewrote (--update-debug-sections).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts

pytestmark = pytest.mark.e2e

SOURCE = """\
#include <stdio.h>
volatile int sink;
__attribute__((noinline)) int work(int n)
{
    int total = 0;
    for (int i = 0; i < n; i++)
        total += i * sink;
    /* nothing here: the breakpoint moves on */

    sink = total;
    return total;
}
int main(int argc, char **argv) { (void)argv; printf("%d\\n", work(argc)); return 0; }
"""
EMPTY = 8  # the comment line: no code


def _debugger_own(session: Any, file: str, line: int) -> int:
    """The one location of the debugger's own line breakpoint (GDB: `Breakpoint 1 at 0x…`,
    LLDB: `…, address = 0x…`)."""
    said = session.break_line(file, line)
    found = re.findall(r"(?:^Breakpoint \d+ at |address = )(0x[0-9a-f]+)", said, re.M)
    assert len(found) == 1, said
    session.delete_breakpoints()
    return int(found[0], 16)


def _ours(session: Any, file: str, line: int) -> set[int]:
    said = session.command(f"bb break {file}:{line}")
    assert said.startswith("Breakpoint"), said
    listed = session.command("bb break --list")
    session.delete_breakpoints()
    return {int(a, 16) for a in re.findall(r"^\s*\S+\s+y\s+(0x[0-9a-f]+) in ", listed, re.M)}


def test_a_line_without_code_moves_to_the_next(debugger: Callable[..., Any],
                                               tmp_path: Path) -> None:
    (tmp_path / "w.c").write_text(SOURCE)
    binary = tmp_path / "w"
    subprocess.run(["gcc", "-O0", "-g", "-o", str(binary), "w.c"], check=True, cwd=tmp_path,
                   timeout=120)
    session = debugger(binary)
    theirs = _debugger_own(session, "w.c", EMPTY)
    assert _ours(session, "w.c", EMPTY) == {theirs}


# A program and its library, each with a twin.c of its own: code at line 30 in the program's,
# at line 40 only in the library's. (A name glibc's debug info does not have: with libc6-dbg,
# loop.c is glibc's iconv/loop.c too, whose line tables take a minute to read.)
_FILLER = "/* filler */\n"
TWO_FILES = {
    "a/twin.c": "int lib_fn(int);\nvolatile int sink;\nint main(void)\n{\n" + _FILLER * 25
    + "    sink = lib_fn(3);\n    return 0;\n}\n",
    "b/twin.c": "volatile int lib_sink;\nint lib_fn(int n)\n{\n" + _FILLER * 36
    + "    lib_sink = n * 2;\n    return lib_sink;\n}\n",
}


def _two_files(work: Path, files: dict[str, str] = TWO_FILES,
               lines: tuple[int, int] = (30, 40)) -> Path:
    for name, text in files.items():
        (work / name).parent.mkdir(exist_ok=True)
        (work / name).write_text(text)
    for cmd in (["gcc", "-O0", "-g", "-fPIC", "-shared", "b/twin.c", "-o", "b/libl.so"],
                ["gcc", "-O0", "-g", "a/twin.c", "-Lb", "-ll", f"-Wl,-rpath,{work}/b", "-o",
                 "m"]):
        subprocess.run(cmd, check=True, cwd=work, timeout=120)
    assert files["a/twin.c"].splitlines()[lines[0] - 1].strip() == "sink = lib_fn(3);"
    assert files["b/twin.c"].splitlines()[lines[1] - 1].strip() == "lib_sink = n * 2;"
    return work / "m"


def test_a_line_is_chosen_over_every_module_as_gdb_does(debugger: Callable[..., Any],
                                                        gdb: Callable[..., Any],
                                                        tmp_path: Path) -> None:
    """twin.c:30 is the program's line 30 only (not the library's next line, 40: as glibc's
    iconv/loop.c:285 was taken for a program's loop.c:30); twin.c:10, no code anywhere, is the
    program's 30, the first line after it with code in any module; twin.c:35 is the library's
    40. Plain GDB says where, with every module loaded."""
    binary = _two_files(tmp_path)
    plain = gdb(binary, plugin=False)
    session = debugger(binary)
    for s in (plain, session):
        s.break_function("main")
        s.run()
        s.delete_breakpoints()
    for line in (30, 10, 35):
        plain.break_line("twin.c", line)
        theirs = plain.breakpoint_addresses()
        plain.delete_breakpoints()
        assert theirs
        assert _ours(session, "twin.c", line) == theirs, line


def test_a_line_of_a_function_bolt_left_in_place(debugger: Callable[..., Any],
                                                 zoo: dict[str, Any]) -> None:
    f = facts(zoo, "bolt-statics", "statics")
    assert not f["has_debug_info"]
    line = f["markers"]["statics_a.cpp"]["a report"]  # report: never run in training
    twin = debugger(ROOT / facts(zoo, "bolt-statics-dbg", "statics")["binary"], plugin=False)
    theirs = _debugger_own(twin, "statics_a.cpp", line)
    session = debugger(ROOT / f["binary"])
    assert _ours(session, "statics_a.cpp", line) == {theirs}
    # and that code is where it was in the input (the premise: BOLT left it alone)
    report = [s for s in subprocess.run(["nm", str(ROOT / f["input"])], capture_output=True,
                                        text=True, check=True).stdout.splitlines()
              if re.search(r" t _ZL6reporti$", s)]
    assert report and any(
        int(r.split()[0], 16) <= theirs < int(r.split()[0], 16) + 0x40 for r in report)


def _gdb(*argv: str, cache: Path | None = None) -> str:
    env = {**os.environ, **({"UNSPLIT_CACHE": str(cache)} if cache else {})}
    run = subprocess.run(["gdb", "-nx", "-q", "-batch", "-iex", "set debuginfod enabled off",
                          *argv], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    return run.stdout + run.stderr


@pytest.mark.parametrize("variant", ["bolt-all", "bolt-gcc"])
def test_a_line_begun_again_in_its_scope_is_one_location(zoo: dict[str, Any], variant: str,
                                                         tmp_path: Path) -> None:
    """A `for` line is begun again after the loop's body (its increment and test: a second
    statement row of the line in the same scope); GDB's `break` on the pre-BOLT input keeps
    the first in each scope, and `bb break` on the BOLT output keeps the same places (each
    named by its input offset in `bb break --list`)."""
    f = facts(zoo, variant, "loop")
    line = f["markers"]["loop.c"]["loop head"]
    said = _gdb("-ex", f"break loop.c:{line}", "-ex", "info breakpoints", str(ROOT / f["input"]))
    addresses = re.findall(r"^(?:\d+|\d+\.\d+)\s+.*?(0x[0-9a-f]+) in (\S+) at ", said, re.M)
    assert addresses, said
    theirs = set()
    for address, function in addresses:
        start = _gdb("-ex", f"print/x (long)&{function}", str(ROOT / f["input"]))
        theirs.add((function, int(address, 16) - int(start.split("= ")[-1], 16)))
    listed = _gdb("-iex", f"source {ROOT / 'gdb' / 'unsplit_gdb.py'}",
                  "-ex", f"bb break loop.c:{line}", "-ex", "bb break --list",
                  str(ROOT / f["binary"]), cache=tmp_path)
    ours = {(m[0], int(m[1], 16)) for m in
            re.findall(r"^\s*\S+\s+y\s+0x[0-9a-f]+ in (\w+)\+(0x[0-9a-f]+) ", listed, re.M)}
    assert ours == theirs, (listed, said)


# A program whose twin.c has code at line 40 only, and a library whose twin.c has code at 30:
# twin.c:30 set before `run` is the program's 40 (the one module loaded then has no line 30),
# then the library's 30 alone once it loads.
LATER_EXACT = {
    "a/twin.c": "int lib_fn(int);\nvolatile int sink;\nint main(void)\n{\n" + _FILLER * 35
    + "    sink = lib_fn(3);\n    return 0;\n}\n",
    "b/twin.c": "volatile int lib_sink;\nint lib_fn(int n)\n{\n" + _FILLER * 26
    + "    lib_sink = n * 2;\n    return lib_sink;\n}\n",
}


def test_a_fallback_line_goes_when_a_later_module_has_the_line(debugger: Callable[..., Any],
                                                               gdb: Callable[..., Any],
                                                               tmp_path: Path) -> None:
    """Plain GDB's `break twin.c:30` before `run` goes to the program's line 40, then, re-set
    as the library loads, to the library's line 30 alone: the program first stops there, in
    lib_fn, not in main. `bb break` does the same."""
    binary = _two_files(tmp_path, LATER_EXACT, (40, 30))
    plain = gdb(binary, plugin=False)
    session = debugger(binary)
    plain.break_line("twin.c", 30)
    said = session.command("bb break twin.c:30")
    assert said.startswith("Breakpoint"), said
    stops = [s.run() for s in (plain, session)]
    assert all("lib_fn" in stop and "twin.c:40" not in stop for stop in stops), stops
    theirs = plain.breakpoint_addresses()
    listed = session.command("bb break --list")
    ours = {int(a, 16) for a in re.findall(r"^\s*\S+\s+y\s+(0x[0-9a-f]+) in ", listed, re.M)}
    assert ours == theirs, listed
