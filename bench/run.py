"""Benchmarks: unsplit's address look-ups against llvm-symbolizer-22, measured in the same run.

    .venv/bin/python bench/run.py [--addresses N] [--binary PATH]...

For each binary: the wall time of `unsplit where` logic (open + index + N look-ups, in process)
and of `llvm-symbolizer-22 --obj BINARY` answering the same N addresses on stdin, and their
ratio. The default set is a clang-size library (libLLVM-22: ~150 MB, hundreds of thousands of
symbols) plus the fixture zoo's crash binaries. Results also go to bench/results/latest.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugin"))

from saving import save  # noqa: E402
from unsplit.elf.binary import Binary  # noqa: E402
from unsplit.index.module_index import ModuleIndex  # noqa: E402

BIG = ["/usr/lib/x86_64-linux-gnu/libLLVM.so.22.1", "/usr/lib/llvm-22/lib/liblldb.so.1"]


def sample_addresses(path: str, n: int) -> list[int]:
    """`n` addresses inside function symbols, fixed seed so runs compare."""
    funcs = Binary(path).functions
    rng = random.Random(1234)
    picks = [funcs[rng.randrange(len(funcs))] for _ in range(n)] if funcs else []
    return [f.value + rng.randrange(f.size) for f in picks]


def time_unsplit(path: str, addresses: list[int]) -> tuple[float, float, int]:
    t0 = time.perf_counter()
    index = ModuleIndex.open(path)
    t1 = time.perf_counter()
    found = sum(index.locate(a).procedure is not None for a in addresses)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, found


def time_symbolizer(path: str, addresses: list[int]) -> float:
    text = "".join(f"{a:#x}\n" for a in addresses)
    t0 = time.perf_counter()
    subprocess.run(["llvm-symbolizer-22", "--obj", path, "--functions=short"], input=text,
                   capture_output=True, text=True, check=True)
    return time.perf_counter() - t0


def zoo_binaries() -> list[str]:
    index = ROOT / "fixtures" / "build" / "index.json"
    if not index.exists():
        return []
    variants = json.loads(index.read_text())["variants"]
    out = []
    for v in variants.values():
        crash = v.get("programs", {}).get("crash")
        if crash:
            out.append(str(ROOT / crash["binary"]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--addresses", type=int, default=5000)
    ap.add_argument("--binary", action="append", help="benchmark these instead of the defaults")
    args = ap.parse_args()
    paths = args.binary or [p for p in BIG if os.path.exists(p)][:1] + zoo_binaries()
    rows = []
    print(f"{'binary':<48} {'funcs':>7} {'index s':>8} {'lookup s':>9} {'unsplit s':>9} "
          f"{'llvm s':>7} {'ratio':>6}")
    for path in paths:
        addresses = sample_addresses(path, args.addresses)
        if not addresses:
            continue
        build, lookup, found = time_unsplit(path, addresses)
        llvm = time_symbolizer(path, addresses)
        ours = build + lookup
        row = {"binary": path, "functions": len(Binary(path).functions),
               "addresses": len(addresses), "found": found, "index_s": build,
               "lookup_s": lookup, "unsplit_s": ours, "llvm_symbolizer_s": llvm,
               "ratio": ours / llvm if llvm else None}
        rows.append(row)
        name = os.path.relpath(path, ROOT) if path.startswith(str(ROOT)) else path
        print(f"{name[-48:]:<48} {row['functions']:>7} {build:>8.3f} {lookup:>9.3f} "
              f"{ours:>9.3f} {llvm:>7.3f} {row['ratio']:>6.2f}")
    save("latest", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
