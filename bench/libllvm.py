"""Benchmark: unsplit on the binary BOLT exists for, a BOLTed libLLVM.

    .venv/bin/python bench/libllvm.py [--force] [--cli-only] [--repeat N] [--dap]
                                      [--dap-only] [--debuginfo-only]
                                      [--breakpad-only]

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
              first session left; GDB also `filter`, a later session with `bb exact-frames
              off` (the frame filter without the unwinder). Ratios are to the plain session
              of the same debugger.
    where     `unsplit where --exe LIB ADDR` of a cold-fragment address: empty cache, warm cache
    symbolize `unsplit symbolize --exe LIB` of 2,000 addresses in split functions (every
              fragment kind), empty cache and warm cache
    debuginfo `unsplit debuginfo LIB -o FILE`: the library's names-only debug file (its input
              has no DWARF), empty cache and warm (the persistent index kept)
    alternate (--alternate N, alone) GDB's `bt` with `bb exact-frames` on and off, N times
              each in one session, alternated, frames flushed before each
    breakpad  (also --breakpad-only) `unsplit breakpad LIB -o FILE`, empty cache and warm, its
              functions checked through Sentry's `symbolic` against perf2bolt-22; and
              `unsplit lldb-cfi --print LIB` warm (the goal is a multiple of its CPU time)
    dap       (--dap, --dap-only) lldb-dap-22 attached to the core with `coreFile`, plain and
              with the plugin in `initCommands` (first: empty cache, later: the cache the
              first left): wall time and CPU of the adapter (and of the debug file's writer it
              started) up to the first `stackTrace` response, how many of its frames are
              `___lldb_unnamed_symbol…`, when the adapter says the debug file is loaded and
              whether the frames (names, pcs) are then the same;
              `--compare TREE`: also another checkout's plugin, first and later
    The CLI figures: wall time and CPU time (user + system) of the process, the least of
    --repeat runs each, and its peak RSS. "empty": the cache directory removed before each
    run; "warm": the cache the runs before left.

The CLI runs from compiled bytecode, as an installed plugin does (bench/bytecode.py).

Goals: bt first session <= 10x plain, later <= 2x, peak RSS <= 3x; where <= 2 s
empty, <= 0.2 s warm; symbolize <= 3 s empty, <= 0.5 s warm; debuginfo <= 5 s and 300 MB;
breakpad <= 2x lldb-cfi's CPU time, written as it is made; lldb-dap's first stackTrace
<= 3x plain. Results: bench/results/libllvm*.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "plugin"))

from bytecode import bytecode_env  # noqa: E402
from saving import save  # noqa: E402

from tests.e2e.driver_dap import DapSession  # noqa: E402
from tests.e2e.driver_gdb import GdbDriver  # noqa: E402
from tests.e2e.driver_lldb import PLUGIN as LLDB_PLUGIN  # noqa: E402
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


class _CoreLldb(LldbDriver):
    """LldbDriver, but LLDB's warning that a core cannot take its internal breakpoints (it
    says "error:" inside a warning) does not fail the session's start."""

    def _checked(self, text: str, timeout: float = 60) -> str:
        out = self.command(text, timeout)
        if "error:" in out.replace("error: elf-core does not support enabling breakpoints", ""):
            raise RuntimeError(f"lldb: {text!r} failed:\n{out}")
        return out


DRIVERS = {"gdb": GdbDriver, "lldb": _CoreLldb}
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


# -- measuring ----------------------------------------------------------------------------------


def _peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM), MB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for {pid}")


