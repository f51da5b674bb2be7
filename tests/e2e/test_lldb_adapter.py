"""The LLDB adapter in a real lldb-22: `bb` commands, frame names, formats, re-import.

The shared scenario table (test_scenarios.py) and test_adapters.py (help, one-line errors,
loading twice) check what both debuggers must agree on; this file checks what only LLDB has:
`frame-format`/`thread-format` rewriting and restoring, the stop line, core files opened with
`target create --core`, and the formats after `command script import` run twice. Expected lines
come from the source markers (``/* BB: crash site */``) through the zoo's facts, never from
hard-coded numbers.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..conftest import facts
from ..variants import LLDB_CORES, LLDB_LIVE
from .driver_lldb import REPO, LldbDriver

ROOT = Path(REPO)


e2e = pytest.mark.e2e

FORMATS = ("frame-format", "thread-format", "thread-stop-format")


def _crash(zoo: dict[str, Any], variant: str) -> dict[str, Any]:
    return facts(zoo, variant, "crash")


def _crash_line(f: dict[str, Any]) -> int:
    return int(f["markers"]["crash.c"]["crash site"])


def _label(frame: dict[str, Any]) -> str:
    return f"{frame['procedure']} [{frame['fragment']}]"


def _frame_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.search(r"frame #\d+:", line)]


def _one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


def _moved_frames(f: dict[str, Any]) -> list[dict[str, Any]]:
    return [fr for fr in f["crash"]["frames"] if fr["procedure"] and fr["fragment"] != "hot"]


def _names(line: str, name: str) -> bool:
    """Whether a frame line names `name` as its function (after `module`` or `: `)."""
    return re.search(rf"(`|: ){re.escape(name)}(?=[\s(+]|$)", line) is not None


def _check_backtrace(bt: str, f: dict[str, Any]) -> None:
    """Every frame in moved code is named `proc [fragment]`, in the order of the call chain."""
    frames = _frame_lines(bt)
    position = 0
    for expected in _moved_frames(f):
        hits = [i for i, line in enumerate(frames) if _names(line, _label(expected))]
        assert hits and hits[-1] >= position, (expected, bt)
        position = hits[0]
        line = frames[hits[0]]
        assert not _names(line, expected["symbol"]), line  # not `transfer.cold + 26`
        assert not re.search(r"`\w+ - \d+", line), line  # not `transfer - 930`
    if f["has_debug_info"]:
        assert f"crash.c:{_crash_line(f)}" in frames[0], frames[0]


def _check_where(where: str, f: dict[str, Any]) -> None:
    crash = f["crash"]
    assert f"is in {_label(crash)} " in where, where
    assert f"procedure {crash['procedure']}+0x" in where, where
    assert re.search(rf"fragment\s+{re.escape(crash['fragment'])}\s", where), where
    if f["has_debug_info"]:
        assert re.search(rf"line\s+crash\.c:{_crash_line(f)}\b", where), where


# -- live and post-mortem ------------------------------------------------------------------

@e2e
@pytest.mark.parametrize("variant", LLDB_LIVE)
def test_live_crash_stop_line_bt_and_where(lldb: Callable[..., LldbDriver],
                                           zoo: dict[str, Any], variant: str) -> None:
    f = _crash(zoo, variant)
    session = lldb(ROOT / f["binary"], args=["crash"])
    stop = session.run()
    assert "stopped" in stop and "SIGSEGV" in stop, stop
    stop_frame = _frame_lines(stop)[0]
    assert _names(stop_frame, _label(f["crash"])), stop_frame
    _check_where(session.command("bb where"), f)
    _check_backtrace(session.backtrace(), f)


@e2e
@pytest.mark.parametrize("variant", LLDB_CORES)
def test_core_file_bt_and_where(lldb: Callable[..., LldbDriver], zoo: dict[str, Any],
                                variant: str) -> None:
    f = _crash(zoo, variant)
    session = lldb(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]))
    _check_backtrace(session.backtrace(), f)
    _check_where(session.command("bb where"), f)
    # Load bias of a PIE core: the runtime pc, not the link-time one, is in the fragment.
    assert session.command("bb where --json").count(f'"{f["crash"]["fragment"]}"') >= 1


