"""`bb step`, `bb next`, `bb finish`, `bb advance`, `bb stepi` in real GDB and LLDB sessions.

The programs run their rare paths, which go through cold fragments (crash: main cold -> run cold
-> transfer hot -> transfer cold -> SIGSEGV; loop error: checksum's hot loop -> its cold error
path -> return to main; recurse deep: main's cold path -> walk's cold branch -> return into the
middle of main's line). Lines are named by the markers of the sources and fragments by the
facts (nm/llvm-symbolizer), never by numbers written here. Breakpoints are the debuggers' own.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import tempfile
from collections.abc import Callable
from typing import Any

import pytest

from fixtures.toolbox import markers as source_markers

from ..conftest import ROOT, facts
from ..variants import RET_MID_FRAGMENT, RETURN_MID_LINE, STEP, STEP_SCRIPTED, STEP_WITH_LINES
from .conftest import resume

pytestmark = pytest.mark.e2e


_STOP = re.compile(r"^#0\s+0x[0-9a-f]+ in (?P<proc>\S+)(?: \[(?P<frag>[^\]]+)\])?\+0x[0-9a-f]+"
                   r"(?: at (?P<file>[^:\s]+):(?P<line>\d+))?", re.M)
_SIGNAL = re.compile(r"SIGSEGV")
_BREAKPOINT = re.compile(r"Breakpoint \d+,|stop reason = breakpoint \d+")

Stop = tuple[str, str, int | None]  # procedure, fragment, line

# A step is one command however long it runs; on a loaded machine (other test sessions, 2
# cores) a debugger can take far longer than alone. Nothing here depends on timing: every wait
# is for the prompt (or a stop line), with this much patience.
SLOW = 300


def _session(debugger: Callable[..., Any], binary: Any, **kwargs: Any) -> Any:
    """A session whose commands wait up to SLOW seconds and whose steps also print the
    `#0 … [fragment]+0x… at file:line` line that `_stop` reads (`bb set verbose on`;
    test_step_output.py checks the default report)."""
    session = debugger(binary, startup_timeout=SLOW, timeout=SLOW, **kwargs)
    assert session.command("bb set verbose on") == "verbose is on"
    return session


def _break(session: Any, name: str) -> None:
    """A native breakpoint at the first instruction of function `name`."""
    out = session.break_entry(name)
    assert "error" not in out.lower() and "pending" not in out.lower(), out


def _stop(text: str) -> Stop | None:
    found = list(_STOP.finditer(text))
    if not found:
        return None
    m = found[-1]
    return (m["proc"], m["frag"] or "hot", int(m["line"]) if m["line"] else None)


def _start(debugger: Callable[..., Any], f: dict[str, Any], args: list[str],
           at: str) -> Any:
    session = _session(debugger, ROOT / f["binary"], args=args)
    _break(session, at)
    session.run()
    return session


def _fragment_names(f: dict[str, Any]) -> dict[str, str]:
    """Fragment symbol -> fragment name (`main.cold.5` -> `cold.5`), from the facts."""
    return {frag["symbol"]: frag["fragment"]
            for proc in f["split_functions"].values() for frag in proc["fragments"]}


def _markers(f: dict[str, Any], source: str) -> dict[int, str]:
    """Line -> marker text; from the source itself where the facts have no lines (BOLT
    without DWARF, whose lines unsplit takes from the pre-BOLT binary)."""
    markers = f.get("markers", {}).get(source)
    if markers is None:
        markers = source_markers(ROOT / "fixtures" / "src" / source)
    return {line: marker for marker, line in markers.items()}


def _check_marker_fragments(f: dict[str, Any], source: str, stops: list[Stop]) -> None:
    """Every stop at a marker line is in a fragment that holds that marker's code."""
    names = _fragment_names(f)
    by_line = _markers(f, source)
    for proc, frag, line in stops:
        marker = by_line.get(line) if line is not None else None
        symbols = f.get("marker_fragments", {}).get(source, {}).get(marker or "", [])
        if not symbols:
            continue
        allowed = {(s.split(".", 1)[0], names.get(s, "hot")) for s in symbols}
        assert (proc, frag) in allowed, (marker, proc, frag, allowed)


