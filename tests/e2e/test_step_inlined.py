"""`bb next` over lines whose code includes inlined calls, after returning into the caller: it
stops once per line of the caller, as the debugger's own `next` does, never in the inlined
function's lines (found on a BOLTed LevelDB: ReadRecord:78 twice, where `next` went 78 -> 80).

The program is built here (GCC PGO): consume's rare path, moved to consume.cold, calls
`produce` and passes its result to the always-inlined `twice` on the same line, then calls
`twice` again on the next two lines. From produce's first line, `bb next` returns into
consume.cold (at the start of the inlined `twice`, shown as the call's line) and goes on line
by line. The oracle is the debugger's own `next` (GDB) / `thread step-over` (LLDB) on the same
binary without the plugin: the lines of consume it stops at, in order.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fixtures.toolbox import markers_in

from ..builders import gcc_pgo_build, run
from .driver_dap import DapSession
from .driver_lldb import PLUGIN as LLDB_PLUGIN

pytestmark = pytest.mark.e2e

SOURCE = r"""#include <stdlib.h>
static volatile long sink;
static inline __attribute__((always_inline)) long twice(long v)
{
    sink += v; /* BB: twice first */
    return v * 2; /* BB: twice return */
}
__attribute__((noinline)) long produce(long n)
{
    sink ^= n; /* BB: produce first */
    return n + 3; /* BB: produce return */
}
__attribute__((noinline)) long consume(long n)
{
    long total = 0;
    for (long i = 0; i < 100; i++)
        sink += i;
    if (__builtin_expect(n == 7, 0)) {
        total = twice(produce(n)) + twice(n + 1); /* BB: call then inlined */
        total += twice(total); /* BB: inlined again */
        sink = total; /* BB: after */
    }
    return total;
}
int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 0;
    long t = 0;
    for (int i = 0; i < 1000; i++)
        t += consume(n);
    return (int)(t & 1);
}
"""
MARKERS = markers_in(SOURCE)
CONSUME = [MARKERS["call then inlined"], MARKERS["inlined again"], MARKERS["after"]]
TWICE = {MARKERS["twice first"], MARKERS["twice return"]}
SLOW = 300


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("stepinl")
    gcc_pgo_build(work, {"t.c": SOURCE}, [["gcc", "-O2", "-g", "t.c", "-o", "t"]],
                  train=["./t"], use=("-fprofile-use", "-freorder-blocks-and-partition"))
    return work / "t"


@pytest.fixture(scope="module")
def bolted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same program built by GCC without a profile (consume's rare path stays in line)
    and BOLTed with every block split off (--split-strategy=all, no profile needed): the
    pre-BOLT input (the oracle's binary) and the BOLT output, whose DWARF BOLT drops."""
    work = tmp_path_factory.mktemp("stepbolt")
    (work / "t.c").write_text(SOURCE)
    run(["gcc", "-O2", "-g", "-fno-pie", "-no-pie", "-Wl,--emit-relocs", "t.c", "-o", "t"],
        work)
    run(["llvm-bolt-22", "t", "-o", "t.bolt", "--split-functions", "--split-strategy=all",
         "--enable-bat"], work)
    return work / "t", work / "t.bolt"


_FRAME = {"gdb": re.compile(r"^#0\s+(?:0x[0-9a-f]+ in )?(\w+).* at \S+:(\d+)$", re.M),
          "lldb": re.compile(r"frame #0: 0x[0-9a-f]+ \S+`(\w+).* at [^:\s]+:(\d+)(?::(\d+))?")}


def _return_path(session: Any, command: str, more: int = 0) -> list[tuple[str, ...]]:
    """From produce's first line, `command` until the stop is at consume's next line (the
    "inlined again" marker) or five times, then `more` times: each stop's function and line
    (and LLDB's column), as the debugger's own `frame` shows them, and whether the step ran
    code (a step into an inlined call that begins at the pc does not)."""
    session.break_function("produce")
    session.run(SLOW)
    session.delete_breakpoints()
    stops: list[tuple[str, ...]] = []
    left = 5
    pc = session.register("pc")
    while left:
        session.until_stop(command, SLOW)
        shown = session.command("frame" if session.name == "gdb" else "frame info")
        found = _FRAME[session.name].search(shown)
        assert found is not None, shown
        before, pc = pc, session.register("pc")
        stops.append((*(g for g in found.groups() if g is not None),
                      "ran" if pc != before else "did not run"))
        left -= 1
        if found[1] == "consume" and int(found[2]) == MARKERS["inlined again"]:
            left = more
    return stops