@e2e
def test_names_follow_a_symbol_file_added_at_the_same_stop(lldb: Callable[..., LldbDriver],
                                                           zoo: dict[str, Any],
                                                           tmp_path: Path) -> None:
    """`target symbols add` changes LLDB's function and line of every frame without a new stop
    (frame names are kept per stop, by what LLDB says of each frame): the next `bt` shows the
    arguments and lines plain LLDB shows with that DWARF, the moved frames still renamed."""
    f = _crash(zoo, "gcc-pgo")
    assert f["has_debug_info"]  # the DWARF split off below
    stripped, debug = tmp_path / "crash", tmp_path / "crash.debug"
    subprocess.run(["objcopy", "--only-keep-debug", str(ROOT / f["binary"]), str(debug)],
                   check=True)
    subprocess.run(["objcopy", "--strip-debug", str(ROOT / f["binary"]), str(stripped)],
                   check=True)
    core = str(ROOT / f["crash"]["core"])
    plain = _frame_lines(lldb(ROOT / f["binary"], core=core, plugin=False).backtrace())
    session = lldb(stripped, core=core)
    before = _frame_lines(session.backtrace())
    assert "symbol file" in session.command(f"target symbols add {debug}")
    after = _frame_lines(session.backtrace())
    assert len(before) == len(after) == len(plain), (before, after, plain)
    moved = _moved_frames(f)
    for line, was, own in zip(after, before, plain, strict=True):
        renamed = [m for m in moved if _names(line, _label(m))]
        if not renamed:  # LLDB's own (a line of unsplit's after it where LLDB has none)
            assert line.split("`", 1)[1].startswith(own.split("`", 1)[1]), (line, own)
            continue
        assert _names(was, _label(renamed[0])), was  # renamed without DWARF too
        name = renamed[0]["procedure"]
        assert line.split("`", 1)[1] == own.split("`", 1)[1].replace(
            f"{name}(", f"{_label(renamed[0])}(", 1), (line, own)
    assert any(_names(line, _label(m)) for line in after for m in moved), after


# LLDB looks a `${script.frame:}` callback up by name at each call: this counts the calls of
# frame-format's.
_COUNTING = ("script import unsplit_lldb as _u; _u._calls = []; "
             "_u._own = _u.frame_function_line; _u.frame_function_line = "
             "lambda frame, d: (_u._calls.append(1), _u._own(frame, d))[1]")


def _callback_calls(session: LldbDriver) -> int:
    return int(session.command("script print(len(_u._calls))").strip().splitlines()[-1])


@e2e
@pytest.mark.parametrize("variant", ["gcc-pgo", "bolt-all"])
def test_bt_names_frames_without_a_callback_per_frame(lldb: Callable[..., LldbDriver],
                                                      zoo: dict[str, Any], variant: str) -> None:
    """`bt` is LLDB's own backtrace with the names put into its text (a Python call per frame
    costs more than LLDB's whole `bt`): no frame-format callback runs, and the frames read as
    `thread backtrace`'s, which keeps the callbacks; typed or through the SB API alike. With
    DWARF the names go before LLDB's arguments; without it, unsplit's lines after them."""
    f = _crash(zoo, variant)
    session = lldb(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]))
    session.command(_COUNTING)
    bt = session.backtrace()
    assert _callback_calls(session) == 0, bt
    _check_backtrace(bt, f)
    by_callbacks = session.command("thread backtrace")
    assert _callback_calls(session) >= len(_frame_lines(by_callbacks)) >= 3  # it counts
    assert _frame_lines(bt) == _frame_lines(by_callbacks)
    through_api = session.command(
        "script _r = lldb.SBCommandReturnObject(); "
        "lldb.debugger.GetCommandInterpreter().HandleCommand('bt', _r); print(_r.GetOutput())")
    assert _frame_lines(through_api) == _frame_lines(bt)
    if not f["has_debug_info"]:  # unsplit's lines, from the pre-BOLT input through BAT
        assert f"crash.c:{_crash_line(f)}" in _frame_lines(bt)[0], bt

    assert "_regexp-bt" in session.command("bb disable") + session.command("help bt")
    assert "[cold]" not in session.backtrace()
    session.command("bb enable")
    assert "unsplit-bt" in session.command("help bt")
    _check_backtrace(session.backtrace(), f)


@e2e
@pytest.mark.parametrize("variant", ["bolt-all", "bolt-all-dbg"])
def test_a_first_bt_through_the_sb_api_survives_its_symbol_files(
        lldb: Callable[..., LldbDriver], zoo: dict[str, Any], variant: str) -> None:
    """The first `bt` of a session, run from a script (as IDEs and benches do): `unsplit-bt`
    gives the modules their files before its nested `_regexp-bt` (whose override of `thread
    backtrace` would give them under a context taken before: LLDB crashed there on the
    BOLTed libLLVM's core, bench/libllvm.py; the fixtures get theirs earlier). The plain LLDB
    frame list is the oracle."""
    f = _crash(zoo, variant)
    core = str(ROOT / f["crash"]["core"])
    plain = _frame_lines(lldb(ROOT / f["binary"], core=core, plugin=False).backtrace())
    session = lldb(ROOT / f["binary"], core=core, env={"UNSPLIT_DEBUGINFO_MAX_KB": "0"})  # late
    through_api = session.command(
        "script _r = lldb.SBCommandReturnObject(); "
        "lldb.debugger.GetCommandInterpreter().HandleCommand('bt', _r); print(_r.GetOutput())")
    lines = _frame_lines(through_api)
    assert len(lines) == len(plain) and any("[cold" in line for line in lines), through_api
    _check_backtrace(session.backtrace(), f)


