"""Benchmark: what demangled names cost (unsplit.index.names).

    .venv/bin/python bench/names.py [--library PATH]

On the C++ names a big library exports (libLLVM-22's .dynsym, ~50k names), best of --repeats:

    demangle      µs per name, uncached, in GDB's wording and in LLVM's (libstdc++'s
                  __cxa_demangle through ctypes, then the wording rules)
    cached        µs per name once demangled (what every later frame pays)
    break_query   ms for `bb break run` / `bb break llvm::ModuleInlinerWrapperPass::run`
                  over every name of the library (the mangled-text filter, then demangling
                  the candidates), the same for a C name that matches exactly
    cxxfilt       llvm-cxxfilt-22 on the same names in one batch, for scale

Results go to bench/results/names.json.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugin"))

from saving import save  # noqa: E402
from unsplit.index.names.demangle import GNU, LLVM, demangle  # noqa: E402
from unsplit.index.names.matching import matching  # noqa: E402

LIBRARY = Path("/usr/lib/x86_64-linux-gnu/libLLVM.so.22.1")


def exported(path: Path) -> list[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", str(path)], capture_output=True,
                         text=True, check=True).stdout
    return sorted({ln.split()[-1].split("@")[0] for ln in out.splitlines() if ln.split()})


def best(repeats: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--library", type=Path, default=LIBRARY)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    names = exported(args.library)
    mangled = [n for n in names if n.startswith("_Z")]
    results: dict[str, object] = {"library": str(args.library), "names": len(names),
                                  "mangled": len(mangled)}

    def uncached(style: str) -> Callable[[], object]:
        def run() -> object:
            demangle.cache_clear()
            return [demangle(n, style) for n in mangled]
        return run

    for style in (GNU, LLVM):
        results[f"demangle_{style}_us"] = best(args.repeats, uncached(style)) / len(mangled) * 1e6
    results["cached_us"] = best(args.repeats, lambda: [demangle(n, LLVM) for n in mangled]) \
        / len(mangled) * 1e6
    for query in ("run", "llvm::ModuleInlinerWrapperPass::run", "LLVMContextCreate"):
        demangle.cache_clear()
        t = time.perf_counter()
        found = matching(names, query)
        results[f"break_query[{query}]_ms"] = (time.perf_counter() - t) * 1e3
        results[f"break_query[{query}]_matches"] = len(found)
    t = time.perf_counter()
    subprocess.run(["llvm-cxxfilt-22"], input="\n".join(mangled), capture_output=True,
                   text=True, check=True)
    results["cxxfilt_batch_us"] = (time.perf_counter() - t) / len(mangled) * 1e6
    for key, value in results.items():
        print(f"{key:50} {value:.2f}" if isinstance(value, float) else f"{key:50} {value}")
    print("saved to", save("names", results))


if __name__ == "__main__":
    main()
