"""One scenario table, both debuggers: a crash inside a cold fragment, live and post-mortem.

For every zoo variant the program `crash` dies inside `transfer`'s cold fragment, called from
`run`'s and `main`'s cold fragments. The expected procedure, fragment and line of every frame
come from the variant's facts (computed by fixtures/build.py with nm and llvm-symbolizer, not
by unsplit).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ..conftest import facts
from ..variants import EVERY_CRASH
from .conftest import json_lines, start_crash

pytestmark = pytest.mark.e2e



@pytest.mark.parametrize("mode", ["live", "core"])
@pytest.mark.parametrize("variant", EVERY_CRASH)
def test_crash_in_cold_fragment(debugger: Callable[..., Any], zoo: dict[str, Any],
                                variant: str, mode: str) -> None:
    f = facts(zoo, variant, "crash")
    crash = f["crash"]
    session = start_crash(debugger, f, mode)

    where = json_lines(session.command("bb where --json"))
    assert len(where) == 1, where
    loc = where[0]
    assert (loc["procedure"], loc["fragment"]) == (crash["procedure"], crash["fragment"])
    assert loc["fragment_symbol"] == crash["symbol"]
    # Lines come from the binary's DWARF or, for BOLT output without it, from the pre-BOLT
    # input beside it through BAT; a stripped compiler split has none anywhere.
    markers = f["markers"]["crash.c"]
    has_lines = f["has_debug_info"] or f["has_bat"]
    if has_lines:
        assert (loc["file"].rsplit("/", 1)[-1], loc["line"]) == ("crash.c", markers["crash site"])
    else:
        assert loc["line"] is None, loc

    text = session.command("bb where")
    assert f"{crash['procedure']} [{crash['fragment']}]" in text

    if f["has_debug_info"] and _lldb_takes_as_span(session, crash["procedure"]):
        # LLDB 19 cannot unwind it (unsplit_lldb_impl/capabilities.py): the plugin says so once,
        # and `bb bt` has the frames, with the caller's call line.
        assert session.transcript.count("as one span (SBFunction.GetRanges)") == 1
        frames = json_lines(session.command("bb bt --json"))[0]["frames"]
        caller = frames[1]
        bt = session.command("bb bt")
    else:
        # A caller's PC is a return address: `bb where` there names the call's line, as `bt`.
        session.command("up")
        caller = json_lines(session.command("bb where --json"))[0]
        session.command("down")
        bt = session.backtrace()
    assert (caller["procedure"], caller["fragment"]) == \
        (crash["frames"][1]["procedure"], crash["frames"][1]["fragment"])
    assert caller["line"] == (markers["run cold call"] if has_lines else None), caller

    # Every frame in moved code is named by its procedure and fragment in `bt`.
    for frame in crash["frames"]:
        if frame["procedure"] and frame["fragment"] not in (None, "hot"):
            assert f"{frame['procedure']} [{frame['fragment']}]" in bt, frame


def _lldb_takes_as_span(session: Any, procedure: str) -> bool:
    """LLDB's own answer, no plugin code: does it take `procedure`, which DWARF gives several
    ranges, as one span from its lowest to its highest address (LLDB 19)?"""
    if session.name != "lldb":
        return False
    out = session.command(
        f'script f = lldb.target.FindFunctions("{procedure}")[0].GetFunction(); '
        'print("span:", f.GetBlock().GetNumRanges() > 1 and len(f.GetRanges()) == 1)')
    return "span: True" in out


@pytest.mark.parametrize("variant", ["gcc-pgo", "bolt-all"])
def test_errors_leave_the_session_usable(debugger: Callable[..., Any], zoo: dict[str, Any],
                                         variant: str) -> None:
    f = facts(zoo, variant, "crash")
    session = start_crash(debugger, f, "core")
    for bad in ("bb where no_such_symbol_anywhere", "bb where 0x10", "bb where --bogus",
                "bb nosuchcommand"):
        out = session.command(bad).strip()
        assert out, bad
        assert "Traceback" not in out, out
        assert len([line for line in out.splitlines() if line.strip()]) <= 2, out
    loc = json_lines(session.command("bb where --json"))[0]
    assert loc["procedure"] == f["crash"]["procedure"]


def test_fully_stripped_binary_is_explained(debugger: Callable[..., Any],
                                            zoo: dict[str, Any]) -> None:
    """No symbols and no DWARF: say so plainly rather than guess."""
    f = facts(zoo, "gcc-pgo-stripped", "crash")
    session = start_crash(debugger, f, "core")
    out = session.command("bb where")
    assert "outside every known procedure" in out or "not in the code" in out, out
    assert "Traceback" not in out