def _next_to(session: Any, procedure: str, by_line: dict[int, str], marker: str,
             most: int) -> list[Stop]:
    """`bb next` until a stop on `marker`'s line (`by_line`: line -> marker), at most `most`
    times, every stop in `procedure`; the stops."""
    stops: list[Stop] = []
    for _ in range(most):
        stop = _stop(session.command("bb next"))
        assert stop is not None and stop[0] == procedure, (stop, stops)
        stops.append(stop)
        if by_line.get(stop[2] or 0) == marker:
            break
    assert by_line.get(stops[-1][2] or 0) == marker, stops
    return stops


@pytest.mark.parametrize("variant", STEP)
def test_step_through_hot_and_cold(debugger: Callable[..., Any], zoo: dict[str, Any],
                                   variant: str) -> None:
    """`bb step` from main's entry to the crash: into run and transfer, through their cold
    fragments, never stopping at a fragment jump, ending at the crash site with SIGSEGV."""
    f = facts(zoo, variant, "crash")
    session = _start(debugger, f, ["crash"], "main")
    stops: list[Stop] = []
    last = ""
    for _ in range(40):
        last = session.command("bb step")
        stop = _stop(last)
        assert stop is not None, last
        if _SIGNAL.search(last):
            break
        stops.append(stop)
    assert _SIGNAL.search(last), f"no SIGSEGV after {stops}"
    by_line = _markers(f, "crash.c")
    marked = [by_line[line] for _, _, line in stops if line in by_line]
    # Each marked line of the rare path is stopped at once, in this order; the hot-path
    # markers are never reached.
    assert marked == ["main cold path", "main cold call", "run cold path", "run cold call",
                      "transfer cold path", "crash site"][:len(marked)], marked
    assert marked[:5] == ["main cold path", "main cold call", "run cold path",
                          "run cold call", "transfer cold path"], stops
    _check_marker_fragments(f, "crash.c", stops)
    # Procedures as called: main, then run (audit in between), then transfer.
    procs = [p for p, _, _ in stops if p != "audit"]
    collapsed = [p for i, p in enumerate(procs) if i == 0 or procs[i - 1] != p]
    assert collapsed == ["main", "run", "transfer"], stops
    # No stop twice at one place in a row: a jump between fragments is not a new line.
    assert all(a != b for a, b in itertools.pairwise(stops)), stops
    # The crash: in transfer's cold code, at the crash site (where lines are known). GDB
    # names the pc by the build's own DWARF as `info line` does (GCC: the last statement row
    # of the rows there, line 31, where the last row is the crash site's).
    final = _stop(last)
    assert final is not None and final[0] == "transfer" and final[1] != "hot", last
    own = re.search(r"^Line (\d+) of", session.command("info line *$pc"), re.M) \
        if session.name == "gdb" and f["has_debug_info"] else None
    if own is not None:
        assert final[2] == int(own[1]), last
    elif final[2] is not None:
        assert by_line.get(final[2]) == "crash site", last


@pytest.mark.parametrize("variant", STEP_WITH_LINES)
def test_next_stays_in_procedure_and_stops_for_breakpoint_and_signal(
        debugger: Callable[..., Any], zoo: dict[str, Any], variant: str) -> None:
    """`bb next` in main goes hot -> cold without a new frame; a breakpoint in a callee stops
    it there; a signal in a callee stops it there too."""
    f = facts(zoo, variant, "crash")
    by_line = _markers(f, "crash.c")
    session = _start(debugger, f, ["crash"], "main")
    stops = _next_to(session, "main", by_line, "main cold path", 12)
    assert stops[-1][1] != "hot", stops
    _check_marker_fragments(f, "crash.c", stops)

    _break(session, "audit")
    out = session.command("bb next")
    assert _BREAKPOINT.search(out), out
    stop = _stop(out)
    assert stop is not None and stop[0] == "audit", out
    session.delete_breakpoints()
    stop = _stop(session.command("bb finish"))
    assert stop is not None and stop[0] == "main" and stop[1] != "hot", stop
    if by_line.get(stop[2] or 0) != "main cold call":  # back in the middle of the call's line
        out = session.command("bb next")
        stop = _stop(out)
        assert stop is not None and by_line.get(stop[2] or 0) == "main cold call", out
    out = session.command("bb next")  # run -> transfer crashes inside the call
    assert _SIGNAL.search(out), out
    stop = _stop(out)
    assert stop is not None and stop[0] == "transfer" and stop[1] != "hot", out
    assert session.alive()


