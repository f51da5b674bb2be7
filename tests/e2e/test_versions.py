"""The plugin in a debugger that lacks a hook it uses (issue 17): one line says what is missing,
and the session goes on with everything else.

No such debugger is installed here (GDB 13/18 and LLDB 19/22 all have the hooks), so each test
hides the hook before the plugin loads, as an older build would lack it, and gives it back
before the debugger itself needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ..conftest import ROOT, facts
from .conftest import json_lines
from .driver_gdb import PLUGIN as GDB_PLUGIN
from .driver_lldb import PLUGIN as LLDB_PLUGIN

pytestmark = pytest.mark.e2e

# debugger -> (what hides the hook, how the plugin loads, what gives it back, the hook's name)
_HIDDEN = {
    "gdb": ("python import gdb; gdb._unsplit_hidden = gdb.frame_filters; del gdb.frame_filters",
            f"source {GDB_PLUGIN}",
            "python gdb.frame_filters = gdb._unsplit_hidden",
            "gdb.frame_filters"),
    "lldb": ("script lldb._unsplit_hidden = lldb.SBFormat; del lldb.SBFormat",
             f'command script import "{LLDB_PLUGIN}"',
             "script lldb.SBFormat = lldb._unsplit_hidden",
             "lldb.SBFormat"),
}


def test_missing_frame_naming_hook_is_one_line(debugger: Callable[..., Any],
                                               zoo: dict[str, Any]) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    session = debugger(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]), plugin=False)
    hide, load, restore, hook = _HIDDEN[session.name]
    session.command(hide)
    out = session.command(load)
    session.command(restore)
    # (LLDB 19 adds its own note on split functions: capabilities.split_function)
    notes = [line for line in out.splitlines() if line.startswith("unsplit:") and hook in line]
    assert len(notes) == 1, out
    assert "Traceback" not in out, out

    # The bb commands work; bt is the debugger's own (no fragment tags), and nothing breaks.
    loc = json_lines(session.command("bb where --json"))[0]
    assert (loc["procedure"], loc["fragment"]) == (f["crash"]["procedure"],
                                                   f["crash"]["fragment"])
    bt = session.backtrace()
    assert f["crash"]["procedure"] in bt and "[cold]" not in bt, bt
    assert "Traceback" not in bt and "Error" not in bt, bt
    assert session.alive()
