"""LLDB's `frame select`, `up` and `down` of a frame in moved code that LLDB has no line for
but the plugin has: the source around the plugin's line, as LLDB shows a frame with a line,
not disassembly.

With the debug file (the default) LLDB has the lines itself; with `bb debuginfo off`
(UNSPLIT_LLDB_DEBUGINFO=0) it gets the Breakpad CFI file, which gives LLDB lines for moved code
only while that code is small (UNSPLIT_LLDB_LINES_MAX_KB, 64 KB by default: any real BOLTed
program has more); 0 here stands for such a program. The lines expected are the fixture's
markers (comments in crash.c).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from ..conftest import ROOT, facts

pytestmark = pytest.mark.e2e

# The Breakpad file without its lines: LLDB has no line for moved code, the plugin has.
BREAKPAD_ONLY = {"UNSPLIT_LLDB_DEBUGINFO": "0", "UNSPLIT_LLDB_LINES_MAX_KB": "0"}


@pytest.fixture(scope="module")
def crash(zoo: dict[str, Any]) -> dict[str, Any]:
    return facts(zoo, "bolt-all", "crash")


def _shown_line(out: str) -> int | None:
    found = re.search(r"^-> (\d+)\s", out, re.M)
    return int(found[1]) if found else None


def test_frame_select_up_and_down_show_the_source(lldb: Callable[..., Any],
                                                  crash: dict[str, Any]) -> None:
    build = ROOT / "fixtures" / "build" / "bolt-all"
    marks = crash["markers"]["crash.c"]
    s = lldb(build / "crash", core=str(build / "crash.core"),
             env=BREAKPAD_ONLY)
    out = s.command("frame select 1")
    assert "frame #1:" in out and "run [cold" in out, out
    assert _shown_line(out) == marks["run cold call"], out
    assert "run.cold" not in out, out  # LLDB's disassembly header (`crash`run.cold.4:`)
    out = s.command("up")
    assert "frame #2:" in out and _shown_line(out) == marks["main cold call"], out
    out = s.command("down")
    assert "frame #1:" in out and _shown_line(out) == marks["run cold call"], out
    # A frame LLDB has a line for is LLDB's own output, untouched.
    out = s.command("frame select 3")
    assert "frame #3:" in out and "libc" in out, out
    # A frame that does not exist: LLDB's own error.
    assert "error" in s.command("frame select 99"), s.transcript()


def _symbolizer_line(binary: str, function: str) -> int:
    """llvm-symbolizer-22's line for the first byte of `function` (its nm address)."""
    nm = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout
    address = next(line.split()[0] for line in nm.splitlines()
                   if line.split()[-1] == function)
    out = subprocess.run(["llvm-symbolizer-22", "-e", binary, f"0x{address}"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    return int(out[1].rsplit(":", 2)[-2])


def test_a_breakpoint_that_ends_bb_finish_shows_the_source(lldb: Callable[..., Any],
                                                           crash: dict[str, Any]) -> None:
    """`bb finish` out of run meets a breakpoint in audit (BOLT's code, no DWARF): that stop
    is LLDB's own report, with audit's source where LLDB alone showed disassembly; the line
    is the pre-BOLT input's (llvm-symbolizer-22 at audit's address there)."""
    build = ROOT / "fixtures" / "build" / "bolt-all"
    s = lldb(build / "crash", args=["crash"], env=BREAKPAD_ONLY)
    s.break_function("run")
    s.run()
    s.break_function("audit")
    out = s.command("bb finish")
    assert "stop reason = breakpoint" in out and "audit" in out, out
    assert _shown_line(out) == _symbolizer_line(str(build / "input" / "crash"), "audit"), out
    assert "crash`audit:" not in out, out  # LLDB's disassembly header
