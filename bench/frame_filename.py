"""Benchmark: what a frame's file name costs the frame filter under GDB/MI.

    .venv/bin/python bench/frame_filename.py [--repeats N]

In each GDB (gdb, and .debuggers/bin/gdb-18 when present), stopped in note_limit of the zoo's
gcc-pgo `recurse deep` (frame 1 is walk, with DWARF), µs per call, timeit over N calls:

    filename    FrameDecorator.filename(): the short name `bt` prints
    fullname    find_sal().symtab.fullname(): the full path the decorator gives under MI

Results go to bench/results/frame_filename.json.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from pathlib import Path

from saving import save

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "fixtures" / "build" / "gcc-pgo" / "recurse"
SCRIPT = """
import timeit
from gdb.FrameDecorator import FrameDecorator
f = gdb.newest_frame().older()
d = FrameDecorator(f)
n = {n}
for name, call in (("filename", d.filename), ("fullname", lambda: f.find_sal().symtab.fullname())):
    print("COST", name, timeit.timeit(call, number=n) / n * 1e6)
"""


def measure(gdb: str, repeats: int) -> dict[str, float]:
    out = subprocess.run(
        [gdb, "-nx", "-q", "-batch", "-iex", "set debuginfod enabled off",
         "-ex", "break note_limit", "-ex", "run", "-ex", "python " + SCRIPT.format(n=repeats),
         "--args", str(PROGRAM), "deep"], capture_output=True, text=True, timeout=300).stdout
    return {m[1]: round(float(m[2]), 2) for m in re.finditer(r"^COST (\w+) ([\d.]+)", out, re.M)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20000)
    args = parser.parse_args()
    results = {}
    for gdb in ("gdb", str(ROOT / ".debuggers" / "bin" / "gdb-18")):
        if shutil.which(gdb):
            results[Path(gdb).name] = measure(gdb, args.repeats)
            print(Path(gdb).name, results[Path(gdb).name])
    save("frame_filename", results)


if __name__ == "__main__":
    main()
