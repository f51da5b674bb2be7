"""Benchmark: writing a debug file with `unsplit debuginfo`, and what GDB waits for when it loads
a split module without DWARF.

    .venv/bin/python bench/debuginfo.py [--repeats N]                  # the zoo
    .venv/bin/python bench/debuginfo.py --realworld [--repeats N]      # Lua and simdjson

The zoo: for every BOLT variant and each of its programs, the `-dbg` twin's recorded
llvm-bolt-22 command (facts.json `bolt_command`) rerun into a temporary file (what a release
pipeline would otherwise do to get DWARF for BOLTed code), and `unsplit debuginfo` on the
variant without DWARF, both as processes (wall time, best of --repeats); also the in-process
build alone (index + DWARF, no interpreter start-up), the file's size, and whether
llvm-dwarfdump-22 --verify passes each output.

--realworld: the BOLT builds without DWARF of bench/realworld.py (Lua 5.4) and
bench/realworld_cpp.py (simdjson), made by those scripts (run them first), with their pre-BOLT
inputs beside them:

    debuginfo  `unsplit debuginfo BINARY --input INPUT -o FILE`, best of --repeats; the file is
               checked with llvm-dwarfdump-22 --verify
    gdb        `gdb -batch BINARY -ex 'info line *ADDR'` (ADDR: the first moved instruction
               llvm-symbolizer-22 gives a line in the build's twin with DWARF),
               wall time, best of --repeats: plain (no plugin); first, the plugin with an empty
               unsplit cache (its debug file is written when the module loads, as long as the
               module's code is under UNSPLIT_DEBUGINFO_MAX_KB, set here to hold it); later,
               the plugin with the cache the first session left. The plugin's sessions must
               give ADDR a line, plain GDB none.

Cache state: every `unsplit debuginfo` run has an empty unsplit cache of its own
($UNSPLIT_CACHE; the command keeps no index there either); the GDB sessions' is stated above.
Each figure is given twice: wall time and CPU time (user + system, of the process and its
children), the best of --repeats runs each; on a shared machine the CPU time moves less.
The plugin runs from compiled bytecode, as installed (bench/bytecode.py). Results go to
bench/results/debuginfo.json (the zoo) or debuginfo-realworld.json.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugin"))

import realworld as rw  # noqa: E402
import realworld_cpp as cpp  # noqa: E402
from bytecode import bytecode_env  # noqa: E402
from saving import save  # noqa: E402
from unsplit.debuginfo.synthesize import build  # noqa: E402
from unsplit.index import prebolt  # noqa: E402
from unsplit.index.module_index import ModuleIndex  # noqa: E402

VARIANTS = ["all", "random2", "profile2", "cdsplit", "randomN", "reverse", "nonreloc", "nolite"]
GDB_PLUGIN = ROOT / "gdb" / "unsplit_gdb.py"
# (name, BOLT output without DWARF, its pre-BOLT input, its twin with DWARF: the line oracle)
REALWORLD = [("lua", *(rw.BUILD / "bolt" / f for f in ("lua", "lua.input", "lua-dbg"))),
             ("simdjson", *(cpp.BUILD / "bolt" / f for f in ("sj", "sj.input", "sj-dbg")))]


class Timing(NamedTuple):
    wall: float  # seconds
    cpu: float  # user + system seconds of the process and its children: what the machine's
    #             other load (8 engineers on 2 cores) adds least to


def _best(timings: list[Timing]) -> Timing:
    """Each figure's best run (other processes on a shared machine only ever add time)."""
    return Timing(min(t.wall for t in timings), min(t.cpu for t in timings))


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[Timing, str]:
    """The time and output (stdout + stderr) of one run; a failed run is an error."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, check=False)
    seconds = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise RuntimeError(f"exit {proc.returncode}: {' '.join(cmd)}: "
                           f"{proc.stderr.strip()[-300:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return Timing(seconds, cpu), proc.stdout + proc.stderr


def _best_unsplit(cmd: list[str], repeats: int, tmp: Path) -> Timing:
    """The best of `repeats` runs of an `unsplit` command, each on an empty cache."""
    runs = []
    for k in range(repeats):
        cache = Path(tempfile.mkdtemp(prefix=f"cache-{k}-", dir=tmp))
        env = bytecode_env(PYTHONPATH=str(ROOT / "plugin"), UNSPLIT_CACHE=str(cache))
        runs.append(_timed(cmd, env)[0])
    return _best(runs)


def _best_bolt(cmd: list[str], repeats: int) -> Timing:
    return _best([_timed(cmd, {"PATH": "/usr/bin:/bin"})[0] for _ in range(repeats)])


def _verifies(path: Path) -> bool:
    out = subprocess.run(["llvm-dwarfdump-22", "--verify", str(path)], capture_output=True,
                         text=True)
    return out.returncode == 0 and "No errors." in out.stdout


def zoo(repeats: int, tmp: Path) -> dict[str, Any]:
    index = json.loads((ROOT / "fixtures/build/index.json").read_text())["variants"]
    rows: list[dict[str, Any]] = []
    for variant in VARIANTS:
        for program, entry in index[f"bolt-{variant}"]["programs"].items():
            twin = json.loads((ROOT / index[f"bolt-{variant}-dbg"]["programs"][program]
                               ["facts"]).read_text())
            bolt_cmd = twin["bolt_command"].split()
            bolt_cmd[bolt_cmd.index("-o") + 1] = str(tmp / "bolt.out")
            binary = ROOT / entry["binary"]
            ours = tmp / "unsplit.debug"
            ours_cmd = [rw.PY, "-m", "unsplit", "debuginfo", str(binary), "-o", str(ours)]
            bolt_s, ours_s = _best_bolt(bolt_cmd, repeats), _best_unsplit(ours_cmd, repeats, tmp)
            t = time.perf_counter()
            idx = ModuleIndex.open(str(binary))
            prebolt.set_input(idx.binary, str(ROOT / json.loads(
                (ROOT / entry["facts"]).read_text())["input"]))
            data, summary = build(idx)
            build_s = time.perf_counter() - t
            row = {"variant": f"bolt-{variant}", "program": program,
                   "llvm_bolt_update_debug_sections_s": round(bolt_s.wall, 4),
                   "llvm_bolt_update_debug_sections_cpu_s": round(bolt_s.cpu, 4),
                   "unsplit_debuginfo_s": round(ours_s.wall, 4),
                   "unsplit_debuginfo_cpu_s": round(ours_s.cpu, 4),
                   "in_process_build_s": round(build_s, 4),
                   "debug_file_bytes": len(data), "line_rows": summary.rows,
                   "ours_verifies": _verifies(ours), "bolt_verifies": _verifies(tmp / "bolt.out")}
            rows.append(row)
            print(f"{row['variant']:16} {program:8} bolt {bolt_s.wall:6.3f}s "
                  f"(cpu {bolt_s.cpu:6.3f}s)  unsplit {ours_s.wall:6.3f}s (cpu {ours_s.cpu:6.3f}s)"
                  f"  (build {build_s:6.3f}s)  verify ours={row['ours_verifies']} "
                  f"bolt={row['bolt_verifies']}", flush=True)
    totals = {key: sum(r[key] for r in rows) for key in (
        "llvm_bolt_update_debug_sections_s", "llvm_bolt_update_debug_sections_cpu_s",
        "unsplit_debuginfo_s", "unsplit_debuginfo_cpu_s")}
    print(f"total: llvm-bolt-22 --update-debug-sections "
          f"{totals['llvm_bolt_update_debug_sections_s']:.2f}s "
          f"(cpu {totals['llvm_bolt_update_debug_sections_cpu_s']:.2f}s), unsplit debuginfo "
          f"{totals['unsplit_debuginfo_s']:.2f}s (cpu {totals['unsplit_debuginfo_cpu_s']:.2f}s)")
    return {"rows": rows, "totals": totals, "repeats": repeats}


_LINE = re.compile(r'^Line (\d+) of "[^"]+"', re.M)


def _gdb_session(binary: Path, address: int, plugin: bool, cache: Path) -> tuple[Timing, str]:
    """The time of `gdb -batch BINARY -ex 'info line *ADDR'`, and what info line said."""
    cmd = ["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off"]
    if plugin:
        cmd += ["-iex", f"source {GDB_PLUGIN}"]
    cmd += [str(binary), "-ex", f"info line *{address:#x}"]
    env = bytecode_env(UNSPLIT_CACHE=str(cache), UNSPLIT_DEBUGINFO_MAX_KB=str(1 << 20))
    seconds, out = _timed(cmd, env)
    found = next((ln for ln in out.splitlines() if ln.startswith(("Line ", "No line"))), out)
    return seconds, found.strip()


def _with_line(binary: Path, twin: Path) -> int:
    """The first instruction of moved code that llvm-symbolizer-22 gives a line in the build's
    twin with DWARF (a fragment's first byte often has line 0)."""
    insns = [a for f in rw.moved_fragments(binary) for a in f.insns][:2000]
    answers, _ = rw.llvm_symbolize(twin, insns)
    return int(next(a for a, answer in zip(insns, answers, strict=True)
                    if (answer.get("Symbol") or [{}])[0].get("Line")))


def realworld(repeats: int, tmp: Path) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for name, binary, pre_bolt, twin in REALWORLD:
        if not binary.is_file() or not pre_bolt.is_file():
            print(f"{name}: no {binary} (run bench/realworld.py / realworld_cpp.py first)")
            continue
        out = tmp / f"{name}.debug"
        cmd = [rw.PY, "-m", "unsplit", "debuginfo", str(binary), "--input", str(pre_bolt),
               "-o", str(out)]
        debuginfo_s = _best_unsplit(cmd, repeats, tmp)
        address = _with_line(binary, twin)
        runs: dict[str, list[Timing]] = {"plain": [], "first": [], "later": []}
        said: dict[str, str] = {}
        for k in range(repeats):
            cache = Path(tempfile.mkdtemp(prefix=f"gdb-{name}-{k}-", dir=tmp))
            for kind, plugin in (("plain", False), ("first", True), ("later", True)):
                timing, said[kind] = _gdb_session(binary, address, plugin, cache)
                runs[kind].append(timing)
        best = {kind: _best(t) for kind, t in runs.items()}
        if _LINE.match(said["plain"]) or not all(_LINE.match(said[k]) for k in ("first", "later")):
            raise RuntimeError(f"{name}: info line *{address:#x}: {said}")
        row = {"program": name, "binary": str(binary), "repeats": repeats,
               "unsplit_debuginfo_s": debuginfo_s.wall,
               "unsplit_debuginfo_cpu_s": debuginfo_s.cpu, "debug_file_bytes": out.stat().st_size,
               "verifies": _verifies(out), "address": hex(address),
               **{f"gdb_{k}_s": v.wall for k, v in best.items()},
               **{f"gdb_{k}_cpu_s": v.cpu for k, v in best.items()},
               "info_line": said}
        rows.append(row)
        print(f"{name:9} unsplit debuginfo {debuginfo_s.wall:6.2f} s (cpu {debuginfo_s.cpu:6.2f} "
              f"s; {row['debug_file_bytes']} bytes, verifies: {row['verifies']})  gdb "
              + ", ".join(f"{k} {v.wall:5.2f} s (cpu {v.cpu:5.2f} s)" for k, v in best.items())
              + f"  [{said['first']}]", flush=True)
    return {"rows": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--realworld", action="store_true",
                    help="Lua's and simdjson's BOLT builds instead of the zoo")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="unsplit-bench-debuginfo-") as tmp:
        if args.realworld:
            print(save("debuginfo-realworld", realworld(args.repeats, Path(tmp))))
        else:
            print(save("debuginfo", zoo(args.repeats, Path(tmp))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