@pytest.mark.parametrize("verb", ["step", "next"])
def test_bolt_step_back_into_the_caller_stops_where_the_input_does(
        debugger: Callable[..., Any], bolted: tuple[Path, Path], verb: str) -> None:
    """BOLT output of a GCC input, every block split: from produce's first line, `bb step`/
    `bb next` return into consume's moved code in the middle of the call's line (after
    `call produce`, before the inlined `twice`) and stop where the debugger's own command
    stops on the pre-BOLT input: GDB goes on to the line's next stop (step: into the
    inlined `twice` called on that line; next: over it, to the next line, and never on
    GCC's `}` row, no statement, in moved code), LLDB stops at the return address, as its
    own step-in/step-over do. Oracle: the same steps on the pre-BOLT input without the
    plugin (before: GDB's step stopped at the call's line, LLDB's ran on to the inlined
    call or the next line)."""
    prebolt, output = bolted
    native = debugger(prebolt, args=["7"], plugin=False, startup_timeout=SLOW)
    # GDB's next goes on out of consume (past GCC's `}` row), its step into the inlined
    # call made on the line it stopped at: steps more.
    more = {"next": 2, "step": 1}[verb] if native.name == "gdb" else 0
    theirs = _return_path(native, native.spelling(verb), more)
    assert theirs[0][:2] == ("produce", str(MARKERS["produce return"])) and \
        any(t[0] == "consume" for t in theirs), theirs  # the premise: back into consume
    mine = debugger(output, args=["7"], startup_timeout=SLOW, timeout=SLOW)
    assert _return_path(mine, f"bb {verb}", more) == theirs


_VERBOSE = re.compile(r"^#0\s+0x[0-9a-f]+ in (?P<proc>\w+)(?: \[[^\]]+\])?\+0x[0-9a-f]+", re.M)


def _line(out: str, gdb: bool) -> int | None:
    """The line a step reports, as the debugger prints it: GDB's `LINE\\tTEXT` (after the pc
    mid-statement), LLDB's `-> LINE`."""
    pattern = r"^(?:0x[0-9a-f]+\t)?(\d+)\t" if gdb else r"^->\s*(\d+)"
    found = re.findall(pattern, out, re.M)
    return int(found[-1]) if found else None


def _consume_lines(session: Any, command: str, bb: bool) -> list[int]:
    """`command` from produce's entry until the program is back in main: the lines shown while
    in consume (by the plugin's verbose line, or, without it, every line shown from the first
    of consume's body on: a line of the inlined `twice` too)."""
    gdb = session.name == "gdb"
    lines: list[int] = []
    for _ in range(12):
        out = session.until_stop(command, SLOW)
        line = _line(out, gdb)
        if bb:
            found = _VERBOSE.search(out)
            assert found is not None, out
            if found["proc"] == "main":
                break
            if found["proc"] == "consume":
                assert line is not None, out
                lines.append(line)
        elif line is not None and lines and line > MARKERS["after"] + 3:
            break  # main's lines come after consume's in the source
        elif line is not None and (lines or MARKERS["call then inlined"] - 6 <= line <=
                                   MARKERS["after"] + 3):
            lines.append(line)
    return lines


def test_next_steps_over_inlined_calls_after_a_return(debugger: Callable[..., Any],
                                                     program: Path) -> None:
    native = debugger(program, args=["7"], plugin=False, startup_timeout=SLOW)
    native.break_function("produce")
    native.run(SLOW)
    native.delete_breakpoints()
    theirs = _consume_lines(native, native.spelling("next"), bb=False)
    # The oracle: consume's marked lines, each once, in order; GDB also stops at a line of an
    # inlined call's body (twice's first, where GCC's last statement row at the address after
    # the first inlined call names it so).
    assert [n for n in theirs if n in CONSUME] == CONSUME, theirs

    mine = debugger(program, args=["7"], startup_timeout=SLOW, timeout=SLOW)
    assert mine.command("bb set verbose on") == "verbose is on"
    mine.break_function("produce")
    mine.run(SLOW)
    mine.delete_breakpoints()
    ours = _consume_lines(mine, "bb next", bb=True)
    if mine.name == "gdb":
        assert ours == theirs, (ours, theirs)
    else:  # LLDB's own also stops on consume's closing brace, a row that is no statement
        assert ours == CONSUME, (ours, theirs)
    assert mine.alive()


