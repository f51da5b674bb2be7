"""Benchmark: `bb next` against the debugger's native `next`, over the same line in a cold fragment.

    .venv/bin/python bench/stepping.py [--repeats N] [--rounds N] [--variant V]...

In real GDB and LLDB sessions on the zoo's crash program (rare path), with DWARF (native `next`
needs it): the program stopped two lines before the crash site in transfer's cold fragment (a
line without a call; `bb advance` gets there), then one step over it, native `next` or `bb next`,
timed inside the debugger (GDB: `gdb.execute`, LLDB: `HandleCommand` in synchronous mode), so
the terminal round trip is left out of both. Both must stop in that fragment; the lines each
stops on (`bb where`) are reported beside the times, since they may differ. The program is
started again for every step; the first round steps once with each, untimed, so that both are
timed warm (the debugger's line tables and unwinder, unsplit's index); then --rounds timed
rounds, alternating which goes first. A figure is the median over --repeats sessions of each
session's best step. The bound: ratio <= 3. Each session starts with an empty unsplit cache
($UNSPLIT_CACHE, a fresh directory), which the untimed round fills. Results go to
bench/results/stepping.json.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from saving import save  # noqa: E402

from tests.e2e.driver_gdb import GdbDriver  # noqa: E402
from tests.e2e.driver_lldb import LldbDriver  # noqa: E402

_T = re.compile(r"T=([0-9.]+)")
_IN_COLD = re.compile(r" is in transfer \[[^\]]+\]")
_LINE = re.compile(r"^\s*line\s+\S+?:(\d+)", re.M)
_GDB_LINE = re.compile(r"^Line (\d+) of", re.M)


def _timed(session: Any, command: str) -> float:
    if session.name == "gdb":
        line = ("python import time as _t; _s = _t.perf_counter(); "
                f"gdb.execute({command!r}); print('T=%f' % (_t.perf_counter() - _s))")
    else:
        line = ("script import time as _t; _d = lldb.debugger; _a = _d.GetAsync(); "
                "_d.SetAsync(False); _s = _t.perf_counter(); "
                f"_d.HandleCommand({command!r}); _e = _t.perf_counter() - _s; "
                "_d.SetAsync(_a); print('T=%f' % _e)")
    out = session.command(line)
    m = _T.search(out)
    if m is None:
        raise RuntimeError(f"{session.name}: {command}: no timing in {out!r}")
    return float(m.group(1))


def _cold_line(session: Any) -> int | None:
    """The line the debugger names frame 0 by (GDB: `info line`, which takes the last
    statement row of several at an address; LLDB: the plugin's, the last row), when frame 0
    is in transfer's moved code."""
    out = session.command("bb where")
    if not _IN_COLD.search(out):
        return None
    if session.name == "gdb":
        m = _GDB_LINE.search(session.command("info line *$pc"))
    else:
        m = _LINE.search(out)
    return int(m.group(1)) if m else None


def _step(session: Any, command: str, line: int, variant: str,
          again: bool) -> tuple[float, int | None]:
    """Seconds `command` takes to step from `line` in transfer's cold fragment (the program
    started, `again`: killed and started again, and brought there first), and the line it
    stops on in that fragment."""
    if again:  # (LLDB reports the exit after its prompt: wait for it, as for a stop)
        session.until_stop(session.spelling("kill"))
    session.run()
    session.command(f"bb advance {line}")
    if _cold_line(session) != line:
        raise RuntimeError(f"{variant}: bb advance {line} did not stop there in cold code:\n"
                           f"{session.transcript[-2000:]}")
    return _timed(session, command), _cold_line(session)


def one_session(cls: Any, variant: str, rounds: int) -> tuple[float, float, dict[str, Any]]:
    """(native, bb) seconds, each one's best of `rounds` timed steps after one untimed each,
    and the lines each stopped on."""
    entry = json.loads((ROOT / "fixtures" / "build" / "index.json").read_text())
    f = json.loads((ROOT / entry["variants"][variant]["programs"]["crash"]["facts"]).read_text())
    # Two lines before the crash site: no call, and in GDB no statement of the crash site's
    # line (GCC: the crash site's store is line 31's statement, 31 being the line before it).
    line = f["crash"]["line"] - 2
    with tempfile.TemporaryDirectory(prefix="unsplit-stepping-") as cache, \
            cls(str(ROOT / f["binary"]), args=["crash"],
                env={"UNSPLIT_CACHE": cache}) as session:
        session.break_entry("transfer")
        commands = {"native": session.spelling("next"), "bb": "bb next"}
        times: dict[str, list[float]] = {"native": [], "bb": []}
        landed: dict[str, set[int | None]] = {"native": set(), "bb": set()}
        for k in range(1 + rounds):
            order = ["native", "bb"] if k % 2 == 0 else ["bb", "native"]
            for kind in order:
                again = bool(k) or kind != order[0]
                seconds, stop = _step(session, commands[kind], line, variant, again)
                landed[kind].add(stop)
                if k:  # round 0 warms both up
                    times[kind].append(seconds)
        if None in landed["native"] | landed["bb"]:
            raise RuntimeError(f"{session.name} {variant}: a step from line {line} left "
                               f"transfer's cold code:\n{session.transcript[-2000:]}")
        return min(times["native"]), min(times["bb"]), {
            "from_line": line, "native_stops_on": sorted(landed["native"]),
            "bb_stops_on": sorted(landed["bb"])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="sessions per figure")
    parser.add_argument("--rounds", type=int, default=3, help="timed steps of each per session")
    parser.add_argument("--variant", action="append")
    args = parser.parse_args()
    variants = args.variant or ["gcc-pgo", "clang-mfs", "bolt-all-dbg"]
    results = []
    print(f"one step over the line two before the crash site, in transfer's cold fragment, ms: "
          f"median over {args.repeats} sessions of each one's best of {args.rounds} warm steps")
    for cls in (GdbDriver, LldbDriver):
        for variant in variants:
            pairs = [one_session(cls, variant, args.rounds) for _ in range(args.repeats)]
            native = statistics.median(p[0] for p in pairs)
            logical = statistics.median(p[1] for p in pairs)
            row = {"debugger": cls.name, "variant": variant, "native_next_ms": native * 1e3,
                   "bb_next_ms": logical * 1e3, "ratio": logical / native,
                   "sessions": args.repeats, "rounds": args.rounds, **pairs[-1][2]}
            results.append(row)
            stops = f"line {row['from_line']} -> native {row['native_stops_on']}, bb " \
                f"{row['bb_stops_on']}"
            print(f"{cls.name:5} {variant:14} native next {native * 1e3:7.2f} ms   "
                  f"bb next {logical * 1e3:7.2f} ms   ratio {logical / native:5.2f}   {stops}",
                  flush=True)
    save("stepping", results)
    worst = max(r["ratio"] for r in results)
    print(f"worst ratio {worst:.2f} (bound 3.0)")
    return 0 if worst <= 3.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
