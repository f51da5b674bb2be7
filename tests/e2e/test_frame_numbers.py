"""`bb frames` numbers its rows as the debugger numbers its frames, inlined calls included:
`frame N` in the debugger is row N of the table.

The program is built here (GCC PGO): main's rare path, moved to main.cold, calls an
always-inlined `helper`, which calls `leaf`; stopped in `leaf`, the debugger's frames are
leaf (0), helper (1, inlined into main: main's pc and registers), main (2), libc…, and
`bb frames` has one row per concrete frame: 0 (leaf), 1 (main's, as its innermost frame,
helper, is numbered), then 3…. The pc of row 1 is the register's (LLDB shows main itself
at the inlined block's start).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..builders import gcc_pgo_build

pytestmark = pytest.mark.e2e

SOURCE = r"""#include <stdio.h>
#include <stdlib.h>
static volatile long sink;
__attribute__((noinline)) void leaf(long v) { sink = v; printf("leaf %ld\n", v); }
static inline __attribute__((always_inline)) void helper(long v) { sink += v; leaf(v * 2); }
int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 0;
    for (long i = 0; i < 1000; i++)
        sink += i;
    if (__builtin_expect(n == 7, 0))
        helper(n);
    return 0;
}
"""


@pytest.fixture(scope="module")
def inlined(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("inlined")
    gcc_pgo_build(work, {"inl.c": SOURCE}, [["gcc", "-O2", "-g", "inl.c", "-o", "inl"]],
                  train=["./inl"], use=("-fprofile-use", "-freorder-blocks-and-partition"))
    return work / "inl"


def _pc(session: Any, number: int) -> int:
    return int(session.register("pc", number))


def test_rows_are_numbered_as_the_debugger_numbers_frames(debugger: Callable[..., Any],
                                                          inlined: Path) -> None:
    s = debugger(inlined, args=["7"])
    s.break_function("leaf")
    s.run()
    rows = json.loads(next(line for line in s.command("bb frames --json").splitlines()
                           if line.startswith("[")))
    numbers = [r["frame"] for r in rows]
    # Frame 2 is main, row 1's; GDB's bt stops at main.
    assert numbers[:2] == [0, 1] and numbers[2:3] in ([], [3]), numbers
    assert rows[1]["procedure"] == "main" and rows[1]["fragment"] != "hot", rows[1]
    for r in rows[:4]:
        assert _pc(s, r["frame"]) == int(r["pc"], 16), r