@pytest.mark.parametrize("variant", STEP_WITH_LINES)
def test_advance_into_cold_then_finish_to_caller(debugger: Callable[..., Any],
                                                 zoo: dict[str, Any], variant: str) -> None:
    """`bb advance LINE` runs to a line that lives only in cold code; `bb finish` from there
    returns to the caller's line; `bb next` goes on in the caller's own cold code."""
    f = facts(zoo, variant, "loop")
    by_line = _markers(f, "loop.c")
    lines = {marker: line for line, marker in by_line.items()}
    session = _start(debugger, f, ["error"], "checksum")
    out = session.command(f"bb advance {lines['cold error path']}")
    stop = _stop(out)
    assert stop is not None and stop[0] == "checksum" and stop[1] != "hot", out
    assert stop[2] == lines["cold error path"], out
    _check_marker_fragments(f, "loop.c", [stop])

    # LLDB 22 cannot unwind frame 0 in clang-mfs's checksum.cold (its bt stops there): the
    # step then runs to the return instruction itself, and GDB's unwinder is the oracle.
    caller = re.search(r"#1:?\s+(0x[0-9a-f]+)", session.backtrace())
    assert caller is not None or (session.name, variant) == ("lldb", "clang-mfs")
    out = session.command("bb finish")
    stop = _stop(out)
    assert stop is not None and stop[0] == "main", out
    # At the return address the debugger's own unwinder gave, on the call's line or the next.
    if caller is not None:
        assert re.search(rf"^#0\s+0x0*{caller.group(1)[2:]} ", out, re.M), (caller[1], out)
    assert lines["main calls checksum"] <= (stop[2] or 0) < lines["main cold error exit"], out
    seen = _next_to(session, "main", by_line, "main cold error exit", 6)
    _check_marker_fragments(f, "loop.c", seen)


def test_stepi_shows_fragment_and_block(debugger: Callable[..., Any],
                                        zoo: dict[str, Any]) -> None:
    f = facts(zoo, "clang-mfs", "crash")
    session = _start(debugger, f, ["crash"], "transfer")
    out = session.command("bb stepi")
    stop = _stop(out)
    assert stop is not None and stop[0] == "transfer", out
    assert re.search(r"\(block %\d+\+0x[0-9a-f]+\)", out), out


def test_stepping_in_a_core_is_refused(debugger: Callable[..., Any],
                                       zoo: dict[str, Any]) -> None:
    f = facts(zoo, "gcc-pgo", "crash")
    session = _session(debugger, ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]))
    for command in ("next", "step", "finish", "stepi"):
        out = session.command(f"bb {command}")
        assert f"bb {command}: cannot step in a core file: there is no live process" in out, out
        assert "Traceback" not in out
    assert session.alive()


# -- finish and next through the CFI: invented frames, a selected frame ----------------------

def _cfi_frames(session: Any) -> tuple[list[int], list[int], dict[str, Any]]:
    """(pcs, CFAs, the whole answer) of `bb bt --json`: the CFI's frames (tests/e2e/
    test_exact_frames.py checks them against GDB's and the cores')."""
    out = session.command("bb bt --json")
    line = next((x for x in out.splitlines() if x.startswith("{")), None)
    assert line is not None, out
    got: dict[str, Any] = json.loads(line)
    frames = got["frames"]
    return ([int(x["pc"], 16) for x in frames],
            [int(x["cfa"], 16) if x["cfa"] else 0 for x in frames], got)


