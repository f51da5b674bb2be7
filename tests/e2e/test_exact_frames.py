"""`bb bt` in both debuggers (issue 9): the frame list from the CFI of each frame's fragment, and
where the debugger's own unwinding differs.

The truth is independent of unsplit: the crash frames in the facts come from GDB's unwinding when
the core was made (fixtures/gdb_probe.py); the invented-frame case takes its truth from the stop
before it, at the entry of `step`, where both debuggers unwind right (a function entry), and
the return address to stop at is frame 1's pc there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from unsplit.debug import breakpad

from ..conftest import ROOT, facts
from ..variants import EXACT_FRAMES, NO_DWARF, RET_MID_FRAGMENT
from .conftest import resume

pytestmark = pytest.mark.e2e



def _bt(session: Any) -> dict[str, Any]:
    out = session.command("bb bt --json")
    line = next((x for x in out.splitlines() if x.startswith("{")), None)
    assert line is not None, out
    result: dict[str, Any] = json.loads(line)
    return result


def _pcs(frames: list[dict[str, Any]]) -> list[int]:
    return [int(f["pc"], 16) for f in frames]


def _register(session: Any, frame: int, name: str) -> int:
    """The debugger's own value of register `name` in frame `frame`."""
    return int(session.register(name, frame))


@pytest.mark.parametrize("mode", ["live", "core"])
@pytest.mark.parametrize("variant", EXACT_FRAMES)
def test_bb_bt_at_the_crash(debugger: Callable[..., Any], zoo: dict[str, Any], variant: str,
                            mode: str) -> None:
    f = facts(zoo, variant, "crash")
    crash = f["crash"]
    binary = ROOT / f["binary"]
    if mode == "core":
        s = debugger(binary, core=str(ROOT / crash["core"]))
    else:
        s = debugger(binary, args=["crash"])
        s.run()
    got = _bt(s)
    frames = got["frames"]
    truth = crash["frames"][:3]
    # transfer -> run -> main, at GDB's pcs, each named by its procedure and fragment: the
    # frame in the middle of the stack (run, in run.cold) included, none invented.
    assert _pcs(frames)[:3] == [int(t["pc"], 16) for t in truth]
    assert [x["procedure"] for x in frames[:3]] == crash["expected_chain"]
    assert [x["fragment"] for x in frames[:3]] == [t["fragment"] for t in truth]
    assert [x["fragment_symbol"] for x in frames[:3]] == [t["symbol"] for t in truth]
    # Both debuggers unwind these right: their own frames are the CFI's.
    assert [int(p, 16) for p in got["native_pcs"][:3]] == _pcs(frames)[:3]
    assert got["differences"] == []
    text = s.command("bb bt")
    assert "(the debugger's own frames agree)" in text, text
    run_line = next(x for x in text.splitlines() if x.startswith("#1 "))
    assert f"in run [{truth[1]['fragment']}]+" in run_line, text
    # Frame 1's registers from the CFI: rsp is frame 0's CFA, rip the return address; the
    # debugger, which is right here, says the same.
    regs = frames[1]["registers"]
    assert int(regs["rsp"], 16) == int(frames[0]["cfa"], 16)
    assert int(regs["rip"], 16) == _pcs(frames)[1]
    for name in ("rsp", "rip", "rbx"):
        if name in regs:
            assert _register(s, 1, name) == int(regs[name], 16), name