def _cpu_s(pid: int) -> float:
    """User + system seconds the process has run so far, all its threads (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


_TIMED = re.compile(r"T=([0-9.]+) N=(\d+) COLD=(\d+)")


def _timed_bt(session: Any, depth: int) -> tuple[float, int, int, str]:
    """Seconds `bt DEPTH` takes inside the debugger, its frames, its frames named as moved
    code (`[cold…]`), and its text."""
    report = ("print('T=%f N=%d COLD=%d' % (_e, _o.count(chr(10)), _o.count(' [cold')))"
              "; print(_o)")
    if session.name == "gdb":
        line = (f"python import time as _t; _s = _t.perf_counter(); "
                f"_o = gdb.execute('bt {depth}', to_string=True); "
                f"_e = _t.perf_counter() - _s; " + report)
    else:
        line = (f"script import time as _t; _r = lldb.SBCommandReturnObject(); "
                f"_i = lldb.debugger.GetCommandInterpreter(); _s = _t.perf_counter(); "
                f"_i.HandleCommand('bt {depth}', _r); _e = _t.perf_counter() - _s; "
                f"_o = _r.GetOutput() or ''; " + report)
    out = session.command(line, timeout=900)
    m = _TIMED.search(out)
    if m is None:
        raise RuntimeError(f"{session.name}: bt: no timing in {out!r}")
    return float(m.group(1)), int(m.group(2)), int(m.group(3)), out[m.end():]


def one_session(name: str, plugin: bool, cache: Path, depth: int, exact: bool = True
                ) -> dict[str, Any]:
    """One debugger session on the core: its wall time up to the end of `bt`, the `bt` alone,
    and the debugger's peak RSS."""
    os.environ["UNSPLIT_CACHE"] = str(cache)
    # The plugin runs from compiled bytecode, as an installed plugin does (bench/bytecode.py):
    # with PYTHONDONTWRITEBYTECODE=1 every session compiles every module it imports again,
    # ~0.15 s of lldb's 0.7 s plain session.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = bytecode_env()["PYTHONPYCACHEPREFIX"]
    start = time.perf_counter()
    with DRIVERS[name](OPT, core=str(CORE), plugin=plugin, startup_timeout=900) as session:
        if not exact:
            session.command("bb exact-frames off")
        seconds, frames, cold, text = _timed_bt(session, depth)
        total = time.perf_counter() - start
        rss = _peak_rss_mb(session.child.pid)
    return {"debugger": name, "plugin": plugin, "session_s": total, "bt_s": seconds,
            "frames": frames, "moved_frames": cold, "peak_rss_mb": rss,
            "indexing_said": "unsplit: indexing" in session.transcript, "bt": text}


def alternate_in_session(cache: Path, depth: int, rounds: int) -> dict[str, list[float]]:
    """GDB's `bt DEPTH` with the unwinder on and off (`bb exact-frames`), in one session on the
    cache a session before left, `rounds` times each, the order swapped every round and GDB's
    frames flushed before each (`maint flush register-cache`): the two in the same process
    under the same load, seconds."""
    one_session("gdb", True, cache, depth)  # the cache the session below reads
    times: dict[str, list[float]] = {"on": [], "off": []}
    with GdbDriver(OPT, core=str(CORE), plugin=True, startup_timeout=900) as session:
        _timed_bt(session, depth)  # GDB's own caches (symbols, CFI) warm for both
        for i in range(rounds):
            for mode in ("on", "off") if i % 2 else ("off", "on"):
                session.command(f"bb exact-frames {mode}")
                session.command("maint flush register-cache")
                times[mode].append(_timed_bt(session, depth)[0])
    return times


def _descendants(pid: int) -> list[int]:
    """The processes started by `pid` that are still running, and theirs (/proc's children)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                children = [int(c) for c in f.read().split()]
        except OSError:
            continue
        for child in children:
            found += [child, *_descendants(child)]
    return found


def _started_s(pid: int) -> float:
    """When the process started, in seconds since boot (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[19]) / os.sysconf("SC_CLK_TCK")


def _first_child_s(pid: int) -> float | None:
    """Seconds from `pid`'s start to that of the first of its running descendants (the debug
    file's writer), or None without one."""
    started = []
    for child in _descendants(pid):
        try:
            started.append(_started_s(child))
        except OSError:
            pass  # ended meanwhile
    return min(started) - _started_s(pid) if started else None


