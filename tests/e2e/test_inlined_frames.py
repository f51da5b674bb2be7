"""Stopped at the first byte of a cold fragment whose first instruction is inlined code: the
inlined function keeps its own name, and the frame it is inlined into is named by its own
procedure (found by bench/realworld.py on Lua: LLDB named `luaS_newlstr` inlined into
`luaS_new.cold` as `luaS_new [cold]`, and `luaS_new` itself, looked up at pc - 1, by the
fragment before it, `internshrstr [cold]`).

GCC PGO lays `first.cold` right before `second.cold`, whose first instruction is the always
inlined `check`'s: pc - 1 is in another procedure's fragment. `check` calls `note`: stopped
there, LLDB gives the frame that `check` is inlined into the inlined block's first address as
its pc (`second.cold`'s first byte), not the return address.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..builders import gcc_pgo_build

pytestmark = pytest.mark.e2e

SOURCE = r"""#include <stdlib.h>
static volatile long sink;
__attribute__((noinline)) long first(long n)
{
    for (long i = 0; i < 100; i++)
        sink += i;
    if (__builtin_expect(n == 7, 0))
        sink ^= n * 5;
    return sink;
}
__attribute__((noinline)) void note(long v)
{
    sink -= v; /* BB: called from the inlined code */
}
static inline __attribute__((always_inline)) void check(long v)
{
    sink += v * 3; /* BB: inlined at the fragment start */
    note(v);
    sink ^= v << 4;
}
__attribute__((noinline)) long second(long n)
{
    note(n + 1); /* second's frame is made in its entry, not in its cold fragment */
    for (long i = 0; i < 100; i++)
        sink += i;
    if (__builtin_expect(n == 7, 0))
        check(n);
    return sink;
}
int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 0;
    long total = 0;
    for (int i = 0; i < 1000; i++)
        total += first(n) + second(n);
    return (int)(total & 1);
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    work = tmp_path_factory.mktemp("inlstart")
    gcc_pgo_build(work, {"t.c": SOURCE}, [["gcc", "-O2", "-g", "-no-pie", "t.c", "-o", "t"]],
                  train=["./t"])
    syms = {}
    for line in subprocess.run(["nm", "-S", str(work / "t")], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 4:
            syms[parts[3]] = (int(parts[0], 16), int(parts[1], 16))
    start = syms["second.cold"][0]
    before = syms["first.cold"]
    assert before[0] + before[1] == start, "first.cold does not end where second.cold starts"
    dump = subprocess.run(["llvm-dwarfdump-22", "--debug-info", str(work / "t")],
                          capture_output=True, text=True, check=True).stdout
    inlined = re.search(r'DW_TAG_inlined_subroutine\s+DW_AT_abstract_origin\s+\(\S+ "check"\)'
                        r"(?:\s+DW_AT_(?!low_pc)\w+\s+\(\S+\))*\s+DW_AT_low_pc\s+\((0x[0-9a-f]+)\)",
                        dump)
    assert inlined and int(inlined[1], 16) == start, "check is not inlined at second.cold"
    return work / "t", start


def _frames(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if re.match(r"^\s*(\*\s*)?(#\d|frame #\d)", ln)]


def test_inlined_code_at_a_fragment_start(debugger: Callable[..., Any],
                                          program: tuple[Path, int]) -> None:
    binary, start = program
    s = debugger(binary, args=["7"])
    s.break_address(start, module=binary.name)
    stop = s.run()
    # The stop line is GDB's or LLDB's own, naming the inlined function; no extra line
    # names the fragment's procedure as if it were frame 0.
    assert "second [cold]" not in stop, stop
    frames = _frames(s.backtrace())
    assert len(frames) >= 3, frames
    assert "check" in frames[0] and "[cold]" not in frames[0], frames
    assert "second [cold]" in frames[1] and "first" not in frames[1], frames
    assert "main" in frames[2], frames


def test_frame_around_an_inlined_call_at_a_fragment_start(debugger: Callable[..., Any],
                                                          program: tuple[Path, int]) -> None:
    """Stopped in a function that the inlined code calls: the frame `check` is inlined into
    is `second [cold]`, as GDB names it and plain LLDB's DWARF says `second`; the plugin
    named it by pc - 1 (`first [cold]`), though LLDB's pc there is no return address."""
    binary, _ = program
    s = debugger(binary, args=["7"])
    s.break_function("note")
    s.run()  # note(n + 1) in second's hot part
    s.cont()  # note(v) from the inlined check, in second.cold
    frames = _frames(s.backtrace())
    assert len(frames) >= 4, frames
    assert "note" in frames[0], frames
    assert "check" in frames[1] and "[cold]" not in frames[1], frames
    assert "second [cold]" in frames[2] and "first" not in frames[2], frames
    assert "main" in frames[3], frames