def _pc_sp(session: Any) -> tuple[int, int]:
    """The debugger's own pc and sp of frame 0."""
    return session.register("rip"), session.register("rsp")


def _select(session: Any, level: int) -> None:
    out = session.select_frame(level)
    assert f"#{level}" in out, out


@pytest.mark.parametrize("variant", RET_MID_FRAGMENT)
def test_finish_where_lldb_invents_a_frame(debugger: Callable[..., Any], zoo: dict[str, Any],
                                           variant: str) -> None:
    """switch rare: `bb finish` from step returns into main.cold, past a `ret` in the middle
    of that fragment, where LLDB 22 alone invents a caller (test_exact_frames.py); `bb finish` from
    there returns from main itself: to the pc and SP the CFI gave at step's entry, where both
    debuggers still unwind right."""
    f = facts(zoo, variant, "switch")
    session = _session(debugger, ROOT / f["binary"], args=["rare"])
    # By name, as a user would (GDB resolves `*'step'` before a PIE is relocated).
    session.break_function("step")
    session.run()
    pcs, cfas, entry = _cfi_frames(session)
    assert [x["procedure"] for x in entry["frames"][:2]] == ["step", "main"]
    assert entry["frames"][1]["fragment"] != "hot"
    assert entry["differences"] == []  # a function entry: the debugger agrees
    session.delete_breakpoints()
    out = session.command("bb finish")
    assert _pc_sp(session) == (pcs[1], cfas[0]), out
    stop = _stop(out)
    assert stop is not None and stop[0] == "main" and stop[1] != "hot", out
    out = session.command("bb finish")  # main returns: to __libc_start_call_main
    assert _pc_sp(session) == (pcs[2], cfas[1]), out
    assert re.search(rf"^#0\s+0x0*{pcs[2]:x} ", out, re.M), out
    assert session.alive()


@pytest.mark.parametrize("variant", STEP_WITH_LINES)
def test_next_and_finish_act_on_the_selected_frame(debugger: Callable[..., Any],
                                                   zoo: dict[str, Any], variant: str) -> None:
    """recurse deep, stopped in note_limit (called from walk's cold branch at depth 5):
    `bb next` with frame 1 selected lets note_limit return and stops at walk's next line, in
    that same activation; `bb finish` with frame 2 selected (GCC: walk at depth 7, whose pc is
    also frame 1's and 3's) returns from that activation only, to the CFI's pc and SP."""
    f = facts(zoo, variant, "recurse")
    lines = {m: n for n, m in _markers(f, "recurse.c").items()}
    session = _start(debugger, f, ["deep"], "note_limit")
    pcs, cfas, entry = _cfi_frames(session)
    procs = [x["procedure"] for x in entry["frames"]]
    assert procs[:2] == ["note_limit", "walk"] and "main" in procs, procs
    assert entry["differences"] == []  # the debugger numbers these frames as the CFI does
    session.delete_breakpoints()

    _select(session, 1)
    out = session.command("bb next")
    stop = _stop(out)
    assert stop is not None and stop[0] == "walk" and stop[1] != "hot", out
    # The line after the call, as the compiler ordered them (GCC computes `acc` before it).
    assert lines["cold limit branch"] < (stop[2] or 0) <= lines["recursive call"], out
    _check_marker_fragments(f, "recurse.c", [stop])
    now_pcs, now_cfas, _ = _cfi_frames(session)
    # The same activation of walk (its CFA), with the same callers.
    assert now_cfas[0] == cfas[1] and now_pcs[1:] == pcs[2:], (now_pcs, pcs)

    # Finish a frame above #0: with recursion kept (GCC), walk at depth 7, whose pc is also
    # frame 1's and 3's; where clang made the recursion a loop, the one walk below main.
    level = 2 if procs[3] == "walk" else 0
    if level:
        _select(session, level)
        assert now_pcs[1] == now_pcs[2] == now_pcs[3]  # the same return address thrice
    out = session.command("bb finish")
    assert _pc_sp(session) == (now_pcs[level + 1], now_cfas[level]), out
    after_pcs, _, _ = _cfi_frames(session)
    assert after_pcs == now_pcs[level + 1:], (after_pcs, now_pcs)