@e2e
def test_where_without_process_uses_file_addresses(lldb: Callable[..., LldbDriver],
                                                   zoo: dict[str, Any]) -> None:
    f = _crash(zoo, "gcc-pgo")
    session = lldb(ROOT / f["binary"])
    assert _one_line(session.command("bb where")).startswith("error: no process")
    cold = f["split_functions"]["transfer"]["fragments"][1]
    out = session.command(f"bb where {cold['start']}")
    assert f"is in transfer [{cold['fragment']}]" in out, out
    out = session.command(f"bb where {cold['symbol']}")  # a name the C parser cannot spell
    assert f"is in transfer [{cold['fragment']}]" in out, out


@e2e
def test_run_waits_for_a_stop_lldb_keeps(lldb: Callable[..., LldbDriver],
                                          zoo: dict[str, Any]) -> None:
    """The driver's `run` ends at a stop LLDB keeps, not at every `Process N stopped` it
    prints: after a stop hook that continues, LLDB prints that line alone and runs on (the
    next command then found the process running: "Command requires a process which is
    currently stopped"). Every stop here continues, so the kept one is the exit."""
    f = facts(zoo, "gcc-pgo", "recurse")
    session = lldb(ROOT / f["binary"], args=["deep"])
    assert "added" in session.command('target stop-hook add -G true -o "script 1"')
    assert re.match(r"Breakpoint \d+:", session.command("breakpoint set -n walk"))
    out = session.run()
    assert re.search(r"^total \d+$", out, re.M), out  # the program's last line
    assert re.search(r"Process \d+ exited with status = 0", out), out
    assert "requires a process" in session.command("register read pc")  # it did end


# -- errors (the ones both debuggers share: test_adapters.py) -------------------------------

@e2e
@pytest.mark.expect_internal_error  # the bug it puts into frame naming
def test_a_bug_in_frame_naming_is_reported_once(lldb: Callable[..., LldbDriver],
                                                zoo: dict[str, Any]) -> None:
    """The frame-name callbacks must not raise into LLDB's backtrace, nor swallow a bug: one
    line for the session (not one per frame, not one per `bt`), LLDB's own names meanwhile."""
    f = _crash(zoo, "gcc-pgo")
    session = lldb(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]))
    session.command("script import unsplit_lldb_impl.naming as n; "
                    "n._renamed = lambda *args: 1 // 0")
    first, second = session.backtrace(), session.backtrace()
    said = [line for line in first.splitlines() if "unsplit: internal error" in line]
    assert len(said) == 1, first
    assert "ZeroDivisionError" in said[0] and "UNSPLIT_DEBUG=1" in said[0], said
    assert "internal error" not in second, second
    assert "Traceback" not in first + second
    frames = _frame_lines(second)
    assert len(frames) >= 3 and "transfer" in frames[0], second  # LLDB's own names
    assert _label(f["crash"]) not in second
    assert session.alive()


# -- formats: installed, restored, re-installed, imported twice -----------------------------

def _formats(session: LldbDriver) -> dict[str, str]:
    return {name: session.command(f"settings show {name}") for name in FORMATS}


@e2e
@pytest.mark.parametrize("user_format", [None, "frame #${frame.index}: ${function.name}"
                                         "{ at ${line.file.basename}:${line.number}} MINE\\n"])
def test_disable_restores_the_users_formats(lldb: Callable[..., LldbDriver],
                                            zoo: dict[str, Any], user_format: str | None) -> None:
    f = _crash(zoo, "gcc-pgo-nodebug")
    session = lldb(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]), plugin=False)
    if user_format is not None:
        session.command(f"settings set frame-format {user_format}")
    before = _formats(session)
    assert session.load_plugin() == ""
    installed = _formats(session)
    assert "unsplit_lldb.frame_function_line" in installed["frame-format"]
    assert "unsplit_lldb.thread_function" in installed["thread-format"]
    bt = session.backtrace()
    _check_backtrace(bt, f)
    if user_format is not None:
        assert all(line.endswith("MINE") for line in _frame_lines(bt)), bt

    assert "disabled" in session.command("bb disable")
    assert _formats(session) == before
    assert "[cold]" not in session.backtrace()

    assert "enabled" in session.command("bb enable")
    assert _formats(session) == installed
    _check_backtrace(session.backtrace(), f)
    session.command("bb disable")
    assert _formats(session) == before


@e2e
def test_importing_twice_installs_the_formats_once(lldb: Callable[..., LldbDriver],
                                                   zoo: dict[str, Any]) -> None:
    """(Each command registered once: test_adapters.py.)"""
    f = _crash(zoo, "gcc-pgo")
    session = lldb(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]), plugin=False)
    before = _formats(session)
    for _ in range(2):
        assert session.load_plugin() == ""
    frame_format = session.command("settings show frame-format")
    assert frame_format.count("${script.frame:") == 1, frame_format
    assert "unsplit_lldb.frame_function_line" in frame_format
    _check_backtrace(session.backtrace(), f)
    _check_where(session.command("bb where"), f)
    session.command("bb disable")
    assert _formats(session) == before
