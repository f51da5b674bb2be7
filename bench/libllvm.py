"""Benchmark: unsplit on the binary BOLT exists for, a BOLTed libLLVM (issue 15).

    .venv/bin/python bench/libllvm.py [--force] [--only STEP]...

Built once into bench/libllvm/cache (git-ignored; a stamp per step holds its recipe's hash):

    lib     llvm-bolt-22 /usr/lib/x86_64-linux-gnu/libLLVM.so.22.1 --allow-stripped
            --split-functions --split-strategy=random2 --enable-bat --lite=0   (~1.5 min,
            236 MB, 129k functions, a 36 MB .note.bolt_bat, cold code in .bolt.text)
    ir      big.ll: clang-22 -O0 -Xclang -disable-O0-optnone -S -emit-llvm of a generated C
            file (many functions with loops and switches, so `opt -O3` runs for seconds)
    core    /usr/lib/llvm-22/bin/opt -O3 big.ll with LD_LIBRARY_PATH=cache (the BOLTed
            library), `gcore` after 2 s: a core whose stack runs through the library's
            split code

Then, in one run, so that every ratio compares figures taken under the same load:

    gdb/lldb  `bt 20` on the core, timed inside the debugger (as bench/bt.py does), and the
              debugger's peak RSS (VmHWM) at the end of the session, plain and with the
              plugin; with the plugin twice: `first` with an empty unsplit cache
              ($UNSPLIT_CACHE pointed at a fresh directory), `later` with the cache the
              first session left. Ratios are to the plain session of the same debugger.
    where     `unsplit where --exe LIB ADDR` of a cold-fragment address: empty cache, warm cache
    symbolize `unsplit symbolize --exe LIB` of 2,000 addresses in split functions (every
              fragment kind), empty cache and warm cache (wall time and peak RSS of the process)

Goals (issue 15): bt first session <= 10x plain, later <= 2x, peak RSS <= 3x; where <= 2 s
empty, <= 0.2 s warm; symbolize <= 3 s empty, <= 0.5 s warm. Results: bench/results/libllvm.json.
"""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


from tests.e2e.driver_gdb import GdbDriver  # noqa: E402
from tests.e2e.driver_lldb import LldbDriver  # noqa: E402

CACHE = ROOT / "bench" / "libllvm" / "cache"
SYSTEM_LIB = Path("/usr/lib/x86_64-linux-gnu/libLLVM.so.22.1")
OPT = "/usr/lib/llvm-22/bin/opt"
LIB = CACHE / SYSTEM_LIB.name
IR = CACHE / "big.ll"
CORE = CACHE / "opt.core"
BOLT_FLAGS = ["--allow-stripped", "--split-functions", "--split-strategy=random2",
              "--enable-bat", "--lite=0"]
PY = str(ROOT / ".venv" / "bin" / "python")
DRIVERS = {"gdb": GdbDriver, "lldb": LldbDriver}
SYMBOLIZE_COUNT = 2000


# -- building the input, once -------------------------------------------------------------------


def _stamped(name: str, recipe: str, force: bool) -> bool:
    """Whether step `name` is built with this very recipe (its stamp holds the recipe's hash)."""
    stamp = CACHE / f"{name}.stamp"
    digest = hashlib.sha256(recipe.encode()).hexdigest()
    return not force and stamp.exists() and stamp.read_text() == digest


def _stamp(name: str, recipe: str) -> None:
    (CACHE / f"{name}.stamp").write_text(hashlib.sha256(recipe.encode()).hexdigest())


def build_lib(force: bool) -> None:
    recipe = " ".join(["llvm-bolt-22", str(SYSTEM_LIB), *BOLT_FLAGS,
                       str(SYSTEM_LIB.stat().st_size)])
    if _stamped("lib", recipe, force) and LIB.exists():
        return
    print(f"building {LIB} with llvm-bolt-22 (~1.5 min) …", flush=True)
    tmp = CACHE / (LIB.name + ".tmp")
    subprocess.run(["llvm-bolt-22", str(SYSTEM_LIB), "-o", str(tmp), *BOLT_FLAGS], check=True,
                   stdout=subprocess.DEVNULL)
    os.replace(tmp, LIB)
    _stamp("lib", recipe)


def generated_c(functions: int = 1500, seed: int = 15) -> str:
    """A large C file whose IR keeps `opt -O3` busy: loops to unroll and vectorize, switches,
    calls to inline."""
    rnd = random.Random(seed)
    out = ["#include <stddef.h>", "static volatile long sink;"]
    for i in range(functions):
        a, b, c = rnd.randrange(2, 97), rnd.randrange(3, 89), rnd.randrange(1, 13)
        callee = f"f{rnd.randrange(i)}(x + {c}, v, n)" if i else "x"
        out.append(f"""
long f{i}(long x, long *v, size_t n) {{
    long acc = {a};
    for (size_t k = 0; k < n; k++) {{
        switch ((v[k] + x) % {c + 5}) {{
        case 0: acc += v[k] * {b}; break;
        case 1: acc ^= v[k] << {c}; break;
        case 2: acc -= v[(k + {a}) % n] / (x | 1); break;
        case 3: for (int j = 0; j < {c + 3}; j++) acc += (v[k] >> j) & {b}; break;
        default: acc += k * {a};
        }}
    }}
    if (acc % {b} == {c}) acc += {callee};
    sink = acc;
    return acc;
}}""")
    return "\n".join(out) + "\n"


def build_ir(force: bool) -> None:
    source = generated_c()
    recipe = "clang-22 -O0 -Xclang -disable-O0-optnone -S -emit-llvm\n" + source
    if _stamped("ir", recipe, force) and IR.exists():
        return
    print(f"building {IR} …", flush=True)
    c_file = CACHE / "big.c"
    c_file.write_text(source)
    subprocess.run(["clang-22", "-O0", "-Xclang", "-disable-O0-optnone", "-S", "-emit-llvm",
                    str(c_file), "-o", str(IR)], check=True)
    _stamp("ir", recipe)


def build_core(force: bool) -> None:
    recipe = f"{OPT} -O3 {IR.name} LD_LIBRARY_PATH=cache; gcore after 2 s; " + \
        hashlib.sha256(LIB.read_bytes()[:1 << 20]).hexdigest() + str(LIB.stat().st_mtime_ns)
    if _stamped("core", recipe, force) and CORE.exists():
        return
    print(f"making {CORE} …", flush=True)
    env = dict(os.environ, LD_LIBRARY_PATH=str(CACHE))
    proc = subprocess.Popen([OPT, "-O3", str(IR), "-o", os.devnull], env=env)
    try:
        time.sleep(2)
        if proc.poll() is not None:
            raise SystemExit(f"opt finished within 2 s (status {proc.returncode}): "
                             "the IR is too small")
        prefix = CACHE / "opt"
        subprocess.run(["gcore", "-o", str(prefix), str(proc.pid)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.replace(f"{prefix}.{proc.pid}", CORE)
    finally:
        proc.kill()
        proc.wait()
    _stamp("core", recipe)


def build(force: bool) -> None:
    CACHE.mkdir(parents=True, exist_ok=True)
    build_lib(force)
    build_ir(force)
    build_core(force)