def _waited_cpu_s(pid: int) -> float:
    """User + system seconds of the children `pid` has waited for (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def _children_cpu_s(pid: int) -> float:
    """User + system seconds of `pid`'s running descendants (the debug file's writer: a
    process of its own, which the adapter's figure leaves out) and of those each of them
    and `pid` have waited for (the writer's BAT scan: unsplit.index.bolt.scan_ahead)."""
    total = 0.0
    for child in _descendants(pid):
        try:
            total += _cpu_s(child) + _waited_cpu_s(child)
        except OSError:
            pass  # ended meanwhile
    return total + _waited_cpu_s(pid)


def dap_session(plugin: bool, cache: Path, levels: int,
                plugin_path: str = str(LLDB_PLUGIN)) -> dict[str, Any]:
    """lldb-dap-22 attached to the core as an IDE attaches (VS Code's `attach` with
    `coreFile`), the plugin (`plugin_path`) in `initCommands` or not: seconds from the
    adapter's start to the first `stackTrace` of the stopped thread, that request alone, its
    frames named `___lldb_unnamed_symbol…` (LLDB found no symbol file naming them), the CPU of
    the adapter and of the processes it started (the debug file's writer) by then; and, where
    a writer was started, the seconds from the adapter's start to the writer's and until the
    adapter says the debug file is loaded (held open until then, for a later session)."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    env = {"UNSPLIT_CACHE": str(cache),
           "PYTHONPYCACHEPREFIX": bytecode_env()["PYTHONPYCACHEPREFIX"]}
    start = time.perf_counter()
    session = DapSession(["lldb-dap-22"], env=env)
    loaded, same = None, None
    try:
        session.request("initialize", adapterID="unsplit-bench", clientID="unsplit-bench",
                        linesStartAt1=True, columnsStartAt1=True, pathFormat="path")
        init = [f'command script import "{plugin_path}"'] if plugin else []
        session.send("attach", program=OPT, coreFile=str(CORE), initCommands=init)
        session.wait("event", "initialized", timeout=900)
        session.request("configurationDone", timeout=900)
        stopped = session.wait("event", "stopped", timeout=900)
        thread = stopped["body"].get("threadId") or \
            session.request("threads")["threads"][0]["id"]
        asked = time.perf_counter()
        frames = session.request("stackTrace", timeout=900, threadId=thread, startFrame=0,
                                 levels=levels)["stackFrames"]
        done = time.perf_counter()
        rss = _peak_rss_mb(session.proc.pid)
        cpu = _cpu_s(session.proc.pid)
        children_cpu = _children_cpu_s(session.proc.pid)
        writer_started = _first_child_s(session.proc.pid)
        writers = _descendants(session.proc.pid)
        while writers and any(os.path.exists(f"/proc/{w}") for w in writers):
            time.sleep(0.1)
        if writers:  # its file is loaded by a thread of the adapter, which says so
            while not re.search(r"(debug info for split module|no debug file for|cannot load .* "
                                r"for) libLLVM", session.transcript):
                session.wait("event", "output", timeout=900)
            loaded = time.perf_counter() - start
            again = session.request("stackTrace", timeout=900, threadId=thread, startFrame=0,
                                    levels=levels)["stackFrames"]
            same = [(f.get("name"), f.get("instructionPointerReference")) for f in again] == \
                [(f.get("name"), f.get("instructionPointerReference")) for f in frames]
    finally:
        session.close()
    names = [str(f.get("name", "")) for f in frames]
    return {"adapter": "lldb-dap-22", "plugin": plugin, "first_stack_s": done - start,
            "stack_trace_s": done - asked, "frames": len(frames), "peak_rss_mb": rss,
            "cpu_s": cpu, "children_cpu_s": children_cpu, "writer_started_s": writer_started,
            "debug_file_loaded_s": loaded,
            "same_frames_once_loaded": same,
            "unnamed": sum("___lldb_unnamed_symbol" in n for n in names), "names": names}


def check_file(debug: Path, count: int = 63, breakpad: bool = False) -> tuple[int, int]:
    """(agreeing, asked): of `count` addresses in moved code, those whose function in the
    debug file (llvm-symbolizer-22 on it alone; `breakpad`: the Breakpad symbol file, through
    Sentry's `symbolic`) is the input function perf2bolt-22 translates them to through BAT:
    the same input address (`__BOLT_FDE_FUNCat<address>` for a function without a symbol; the
    pre-BOLT library's .dynsym for a named one). Nothing of unsplit's but the addresses'
    choice."""
    addresses = cold_addresses(count, seed=7)
    with tempfile.TemporaryDirectory(prefix="unsplit-libllvm-check-") as tmp:
        agg, fdata = Path(tmp) / "truth.agg", Path(tmp) / "truth.fdata"
        agg.write_text("".join(f"B 0 {a:x} {1 << k} 0\n" for k, a in enumerate(addresses)))
        subprocess.run(["perf2bolt-22", str(LIB), "--allow-stripped", "--pa", "-p", str(agg),
                        "-o", str(fdata)], check=True, capture_output=True)
        truth: dict[int, str] = {}
        for line in fdata.read_text().splitlines()[1:]:
            fields = line.split()
            for k, a in enumerate(addresses):
                if int(fields[7]) >> k & 1:
                    truth[a] = fields[4].partition("/")[0]
    dynsym: dict[str, int] = {}
    for line in subprocess.run(["llvm-readelf-22", "--dyn-syms", "-W", str(SYSTEM_LIB)],
                               capture_output=True, text=True, check=True).stdout.splitlines():
        p = line.split()
        if len(p) >= 8 and p[3] == "FUNC" and p[6] != "UND":
            dynsym.setdefault(p[7].split("@")[0], int(p[1], 16))

    def address_of(name: str) -> int | None:
        for prefix in ("__BOLT_FDE_FUNCat", "0x"):
            if name.startswith(prefix):
                return int(name[len(prefix):], 16)
        return dynsym.get(name)

    if breakpad:
        ours = _breakpad_names(debug, addresses)
    else:
        text = subprocess.run(["llvm-symbolizer-22", "--obj", str(debug), "--no-inlines",
                               "--no-demangle"], input="".join(f"{a:#x}\n" for a in addresses),
                              capture_output=True, text=True, check=True).stdout
        ours = [block.split("\n")[0] for block in text.strip("\n").split("\n\n")]
    agree = sum(1 for a, name in zip(addresses, ours, strict=True)
                if a in truth and address_of(name) is not None
                and address_of(name) == address_of(truth[a]))
    return agree, len(addresses)


def _breakpad_names(sym: Path, addresses: list[int]) -> list[str]:
    """The outermost function Sentry's `symbolic` names at each address (relative to the
    first PT_LOAD, at 0 in this library), from the symbol file alone."""
    import symbolic  # requirements-dev.txt

    cache = symbolic.Archive.open(str(sym)).get_object(arch="x86_64").make_symcache()
    return [(frames[-1].symbol if (frames := cache.lookup(a)) else "??") for a in addresses]


class CliRun(NamedTuple):
    seconds: float  # wall
    cpu: float  # user + system seconds (GNU time): what the machine's other load adds least to
    rss: float  # peak resident set, MB (GNU time)
    stdout: str


def _run_cli(args: list[str], cache: Path, stdin: str | None = None) -> CliRun:
    """One run of `unsplit ARGS`, cache root `cache`."""
    env = bytecode_env(PYTHONPATH=str(ROOT / "plugin"), UNSPLIT_CACHE=str(cache))
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        start = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", "-o", report.name, PY, "-m",
                               "unsplit", *args], input=stdin, capture_output=True, text=True,
                              env=env)
        seconds = time.perf_counter() - start
        rss, user, system = report.read().split()[-3:]
    if proc.returncode:
        raise RuntimeError(f"unsplit {' '.join(args[:2])}: exit {proc.returncode}: "
                           f"{proc.stderr.strip()[-300:]}")
    return CliRun(seconds, float(user) + float(system), int(rss) / 1024, proc.stdout)


def _best_cli(args: list[str], cache: Path, kind: str, repeat: int,
              stdin: str | None = None) -> CliRun:
    """The fastest of ``repeat`` runs of `unsplit ARGS` (the machine is shared; its CPU time the
    least of theirs); ``kind`` "empty" clears the cache before each run, "warm" uses the cache
    as the runs leave it."""
    runs = []
    for _ in range(max(repeat, 1)):
        if kind == "empty":
            shutil.rmtree(cache, ignore_errors=True)
        runs.append(_run_cli(args, cache, stdin))
    best = min(runs, key=lambda r: r.seconds)
    return best._replace(cpu=min(r.cpu for r in runs))


def cold_addresses(count: int, seed: int = 15) -> list[int]:
    """``count`` addresses in moved code of the BOLTed library, spread over every fragment
    kind: BAT's split fragments (its own arrays, read with the plugin's decoder of the note's
    header only; the oracle for what each one is comes from the benchmark's comparison with a
    fresh index, not from these addresses)."""
    from unsplit.elf.binary import Binary
    from unsplit.formats import bat, bat_scan

    binary = Binary(str(LIB))
    desc, base = bat.note_descriptor(binary.section_data(bat.SECTION) or b"")
    found = bat_scan.scan(desc, base)
    assert isinstance(found, bat_scan.BatScan)
    cold = list(found.addresses[found.hot_count:])
    rnd = random.Random(seed)
    return sorted(a + rnd.randrange(0, 16) for a in rnd.sample(cold, count))


def measure_breakpad(tmp: Path, repeat: int, out: dict[str, Any]) -> None:
    """`unsplit breakpad LIB -o FILE` against `unsplit lldb-cfi --print LIB` (the CFI of the
    moved fragments alone, what the goal is a multiple of), both on the persistent index a
    first run left; the file's functions checked against perf2bolt-22 through `symbolic`."""
    cache = tmp / "cache-breakpad"
    sym = tmp / "libLLVM.sym"
    args = ["breakpad", str(LIB), "-o", str(sym), "--json", "--no-demangle"]
    for kind in ("empty", "warm"):
        run = _best_cli(args, cache, kind, repeat)
        report = json.loads(run.stdout)
        out[f"breakpad_{kind}"] = {"seconds": run.seconds, "cpu_s": run.cpu,
                                   "peak_rss_mb": run.rss, "bytes": sym.stat().st_size,
                                   "functions": report["functions"],
                                   "stack_cfi": report["stack_cfi"]}
        print(f"breakpad   {kind:5} {run.seconds:6.2f} s (cpu {run.cpu:5.2f} s)  "
              f"{run.rss:6.1f} MB  {report['functions']} FUNC, {report['stack_cfi']} "
              f"functions' CFI, {sym.stat().st_size / 1e6:.1f} MB file", flush=True)
    agree, asked = check_file(sym, breakpad=True)
    out["breakpad_check"] = {"agree": agree, "addresses": asked}
    print(f"breakpad   symbolic's function is perf2bolt-22's at {agree} of {asked} moved "
          "addresses", flush=True)
    run = _best_cli(["lldb-cfi", "--print", str(LIB)], cache, "warm", repeat)
    ratio = out["breakpad_warm"]["cpu_s"] / run.cpu
    out["lldb_cfi_warm"] = {"seconds": run.seconds, "cpu_s": run.cpu, "peak_rss_mb": run.rss,
                            "breakpad_cpu_ratio": ratio}
    print(f"lldb-cfi   warm  {run.seconds:6.2f} s (cpu {run.cpu:5.2f} s)  {run.rss:6.1f} MB  "
          f"breakpad/lldb-cfi CPU {ratio:.2f}x (goal <= 2x)", flush=True)
    shutil.rmtree(cache)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"library": str(LIB), "core": str(CORE), "sessions": []}
    with tempfile.TemporaryDirectory(prefix="unsplit-libllvm-") as tmp:
        sessions = (args.cli_only or args.dap_only or args.debuginfo_only or args.alternate
                    or args.breakpad_only)
        for name in [] if sessions else args.debugger or ["gdb", "lldb"]:
            cache = Path(tmp) / f"cache-{name}"
            plain = one_session(name, False, cache, args.depth)
            first = one_session(name, True, cache, args.depth)
            later = one_session(name, True, cache, args.depth)
            rows = [("plain", plain), ("first", first), ("later", later)]
            if name == "gdb":  # the frame filter alone: GDB's unwinding without unsplit's
                rows.append(("filter", one_session(name, True, cache, args.depth, False)))
            for kind, row in rows:
                row["kind"] = kind
                for key in ("session_s", "bt_s", "peak_rss_mb"):
                    row[key.rsplit("_", 1)[0] + "_ratio"] = row[key] / plain[key]
                out["sessions"].append(row)
                print(f"{name:5} {kind:6} session {row['session_s']:7.2f} s "
                      f"({row['session_ratio']:5.2f}x)  bt {row['bt_s']:7.3f} s "
                      f"({row['bt_ratio']:6.2f}x)  peak {row['peak_rss_mb']:7.1f} MB "
                      f"({row['peak_rss_ratio']:4.2f}x)  {row['frames']} frames, "
                      f"{row['moved_frames']} moved" + (
                          "  [said: indexing]" if row["indexing_said"] else ""), flush=True)
        if args.dap or args.dap_only:
            plain = dap_session(False, Path(tmp) / "cache-dap", args.depth)
            out["dap"] = [plain]
            trees = [("", str(LLDB_PLUGIN))]
            if args.compare:
                trees.insert(0, (f"{os.path.basename(args.compare.rstrip('/'))} ",
                                 os.path.join(args.compare, "lldb", "unsplit_lldb.py")))
            for label, plugin_path in trees:
                cache = Path(tmp) / f"cache-dap{len(out['dap'])}"
                for kind in ("first", "later"):
                    row = dap_session(True, cache, args.depth, plugin_path)
                    row["kind"] = label + kind
                    row["ratio"] = row["first_stack_s"] / plain["first_stack_s"]
                    out["dap"].append(row)
            plain["kind"], plain["ratio"] = "plain", 1.0
            for row in out["dap"]:
                loaded = row["debug_file_loaded_s"]
                print(f"lldb-dap {row['kind']:14} first stackTrace {row['first_stack_s']:7.2f} s "
                      f"({row['ratio']:5.2f}x, cpu {row['cpu_s']:6.2f} s + "
                      f"{row['children_cpu_s']:5.2f} s its children)  the request "
                      f"{row['stack_trace_s']:6.3f} s  "
                      f"peak {row['peak_rss_mb']:7.1f} MB  {row['frames']} frames, "
                      f"{row['unnamed']} ___lldb_unnamed_symbol" + (
                          "" if row["writer_started_s"] is None else
                          f"; writer started at {row['writer_started_s']:.2f} s") + (
                          "" if loaded is None else f"; debug file loaded at {loaded:.1f} s, "
                          "frames then " + ("the same" if row["same_frames_once_loaded"]
                                            else "OTHER")),
                      flush=True)
            if args.dap_only:
                return out
        if args.sessions_only:
            return out
        if args.alternate:
            times = alternate_in_session(Path(tmp) / "cache-alternate", args.depth,
                                         args.alternate)
            out["alternate"] = times
            on, off = statistics.median(times["on"]), statistics.median(times["off"])
            print(f"gdb bt {args.depth}, one session, median of {args.alternate} alternated: "
                  f"unwinder on {on * 1e3:.1f} ms, off {off * 1e3:.1f} ms ({on / off:.2f}x); "
                  f"on {min(times['on']) * 1e3:.0f}-{max(times['on']) * 1e3:.0f} ms, off "
                  f"{min(times['off']) * 1e3:.0f}-{max(times['off']) * 1e3:.0f} ms", flush=True)
            return out
        if args.breakpad_only:
            measure_breakpad(Path(tmp), args.repeat, out)
            return out
        cache = Path(tmp) / "cache-cli"
        for kind in ("empty", "warm"):  # warm: the persistent index kept, the file made again
            file = Path(tmp) / "lib.debug"
            run = _best_cli(["debuginfo", str(LIB), "-o", str(file), "--json"], cache, kind,
                            args.repeat)
            report = json.loads(run.stdout)
            out[f"debuginfo_{kind}"] = {
                "seconds": run.seconds, "cpu_s": run.cpu, "peak_rss_mb": run.rss,
                "bytes": file.stat().st_size, "procedures": report["procedures"],
                "split_procedures": report["split_procedures"]}
            print(f"debuginfo  {kind:5} {run.seconds:6.2f} s (cpu {run.cpu:5.2f} s)  "
                  f"{run.rss:6.1f} MB  {report['procedures']} procedures, "
                  f"{file.stat().st_size / 1e6:.1f} MB file", flush=True)
            if kind == "warm":
                agree, asked = check_file(file)
                out["debuginfo_check"] = {"agree": agree, "addresses": asked}
                print(f"debuginfo  its function is perf2bolt-22's at {agree} of {asked} "
                      "moved addresses", flush=True)
        shutil.rmtree(cache)
        if args.debuginfo_only:
            return out
        measure_breakpad(Path(tmp), args.repeat, out)
        address = hex(cold_addresses(1)[0])
        for kind in ("empty", "warm"):
            run = _best_cli(["where", "--exe", str(LIB), address], cache, kind, args.repeat)
            answer = run.stdout.splitlines()[0]
            out[f"where_{kind}"] = {"seconds": run.seconds, "cpu_s": run.cpu,
                                    "peak_rss_mb": run.rss, "answer": answer}
            print(f"where      {kind:5} {run.seconds:6.2f} s (cpu {run.cpu:5.2f} s)  "
                  f"{run.rss:6.1f} MB  {answer}", flush=True)
        shutil.rmtree(cache)
        addresses = "\n".join(hex(a) for a in cold_addresses(SYMBOLIZE_COUNT)) + "\n"
        for kind in ("empty", "warm"):
            run = _best_cli(["symbolize", "--exe", str(LIB)], cache, kind, args.repeat,
                            addresses)
            named = sum(1 for line in run.stdout.split("\n\n")
                        if line and not line.startswith("??"))
            out[f"symbolize_{kind}"] = {"seconds": run.seconds, "cpu_s": run.cpu,
                                        "peak_rss_mb": run.rss, "addresses": SYMBOLIZE_COUNT,
                                        "named": named}
            print(f"symbolize  {kind:5} {run.seconds:6.2f} s (cpu {run.cpu:5.2f} s)  "
                  f"{run.rss:6.1f} MB  {named}/{SYMBOLIZE_COUNT} named", flush=True)
        start = time.perf_counter()
        subprocess.run(["llvm-symbolizer-22", f"--obj={LIB}"], input=addresses, text=True,
                       capture_output=True, check=True)
        out["llvm_symbolizer_s"] = time.perf_counter() - start
        print(f"llvm-symbolizer-22 {out['llvm_symbolizer_s']:.2f} s", flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="rebuild the cached inputs")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--depth", type=int, default=20, help="frames per bt")
    parser.add_argument("--debugger", action="append", choices=sorted(DRIVERS))
    parser.add_argument("--cli-only", action="store_true",
                        help="only `unsplit where` and `unsplit symbolize`, no debugger sessions")
    parser.add_argument("--dap", action="store_true",
                        help="also lldb-dap-22's first stackTrace on the core, plain and with "
                        "the plugin (first: empty cache; later: the cache it left)")
    parser.add_argument("--dap-only", action="store_true", help="only the lldb-dap figures")
    parser.add_argument("--compare", metavar="TREE",
                        help="with --dap: also the plugin of another checkout (main's, say), "
                        "first and later, in the same run")
    parser.add_argument("--sessions-only", action="store_true",
                        help="only the debugger sessions (and lldb-dap with --dap)")
    parser.add_argument("--breakpad-only", action="store_true",
                        help="only `unsplit debuginfo` and `unsplit breakpad` of the library, "
                        "and `unsplit lldb-cfi` to compare with (no sessions)")
    parser.add_argument("--debuginfo-only", action="store_true",
                        help="only `unsplit debuginfo` of the library (no sessions)")
    parser.add_argument("--alternate", type=int, default=0, metavar="N",
                        help="only GDB's bt with the unwinder on and off, alternated N times "
                        "in one session")
    parser.add_argument("--repeat", type=int, default=1,
                        help="CLI runs per figure, the fastest kept (the machine is shared)")
    args = parser.parse_args()
    build(args.force)
    if args.build_only:
        return 0
    results = measure(args)
    for row in results["sessions"]:
        row.pop("bt", None) if row["kind"] != "first" else None
    kind = "-cli" if args.cli_only else "-dap" if args.dap_only else \
        "-alternate" if args.alternate else \
        "-debuginfo" if args.debuginfo_only else "-breakpad" if args.breakpad_only else \
        "-sessions" if args.sessions_only else ""
    print(f"results: {save('libllvm' + kind, results)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
