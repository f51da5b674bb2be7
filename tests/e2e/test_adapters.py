"""What both adapters must do alike, checked once in GDB and in LLDB: `help bb`, one-line
errors for bad input and for a bug in a command (the session carries on), and loading the
plugin twice. What only one debugger has stays in test_gdb_adapter.py / test_lldb_adapter.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from unsplit.commands import COMMANDS

from ..conftest import ROOT, facts
from .conftest import start_crash

pytestmark = pytest.mark.e2e

# A bug in a command, put there by hand: `bb frame` raises an error whose message has two lines
# (the report is one line all the same).
_BROKEN_FRAME = ("import unsplit.commands as c; "
                 "c.COMMANDS['frame'] = c.COMMANDS['frame']._replace("
                 "run=lambda s, h, a: (_ for _ in ()).throw("
                 "ValueError('no frame' + chr(10) + 'at all')))")
_INTERNAL_ERROR = ("unsplit: internal error: ValueError: no frame at all "
                   "(set UNSPLIT_DEBUG=1 for the traceback)")


def _one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


def _listed(top: str, name: str) -> list[str]:
    """The rows of `help bb` that list subcommand `name` with its summary (GDB `bb NAME --
    SUMMARY`, LLDB `NAME  -- SUMMARY  Expects 'raw' input …`)."""
    summary = re.escape(COMMANDS[name].summary)
    return re.findall(rf"^\s*(?:bb )?{re.escape(name)}\s+-- {summary}", top, re.M)


def _check_where(session: Any, f: dict[str, Any]) -> None:
    """`bb where` at the crash: the procedure, its fragment and (with DWARF) the line."""
    where, crash = session.command("bb where"), f["crash"]
    assert f"is in {crash['procedure']} [{crash['fragment']}] " in where, where
    assert f"procedure {crash['procedure']}+0x" in where, where
    assert re.search(rf"fragment\s+{re.escape(crash['fragment'])}\s", where), where
    if f["has_debug_info"]:
        line = f["markers"]["crash.c"]["crash site"]
        assert re.search(rf"line\s+crash\.c:{line}\b", where), where


def test_help(debugger: Callable[..., Any], zoo: dict[str, Any]) -> None:
    session = debugger(ROOT / facts(zoo, "gcc-pgo", "crash")["binary"])
    top = session.command("help bb")
    assert "hot/cold split" in top, top
    for name in COMMANDS:
        assert len(_listed(top, name)) == 1, (name, top)
    one = session.command("help bb where")
    assert one.startswith(COMMANDS["where"].summary) and "usage: bb where" in one, one
    own = session.command("bb where --help")
    assert own.startswith("usage: bb where") and "--json" in own and "error" not in own, own


def test_without_a_process_commands_are_one_line(debugger: Callable[..., Any],
                                                 zoo: dict[str, Any]) -> None:
    session = debugger(ROOT / facts(zoo, "gcc-pgo", "crash")["binary"])
    for command in ("bb where", "bb frame"):
        line = _one_line(session.command(command))
        assert line.startswith(session.error_prefix) and "no process" in line, (command, line)
    assert session.alive()


@pytest.mark.expect_internal_error  # the bug it puts into `bb frame`
@pytest.mark.parametrize("mode", ["core", "live"])
def test_errors_are_one_line_and_the_session_survives(debugger: Callable[..., Any],
                                                      zoo: dict[str, Any], mode: str) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    session = start_crash(debugger, f, mode)
    for bad, expected in (("bb where no_such_symbol_anywhere",
                           "cannot evaluate 'no_such_symbol_anywhere'"),
                          ("bb where 1+", "cannot evaluate '1+'"),
                          ("bb where --bogus", "bb where: unrecognized arguments: --bogus"),
                          ("bb where 'main", "bb where: No closing quotation"),
                          ('bb where "unclosed', "bb where: No closing quotation")):
        line = _one_line(session.command(bad))
        assert line.startswith(session.error_prefix + expected), (bad, line)
    for address in ("0x10", "0xdeadbeef"):
        assert _one_line(session.command(f"bb where {address}")) == \
            f"{address} is not in the code of any loaded module"
    # A bug in a command: one line that says how to see more, and the debugger carries on.
    session.script(_BROKEN_FRAME)
    assert _one_line(session.command("bb frame")) == session.error_prefix + _INTERNAL_ERROR
    assert session.alive()
    _check_where(session, f)


def test_loading_twice_registers_once(debugger: Callable[..., Any], zoo: dict[str, Any]) -> None:
    """Loaded twice (an init file and the user, say): each command once, frames named once.
    (GDB's frame filter and LLDB's formats: in each debugger's own file.)"""
    f = facts(zoo, "gcc-pgo", "crash")
    session = debugger(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]), plugin=False)
    for _ in range(2):
        out = session.load_plugin()
        assert "error" not in out.lower() and "Traceback" not in out, out
    top = session.command("help bb")
    for name in COMMANDS:
        assert len(_listed(top, name)) == 1, (name, top)
    bt = session.backtrace()
    first = next(line for line in bt.splitlines() if "transfer" in line)
    assert first.count("transfer [cold]") == 1, bt
    _check_where(session, f)


def _debug_files(session: Any) -> str:
    """The debugger's own word on the symbol files it has: GDB's objfiles, LLDB's image list."""
    if session.name == "gdb":
        return str(session.script("print([o.filename for o in gdb.objfiles()])"))
    return str(session.command("image list"))


def test_debuginfo_status_says_what_is_true(debugger: Callable[..., Any], zoo: dict[str, Any],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """bolt-all crash (no DWARF), started with the switch off: `bb debuginfo` off, on and off
    again says what the debugger itself lists (its objfiles or images): no debug file while
    off, unsplit's once on, and that one still loaded after it is turned off."""
    monkeypatch.setenv("UNSPLIT_DEBUGINFO", "0")  # GDB's switch
    monkeypatch.setenv("UNSPLIT_LLDB_DEBUGINFO", "0")
    # Written at once when turned on: the writer in the background is test_debuginfo_background's
    # (with it, `on` says "being written" unless an earlier test left the file in the cache).
    monkeypatch.setenv("UNSPLIT_DEBUGINFO_BACKGROUND", "0")
    f = facts(zoo, "bolt-all", "crash")
    session = debugger(ROOT / f["binary"], args=["crash"])
    status = session.command("bb debuginfo status").splitlines()
    assert status[0].startswith("debuginfo off: split modules without DWARF get ") and \
        "unsplit's debug file" not in status[0] and len(status) == 1, status
    assert "debuginfo-v" not in _debug_files(session)
    on = session.command("bb debuginfo on").splitlines()
    on = on[next(k for k, x in enumerate(on) if x.startswith("debuginfo ")):]  # GDB loads first
    assert on[0] == "debuginfo on: split modules without DWARF get unsplit's debug file", on
    [path] = re.findall(r"^  crash: (\S+)$", "\n".join(on[1:]), re.M)
    assert path in _debug_files(session)
    off = session.command("bb debuginfo off").splitlines()
    assert off[0].startswith("debuginfo off: ") and "unsplit's debug file" not in off[0], off
    assert off[1:] == [f"  crash: {path} (given before: still loaded)"], off
    assert path in _debug_files(session)