def _scripted(session: Any, *pairs: str) -> str:
    """`thread step-scripted` with the class by its name, typed as a user (or lldb-dap's
    console) would; waits for the stop LLDB reports asynchronously, then the prompt."""
    args = " ".join(f"-k {k} -v {v}" for k, v in zip(pairs[::2], pairs[1::2], strict=True))
    return str(session.until_stop(f"thread step-scripted -C unsplit_lldb.LogicalStep {args}"))


@pytest.mark.parametrize("variant", STEP_SCRIPTED)
def test_lldb_thread_step_scripted_by_hand(lldb: Callable[..., Any], zoo: dict[str, Any],
                                           variant: str) -> None:
    """The thread plan run by name, its arguments in SBStructuredData, no `bb` command first:
    it computes each leg with the core from the thread's pc, chains them (a return goes on to
    the caller's line), and composes with LLDB's own breakpoints. (A scripted thread plan is
    LLDB's: no GDB half.)"""
    f = facts(zoo, variant, "loop")
    lines = {m: n for n, m in _markers(f, "loop.c").items()}
    session = _start(lldb, f, ["error"], "checksum")

    def where() -> Stop:
        out = session.command("bb frame")
        stop = _stop(out)
        assert stop is not None, out
        return stop

    out = _scripted(session, "kind", "advance", "line", str(lines["cold error path"]))
    assert "stop reason = bb advance" in out, out
    stop = where()
    assert stop[:1] == ("checksum",) and stop[1] != "hot", stop
    assert stop[2] == lines["cold error path"], stop

    _break(session, "report")  # LLDB's own breakpoint stops the plan on the way
    out = _scripted(session, "kind", "next")
    assert _BREAKPOINT.search(out), out
    assert where()[0].startswith("report")
    session.delete_breakpoints()
    stops = []
    for _ in range(4):  # report's lines, then its return goes on to checksum's next line
        out = _scripted(session, "kind", "next")
        assert "stop reason = bb next" in out, out
        stops.append(where())
        if stops[-1][0] == "checksum":
            break
    stop = stops[-1]
    assert stop[0] == "checksum" and stop[1] != "hot", stops
    # The line after the call's, as the compiler ordered them.
    assert lines["cold error path"] < (stop[2] or 0) <= lines["cold error return"], stops
    _check_marker_fragments(f, "loop.c", [stop])

    out = _scripted(session, "kind", "finish")
    assert "stop reason = bb finish" in out, out
    stop = where()
    assert stop[0] == "main" and lines["main calls checksum"] <= (stop[2] or 0), stop
    for _ in range(4):
        _scripted(session, "kind", "next")
        stop = where()
        assert stop[0] == "main", stop
        if stop[2] == lines["main cold error exit"]:
            break
    assert stop[2] == lines["main cold error exit"], stop
    assert session.alive()


# -- a return into the middle of a line in the caller's cold fragment ------------------------

def _in_moved_code(f: dict[str, Any], proc: str, file_address: int) -> bool:
    """Whether `file_address` lies in a fragment of `proc` other than its entry part (facts)."""
    return any(int(x["start"], 16) <= file_address < int(x["end"], 16)
               for x in f["split_functions"][proc]["fragments"] if x["fragment"] != "hot")


def _at_edge_walk(session: Any, f: dict[str, Any]) -> Stop:
    """(Re)start `recurse deep` and run to the second stop at walk's first cold line: the walk
    main's cold path calls at its limit (the first stop is the deep walk's, at depth 5)."""
    session.run()
    resume(session)
    stop = _stop(session.command("bb frame"))
    assert stop is not None and stop[0] == "walk" and stop[1] != "hot", stop
    _, _, frames = _cfi_frames(session)
    caller = frames["frames"][1]
    assert caller["procedure"] == "main", caller
    # The call was made from main's moved code, so it returns there (the facts' ranges).
    assert _in_moved_code(f, "main", int(caller["file_address"], 16) - 1), caller
    return stop


