"""Benchmark: `bt` over a deep recursion through cold fragments, with and without the plugin.

    .venv/bin/python bench/bt.py [--depth N] [--repeats N] [--debugger gdb|lldb]... [--clock cpu]
                                 [--typed]
    .venv/bin/python bench/bt.py --alternate N   # GDB: the unwinder against the filter alone
    .venv/bin/python bench/bt.py --same-session N --clock cpu   # GDB warm: filter vs no-op

The promise checked: with unsplit loaded, `bt` stays as fast as plain `bt`. The program is built
on the spot with GCC PGO (tests/builders.py's recipe): `descend` recurses from a branch the
training run never took, so GCC moves the recursive call into `descend.cold` and every one of
the ~N frames of the deep run is a frame in moved code, the case the naming hooks work hardest
on. In real GDB and LLDB sessions stopped in `bottom` (at depth N), `bt`s are timed inside
the debugger (GDB: `gdb.execute(.., to_string=True)`, LLDB: `HandleCommand` into a return
object), so the terminal is left out; with --typed, as a user types it at the prompt (the
time to print it included, for every mode alike). Each repeat is a pair of sessions on one
unsplit cache directory ($UNSPLIT_CACHE: the index store, the debug files, LLDB's CFI files),
made empty for the pair:

    first   the first session's first `bt`, on the empty cache: the debugger's caches are
            cold (its unwinder, its symbols) and, with the plugin, so are unsplit's: `bb
            disable` before `run` keeps the stop line from locating frame 0, and `bb enable`
            after the stop, so this `bt` builds the module indexes (the executable's, libc's)
            and locates every frame;
    later   the second session's first `bt`, on the cache the first session left (what a user
            pays in every session after the first on the same binaries);
    warm    the same `bt` again in the first session, --warm times (the best of them: other
            processes on a shared machine only ever add time).

With the plugin, LLDB's `bt` is its `unsplit-bt` (lldb/unsplit_lldb_impl/backtrace.py: LLDB's
own backtrace, the names put into its text); --lldb-bt "thread backtrace" times LLDB's command
instead, whose frames the plugin names through its per-frame frame-format callbacks. LLDB runs
with its own default, `symbols.enable-external-lookup` on: it reads libc's debug file as GDB
does (its debug-file-directory), so both plain debuggers have the libc frames' lines the
plugin shows; --no-external-lookup turns it off (the tests' driver's setting: plain LLDB then
has no libc lines, and the plugin reads them from libc's debug file itself).
With --floor LLDB runs a third way, "floor": a `frame-format` callback that renders LLDB's
own function and line parts through the SB API and names nothing (bench/lldb_floor.py), what
any plugin that renames frames by a format callback and keeps LLDB's arguments pays.
GDB runs a third way too, with a frame filter that passes every frame through unchanged: once
any Python frame filter is registered GDB prints `bt` through its Python frame-decorator path
(gdb/python/py-framefilter.c), whatever the filter does, so this is the floor for any
GDB plugin that renames frames; and a fourth, "filter": the plugin with `bb exact-frames off`
(its frame filter without its unwinder), the base the unwinder's cost is measured against. Each
figure is the median over --repeats pairs of sessions, the modes interleaved; with --before DIR
GDB runs a fifth way, "before": the plugin of another checkout (DIR/gdb/unsplit_gdb.py), so that
a change is measured against its base in the same run. The plugin runs from compiled bytecode
(bench/bytecode.py), as an installed one does. The
plugin's output is checked (every recursive frame named `descend [cold]`), so a plugin that
names nothing cannot look fast.
Results go to bench/results/bt.json.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bytecode import bytecode_env, compile_checkout  # noqa: E402
from saving import save  # noqa: E402

from tests.builders import gcc_pgo_build  # noqa: E402
from tests.e2e.driver_gdb import GdbDriver  # noqa: E402
from tests.e2e.driver_lldb import LldbDriver  # noqa: E402

DEEP_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile long sink;

__attribute__((noinline)) void bottom(int depth)
{
    sink = depth;
}

__attribute__((noinline)) long descend(int depth, int rare)
{
    if (depth == 0) {
        bottom(depth);
        return 1;
    }
    if (__builtin_expect(rare, 0)) {
        long r = descend(depth - 1, rare); /* never trained: in descend.cold */
        sink = r; /* a store after the call: no tail-recursion elimination */
        return r * 3 + depth;
    }
    long r = descend(depth - 1, rare);
    sink = r;
    return r + depth;
}

int main(int argc, char **argv)
{
    int rare = argc > 1 && strcmp(argv[1], "deep") == 0;
    int depth = argc > 2 ? atoi(argv[2]) : 40;
    long total = 0;
    for (int i = 0; i < (rare ? 1 : 2000); i++)
        total += descend(depth, rare);
    printf("total %ld\n", total);
    return 0;
}
"""