@pytest.mark.parametrize("variant", RET_MID_FRAGMENT)
def test_bb_bt_where_lldb_invents_a_frame(debugger: Callable[..., Any], zoo: dict[str, Any],
                                          variant: str) -> None:
    f = facts(zoo, variant, "switch")
    s = debugger(ROOT / f["binary"], args=["rare"])
    s.break_function("step")
    s.run()
    at_entry = _bt(s)
    assert at_entry["frames"][0]["procedure"] == "step"
    assert at_entry["frames"][1]["procedure"] == "main"
    assert at_entry["frames"][1]["fragment"] != "hot"
    assert at_entry["differences"] == []  # a function entry: both debuggers are right
    ret = _pcs(at_entry["frames"])[1]
    expected = _pcs(at_entry["frames"])[1:]
    s.delete_breakpoints()
    s.break_address(ret)
    resume(s)
    got = _bt(s)
    # Frame 0 in main.cold past its mid-fragment `ret`: the CFI goes straight to main's caller.
    assert _pcs(got["frames"]) == expected
    assert got["frames"][0]["procedure"] == "main"
    native = [int(p, 16) for p in got["native_pcs"]]
    text = s.command("bb bt")
    if native[:len(expected)] == expected[:len(native)]:
        assert got["differences"] == [] and "agree" in text
    else:
        # LLDB 22.1.8 repeats main.cold's pc as a caller: bb bt names the frame that is not real.
        assert got["differences"], got
        assert "the debugger's own backtrace differs" in text
        invented = [p for p in native if p not in expected or native.count(p) > 1]
        assert any(f"({p:#x}) is not a real frame" in text for p in invented), text
    if s.name == "gdb":
        assert got["differences"] == []  # GDB unwinds with .eh_frame: right


def test_bb_bt_without_a_process_is_one_line(debugger: Callable[..., Any],
                                             zoo: dict[str, Any]) -> None:
    f = facts(zoo, "clang-mfs-nodebug", "crash")
    s = debugger(ROOT / f["binary"])
    for command in ("bb bt", "bb bt --all-threads"):
        out = s.command(command).strip()
        assert len(out.splitlines()) == 1 and "no process" in out, out
        assert "Traceback" not in out
    assert s.alive()


# -- LLDB's own frames: each moved fragment's CFI given to LLDB (lldb/…/cfi_symbols.py) -------

_NATIVE_FRAME = re.compile(r"frame #\d+: (0x[0-9a-f]+)")
SESSION_TIMEOUT = 30  # each command of a session: a hang fails the test, never stalls it


def _at_invented_frame(lldb: Callable[..., Any], f: dict[str, Any], **kwargs: Any
                       ) -> tuple[Any, list[int]]:
    """An LLDB session on `switch rare` stopped at `step`'s return address in main.cold, where
    LLDB 22 alone invents a frame; and the true frame pcs there, taken by LLDB itself at the
    stop before, at the entry of `step`, where it unwinds right (a function entry)."""
    s = lldb(ROOT / f["binary"], args=["rare"], **kwargs)
    s.command("breakpoint set -n step", SESSION_TIMEOUT)
    s.run(SESSION_TIMEOUT)
    at_entry = [int(p, 16) for p in _NATIVE_FRAME.findall(s.command("bt", SESSION_TIMEOUT))]
    s.command("breakpoint delete --force", SESSION_TIMEOUT)
    s.command(f"breakpoint set -a {at_entry[1]:#x}", SESSION_TIMEOUT)
    resume(s, SESSION_TIMEOUT)
    return s, at_entry[1:]


def _native(s: Any) -> tuple[list[int], int]:
    """LLDB's own `bt` pcs, and rsp in its frame 1 (`frame select 1`, `register read`)."""
    pcs = [int(p, 16) for p in _NATIVE_FRAME.findall(s.command("bt", SESSION_TIMEOUT))]
    selected = s.command("frame select 1", SESSION_TIMEOUT)
    assert selected.startswith("frame #1: "), selected
    m = re.search(r"rsp = (0x[0-9a-f]+)", s.command("register read rsp", SESSION_TIMEOUT))
    assert m
    s.command("frame select 0", SESSION_TIMEOUT)
    return pcs, int(m.group(1), 16)


def _step_out(s: Any) -> str:
    """LLDB's own `thread step-out` (`finish`), to its asynchronous stop report."""
    return str(s.until_stop("thread step-out", SESSION_TIMEOUT))


