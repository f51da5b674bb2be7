"""`bb step`, `bb next`, `bb finish`, `bb advance`, `bb stepi` in real GDB and LLDB sessions.

The programs run their rare paths, which go through cold fragments (crash: main cold -> run cold
-> transfer hot -> transfer cold -> SIGSEGV; loop error: checksum's hot loop -> its cold error
path -> return to main). Lines are named by the markers of the sources and fragments by the
facts (nm/llvm-symbolizer), never by numbers written here. Breakpoints are the debuggers' own.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

import pytest

from ..conftest import ROOT, facts

pytestmark = pytest.mark.e2e

VARIANTS = ["gcc-pgo", "clang-mfs", "bolt-all-dbg", "bolt-all"]

_STOP = re.compile(r"^#0\s+0x[0-9a-f]+ in (?P<proc>\S+)(?: \[(?P<frag>[^\]]+)\])?\+0x[0-9a-f]+"
                   r"(?: at (?P<file>[^:\s]+):(?P<line>\d+))?", re.M)
_SIGNAL = re.compile(r"SIGSEGV")
_BREAKPOINT = re.compile(r"Breakpoint \d+,|stop reason = breakpoint \d+")

Stop = tuple[str, str, int | None]  # procedure, fragment, line


def _break(session: Any, name: str) -> None:
    """A native breakpoint at the first instruction of function `name`."""
    if session.name == "gdb":
        out = session.command(f"break *'{name}'")
    else:
        out = session.command(f"breakpoint set --skip-prologue false -n {name}")
    assert "error" not in out.lower() and "pending" not in out.lower(), out


def _stop(text: str) -> Stop | None:
    found = list(_STOP.finditer(text))
    if not found:
        return None
    m = found[-1]
    return (m["proc"], m["frag"] or "hot", int(m["line"]) if m["line"] else None)


def _start(debugger: Callable[..., Any], f: dict[str, Any], args: list[str],
           at: str) -> Any:
    session = debugger(ROOT / f["binary"], args=args)
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
        text = (ROOT / "fixtures" / "src" / source).read_text()
        return {n: m.group(1).strip() for n, line in enumerate(text.splitlines(), 1)
                if (m := re.search(r"/\* BB: (.*?) \*/", line))}
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


@pytest.mark.parametrize("variant", VARIANTS)
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
    # The crash: in transfer's cold code, at the crash site (where lines are known).
    final = _stop(last)
    assert final is not None and final[0] == "transfer" and final[1] != "hot", last
    if final[2] is not None:
        assert by_line.get(final[2]) == "crash site", last


@pytest.mark.parametrize("variant", ["gcc-pgo", "clang-mfs", "bolt-all-dbg"])
def test_next_stays_in_procedure_and_stops_for_breakpoint_and_signal(
        debugger: Callable[..., Any], zoo: dict[str, Any], variant: str) -> None:
    """`bb next` in main goes hot -> cold without a new frame; a breakpoint in a callee stops
    it there; a signal in a callee stops it there too."""
    f = facts(zoo, variant, "crash")
    by_line = _markers(f, "crash.c")
    session = _start(debugger, f, ["crash"], "main")
    stops: list[Stop] = []
    for _ in range(12):
        stop = _stop(session.command("bb next"))
        assert stop is not None and stop[0] == "main", (stop, stops)
        stops.append(stop)
        if by_line.get(stop[2] or 0) == "main cold path":
            break
    assert by_line.get(stops[-1][2] or 0) == "main cold path", stops
    assert stops[-1][1] != "hot", stops
    _check_marker_fragments(f, "crash.c", stops)

    _break(session, "audit")
    out = session.command("bb next")
    assert _BREAKPOINT.search(out), out
    stop = _stop(out)
    assert stop is not None and stop[0] == "audit", out
    session.command("delete" if session.name == "gdb" else "breakpoint delete --force")
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


@pytest.mark.parametrize("variant", ["gcc-pgo", "clang-mfs", "bolt-all-dbg"])
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
    seen = []
    for _ in range(6):
        stop = _stop(session.command("bb next"))
        assert stop is not None and stop[0] == "main", (stop, seen)
        seen.append(stop)
        if by_line.get(stop[2] or 0) == "main cold error exit":
            break
    assert by_line.get(seen[-1][2] or 0) == "main cold error exit", seen
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
    session = debugger(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]))
    for command in ("next", "step", "finish", "stepi"):
        out = session.command(f"bb {command}")
        assert f"bb {command}: cannot step in a core file: there is no live process" in out, out
        assert "Traceback" not in out
    assert session.alive()
