"""Benchmark: `bb next` over a line in a cold fragment against native `next` over an unsplit line.

    .venv/bin/python bench/stepping.py [--repeats N] [--variant V]...

In real GDB and LLDB sessions on the zoo's crash program (rare path): native `next` over
main's first line (hot, unsplit, no call) and, after continuing to transfer, `bb next` over the
line before the crash site in transfer's cold fragment (no call), both timed inside the debugger
(GDB: `gdb.execute`, LLDB: `HandleCommand` in synchronous mode), so the terminal round trip is
left out of both. The index is warm (`bb advance` to the cold line builds it). The goal:
ratio <= 3. Results go to bench/results/stepping.json.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from saving import save  # noqa: E402

from tests.e2e.driver_gdb import GdbDriver  # noqa: E402
from tests.e2e.driver_lldb import LldbDriver  # noqa: E402

_T = re.compile(r"T=([0-9.]+)")
_COLD_STOP = re.compile(r"^#0\s+0x[0-9a-f]+ in transfer \[[^\]]+\]", re.M)


def _timed(session: Any, command: str) -> tuple[float, str]:
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
    return float(m.group(1)), out


def one_session(cls: Any, variant: str) -> tuple[float, float]:
    entry = json.loads((ROOT / "fixtures" / "build" / "index.json").read_text())
    f = json.loads((ROOT / entry["variants"][variant]["programs"]["crash"]["facts"]).read_text())
    crash_site = f["crash"]["line"]
    with cls(str(ROOT / f["binary"]), args=["crash"]) as session:
        session.command("bb set verbose on")  # the `#0 … [fragment]` line _COLD_STOP reads
        for name in ("main", "transfer"):
            session.break_entry(name)
        session.run()
        native, _ = _timed(session, session.spelling("next"))
        _timed(session, session.spelling("cont"))
        out = session.command(f"bb advance {crash_site - 1}")
        if not _COLD_STOP.search(out):
            raise RuntimeError(f"{variant}: bb advance did not stop in cold code: {out!r}")
        logical, out = _timed(session, "bb next")
        if not _COLD_STOP.search(out):
            raise RuntimeError(f"{variant}: bb next left the cold code: {out!r}")
        return native, logical


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--variant", action="append")
    args = parser.parse_args()
    variants = args.variant or ["gcc-pgo", "clang-mfs", "bolt-all-dbg"]
    results = []
    for cls in (GdbDriver, LldbDriver):
        for variant in variants:
            pairs = [one_session(cls, variant) for _ in range(args.repeats)]
            native = statistics.median(p[0] for p in pairs)
            logical = statistics.median(p[1] for p in pairs)
            row = {"debugger": cls.name, "variant": variant, "native_next_ms": native * 1e3,
                   "bb_next_cold_ms": logical * 1e3, "ratio": logical / native}
            results.append(row)
            print(f"{cls.name:5} {variant:14} native next {native * 1e3:7.2f} ms   "
                  f"bb next (cold) {logical * 1e3:7.2f} ms   ratio {logical / native:5.2f}")
    save("stepping", results)
    worst = max(r["ratio"] for r in results)
    print(f"worst ratio {worst:.2f} (bound 3.0)")
    return 0 if worst <= 3.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
