"""Benchmark: `bb break FILE:LINE` where a library's debug info also names FILE.

    .venv/bin/python bench/break_lines.py [--library PATH] [--file loop.c] [--line 30]

    first_lookup  s for the first `statements(FILE, LINE)` of a fresh DwarfLines on the library
                  (glibc with libc6-dbg: two thousand units, iconv/loop.c among their files)
    gdb_break     s for `bb break FILE:LINE` in GDB stopped at main of the zoo's gcc-pgo loop
                  (its own loop.c), a fresh UNSPLIT_CACHE, timed inside GDB

Best of --repeats. Results go to bench/results/break_lines.json.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugin"))

from saving import save  # noqa: E402
from unsplit.elf.binary import Binary  # noqa: E402
from unsplit.elf.dwarf_lines import DwarfLines  # noqa: E402

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
PROGRAM = ROOT / "fixtures" / "build" / "gcc-pgo" / "loop"


def first_lookup(library: str, file: str, line: int) -> tuple[float, int]:
    binary = Binary(library)
    t = time.perf_counter()
    found = DwarfLines(binary).statements(file, line)
    return time.perf_counter() - t, len(found)


def gdb_break(file: str, line: int) -> float:
    with tempfile.TemporaryDirectory() as cache:
        out = subprocess.run(
            ["gdb", "-nx", "-q", "-batch", "-iex", "set debuginfod enabled off",
             "-iex", f"source {ROOT / 'gdb' / 'unsplit_gdb.py'}", "-ex", "break main",
             "-ex", "run", "-ex", "python import time; t = time.perf_counter()",
             "-ex", f"bb break {file}:{line}",
             "-ex", "python print('took %.3f' % (time.perf_counter() - t))", str(PROGRAM)],
            capture_output=True, text=True, timeout=600, env={**os.environ,
                                                            "UNSPLIT_CACHE": cache}).stdout
    took = re.search(r"^took ([\d.]+)", out, re.M)
    if took is None:
        raise SystemExit(f"gdb said:\n{out}")
    return float(took[1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--library", default=LIBC)
    p.add_argument("--file", default="loop.c")
    p.add_argument("--line", type=int, default=30)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    lookups = [first_lookup(args.library, args.file, args.line) for _ in range(args.repeats)]
    results = {"library": args.library, "file": args.file, "line": args.line,
               "first_lookup_s": min(t for t, _ in lookups), "statements": lookups[0][1],
               "gdb_break_s": min(gdb_break(args.file, args.line)
                                  for _ in range(args.repeats))}
    for key, value in results.items():
        print(f"{key:<16} {value}")
    save("break_lines", results)


if __name__ == "__main__":
    main()
