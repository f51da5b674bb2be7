"""Benchmark: writing a debug file with `unsplit debuginfo` against rerunning llvm-bolt-22 with
--update-debug-sections on the same input (what a release pipeline would otherwise do to get
DWARF for BOLTed code).

    .venv/bin/python bench/debuginfo.py [--repeats N]

For every BOLT variant of the zoo and each of its programs: the `-dbg` twin's recorded
llvm-bolt-22 command (facts.json `bolt_command`) rerun into a temporary file, and `unsplit
debuginfo` on the variant without DWARF, both as processes (wall time, best of --repeats); also
the in-process build alone (index + DWARF, no interpreter start-up), the file's size, and
whether llvm-dwarfdump-22 --verify passes each output. Results go to bench/results/debuginfo.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugin"))

from saving import save  # noqa: E402
from unsplit.debuginfo.synthesize import build  # noqa: E402
from unsplit.index import prebolt  # noqa: E402
from unsplit.index.module_index import ModuleIndex  # noqa: E402

VARIANTS = ["all", "random2", "profile2", "cdsplit", "randomN", "reverse", "nonreloc", "nolite"]


def _best(cmd: list[str], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT / "plugin"), "PATH": "/usr/bin:/bin"})
        best = min(best, time.perf_counter() - t)
    return best


def _verifies(path: Path) -> bool:
    out = subprocess.run(["llvm-dwarfdump-22", "--verify", str(path)], capture_output=True,
                         text=True)
    return out.returncode == 0 and "No errors." in out.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    index = json.loads((ROOT / "fixtures/build/index.json").read_text())["variants"]
    rows: list[dict[str, Any]] = []
    tmp = Path(tempfile.mkdtemp(prefix="unsplit-bench-debuginfo-"))
    for variant in VARIANTS:
        for program, entry in index[f"bolt-{variant}"]["programs"].items():
            twin = json.loads((ROOT / index[f"bolt-{variant}-dbg"]["programs"][program]
                               ["facts"]).read_text())
            bolt_cmd = twin["bolt_command"].split()
            bolt_cmd[bolt_cmd.index("-o") + 1] = str(tmp / "bolt.out")
            binary = ROOT / entry["binary"]
            ours = tmp / "unsplit.debug"
            ours_cmd = [sys.executable, "-m", "unsplit", "debuginfo", str(binary), "-o", str(ours)]
            bolt_s, ours_s = _best(bolt_cmd, args.repeats), _best(ours_cmd, args.repeats)
            t = time.perf_counter()
            idx = ModuleIndex.open(str(binary))
            prebolt.set_input(idx.binary, str(ROOT / json.loads(
                (ROOT / entry["facts"]).read_text())["input"]))
            data, summary = build(idx)
            build_s = time.perf_counter() - t
            row = {"variant": f"bolt-{variant}", "program": program,
                   "llvm_bolt_update_debug_sections_s": round(bolt_s, 4),
                   "unsplit_debuginfo_s": round(ours_s, 4), "in_process_build_s": round(build_s, 4),
                   "debug_file_bytes": len(data), "line_rows": summary.rows,
                   "ours_verifies": _verifies(ours), "bolt_verifies": _verifies(tmp / "bolt.out")}
            rows.append(row)
            print(f"{row['variant']:16} {program:8} bolt {bolt_s:6.3f}s  unsplit {ours_s:6.3f}s"
                  f"  (build {build_s:6.3f}s)  verify ours={row['ours_verifies']} "
                  f"bolt={row['bolt_verifies']}")
    total_bolt = sum(r["llvm_bolt_update_debug_sections_s"] for r in rows)
    total_ours = sum(r["unsplit_debuginfo_s"] for r in rows)
    print(f"total: llvm-bolt-22 --update-debug-sections {total_bolt:.2f}s, "
          f"unsplit debuginfo {total_ours:.2f}s")
    print(save("debuginfo", {"rows": rows, "total_bolt_s": total_bolt,
                             "total_unsplit_s": total_ours}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