def _finishes_from_twice(session: Any, command: str
                         ) -> tuple[list[tuple[int, int | None]], list[str]]:
    """Stopped at the first inlined `twice` (twice(produce(n)) on the marked line), `command`,
    then again from the next stop at `twice`: where each stopped (pc, line shown), and what
    each printed."""
    gdb = session.name == "gdb"
    session.break_function("twice")
    session.run(SLOW)
    stops, outputs = [], []
    for again in (False, True):
        if again:
            session.break_function("twice")
            session.cont(SLOW)
        session.delete_breakpoints()
        out = session.until_stop(command, SLOW)
        outputs.append(out)
        stops.append((session.register("pc"), _line(out, gdb)))
    return stops, outputs


def test_finish_from_an_inlined_frame_stops_in_its_caller(debugger: Callable[..., Any],
                                                          program: Path) -> None:
    """`bb finish` with an inlined call's frame selected runs out of that call only, to where
    the debugger's own `finish` (GDB) / `thread step-out` (LLDB) stops on the same binary:
    right after the inlined `twice(produce(n))`, in consume at the call's line, with no
    return value (before: out of consume, into main)."""
    native = debugger(program, args=["7"], plugin=False, startup_timeout=SLOW)
    theirs, said = _finishes_from_twice(native, native.spelling("finish"))
    # The oracle stops in consume, at the call's line, not in main.
    assert theirs[0][1] == MARKERS["call then inlined"], theirs

    mine = debugger(program, args=["7"], startup_timeout=SLOW, timeout=SLOW)
    ours, out = _finishes_from_twice(mine, "bb finish")
    assert ours == theirs, (ours, theirs)
    # Out of an inlined call there is no value returned (nor in the debugger's own).
    assert not re.search("Value returned|Return value", said[0]), said[0]
    assert not re.search("Value returned|Return value", out[0]), out[0]
    assert mine.alive()


def _steps_out_of_produce(session: Any, command: str) -> tuple[list[int], str]:
    """From produce's first line, `command` until the program leaves produce: each stop's pc,
    the first one outside produce last, and what that last step printed."""
    session.break_function("produce")
    session.run(SLOW)
    session.delete_breakpoints()
    entry = session.register("pc")
    pcs: list[int] = []
    out = ""
    for _ in range(6):
        out = session.until_stop(command, SLOW)
        pcs.append(session.register("pc"))
        if not entry - 0x40 <= pcs[-1] < entry + 0x40:  # produce is a few instructions long
            break
    return pcs, out


def test_step_back_at_inlined_code_shows_the_call_line(gdb: Callable[..., Any],
                                                       program: Path) -> None:
    """Out of produce, the step lands in consume.cold where the inlined `twice` begins. GDB's
    own `step` stops there first at the call site: consume, the call's line (the line with
    twice(produce(n))). `bb step` stops at the same pc and said twice's line under consume's
    name. Oracle: GDB's `step` on the same binary (the pc and the line it shows)."""
    native = gdb(program, args=["7"], plugin=False, startup_timeout=SLOW)
    theirs, said = _steps_out_of_produce(native, native.spelling("step"))
    assert _line(said, True) == MARKERS["call then inlined"], said  # the premise
    mine = gdb(program, args=["7"], startup_timeout=SLOW, timeout=SLOW)
    ours, out = _steps_out_of_produce(mine, "bb step")
    assert ours[-1] == theirs[-1], ([hex(p) for p in ours], [hex(p) for p in theirs])
    assert _line(out, True) == _line(said, True), (out, said)
    assert re.search(r"\bconsume\b", out) and not re.search(r"\btwice\b.* at ", out), out


def test_step_at_an_inlined_calls_start_enters_it(debugger: Callable[..., Any],
                                                  program: Path) -> None:
    """Stopped where the inlined `twice` begins (out of produce, shown as consume at the
    call's line), the debugger's own `step` (GDB) / `thread step-in` (LLDB) enters twice
    without moving: the same pc, twice's first line, twice's frame. `bb step` does the same
    (before: it ran on to the next line). Oracle: the debugger's own step on the same binary."""
    native = debugger(program, args=["7"], plugin=False, startup_timeout=SLOW)
    gdb = native.name == "gdb"
    theirs, _ = _steps_out_of_produce(native, native.spelling("step"))
    said = native.until_stop(native.spelling("step"), SLOW)
    assert native.register("pc") == theirs[-1], said  # the premise: no instruction ran
    assert _line(said, gdb) == MARKERS["twice first"], said
    mine = debugger(program, args=["7"], startup_timeout=SLOW, timeout=SLOW)
    ours, _ = _steps_out_of_produce(mine, "bb step")
    assert ours[-1] == theirs[-1], ([hex(p) for p in ours], [hex(p) for p in theirs])
    out = mine.until_stop("bb step", SLOW)
    assert mine.register("pc") == theirs[-1], out
    assert _line(out, gdb) == MARKERS["twice first"], out
    assert re.search(r"^twice \(" if gdb else r"frame #0: .*`twice\(.*\[inlined\]", out,
                     re.M), out
    assert re.search(r"^ *\*? *(?:#0\s|frame #0: ).*\btwice\b", mine.command("bt 1"), re.M)