def _native_first_line_in_main(f: dict[str, Any], name: str) -> int:
    """Where the debugger's own `next` from walk's last line stops in main, on the build
    itself or, for BOLT (no DWARF), on its pre-BOLT input: GDB's on the line of the call when
    the return address begins a statement there (GDB stops at the start of a statement of
    another line), else on main's next line; LLDB's `thread step-over` where walk returns."""
    binary = ROOT / (f["input"] if f.get("input") else f["binary"])
    if name == "lldb":
        script = ["breakpoint set -n note_limit", "process launch -- deep", "continue",
                  "thread step-out"] + ["thread step-over"] * 12
        out = subprocess.run(["lldb-22", "--no-lldbinit", "-b", "-O",
                              "settings set use-color false", *(x for c in script
                                                                for x in ("-o", c)),
                              str(binary)], capture_output=True, text=True,
                             timeout=SLOW).stdout
        found = re.search(r"frame #0: .*`main\(.*\) at \S+?:(\d+)", out)
        assert found is not None, out
        return int(found[1])
    # (GDB puts `break recurse.c:LINE` of GCC's cold code at walk's entry: note_limit, the
    # call on that line, is where walk's second activation is reached by name.)
    script = ["break note_limit", "run deep", "continue", "finish"] + ["next"] * 12
    out = subprocess.run(["gdb", "-nx", "-q", "-batch", *(x for c in script for x in ("-ex", c)),
                          str(binary)], capture_output=True, text=True, timeout=SLOW).stdout
    found = re.search(r"^main \(.*\) at \S+:(\d+)$", out, re.M)
    assert found is not None, out
    return int(found[1])


@pytest.mark.parametrize("variant", RETURN_MID_LINE)
def test_return_mid_line_into_the_callers_cold_fragment(debugger: Callable[..., Any],
                                                        zoo: dict[str, Any],
                                                        variant: str) -> None:
    """recurse deep: main's cold path calls walk(1, 1, total), at its limit at once. Stopped on
    walk's first cold line (`bb break recurse.c:LINE`), `bb next` line by line to walk's last
    line and once more returns into main's cold fragment in the middle of the call's line
    (`total += walk(…) * 3`) and stops at main's next line, "main prints total", in whichever
    fragment holds it: in bolt-profile2 main's hot one, where GDB does not unwind (it stops
    unwinding at a function named `main`, not at `main.cold.0`), and the step used to run on
    to __libc_start_call_main. Where the return address begins a statement of the call's line
    (clang's rows), GDB's own `next` stops there first, and LLDB's wherever it is; so does
    `bb next` (the oracle: the debugger on the build, or on BOLT's pre-BOLT input). `bb step`,
    `bb until`, and `bb finish` then `bb next`, from walk's last line end there too."""
    f = facts(zoo, variant, "recurse")
    lines = {m: n for n, m in _markers(f, "recurse.c").items()}
    session = _session(debugger, ROOT / f["binary"], args=["deep"])
    out = session.command(f"bb break recurse.c:{lines['cold limit branch']}")
    assert "nothing set" not in out and "error" not in out.lower(), out
    expected = lines["main prints total"]
    # GDB's own rule, on the build or its pre-BOLT input: stop on the call's line where the
    # return address begins a statement (clang's column rows), else go on to the next line.
    first = _native_first_line_in_main(f, session.name)
    assert first in (lines["main cold edge walk"], expected), first

    start = _at_edge_walk(session, f)
    assert start[2] == lines["cold limit branch"], start
    in_walk: list[Stop] = []
    stop: Stop | None = None
    for _ in range(16):
        out = session.command("bb next")
        stop = _stop(out)
        assert stop is not None, out
        if stop[0] != "walk":
            break
        in_walk.append(stop)
    assert stop is not None and stop[0] == "main" and stop[2] == first, (in_walk, out)
    if first != expected:  # on the call's line, at the return address: main's next line next
        out = session.command("bb next")
        stop = _stop(out)
        assert stop is not None and stop[0] == "main" and stop[2] == expected, out
    assert in_walk, "walk's first cold line was its last"
    _check_marker_fragments(f, "recurse.c", [stop, *in_walk])

    for kind in ("step", "until", "finish"):
        _at_edge_walk(session, f)
        for _ in in_walk:  # to walk's last line, as before
            last = _stop(session.command("bb next"))
        assert last == in_walk[-1], (kind, last, in_walk)
        out = session.command(f"bb {kind}")
        stop = _stop(out)
        if kind == "step" and stop is not None and stop[0] == "walk":
            # GCC's rows name the recursive call's address by walk's next line (its last row,
            # not the statement row of the call's line): walk's last stop is at the call, and
            # step enters it (walk(0, …), its first line), as a debugger's step at a call does.
            assert stop[2] in (lines["recursion base"], lines["recursion base"] - 1), out
            session.command("bb finish")
            out = session.command("bb next")
            stop = _stop(out)
        if kind == "finish" or first != expected:
            # Back at the return address, in the middle of the call's line in main's cold code.
            assert stop is not None and stop[0] == "main" and stop[1] != "hot", out
            assert stop[2] == lines["main cold edge walk"], out
            out = session.command("bb next")
            stop = _stop(out)
        assert stop is not None and stop[0] == "main" and stop[2] == expected, (kind, out)
    assert session.alive()


