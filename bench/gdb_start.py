"""The GDB plugin's start alone, what every later session pays before its first command: CPU of
`gdb -nx -batch` sourcing gdb/unsplit_gdb.py (GDB's getrusage) and of the `source` itself
(`time.process_time()` around it), best and median of N, from compiled bytecode
(bench/bytecode.py); with --before DIR, DIR's plugin (another checkout, e.g. `git archive
COMMIT plugin gdb | tar -x -C DIR` with DIR/.venv linked to this one's) alternated with this one's.

    .venv/bin/python bench/gdb_start.py [--repeats N] [--before DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from pathlib import Path

from bytecode import ROOT, bytecode_env, compile_checkout

_MARK = "unsplit-source-ms"


def _once(plugin: Path, env: dict[str, str]) -> tuple[float, float]:
    """(GDB's CPU ms, the source's CPU ms) of one session that sources `plugin`."""
    cmd = ["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off",
           "-iex", "python import time; _unsplit_t0 = time.process_time()",
           "-iex", f"source {plugin}",
           "-iex", f"python print('{_MARK}', (time.process_time() - _unsplit_t0) * 1000)"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0 or _MARK not in out:
        raise SystemExit(f"gdb failed sourcing {plugin}: {out[-500:]}")
    return (usage.ru_utime + usage.ru_stime) * 1000, float(out.split(_MARK)[1].split()[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--before", type=Path, help="another checkout's plugin, alternated")
    args = ap.parse_args()
    env = bytecode_env(UNSPLIT_CACHE=tempfile.mkdtemp(prefix="unsplit-gdb-start-"))
    plugins = {"after": ROOT / "gdb" / "unsplit_gdb.py"}
    if args.before is not None:
        compile_checkout(args.before, "gdb")
        plugins = {"before": args.before / "gdb" / "unsplit_gdb.py", **plugins}
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in plugins}
    for _ in range(args.repeats):
        for name, plugin in plugins.items():
            runs[name].append(_once(plugin, env))
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    for name, times in runs.items():
        gdb_ms = sorted(t[0] for t in times)
        source_ms = sorted(t[1] for t in times)
        mid = len(times) // 2
        print(f"{name:6}  gdb {gdb_ms[0]:.0f} ms (median {gdb_ms[mid]:.0f}), source "
              f"{source_ms[0]:.1f} ms (median {source_ms[mid]:.1f}); best of {args.repeats}, "
              f"load {load}")


if __name__ == "__main__":
    main()