_RESULT = re.compile(r"T=([0-9.]+) N=(\d+) COLD=(\d+)")
DRIVERS: dict[str, Any] = {"gdb": GdbDriver, "lldb": LldbDriver}
before: Path | None = None  # --before DIR: mode "before" loads DIR/gdb/unsplit_gdb.py


class LldbLookingUp(LldbDriver):
    """LLDB as a user runs it: it finds separate debug files (libc's) by itself
    (--external-lookup; the tests' driver turns `symbols.enable-external-lookup` off)."""

    _settings = tuple(s for s in LldbDriver._settings if "enable-external-lookup" not in s)
_NOOP_FILTER = ("python exec('class _Noop:\\n name = \"noop\"; priority = 100; enabled = True"
                "\\n def filter(self, it): return it\\ngdb.frame_filters[\"noop\"] = _Noop()')")


def build(work: Path) -> Path:
    gcc_pgo_build(work, {"deep.c": DEEP_C}, [["gcc", "-O2", "-g", "deep.c", "-o", "deep"]],
                  train=["./deep", "train"])
    return work / "deep"


CLOCKS = {"wall": "perf_counter", "cpu": "process_time"}
clock = CLOCKS["wall"]  # --clock: the debugger's CPU time is steadier on a loaded machine
typed = False  # --typed: `bt` typed at the prompt rather than run from the debugger's Python
lldb_bt = "bt"  # --lldb-bt: the command LLDB runs


def _typed_bt(session: Any) -> tuple[float, int, int]:
    """As _timed_bt, for a `bt` typed at the prompt (--typed): LLDB then sets up a Python
    session for each ${script.frame:} call, which a `bt` run from Python leaves out; the
    debugger's time includes writing the backtrace to the terminal, for every mode alike."""
    py = "python" if session.name == "gdb" else "script"
    session.command(f"{py} import time as _t; _s = _t.{clock}()")
    out = session.command("bt" if session.name == "gdb" else lldb_bt, timeout=300)
    took = session.command(f"{py} print('T=%f' % (_t.{clock}() - _s))")
    m = re.search(r"T=([0-9.]+)", took)
    if m is None:
        raise RuntimeError(f"{session.name}: bt: no timing in {took!r}")
    return float(m.group(1)), out.count("\n") + 1, out.count("descend [cold]")


def _timed_bt(session: Any) -> tuple[float, int, int]:
    """Seconds one `bt` takes inside the debugger, its line count, and its `[cold]` frames."""
    if typed:
        return _typed_bt(session)
    report = ("print('T=%f N=%d COLD=%d' % (_e, _o.count(chr(10)), "
              "_o.count('descend [cold]')))")
    if session.name == "gdb":
        line = (f"python import time as _t; _s = _t.{clock}(); "
                f"_o = gdb.execute('bt', to_string=True); _e = _t.{clock}() - _s; " + report)
    else:
        line = ("script import time as _t; _r = lldb.SBCommandReturnObject(); "
                f"_i = lldb.debugger.GetCommandInterpreter(); _s = _t.{clock}(); "
                f"_i.HandleCommand('{lldb_bt}', _r); _e = _t.{clock}() - _s; "
                "_o = _r.GetOutput() or ''; " + report)
    out = session.command(line, timeout=300)
    m = _RESULT.search(out)
    if m is None:
        raise RuntimeError(f"{session.name}: bt: no timing in {out!r}")
    return float(m.group(1)), int(m.group(2)), int(m.group(3))