@pytest.mark.parametrize("variant", ["gcc-pgo", "bolt-all"])
def test_breakpoint_that_interrupts_finish_is_reported_once(debugger: Callable[..., Any],
                                                            zoo: dict[str, Any],
                                                            variant: str) -> None:
    """loop error, stopped in checksum: `bb finish` runs into a breakpoint on report (called
    from checksum's cold path) and stops there; the stop reads as the debugger's own stop at a
    breakpoint: its source line once, and no value returned (checksum has not returned)."""
    f = facts(zoo, variant, "loop")
    session = debugger(ROOT / f["binary"], args=["error"], startup_timeout=SLOW, timeout=SLOW)
    _break(session, "checksum")
    session.run()
    _break(session, "report")
    out = session.command("bb finish")
    assert _BREAKPOINT.search(out), out
    text = next(line for line in (ROOT / "fixtures" / "src" / "loop.c").read_text().splitlines()
                if "fprintf" in line and "loop:" in line).strip()
    # Once where the debugger knows report's lines (BOLT without DWARF: GDB shows `report ()`,
    # LLDB disassembly, as at any breakpoint there).
    assert out.count(text) == (1 if f["has_debug_info"] else out.count(text)) <= 1, out
    assert len(re.findall(r"^Breakpoint \d+, |stop reason = breakpoint", out, re.M)) == 1, out
    assert "Value returned" not in out and "Return value" not in out, out
    assert session.alive()


def _native_next_offsets(binary: Any, symbol: str, args: list[str]) -> list[int]:
    """Where GDB's own `next` stops, from the first instruction of `symbol` until a signal:
    each pc as an offset from that first instruction."""
    script = [f"break *'{symbol}'", "run", "p/x $pc"] + ["next", "p/x $pc"] * 8
    out = subprocess.run(["gdb", "-nx", "-q", "-batch", "-iex", "set debuginfod enabled off",
                          *(x for c in script for x in ("-ex", c)), "--args", str(binary),
                          *args], capture_output=True, text=True, timeout=SLOW).stdout
    before_signal = out.split("received signal")[0]
    pcs = [int(m[1], 16) for m in re.finditer(r"^\$\d+ = (0x[0-9a-f]+)$", before_signal, re.M)]
    assert len(pcs) >= 2, out
    return [pc - pcs[0] for pc in pcs[1:]]


