"""Benchmark: `unsplit fold` and `unsplit perf-script` on 1 million samples of perf script text.

    .venv/bin/python bench/fold.py [--samples 1000000]

The text is made by repeating real stacks: `perf record -e cpu-clock -g` and `--call-graph
dwarf` of the zoo's BOLTed bolt-all switch (its hot loop runs in cold fragments), six runs
under `sh`, so kernel, libc, ld.so and BOLTed frames alike; their `perf script` text, sample by
sample, cycled to --samples samples (written to bench/results/fold-cache/, git-ignored). Each
command reads it on stdin in a child process (its whole run: start, opening the modules, the
reading): wall and CPU seconds (the load average is saved too: on a shared machine the wall
time says more about the others); peak memory is the child's maximum RSS. The same at a tenth
of the samples shows what grows with samples (the distinct stacks stay the same). perf's own
time is not counted.

Results go to bench/results/fold.json.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugin"))

from saving import RESULTS, save  # noqa: E402

BINARY = ROOT / "fixtures" / "build" / "bolt-all" / "switch"


def record(work: Path) -> list[str]:
    """The samples (their text, blank line included) of two real profiles."""
    blocks: list[str] = []
    loop = f"for i in 1 2 3 4 5 6; do {BINARY} train; done >/dev/null"
    for graph in (["-g"], ["--call-graph", "dwarf"]):
        data = work / "perf.data"
        subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "20000", *graph, "-o",
                        str(data), "--", "sh", "-c", loop], check=True, capture_output=True)
        text = subprocess.run(["perf", "script", "-i", str(data)], check=True,
                              capture_output=True, text=True).stdout
        blocks += [b.strip("\n") + "\n\n" for b in text.split("\n\n") if b.strip()]
    return blocks


def make_text(blocks: list[str], samples: int, path: Path) -> None:
    with open(path, "w") as f:
        for k in range(samples):
            f.write(blocks[k % len(blocks)])


def run(command: str, path: Path, cache: str, *options: str) -> dict[str, float]:
    """One child `unsplit COMMAND` on the text: seconds and its peak RSS in MB."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "plugin"), UNSPLIT_CACHE=cache)
    with open(path) as stdin:
        t = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "unsplit", command, *options],
                                 stdin=stdin, stdout=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - t
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"unsplit {command}: exit status {child.returncode}")
    return {"seconds": round(seconds, 2),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--samples", type=int, default=1_000_000)
    args = p.parse_args()
    work = RESULTS / "fold-cache"
    work.mkdir(parents=True, exist_ok=True)
    blocks = record(work)
    cache = tempfile.mkdtemp(prefix="unsplit-bench-fold-")
    results: dict[str, object] = {"binary": str(BINARY), "distinct_samples": len(blocks),
                                  "samples": args.samples}
    small, big = work / "small.txt", work / "big.txt"
    make_text(blocks, args.samples // 10, small)
    make_text(blocks, args.samples, big)
    results["text_mb"] = round(big.stat().st_size / 1e6, 1)
    run("fold", small, cache)  # the modules' indexes are made once, as in any later run
    for label, command, options in (("fold", "fold", ()), ("fold_lines", "fold", ("--lines",)),
                                    ("perf_script", "perf-script", ())):
        results[f"{label}_tenth"] = run(command, small, cache, *options)
        results[label] = run(command, big, cache, *options)
        print(label, results[f"{label}_tenth"], results[label], flush=True)
    results["load_average"] = os.getloadavg()
    print(save("fold", results))


if __name__ == "__main__":
    main()
