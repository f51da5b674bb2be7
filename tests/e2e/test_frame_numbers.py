"""`bb frames` and `bb bt` number their rows as the debugger numbers its frames, inlined calls
included: `frame N` in the debugger is row N of either, and row N names what the debugger's own
`bt` names frame N.

The program is built here (GCC PGO): main's rare path, moved to main.cold, calls an
always-inlined `helper`, which calls `leaf`; stopped in `leaf`, the debugger's frames are
leaf (0), helper (1, inlined into main: main's pc and registers), main (2), libc…; both tables
have a row for each, numbered so, helper's marked inlined (in `bb frames --json`), main's at its
own line, the call of helper. The pc of rows 1 and 2 is the register's (LLDB shows main itself
at the inlined block's start).
"""

from __future__ import annotations

import json
import re
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


def _native_names(session: Any) -> dict[int, str]:
    """Frame number -> the line the debugger's own `bt` prints for it."""
    out = {}
    for line in session.backtrace().splitlines():
        m = re.match(r"^\s*\*?\s*(?:frame )?#(\d+):?\s+(.*)$", line)
        if m:
            out[int(m[1])] = m[2]
    return out


def test_rows_are_numbered_as_the_debugger_numbers_frames(debugger: Callable[..., Any],
                                                          inlined: Path) -> None:
    s = debugger(inlined, args=["7"])
    s.break_function("leaf")
    s.run()
    native = _native_names(s)
    rows = json.loads(next(line for line in s.command("bb frames --json").splitlines()
                           if line.startswith("[")))
    numbers = [r["frame"] for r in rows]
    # Every frame of the debugger's `bt` up to main, in its order (GDB's bt stops at main).
    assert numbers == list(range(len(numbers))) and len(numbers) >= 3, numbers
    assert [r["procedure"] for r in rows[:3]] == ["leaf", "helper", "main"], rows[:3]
    assert [r["inlined_frame"] for r in rows[:3]] == [False, True, False], rows[:3]
    assert rows[2]["fragment"] != "hot" and rows[1]["fragment"] == rows[2]["fragment"], rows
    # main is at the line that calls helper, helper at the line that calls leaf.
    assert "helper(n)" in (rows[2]["source"] or ""), rows[2]
    assert "leaf(v * 2)" in (rows[1]["source"] or ""), rows[1]
    for r in rows:  # the program's frames (LLDB may know libc's by address only)
        if r["frame"] in native and r["module"] == str(inlined):
            assert re.search(rf"\b{re.escape(r['procedure'])}\b", native[r["frame"]]), \
                (r, native)
    for r in rows[:4]:
        assert _pc(s, r["frame"]) == int(r["pc"], 16), r
    # `bb bt`: the CFI's frames, numbered the same, one line for the inlined call.
    bt_text = s.command("bb bt")
    bt = {int(m[1]): m[2] for m in re.finditer(r"^#(\d+)\s+0x[0-9a-f]+ in (\S+)",
                                               bt_text, re.M)}
    # The inlined call's row has no offset of its own (it shares main's pc) and is marked as
    # LLDB marks inlined frames; the frames around it keep theirs.
    row1 = re.search(r"^#1\s.*$", bt_text, re.M)
    assert row1 is not None and "+0x" not in row1[0] and "[inlined]" in row1[0], bt_text
    assert "[inlined]" not in re.search(r"^#2\s.*$", bt_text, re.M)[0], bt_text  # type: ignore[index]
    assert [bt.get(k) for k in range(3)] == ["leaf+0x0", "helper", "main"] or \
        [bt.get(k, "").split("+")[0].split(" [")[0] for k in range(3)] == \
        ["leaf", "helper", "main"], bt
    for number, name in bt.items():
        if number < 3:
            assert name.split("+")[0].split(" [")[0] in native[number], (bt, native)


def _finish_from_helper(session: Any, command: str) -> int:
    """Stopped in leaf, frame 1 (helper, inlined into main) selected, `command`: the pc."""
    session.break_function("leaf")
    session.run()
    session.delete_breakpoints()
    session.select_frame(1)
    session.until_stop(command)
    return session.register("pc")


def test_finish_from_an_inlined_frame_above_frame_0(gdb: Callable[..., Any],
                                                    lldb: Callable[..., Any],
                                                    inlined: Path) -> None:
    """`bb finish` with frame 1 selected, the call of helper inlined into main (leaf is frame
    0): leaf returns, then the rest of helper runs, and the step stops in main past the
    inlined call, where GDB's own `finish` from that frame stops (the oracle for both: LLDB's
    own `thread step-out` from an inlined frame above frame 0 stops as soon as leaf returns,
    still inside helper). Before: out of main, into libc."""
    theirs = _finish_from_helper(gdb(inlined, args=["7"], plugin=False), "finish")
    for session in (gdb(inlined, args=["7"]), lldb(inlined, args=["7"])):
        assert _finish_from_helper(session, "bb finish") == theirs, session.transcript
        assert session.alive()
