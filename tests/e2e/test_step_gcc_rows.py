"""`bb next` and `bb step` in GDB over GCC's line tables, which put several rows at one address
(`0x10c9`: line 26, a statement, then line 29, not one): GDB names such an address by its last
statement row, stops only where a statement of another line begins, and, back in a caller at
a row of another line that is no statement, steps on as from no line. The oracle is GDB's own
`next`/`step` on the same binary (GCC's `.cold` code has DWARF): the pcs of every stop, and the
line it shows, of the same number of steps from the same breakpoint. GDB reads no separate
debug files here, so libc has no lines and neither step goes into it."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts

pytestmark = pytest.mark.e2e

# program, its argument (the rare path), what to do before, steps of next and of step: code of
# gcc-pgo whose `.cold` has several rows at one address (recurse's walk.cold, loop's
# main.cold). In recurse, from back in walk after note_limit returns, until note_limit is
# reached again: from there GDB's own next and step stop in the PLT stub of the fprintf it
# jumps to (a tail call into code without lines), where the plugin's go over it.
CASES: dict[str, tuple[str, list[str], dict[str, int]]] = {
    "recurse": ("deep", ["break note_limit", "run", "finish"], {"next": 5, "step": 5}),
    "loop": ("error", ["break main", "run"], {"next": 22, "step": 22})}


def _steps(binary: Path, argument: str, before: list[str], command: str, count: int,
           plugin: bool, cache: Path) -> list[tuple[int, int | None]]:
    """Each stop's pc and the line GDB shows there, after `count` of `command` from where
    GDB's own `before` commands stop."""
    argv = ["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off",
            "-iex", "set debug-file-directory /nonexistent", "-iex", "set width 0"]
    if plugin:
        argv += ["-iex", f"source {ROOT / 'gdb' / 'unsplit_gdb.py'}"]
    for c in before:
        argv += ["-ex", c]
    for _ in range(count):
        argv += ["-ex", "echo <<step>>\\n", "-ex", command, "-ex", "echo <<pc>>\\n",
                 "-ex", "p/x $pc"]
    argv += ["--args", str(binary), argument]
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=300, env={**os.environ, "UNSPLIT_CACHE": str(cache)},
                         cwd=ROOT).stdout
    stops = []
    for said, pc in re.findall(r"^<<step>>\n(.*?)^<<pc>>\n\$\d+ = (0x[0-9a-f]+)", out,
                               re.M | re.S):
        lines = re.findall(r"^(\d+)\t", said, re.M)
        stops.append((int(pc, 16), int(lines[-1]) if lines else None))
    assert len(stops) == count, out
    return stops


@pytest.mark.parametrize("verb", ["next", "step"])
@pytest.mark.parametrize("program", sorted(CASES))
def test_gdb_steps_over_gcc_rows_where_gdb_does(zoo: dict[str, Any], tmp_path: Path,
                                                program: str, verb: str) -> None:
    """Before: `bb next` back in walk's cold code stopped 29, 30 (its 29 at 26's address,
    named by the last row), then at walk's line 30 once per recursive return, where GDB's
    stops 26, 27, 29, 30, then main's line 43 (after the return at a row of 43 that is no
    statement, at the next statement row); in loop, it skipped main.cold's line 48 (an address
    of rows 46-48, statements, and a last row of line 45)."""
    argument, before, counts = CASES[program]
    count = counts[verb]
    binary = ROOT / facts(zoo, "gcc-pgo", program)["binary"]
    theirs = _steps(binary, argument, before, verb, count, False, tmp_path)
    mine = _steps(binary, argument, before, f"bb {verb}", count, True, tmp_path)
    assert mine == theirs, [(hex(a), n, hex(b), m)
                            for (a, n), (b, m) in zip(mine, theirs, strict=True)]