@pytest.mark.parametrize("variant", RET_MID_FRAGMENT)
def test_lldb_own_frames_follow_the_cfi(lldb: Callable[..., Any], zoo: dict[str, Any],
                                        variant: str, tmp_path: Any,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """With the plugin loaded, LLDB's own bt, frame select, register read, up and finish see
    the true frames in main.cold: the first session writes the CFI symbol file and hands it
    to LLDB (`target symbols add`); a second session gets it from the cache, where LLDB finds
    it by itself (not a BOLT output's: breakpad.alone_under_build_id); a core saved there gets
    it in its own first session. (The Breakpad file: what a module gets with `bb debuginfo
    off`, from an LLDB that takes split functions as one span, or where no debug file is made;
    the debug file's own case is the test below.)"""
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("UNSPLIT_LLDB_DEBUGINFO", "0")
    f = facts(zoo, variant, "switch")
    s, expected = _at_invented_frame(lldb, f)
    pcs, rsp = _native(s)
    assert pcs == expected, (pcs, expected)
    cfi = _bt(s)
    assert _pcs(cfi["frames"]) == expected and cfi["differences"] == []
    assert rsp == int(cfi["frames"][1]["registers"]["rsp"], 16)
    assert "switch: given: " in s.command("bb exact-frames")
    s.command("frame select 1", SESSION_TIMEOUT)
    up = s.command("up", SESSION_TIMEOUT)
    assert up.startswith("frame #2: ") and f"{expected[2]:016x}" in up, up
    s.command("frame select 0", SESSION_TIMEOUT)
    core = tmp_path / "switch.core"
    assert "error" not in s.command(f'process save-core "{core}"', SESSION_TIMEOUT)
    out = _step_out(s)  # out of main, in main.cold, to its caller (not to an invented frame)
    assert f"{expected[1]:016x}" in out or f"{expected[1]:#x}" in out, out
    s.close()
    kept = {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").glob("lldb-cfi-v*/by-file/*")}

    again, expected_again = _at_invented_frame(lldb, f)
    assert _native(again)[0] == expected_again
    # BOLT gives every output of one input its build-id: never cached by it, given again,
    # from the text kept for this very file (not made again)
    status = again.command("bb exact-frames")
    if variant.startswith("bolt-"):
        assert len(kept) == 1 and f"switch: given: {next(iter(kept))}" in status, status
        assert {p: p.stat().st_mtime_ns for p in kept} == kept
    else:
        assert "switch: given (LLDB found it in the cache)" in status, status
    again.close()

    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "empty"))  # the core's first session
    post = lldb(ROOT / f["binary"], core=str(core))
    assert _native(post)[0] == expected
    assert post.alive()


@pytest.mark.parametrize("variant", RET_MID_FRAGMENT)
def test_lldb_own_frames_follow_the_debug_files_cfi(lldb: Callable[..., Any],
                                                    zoo: dict[str, Any], variant: str,
                                                    tmp_path: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """By default the module gets unsplit's debug file, and no Breakpad file at all: LLDB's own
    bt, frame select, register read and step-out follow its .debug_frame in main.cold, where
    LLDB alone invents a frame, and in a core saved there."""
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    f = facts(zoo, variant, "switch")
    s, expected = _at_invented_frame(lldb, f)
    pcs, rsp = _native(s)
    assert pcs == expected, (pcs, expected)
    cfi = _bt(s)
    assert _pcs(cfi["frames"]) == expected and cfi["differences"] == []
    assert rsp == int(cfi["frames"][1]["registers"]["rsp"], 16)
    assert "switch: given unsplit's DWARF: " in s.command("bb exact-frames")
    core = tmp_path / "switch.core"
    assert "error" not in s.command(f'process save-core "{core}"', SESSION_TIMEOUT)
    out = _step_out(s)
    assert f"{expected[1]:016x}" in out or f"{expected[1]:#x}" in out, out
    s.close()
    texts = [p.read_bytes().split(b"\n", 1)[0]
             for p in (tmp_path / "cache").glob("lldb-cfi-v*/**/*")
             if p.is_file() and p.read_bytes().startswith(b"MODULE ")]
    assert not [t for t in texts if t.endswith(b" switch")], texts  # no Breakpad text of it
    post = lldb(ROOT / f["binary"], core=str(core))
    assert _native(post)[0] == expected


def test_lldb_cfi_ahead_of_two_bolt_outputs(lldb: Callable[..., Any], zoo: dict[str, Any],
                                            tmp_path: Any,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`unsplit lldb-cfi` run ahead (a deploy step) on two BOLT outputs of one input, which
    share a build-id: each text is kept for that very file alone, never by build-id in the
    plugin's cache (LLDB would give either file the other's); the plugin's first session on
    one gives LLDB its text without making it again, and LLDB's own frames in main.cold are
    the true ones (`bb debuginfo off`: the Breakpad file)."""
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("UNSPLIT_LLDB_DEBUGINFO", "0")
    f = facts(zoo, "bolt-random2", "switch")
    other = facts(zoo, "bolt-all", "switch")
    made = subprocess.run([sys.executable, "-m", "unsplit", "lldb-cfi", "--json",
                           str(ROOT / f["binary"]), str(ROOT / other["binary"])],
                          check=True, capture_output=True, text=True)
    mine, theirs = json.loads(made.stdout)
    assert (mine["path"], theirs["path"]) == (mine["kept"], theirs["kept"])
    assert mine["kept"] != theirs["kept"]
    assert not list((tmp_path / "cache").glob("lldb-cfi-v*/.build-id/*/*"))
    kept = Path(mine["kept"])
    before = kept.stat().st_mtime_ns
    s, expected = _at_invented_frame(lldb, f)
    assert _native(s)[0] == expected
    status = s.command("bb exact-frames")
    assert f"switch: given: {kept}" in status, status
    assert kept.stat().st_mtime_ns == before


def _finish_out_of_step(lldb: Callable[..., Any], f: dict[str, Any]) -> tuple[str, int]:
    """LLDB's own `finish` out of `step` (which returns into main.cold): its stop report, and
    the return address it should stop at (frame 1 at step's entry, where LLDB is right)."""
    s = lldb(ROOT / f["binary"], args=["rare"])
    s.command("breakpoint set -n step", SESSION_TIMEOUT)
    s.run(SESSION_TIMEOUT)
    ret = [int(p, 16) for p in _NATIVE_FRAME.findall(s.command("bt", SESSION_TIMEOUT))][1]
    return _step_out(s), ret


@pytest.mark.parametrize("variant", RET_MID_FRAGMENT)
def test_lldb_finish_into_main_cold(lldb: Callable[..., Any], zoo: dict[str, Any],
                                    variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`thread step-out` from step stops at its return address in main.cold with the plugin;
    without the CFI (UNSPLIT_LLDB_CFI=0) LLDB takes its invented caller for the frame to
    return to and runs on to the next call of step."""
    f = facts(zoo, variant, "switch")
    out, ret = _finish_out_of_step(lldb, f)
    assert "stop reason = step out" in out and f"{ret:016x}" in out, out
    monkeypatch.setenv("UNSPLIT_LLDB_CFI", "0")
    out, ret = _finish_out_of_step(lldb, f)
    assert "stop reason = breakpoint" in out and f"{ret:016x}" not in out, out


@pytest.mark.parametrize("variant", RET_MID_FRAGMENT)
def test_lldb_invents_a_frame_without_the_cfi(lldb: Callable[..., Any], zoo: dict[str, Any],
                                              variant: str, tmp_path: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """UNSPLIT_LLDB_CFI=0: LLDB's own unwinding, which invents a caller (so the test above
    proves the CFI symbol file does the work); `bb bt` still shows the CFI's frames and names
    the frame that is not real."""
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("UNSPLIT_LLDB_CFI", "0")
    s, expected = _at_invented_frame(lldb, facts(zoo, variant, "switch"))
    pcs, _ = _native(s)
    assert pcs != expected and pcs[1] == pcs[0] == expected[0], pcs  # main.cold's pc twice
    got = _bt(s)
    assert _pcs(got["frames"]) == expected and got["differences"], got
    text = s.command("bb bt")
    assert f"({pcs[1]:#x}) is not a real frame" in text, text
    assert "exact frames off" in s.command("bb exact-frames")
    cache = tmp_path / "cache"  # the index cache may be there; no CFI file is
    assert not cache.exists() or not [p for p in cache.iterdir() if p.name.startswith("lldb-cfi")]


def test_api_client_sees_the_cfi_from_the_cache(zoo: dict[str, Any], tmp_path: Any) -> None:
    """An SB API client that never loads the plugin (as lldb-dap) but searches the cache
    `unsplit lldb-cfi` filled: LLDB loads the CFI symbol file itself and unwinds right."""
    f = facts(zoo, "clang-mfs-nodebug", "switch")
    binary = str(ROOT / f["binary"])
    cache = tmp_path / "cache"
    made = subprocess.run([sys.executable, "-m", "unsplit", "lldb-cfi", "--json", binary],
                          env=dict(os.environ, UNSPLIT_CACHE=str(cache)), check=True,
                          capture_output=True, text=True)
    record = json.loads(made.stdout)[0]
    assert record["written"] and record["path"].startswith(str(cache)), record
    script = API_CLIENT.format(binary=binary,
                               paths=str(cache / f"lldb-cfi-v{breakpad.FORMAT_VERSION}"))
    # The lldb module under a plain Python looks for lldb-server by its full version's name.
    server = shutil.which("lldb-server-22") or "lldb-server"
    env = dict(os.environ, LLDB_DEBUGSERVER_PATH=os.path.realpath(server))
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                         text=True, timeout=120, env=env).stdout
    entry, at_ret = (json.loads(line) for line in out.splitlines()[-2:])
    assert at_ret == entry[1:], (entry, at_ret)


API_CLIENT = """
import json, lldb
lldb.SBDebugger.Initialize()
d = lldb.SBDebugger.Create(False)
d.SetAsync(False)
d.HandleCommand('settings append target.debug-file-search-paths "{paths}"')
t = d.CreateTarget("{binary}")
t.BreakpointCreateByName("step")
p = t.LaunchSimple(["rare"], None, None)
pcs = lambda: [f.GetPC() for f in p.GetSelectedThread()]
entry = pcs()
print(json.dumps(entry))
t.DeleteAllBreakpoints()
t.BreakpointCreateByAddress(entry[1])
p.Continue()
print(json.dumps(pcs()))
p.Kill()
"""


def test_exact_frames_says_what_it_covers(debugger: Callable[..., Any], mt: dict[str, Any]
                                         ) -> None:
    """GDB needs nothing (it unwinds with .eh_frame); LLDB lists what each module got, in a
    multi-threaded process and in its core alike."""
    s = debugger(mt["binary"], args=["crash"])
    if s.name == "gdb":
        assert ".eh_frame" in s.command("bb exact-frames on")
        return
    s.run()
    name = os.path.basename(mt["binary"])
    status = s.command("bb exact-frames")
    assert status.startswith("exact frames on") and f"  {name}: " in status, status
    assert "exact frames off" in s.command("bb exact-frames off")
    assert "exact frames on" in s.command("bb exact-frames on")
    core = debugger(mt["binary"], core=mt["core"])
    assert f"  {name}: " in core.command("bb exact-frames")
    assert core.alive()


@pytest.mark.parametrize("variant", NO_DWARF)
def test_lldb_own_bt_of_every_crash_core(lldb: Callable[..., Any], zoo: dict[str, Any],
                                         variant: str) -> None:
    """Every symbol-only variant's crash core in LLDB with the plugin: LLDB's own `bt` is the
    list of frames GDB unwound when the core was made (the facts), frames in the middle of the
    stack (run's cold fragment) included: the CFI given to LLDB for every moved fragment (not
    only where LLDB would invent a frame, as in switch above) keeps it right everywhere."""
    f = facts(zoo, variant, "crash")
    crash = f["crash"]
    s = lldb(ROOT / f["binary"], core=str(ROOT / crash["core"]))
    pcs = [int(p, 16) for p in _NATIVE_FRAME.findall(s.command("bt", SESSION_TIMEOUT))]
    assert pcs == [int(t["pc"], 16) for t in crash["frames"]], (pcs, crash["frames"])
