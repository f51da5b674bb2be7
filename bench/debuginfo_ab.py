"""Benchmark: `unsplit debuginfo` on one real program's BOLT build, this checkout's plugin and
another's taken in turns, CPU time (user + system) to the microsecond (os.wait4's rusage, not
/usr/bin/time's 10 ms steps): a change of a few ms to a 0.25 s command shows there.

    .venv/bin/python bench/debuginfo_ab.py --before DIR [--program simdjson] [--runs 15]

DIR holds the other plugin (DIR/plugin, e.g. `git archive main plugin | tar -x -C DIR`). The
builds are bench/debuginfo.py --realworld's (made by bench/realworld*.py). Each run has an
empty unsplit cache; both plugins run from compiled bytecode (bench/bytecode.py). Prints the
minimum, first quartile and median of each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bytecode import PY, bytecode_env, compile_checkout  # noqa: E402
from debuginfo import REALWORLD  # noqa: E402


def _cpu(plugin: Path, binary: Path, pre_bolt: Path, out: Path, cache: str) -> float:
    env = bytecode_env(PYTHONPATH=str(plugin), UNSPLIT_CACHE=cache)
    proc = subprocess.Popen([PY, "-m", "unsplit", "debuginfo", str(binary), "--input",
                             str(pre_bolt), "-o", str(out)], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise RuntimeError(f"{plugin}: unsplit debuginfo {binary} failed ({status})")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--before", type=Path, required=True, metavar="DIR")
    parser.add_argument("--program", default="simdjson", choices=[r[0] for r in REALWORLD])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    _, binary, pre_bolt, _, _ = next(r for r in REALWORLD if r[0] == args.program)
    if args.before.resolve() != ROOT:  # its modules compiled as this checkout's are
        compile_checkout(args.before)
    times: dict[str, list[float]] = {"this checkout": [], "before": []}
    with tempfile.TemporaryDirectory(prefix="debuginfo-ab-") as tmp:
        for k in range(args.runs):
            for name, plugin in (("this checkout", ROOT / "plugin"),
                                 ("before", args.before / "plugin")):
                cache = tempfile.mkdtemp(prefix=f"cache-{k}-", dir=tmp)
                times[name].append(_cpu(plugin, binary, pre_bolt, Path(tmp) / "out.debug",
                                        cache))
    for name, t in times.items():
        t.sort()
        print(f"{args.program} {name:13}: cpu min {t[0]:.4f} s, first quartile "
              f"{t[len(t) // 4]:.4f} s, median {statistics.median(t):.4f} s ({len(t)} runs; "
              f"load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