def one_session(name: str, binary: Path, depth: int, mode: str, warm: int,
                cache: Path) -> tuple[float, float]:
    """(first bt, best of `warm` more bts) in seconds, unsplit's cache root `cache`; `mode` is
    plain, noop (GDB), filter (GDB: unsplit with `bb exact-frames off`, its frame filter
    alone), unsplit or before (--before's plugin)."""
    plugin = mode in ("unsplit", "filter", "before")
    driver = DRIVERS[name]
    if mode == "before":
        assert before is not None
        driver = type("GdbBefore", (GdbDriver,),
                      {"plugin_file": str(before / "gdb" / "unsplit_gdb.py")})
    with driver(str(binary), args=["deep", str(depth)], plugin=plugin,
                env=_env(cache)) as session:
        session.break_function("bottom")
        if mode == "noop":
            session.command(_NOOP_FILTER)
        if mode == "floor":
            session.command(f"command script import {Path(__file__).parent / 'lldb_floor.py'}")
        if mode == "filter":
            session.command("bb exact-frames off")
        if plugin:
            session.command("bb disable")
        session.run(timeout=120)
        if plugin:
            session.command("bb enable")
        results = [_timed_bt(session) for _ in range(1 + warm)]
        want = depth if plugin else 0
        for _, lines, cold in results:
            if lines < depth or lines != results[0][1]:
                raise RuntimeError(f"{name}: bt printed {lines} lines, depth {depth}")
            if cold != want:
                raise RuntimeError(f"{name} ({mode}): {cold} frames named 'descend [cold]', "
                                   f"expected {want}")
        return results[0][0], min((r[0] for r in results[1:]), default=results[0][0])


def _env(cache: Path) -> dict[str, str]:
    """The plugin run from compiled bytecode (bench/bytecode.py), as an installed one runs
    (the driver adds to the environment: an empty PYTHONDONTWRITEBYTECODE unsets it)."""
    return {**bytecode_env(UNSPLIT_CACHE=str(cache)), "PYTHONDONTWRITEBYTECODE": ""}


def session_pair(name: str, binary: Path, depth: int, mode: str, warm: int,
                 cache: Path) -> tuple[float, float, float]:
    """(first, later, warm) seconds: a session on an emptied `cache`, then one on the cache
    the first left."""
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir()
    first, best_warm = one_session(name, binary, depth, mode, warm, cache)
    later, _ = one_session(name, binary, depth, mode, 0, cache)
    return first, later, best_warm


def alternate(binary: Path, depth: int, count: int, cache: Path) -> dict[str, float]:
    """GDB's first `bt` of a later session, the frame filter alone and with the unwinder, in
    `count` rounds of one session each, their order swapped every round (the load of a shared
    machine drifts over the minutes a mode-by-mode table takes): median seconds per mode."""
    one_session("gdb", binary, depth, "unsplit", 0, cache)  # the cache every session reads
    runs: dict[str, list[float]] = {"filter": [], "unsplit": []}
    for i in range(count):
        for mode in ("filter", "unsplit") if i % 2 else ("unsplit", "filter"):
            runs[mode].append(one_session("gdb", binary, depth, mode, 0, cache)[0])
    return {mode: statistics.median(times) for mode, times in runs.items()}


_TOGGLE = ("python exec('class _Noop:\\n name = \"noop\"; priority = 100; enabled = False"
           "\\n def filter(self, it): return it\\ngdb.frame_filters[\"noop\"] = _Noop()"
           "\\ndef _bench_mode(mode):\\n gdb.frame_filters[\"noop\"].enabled = mode == \"noop\""
           "\\n gdb.frame_filters[\"unsplit\"].enabled = mode == \"unsplit\"')")