@pytest.mark.parametrize("variant", ["gcc-pgo"])  # clang's cold code begins with line 0
def test_next_stops_where_gdbs_next_stops(debugger: Callable[..., Any], zoo: dict[str, Any],
                                          variant: str) -> None:
    """crash: from the first instruction of transfer's cold fragment, `bb next` stops where
    GDB's own `next` stops on the same binary (the oracle), until the crash: never at an
    address whose rows are no statement (GCC puts several rows at one address, the last often
    not a statement; GDB takes the address's statement row), nor twice on one line."""
    f = facts(zoo, variant, "crash")
    cold = next(frag["symbol"] for frag in f["split_functions"]["transfer"]["fragments"]
                if frag["fragment"] != "hot")
    expected = _native_next_offsets(ROOT / f["binary"], cold, f["crash"]["argv"][1:])
    session = _start(debugger, f, f["crash"]["argv"][1:], cold)
    start = session.register("pc")
    got: list[int] = []
    for _ in expected:
        out = session.command("bb next")
        if _SIGNAL.search(out):
            break
        got.append(session.register("pc") - start)
    assert got == expected, ([hex(x) for x in got], [hex(x) for x in expected])


def _first_line_zero(binary: Any, symbol: str) -> tuple[int, int]:
    """(address of the first line-0 row in `symbol` that follows a row of a line, that line),
    from nm and llvm-dwarfdump-22's line table of `binary`."""
    nm = subprocess.run(["nm", "-S", "--defined-only", str(binary)], capture_output=True,
                        text=True, check=True).stdout
    start, size = next((int(m[1], 16), int(m[2], 16)) for m in re.finditer(
        r"^([0-9a-f]+) ([0-9a-f]+) [tT] (\S+)$", nm, re.M) if m[3] == symbol)
    table = subprocess.run(["llvm-dwarfdump-22", "--debug-line", str(binary)],
                           capture_output=True, text=True, check=True).stdout
    rows = [(int(m[1], 16), int(m[2])) for m in re.finditer(r"^0x([0-9a-f]{16})\s+(\d+)\s",
                                                             table, re.M)]
    rows = [r for r in rows if start <= r[0] < start + size]
    for (_, before), (address, line) in itertools.pairwise(rows):
        if line == 0 and before:
            return address, before
    raise AssertionError(f"no line-0 row after a line in {symbol} of {binary}")


def _native_from(binary: Any, symbol: str, address: int, args: list[str]) -> tuple[int, int]:
    """Plain GDB on `binary`: (instructions `stepi` runs from `symbol`'s first instruction to
    `address`, the line its `next` stops on from there)."""
    script = [f"break *'{symbol}'", "run", "set $n = 0",
              f"while $pc != {address:#x} && $n < 64", "stepi", "set $n = $n + 1", "end",
              "p $n", "next", "info line *$pc"]
    with tempfile.NamedTemporaryFile("w", suffix=".gdb") as commands:
        commands.write("\n".join(script) + "\n")  # (a `while` needs a file, not -ex)
        commands.flush()
        out = subprocess.run(["gdb", "-nx", "-q", "-batch", "-iex", "set debuginfod enabled off",
                              "-x", commands.name, "--args", str(binary), *args],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=SLOW).stdout
    count = re.search(r"^\$1 = (\d+)$", out, re.M)
    line = re.search(r"^Line (\d+) of ", out, re.M)
    assert count and line and int(count[1]) < 64, out
    return int(count[1]), int(line[1])


@pytest.mark.parametrize("variant", ["bolt-random2-dbg"])
def test_next_from_line_zero_code_steps_through_it_as_its_line(
        debugger: Callable[..., Any], zoo: dict[str, Any], variant: str) -> None:
    """crash: `run` has a line-0 row between two runs of its loop's line (clang). From that
    code, reached by stepi from run's first instruction, `bb next` stops where plain GDB's
    `next` stops on the pre-BOLT binary from the same instruction: GDB counts line-0 code with
    the line before it (so does LLDB), never on that line's second run."""
    f = facts(zoo, variant, "crash")
    zero, before = _first_line_zero(ROOT / f["input"], "run")
    count, expected = _native_from(ROOT / f["input"], "run", zero, f["crash"]["argv"][1:])
    assert expected != before  # the oracle steps past the line's second run
    session = _start(debugger, f, f["crash"]["argv"][1:], "run")
    for _ in range(count):
        session.command("bb stepi")
    stop = _stop(session.command("bb next"))
    assert stop is not None and stop[2] == expected, (stop, expected, session.transcript[-1500:])