@pytest.mark.parametrize("verb", ["step", "next"])
def test_step_from_the_last_line_stops_where_the_debugger_does(debugger: Callable[..., Any],
                                                               program: Path, verb: str) -> None:
    """From produce's last line (`return n + 3`), GCC's `ret` has a row of the closing brace
    that is no statement: GDB's own step/next runs on through it and out into consume (the
    call's line), LLDB's stops on the brace. `bb step`/`bb next` stop where the debugger's own
    does (before: GDB's stopped on the brace). Oracle: the debugger's own command on the same
    binary, pc and line of two steps from produce's first line."""
    def two_steps(session: Any, command: str) -> list[tuple[int, int | None]]:
        session.break_function("produce")
        session.run(SLOW)
        session.delete_breakpoints()
        stops = []
        for _ in range(2):
            out = session.until_stop(command, SLOW)
            stops.append((session.register("pc"), _line(out, session.name == "gdb")))
        return stops

    native = debugger(program, args=["7"], plugin=False, startup_timeout=SLOW)
    theirs = two_steps(native, native.spelling(verb))
    assert theirs[0][1] == MARKERS["produce return"], theirs  # the premise
    mine = debugger(program, args=["7"], startup_timeout=SLOW, timeout=SLOW)
    ours = two_steps(mine, f"bb {verb}")
    assert ours == theirs, ([(hex(p), n) for p, n in ours], [(hex(p), n) for p, n in theirs])


def _dap_steps(program: Path, command: str, plugin: bool,
               cache: Path) -> list[tuple[str, int, int]]:
    """lldb-dap stopped at produce's entry: `command` typed in its debug console four times;
    after each, the stop lldb-dap tells the IDE of (the `stopped` event) and its top frame:
    name, line and pc."""
    init = [f'command script import "{LLDB_PLUGIN}"'] if plugin else []
    session = DapSession(["lldb-dap-22"], env={"UNSPLIT_CACHE": str(cache)})
    try:
        session.request("initialize", adapterID="unsplit-test", clientID="unsplit-test",
                        linesStartAt1=True, columnsStartAt1=True, pathFormat="path")
        session.send("launch", program=str(program), args=["7"], initCommands=init)
        session.wait("event", "initialized")
        session.request("setFunctionBreakpoints", breakpoints=[{"name": "produce"}])
        session.request("configurationDone")
        thread = session.wait("event", "stopped", timeout=SLOW)["body"]["threadId"]
        stops = []
        for _ in range(4):
            top = session.request("stackTrace", threadId=thread, startFrame=0, levels=1)
            session.request("evaluate", expression=f"`{command}", context="repl",
                            frameId=top["stackFrames"][0]["id"])
            session.wait("event", "stopped", timeout=SLOW)
            frame = session.request("stackTrace", threadId=thread, startFrame=0,
                                    levels=1)["stackFrames"][0]
            stops.append((frame["name"], frame["line"],
                          int(frame["instructionPointerReference"], 16)))
        return stops
    finally:
        session.close()


def test_lldb_dap_step_enters_an_inlined_call_at_the_pc(program: Path, tmp_path: Path) -> None:
    """In lldb-dap's console, `bb step` from produce's entry stops where lldb-dap's own
    `thread step-in` does, each stop told to the IDE: produce's last line, its brace, consume
    where the inlined `twice` begins (shown at the call's line), then twice at the same pc
    (LLDB's virtual step into the inlined call). Oracle: plain lldb-dap on the same binary."""
    theirs = _dap_steps(program, "thread step-in", False, tmp_path / "cache")
    assert theirs[3][:2] == ("twice", MARKERS["twice first"]), theirs  # the premise
    assert theirs[3][2] == theirs[2][2], theirs
    ours = _dap_steps(program, "bb step", True, tmp_path / "cache")
    assert ours == theirs, (ours, theirs)