def same_session(binary: Path, depth: int, rounds: int, cache: Path) -> dict[str, list[float]]:
    """GDB's warm `bt` in one session with the plugin loaded, its frame filter on (unsplit),
    off with a no-op filter on instead (noop), or both off (plain), `rounds` times each, the
    order reversed every round: one process, one frame cache, so the ratios hold at a load
    where separate sessions' figures move by tens of percent. Seconds per mode."""
    with GdbDriver(str(binary), args=["deep", str(depth)], plugin=True,
                   env=_env(cache)) as session:
        session.break_function("bottom")
        session.run(timeout=120)
        _timed_bt(session)
        session.command(_TOGGLE)
        runs: dict[str, list[float]] = {"plain": [], "noop": [], "unsplit": []}
        for i in range(rounds):
            for mode in ("plain", "noop", "unsplit")[:: -1 if i % 2 else 1]:
                session.command(f"python _bench_mode('{mode}')")
                seconds, _, cold = _timed_bt(session)
                if cold != (depth if mode == "unsplit" else 0):
                    raise RuntimeError(f"gdb ({mode}): {cold} frames named 'descend [cold]'")
                runs[mode].append(seconds)
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--depth", type=int, default=1500)
    parser.add_argument("--repeats", type=int, default=5, help="sessions per figure")
    parser.add_argument("--warm", type=int, default=5, help="warm bts per session")
    parser.add_argument("--debugger", action="append", choices=sorted(DRIVERS))
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall time, or the debugger process's CPU time (steadier under "
                             "load; leaves out waiting for the disk)")
    parser.add_argument("--floor", action="store_true",
                        help="LLDB: also time a frame-format callback that only renders "
                             "LLDB's own function and line parts (bench/lldb_floor.py)")
    parser.add_argument("--typed", action="store_true",
                        help="time a bt typed at the prompt (LLDB sets up Python for each "
                             "frame-format callback then), not one run from Python")
    parser.add_argument("--lldb-bt", default="bt", metavar="COMMAND",
                        help="the backtrace command LLDB runs (bt, or thread backtrace: the "
                             "plugin's frame-format callbacks)")
    parser.add_argument("--no-external-lookup", dest="external_lookup", action="store_false",
                        help="LLDB: turn symbols.enable-external-lookup off (on by default, as "
                             "in LLDB), so that plain LLDB reads no libc debug file")
    parser.add_argument("--alternate", type=int, default=0, metavar="N",
                        help="only GDB's later-session bt, filter alone against the unwinder, "
                             "N rounds alternated")
    parser.add_argument("--same-session", type=int, default=0, metavar="N",
                        help="only GDB's warm bt, plain / no-op filter / unsplit's filter "
                             "toggled in one session, N rounds")
    parser.add_argument("--before", type=Path, metavar="DIR",
                        help="GDB: also time another checkout's plugin (DIR/gdb/unsplit_gdb.py, "
                             "DIR/plugin; e.g. `git archive REV plugin gdb`), mode \"before\", "
                             "interleaved with the others")
    args = parser.parse_args()
    global clock, typed, lldb_bt, before
    before = args.before
    if before is not None:  # its modules compiled as this checkout's are (bench/bytecode.py)
        compile_checkout(before, "gdb")
    clock = CLOCKS[args.clock]
    typed = args.typed
    lldb_bt = args.lldb_bt
    if args.external_lookup:
        DRIVERS["lldb"] = LldbLookingUp
    if args.same_session:
        with tempfile.TemporaryDirectory(prefix="unsplit-bt-") as tmp:
            binary = build(Path(tmp))
            runs = same_session(binary, args.depth, args.same_session, Path(tmp) / "cache")
        low = {mode: min(times) for mode, times in runs.items()}
        mid = {mode: statistics.median(times) for mode, times in runs.items()}
        print(f"gdb warm bt over {args.depth} frames, one session, {args.same_session} rounds, "
              f"{args.clock} ms (min / median):")
        for mode in runs:
            print(f"{mode:8} {low[mode] * 1e3:8.1f} {mid[mode] * 1e3:8.1f}   "
                  f"{low[mode] / low['noop']:.2f}x / {mid[mode] / mid['noop']:.2f}x noop")
        save("bt-same-session", {"depth": args.depth, "rounds": args.same_session,
                                 "clock": args.clock,
                                 **{f"{k}_min_ms": v * 1e3 for k, v in low.items()},
                                 **{f"{k}_median_ms": v * 1e3 for k, v in mid.items()}})
        return 0
    if args.alternate:
        with tempfile.TemporaryDirectory(prefix="unsplit-bt-") as tmp:
            binary = build(Path(tmp))
            got = alternate(binary, args.depth, args.alternate, Path(tmp) / "cache")
        print(f"gdb later bt, median of {args.alternate} alternated rounds: filter "
              f"{got['filter'] * 1e3:.1f} ms, unsplit {got['unsplit'] * 1e3:.1f} ms "
              f"({got['unsplit'] / got['filter']:.2f}x)")
        save("bt-alternate", {"depth": args.depth, "rounds": args.alternate,
                              **{f"{k}_ms": v * 1e3 for k, v in got.items()}})
        return 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="unsplit-bt-") as tmp:
        binary = build(Path(tmp))
        cache = Path(tmp) / "cache"
        print(f"bt{' typed' if typed else ''}{'' if lldb_bt == 'bt' else f' (lldb: {lldb_bt})'}"
              f" over {args.depth} frames in descend.cold (GCC PGO), "
              f"{args.clock} ms: median of "
              f"{args.repeats} session pairs; first: empty unsplit cache, later: the cache the "
              f"first session left, warm: best of {args.warm} bts after the first")
        print(f"{'debugger':8} {'mode':8} {'first':>8} {'ratio':>6} {'later':>8} {'ratio':>6} "
              f"{'warm':>8} {'ratio':>6}")
        for name in args.debugger or ["gdb", "lldb"]:
            modes = ["plain", "noop", "filter", "unsplit"] + (["before"] if before else []) \
                if name == "gdb" else \
                ["plain", "floor", "unsplit"] if args.floor else ["plain", "unsplit"]
            # Modes interleaved, their order rotated each repeat: a shared machine's load
            # drifts over the minutes a run takes, and then drifts for every mode alike.
            runs: dict[str, list[tuple[float, float, float]]] = {mode: [] for mode in modes}
            for k in range(args.repeats):
                for mode in modes[k % len(modes):] + modes[:k % len(modes)]:
                    runs[mode].append(session_pair(name, binary, args.depth, mode, args.warm,
                                                   cache))
            base: tuple[float, float, float] | None = None
            for mode in modes:
                first, later, warm = (statistics.median(r[i] for r in runs[mode])
                                      for i in range(3))
                base = base or (first, later, warm)
                row = {"debugger": name, "mode": mode, "depth": args.depth, "clock": args.clock,
                       "typed": typed, "lldb_bt": lldb_bt,
                       "external_lookup": args.external_lookup,
                       "sessions": 2 * args.repeats, "first_ms": first * 1e3,
                       "later_ms": later * 1e3, "warm_ms": warm * 1e3,
                       "first_ratio": first / base[0], "later_ratio": later / base[1],
                       "warm_ratio": warm / base[2]}
                rows.append(row)
                print(f"{name:8} {mode:8} {row['first_ms']:>8.1f} {row['first_ratio']:>6.2f} "
                      f"{row['later_ms']:>8.1f} {row['later_ratio']:>6.2f} "
                      f"{row['warm_ms']:>8.1f} {row['warm_ratio']:>6.2f}", flush=True)
    save("bt", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
