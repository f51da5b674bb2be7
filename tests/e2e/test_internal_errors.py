"""A bug of the plugin shows wherever a debugger calls it, as the one line of
unsplit.errors.internal_error (`unsplit: internal error: KeyError: 'x' (set UNSPLIT_DEBUG=1 …)`:
the type, since a KeyError's message alone reads `'x'`), and the debugger goes on with its own
output. Each test puts a bug into one kind of handler from inside the debugger (a `python` /
`script` command, or `-iex` before the program loads) and reads the session's output.

The `bb` commands' own path: test_adapters.py; LLDB's frame-format callbacks:
test_lldb_adapter.py (a bug there is said once per session).
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
from .conftest import gdb_at_least
from .driver_dap import DapSession
from .driver_lldb import PLUGIN as LLDB_PLUGIN

pytestmark = pytest.mark.e2e
expected = pytest.mark.expect_internal_error  # the bug each test puts in

LLDB_DAP = os.environ.get("UNSPLIT_LLDB_DAP", "lldb-dap-22")
KEY_ERROR = "unsplit: internal error: KeyError: 'x' (set UNSPLIT_DEBUG=1 for the traceback)"
GDB_FRAME = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(.+?) \(", re.M)


def _said_once(text: str) -> None:
    """The bug is said in the core's words, once, and no Python error of the debugger's."""
    assert text.count(KEY_ERROR) == 1, text
    assert "Python Exception" not in text and "Traceback" not in text, text


@pytest.mark.usefixtures("debug_file_at_start")
@expected
def test_gdb_frame_decorator(gdb: Callable[..., Any], zoo: dict[str, Any]) -> None:
    """A bug in what the frame filter's decorators give GDB as it prints a frame (here the
    procedure's label) leaves each frame as GDB names it: GDB's `bt -no-filters` is the
    oracle. (Raised into GDB, the frame's name read `Python Exception <class 'KeyError'>`.)"""
    f = facts(zoo, "bolt-all", "crash")
    session = gdb(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]))
    session.script("import unsplit.index.model.records as m; "
                   "m.Location.label = lambda *a, **k: {}['x']")
    bt = session.backtrace()
    _said_once(bt)
    plain = session.command("bt -no-filters")
    shown = bt.replace(KEY_ERROR + "\n", "")  # said as GDB began the frame's line
    assert GDB_FRAME.findall(shown) == GDB_FRAME.findall(plain) != [], (bt, plain)


@expected
def test_lldb_bb_break_resolver(lldb: Callable[..., Any], zoo: dict[str, Any]) -> None:
    """A bug in the scripted resolver that LLDB asks for a `bb break`'s locations in each
    module is said when it happens, not only in `breakpoint list`'s description (it left
    `bb break` with no locations and no word)."""
    f = facts(zoo, "gcc-pgo", "crash")
    session = lldb(ROOT / f["binary"])
    session.script("import unsplit_lldb_impl.breakpoints as b; "
                   "b.SplitResolver._resolve = lambda self, module: {}['x']")
    _said_once(session.command("bb break transfer"))
    listed = session.list_breakpoints()
    assert "unsplit: bb break transfer (unsplit: internal error: KeyError: 'x'" in listed, listed


@expected
def test_lldb_dap_stop_hook(zoo: dict[str, Any], tmp_path: Path) -> None:
    """A bug in the stop hook that gives each new module its debug file in lldb-dap (an IDE)
    is said in the debug console with its type (it read `unsplit: CFI for LLDB's unwinder:
    'x'`), and the IDE still gets LLDB's own stack."""
    f = facts(zoo, "bolt-all", "crash")
    session = DapSession([LLDB_DAP], env={"UNSPLIT_CACHE": str(tmp_path / "cache")})
    try:
        session.request("initialize", adapterID="unsplit-test", clientID="unsplit-test",
                        linesStartAt1=True, columnsStartAt1=True, pathFormat="path")
        session.send("launch", program=str(ROOT / f["binary"]), args=f["crash"]["argv"][1:],
                     initCommands=[f'command script import "{LLDB_PLUGIN}"',
                                   "script import unsplit_lldb_impl.cfi_symbols as c; "
                                   "c._describe = lambda *a: {}['x']"])
        session.wait("event", "initialized")
        session.request("configurationDone")
        thread = session.wait("event", "stopped")["body"]["threadId"]
        frames = session.request("stackTrace", threadId=thread, startFrame=0,
                                 levels=3)["stackFrames"]
        assert len(frames) == 3, frames
    finally:
        session.close()
    _said_once(session.transcript)


@expected
def test_lldb_command_override(lldb: Callable[..., Any], zoo: dict[str, Any]) -> None:
    """A bug in what runs before each of LLDB's unwinding commands (giving modules their CFI
    first) is said once per session, not before every `bt`, and LLDB's `bt` still comes."""
    f = facts(zoo, "bolt-all", "crash")
    session = lldb(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]))
    session.script("import unsplit_lldb_impl.cfi_symbols as c; "
                   "c.sync = lambda *a, **k: {}['x']")
    first, second = session.backtrace(), session.backtrace()
    _said_once(first)
    assert "internal error" not in second and "transfer" in second, second


@pytest.mark.parametrize("version", ["gdb", "gdb-15"])
def test_gdb_debug_file_at_load(version: str, zoo: dict[str, Any], tmp_path: Path) -> None:
    """A bug while the plugin gives a loading module its debug file: GDB 13 through its
    new_objfile event (the bug read `Python Exception <class 'KeyError'>: ('x',)` three
    times), GDB >= 15 through its missing-debug handler (it read `unsplit: debug info for
    …/crash: 'x'`). GDB loads the program and its core all the same."""
    program = os.environ.get("UNSPLIT_GDB", "gdb") if version == "gdb" else gdb_at_least(15)
    f = facts(zoo, "bolt-all", "crash")
    out = subprocess.run(
        [program, "-nx", "-batch", "-iex", "set debuginfod enabled off",
         "-iex", f"source {ROOT / 'gdb' / 'unsplit_gdb.py'}",
         "-iex", "python import unsplit_gdb_impl.debuginfo as d; "
                 "d.debug_file_for = lambda *a, **k: {}['x']",
         "-ex", "bt", str(ROOT / f["binary"]), str(ROOT / f["crash"]["core"])],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "UNSPLIT_CACHE": str(tmp_path / "cache")})
    _said_once(out.stdout + out.stderr)
    assert re.search(r"^#0 .* in transfer", out.stdout, re.M), out.stdout


@expected
@pytest.mark.parametrize("where", ["_start = lambda self, plan: {}['x']",
                                   "_should_stop = lambda self: {}['x']"])
def test_lldb_step_plan(lldb: Callable[..., Any], zoo: dict[str, Any], where: str) -> None:
    """A bug in the scripted thread plan of `bb next`, as LLDB makes it (it read `error: bb:
    'x'`) or at a stop on its way (LLDB dropped the exception and the step ran on to the
    program's crash without a word): said with its type, the step ends, the session goes on."""
    f = facts(zoo, "gcc-pgo", "crash")
    session = lldb(ROOT / f["binary"], args=["crash"])
    session.break_function("transfer")
    session.run()
    session.script(f"import unsplit_lldb_impl.stepping as s; s.LogicalStep.{where}")
    out = session.command("bb next")
    _said_once(out)
    assert "SIGSEGV" not in out, out
    assert session.alive()
