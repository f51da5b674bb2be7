"""Benchmark: writing a debug file with `unsplit debuginfo`, and what GDB waits for when it loads
a split module without DWARF.

    .venv/bin/python bench/debuginfo.py [--repeats N]                  # the zoo
    .venv/bin/python bench/debuginfo.py --realworld [--repeats N]      # Lua, simdjson, sqlite3
    .venv/bin/python bench/debuginfo.py --realworld --sessions-only    # GDB on their cores
    .venv/bin/python bench/debuginfo.py --realworld --files-only [--before DIR]  # files alone

The zoo: for every BOLT variant and each of its programs, the `-dbg` twin's recorded
llvm-bolt-22 command (facts.json `bolt_command`) rerun into a temporary file (what a release
pipeline would otherwise do to get DWARF for BOLTed code), and `unsplit debuginfo` on the
variant without DWARF, both as processes (wall time, best of --repeats); also the in-process
build alone (index + DWARF, no interpreter start-up), the file's size, and whether
llvm-dwarfdump-22 --verify passes each output.

--realworld: the BOLT builds without DWARF of bench/realworld.py (Lua 5.4),
bench/realworld_cpp.py (simdjson) and bench/realworld_sqlite.py (the SQLite amalgamation),
made by those scripts (`make bench` runs them first), with their pre-BOLT inputs and training
profiles beside them:

    bolt       llvm-bolt-22 INPUT -data=PROFILE (the build's options) --update-debug-sections,
               rerun here into a temporary file: what a release pipeline runs to get DWARF
               for BOLTed code; wall time, CPU time and peak memory (max RSS), best of
               --repeats
    debuginfo  `unsplit debuginfo BINARY --input INPUT -o FILE` on the BOLT output without
               DWARF: the same three figures, best of --repeats, and the ratios to BOLT's
    verify     llvm-dwarfdump-22 --verify on the input, BOLT's twin and our file: errors by
               kind (its aggregated counts) and in all
    gdb        `gdb -batch BINARY -ex 'info line *ADDR'` (ADDR: the first moved instruction
               llvm-symbolizer-22 gives a line in the build's twin with DWARF),
               wall time, best of --repeats: plain (no plugin); first, the plugin with an empty
               unsplit cache (its debug file is written when the module loads); later, the
               plugin with the cache the first session left. The plugin's sessions must give
               ADDR a line, plain GDB none.
    bt         a core of the BOLT output stopped at the first moved fragment its rare paths
               reach (plain GDB, a breakpoint on every moved fragment); `gdb -batch BINARY -c
               CORE -ex bt` with the plugin (first: empty cache, the file written in the
               background; args: empty cache, `bt` then `info args`, which waits for the file;
               later: the cache the first left) against plain GDB on BOLT's twin reading the
               same core (same code bytes); the plugin's frames must have lines, its `info args`
               as many arguments as the twin's (--sessions-only: these alone).

--files-only: the bolt, debuginfo and verify figures alone (results/debuginfo-files.json);
--before DIR: the debuginfo figures again with DIR/plugin, another revision's plugin, in the
same run (what a change to the translator gained, against the same BOLT figures); with
--sessions-only, the GDB sessions on the cores again with DIR's adapter and plugin, each kind
run right after this checkout's (what a change to a session's start or `bt` gained).

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
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugin"))
sys.path.insert(0, str(ROOT))  # tests.debug_files

import realworld as rw  # noqa: E402
import realworld_cpp as cpp  # noqa: E402
import realworld_sqlite as sq  # noqa: E402
from bytecode import bytecode_env, compile_checkout  # noqa: E402
from saving import save  # noqa: E402
from unsplit.debuginfo.synthesize import build  # noqa: E402
from unsplit.index.bolt import prebolt  # noqa: E402
from unsplit.index.module_index import ModuleIndex  # noqa: E402

from tests.debug_files import written  # noqa: E402

VARIANTS = ["all", "random2", "profile2", "cdsplit", "randomN", "reverse", "nonreloc", "nolite"]
GDB_PLUGIN = ROOT / "gdb" / "unsplit_gdb.py"
# (name, BOLT output without DWARF, its pre-BOLT input, its twin with DWARF: the line oracle,
# the training profile both were made with)
REALWORLD = [(name, *(build / "bolt" / f for f in (out, f"{out}.input", f"{out}-dbg",
                                                    f"{out}.fdata")))
             for name, build, out in (("lua", rw.BUILD, "lua"), ("simdjson", cpp.BUILD, "sj"),
                                      ("sqlite3", sq.BUILD, "sq"))]


class Timing(NamedTuple):
    wall: float  # seconds
    cpu: float  # user + system seconds of the process and its children: what the machine's
    #             other load (8 engineers on 2 cores) adds least to
    peak_kb: int = 0  # the process's peak resident memory (ru_maxrss), KB


def _best(timings: list[Timing]) -> Timing:
    """Each figure's best run (other processes on a shared machine only ever add time)."""
    return Timing(min(t.wall for t in timings), min(t.cpu for t in timings),
                  min(t.peak_kb for t in timings))


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[Timing, str]:
    """The time, peak memory and output (stdout + stderr) of one run; a failed run is an
    error."""
    t = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - t
        out.seek(0)
        text = out.read().decode(errors="replace")
    if proc.returncode:
        raise RuntimeError(f"exit {proc.returncode}: {' '.join(cmd)}: {text.strip()[-300:]}")
    return Timing(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss), text


def _best_unsplit(cmd: list[str], repeats: int, tmp: Path, plugin: Path = ROOT / "plugin"
                  ) -> Timing:
    """The best of `repeats` runs of an `unsplit` command, each on an empty cache, with the
    plugin in `plugin` (another checkout's, for --before: its modules are compiled by the
    first run, into the same private prefix)."""
    runs = []
    for k in range(repeats):
        cache = Path(tempfile.mkdtemp(prefix=f"cache-{k}-", dir=tmp))
        env = bytecode_env(PYTHONPATH=str(plugin), UNSPLIT_CACHE=str(cache))
        runs.append(_timed(cmd, env)[0])
    return _best(runs)


def _best_bolt(cmd: list[str], repeats: int) -> Timing:
    return _best([_timed(cmd, {"PATH": "/usr/bin:/bin"})[0] for _ in range(repeats)])


def _verifies(path: Path) -> bool:
    return not _verify_errors(path)


_AGGREGATED = re.compile(r"^error: (.+) occurred (\d+) time\(s\)\.$", re.M)


def _verify_errors(path: Path) -> dict[str, int]:
    """llvm-dwarfdump-22 --verify's errors by kind (its aggregated counts); {} when it finds
    none."""
    out = subprocess.run(["llvm-dwarfdump-22", "--verify", str(path)], capture_output=True,
                         text=True)
    if out.returncode == 0 and "No errors." in out.stdout:
        return {}
    found = {kind: int(n) for kind, n in _AGGREGATED.findall(out.stdout)}
    return found or {"(not aggregated)": out.stdout.count("\nerror: ") or 1}


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
    env = bytecode_env(UNSPLIT_CACHE=str(cache))
    seconds, out = _timed(cmd, env)
    found = next((ln for ln in out.splitlines() if ln.startswith(("Line ", "No line"))), out)
    return seconds, found.strip()


# What each program runs to reach moved code (its rare paths), and where.
def _workloads(tmp: Path) -> dict[str, tuple[list[str], Path]]:
    sj = tmp / "sj-probe"
    sj.mkdir(exist_ok=True)
    cpp.inputs(sj)
    return {"lua": ([str(rw.PROBE)], rw.HERE), "simdjson": (cpp.PROBES, sj),
            "sqlite3": (["SELECT * FROM nosuch", "SELECT 1 +", "SELECT json('{bad')",
                         "SELECT printf('%d %s', 1)", "SELECT abs(-9223372036854775808)",
                         "SELECT zeroblob(-1), hex(randomblob(3)) IS NULL"], tmp)}


def _core(binary: Path, args: list[str], cwd: Path, core: Path) -> None:
    """A core of `binary` stopped at the first moved fragment's start its workload reaches
    (plain GDB, a breakpoint on every one)."""
    script = core.with_suffix(".py")
    script.write_text(
        "import gdb\n"
        "name = gdb.current_progspace().filename\n"
        "maps = gdb.execute('info proc mappings', to_string=True).splitlines()\n"
        "bias = min(int(l.split()[0], 16) for l in maps if l.strip().endswith(name))\n"
        f"for a in {[f.start for f in rw.moved_fragments(binary)]!r}:\n"
        "    gdb.execute(f'break *{bias + a:#x}', to_string=True)\n")
    subprocess.run(["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off",
                    "-iex", "set pagination off", "-ex", "starti", "-ex", f"source {script}",
                    "-ex", "continue", "-ex", f"generate-core-file {core}", "-ex", "kill",
                    "--args", str(binary), *args], cwd=cwd, capture_output=True, text=True,
                   timeout=600, check=False)
    if not core.is_file():
        raise RuntimeError(f"{binary}: no core at a moved fragment ({' '.join(args)})")


def _gdb_bt(binary: Path, core: Path, plugin: Path | None, cache: Path,
            then: tuple[str, ...] = ()) -> tuple[Timing, str]:
    """The time of `gdb -batch BINARY -c CORE -ex bt [-ex THEN...]` (`plugin`: the adapter
    GDB sources, None: plain GDB), and what it printed."""
    cmd = ["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off"]
    if plugin is not None:
        cmd += ["-iex", f"source {plugin}"]
    cmd += [str(binary), "-c", str(core), "-ex", "bt"]
    for command in then:
        cmd += ["-ex", "echo <<then>>\\n", "-ex", command]
    timing, out = _timed(cmd, bytecode_env(UNSPLIT_CACHE=str(cache)))
    return timing, out


def _frames(out: str) -> str:
    return "\n".join(ln for ln in out.split("<<then>>")[0].splitlines() if ln.startswith("#"))


_FRAME_LINE = re.compile(r"^#\d+ .* at \S+:\d+$")
_ARGUMENT = re.compile(r"^\w+ = ", re.M)


def _core_sessions(name: str, binary: Path, twin: Path, repeats: int, tmp: Path,
                   before: Path | None = None) -> dict[str, Any]:
    """GDB on a core of the BOLT output with the plugin, against plain GDB reading the same
    core with BOLT's --update-debug-sections twin (same code bytes):
      first   `bt` on an empty cache: the file is written in the background, GDB exits after
              `bt` (the writer finishes after it; not counted)
      args    `bt` then `info args` on an empty cache: `info args` waits for the file and shows
              the arguments: when the variables appear, the writer's CPU counted once waited
      later   `bt` with the cache the first left
      twin    plain GDB, `bt` then `info args`
    `before`: another checkout (DIR/gdb/unsplit_gdb.py) timed the same way in the same runs,
    interleaved with this one's (first-before, args-before, later-before; caches of its own)."""
    args, cwd = _workloads(tmp)[name]
    core = tmp / f"{name}.core"
    _core(binary, args, cwd, core)
    versions = [("", GDB_PLUGIN)] + ([] if before is None else
                                     [("-before", before / "gdb" / "unsplit_gdb.py")])
    runs: dict[str, list[Timing]] = {"twin": []}
    said: dict[str, str] = {}
    info = ("info args",)
    for k in range(repeats):
        plan: list[tuple[str, Path, Path | None, Path, tuple[str, ...]]] = []
        for suffix, plugin in versions:
            cache = Path(tempfile.mkdtemp(prefix=f"bt-{name}-{k}{suffix}-", dir=tmp))
            other = Path(tempfile.mkdtemp(prefix=f"bt-args-{name}-{k}{suffix}-", dir=tmp))
            if not suffix:
                plan.append(("twin", twin, None, cache, info))
            plan += [(f"first{suffix}", binary, plugin, cache, ()),
                     (f"args{suffix}", binary, plugin, other, info)]
        first = {kind: where for kind, _, _, where, _ in plan}
        plan += [(f"later{suffix}", binary, plugin, first[f"first{suffix}"], ())
                 for suffix, plugin in versions]
        for kind, path, sourced, where, then in plan:
            if kind.startswith("later"):
                written(where, timeout=600)
            timing, said[kind] = _gdb_bt(path, core, sourced, where, then)
            runs.setdefault(kind, []).append(timing)
    best = {kind: _best(t) for kind, t in runs.items()}
    frames = {k: _frames(v) for k, v in said.items()}
    lines = {k: sum(bool(_FRAME_LINE.match(f)) for f in v.splitlines()) for k, v in
             frames.items()}
    arguments = {k: len(_ARGUMENT.findall(v.split("<<then>>", 1)[1])) for k, v in said.items()
                 if "<<then>>" in v}
    # (the first `bt` has no inlined frame, and may go past `main`, which GDB knows as the
    # program's main function only with the file)
    for suffix, _ in versions:
        if not lines[f"first{suffix}"] or lines[f"later{suffix}"] < lines["twin"] or \
                arguments[f"args{suffix}"] != arguments["twin"]:
            raise RuntimeError(f"{name}: bt on the core with the plugin{suffix}: {said}")
    timed = [k for k in best if k != "twin"]
    return {**{f"bt_{k}_s": v.wall for k, v in best.items()},
            **{f"bt_{k}_cpu_s": v.cpu for k, v in best.items()},
            **{f"bt_{k}_over_twin": round(best[k].wall / best["twin"].wall, 2) for k in timed},
            **{f"bt_{k}_over_twin_cpu": round(best[k].cpu / best["twin"].cpu, 2)
               for k in timed},
            "bt_frames": {k: len(v.splitlines()) for k, v in frames.items()},
            "bt_frames_with_line": lines, "info_args_arguments": arguments,
            **({} if before is None else {  # the later `bt` word for word as before's
                "later_bt_as_before": frames["later"] == frames["later-before"]}),
            "bt": frames}


def _with_line(binary: Path, twin: Path) -> int:
    """The first instruction of moved code that llvm-symbolizer-22 gives a line in the build's
    twin with DWARF (a fragment's first byte often has line 0)."""
    insns = [a for f in rw.moved_fragments(binary) for a in f.insns][:2000]
    answers, _ = rw.llvm_symbolize(twin, insns)
    return int(next(a for a, answer in zip(insns, answers, strict=True)
                    if (answer.get("Symbol") or [{}])[0].get("Line")))


def _print_sessions(name: str, row: dict[str, Any]) -> None:
    kinds = [(f"{k}{suffix}", f"{what}{suffix}") for suffix in ("", "-before")
             for k, what in (("first", "first bt"), ("args", "first with arguments"),
                             ("later", "later")) if f"bt_{k}{suffix}_s" in row]
    print(f"{name:9} gdb bt on a core: plain on BOLT's twin {row['bt_twin_s']:5.2f} s (cpu "
          f"{row['bt_twin_cpu_s']:5.2f} s)" + "".join(
              f", {what} {row[f'bt_{k}_s']:5.2f} s (cpu {row[f'bt_{k}_cpu_s']:5.2f} s; "
              f"{row[f'bt_{k}_over_twin_cpu']}x cpu)" for k, what in kinds)
          + f"; load {os.getloadavg()[0]:.1f}"
          + ("" if "later_bt_as_before" not in row else
             f"; later bt as before's: {row['later_bt_as_before']}") + "; frames (with a line) "
          + ", ".join(f"{k} {row['bt_frames'][k]} ({v})"
                      for k, v in row["bt_frames_with_line"].items()), flush=True)


def sessions(repeats: int, tmp: Path, before: Path | None = None) -> dict[str, Any]:
    """The core sessions alone (--sessions-only; `before`: another checkout's plugin too)."""
    if before is not None:  # its modules compiled as this checkout's are (bench/bytecode.py)
        compile_checkout(before, "gdb")
    rows = []
    for name, binary, _, twin, _ in REALWORLD:
        if not all(p.is_file() for p in (binary, twin)):
            print(f"{name}: no {binary} and its twin (run bench/realworld*.py first)")
            continue
        row = {"program": name, "binary": str(binary), "repeats": repeats,
               **_core_sessions(name, binary, twin, repeats, tmp, before)}
        rows.append(row)
        _print_sessions(name, row)
    return {"rows": rows}


def realworld(repeats: int, tmp: Path, files_only: bool = False,
              before: Path | None = None) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for name, binary, pre_bolt, twin, profile in REALWORLD:
        if not all(p.is_file() for p in (binary, pre_bolt, twin, profile)):
            print(f"{name}: no {binary} and its input, twin and profile (run bench/realworld.py, "
                  "realworld_cpp.py, realworld_sqlite.py first)")
            continue
        bolt_out = tmp / f"{name}.bolt"
        bolt_cmd = ["llvm-bolt-22", str(pre_bolt), f"-data={profile}", *rw.BOLT_OPTS,
                    "--update-debug-sections", "-o", str(bolt_out)]
        bolt = _best_bolt(bolt_cmd, repeats)
        out = tmp / f"{name}.debug"
        cmd = [rw.PY, "-m", "unsplit", "debuginfo", str(binary), "--input", str(pre_bolt),
               "-o", str(out)]
        ours = _best_unsplit(cmd, repeats, tmp)
        errors = {kind: _verify_errors(path) for kind, path in
                  (("input", pre_bolt), ("bolt", bolt_out), ("ours", out))}
        if before is not None:  # the same command with another checkout's plugin
            then = _best_unsplit([*cmd[:-1], str(tmp / f"{name}.before.debug")], repeats, tmp,
                                 before / "plugin")
            print(f"{name:9} before ({before}): unsplit debuginfo {then.wall:6.2f} s (cpu "
                  f"{then.cpu:6.2f} s, {then.peak_kb // 1024} MB): "
                  f"{then.cpu / bolt.cpu:.2f}x cpu, {then.peak_kb / bolt.peak_kb:.2f}x memory",
                  flush=True)
        if files_only:
            rows.append({"program": name, "repeats": repeats,
                         "llvm_bolt_update_debug_sections_cpu_s": bolt.cpu,
                         "llvm_bolt_update_debug_sections_peak_kb": bolt.peak_kb,
                         "unsplit_debuginfo_cpu_s": ours.cpu,
                         "unsplit_debuginfo_peak_kb": ours.peak_kb,
                         "cpu_ratio": round(ours.cpu / bolt.cpu, 2),
                         "memory_ratio": round(ours.peak_kb / bolt.peak_kb, 2),
                         "verify_errors": {k: sum(v.values()) for k, v in errors.items()},
                         **({} if before is None else {
                             "before_cpu_s": then.cpu, "before_peak_kb": then.peak_kb})})
            print(f"{name:9} llvm-bolt-22 --update-debug-sections {bolt.wall:6.2f} s (cpu "
                  f"{bolt.cpu:6.2f} s, {bolt.peak_kb // 1024} MB)  unsplit debuginfo "
                  f"{ours.wall:6.2f} s (cpu {ours.cpu:6.2f} s, {ours.peak_kb // 1024} MB): "
                  f"{rows[-1]['cpu_ratio']}x cpu, {rows[-1]['memory_ratio']}x memory; verify "
                  "errors " + ", ".join(f"{k} {v}" for k, v in rows[-1]["verify_errors"].items())
                  + f"; load {os.getloadavg()[0]:.1f}", flush=True)
            continue
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
               "bolt_command": " ".join(["llvm-bolt-22", "INPUT", "-data=PROFILE",
                                         *bolt_cmd[3:-2]]),
               "llvm_bolt_update_debug_sections_s": bolt.wall,
               "llvm_bolt_update_debug_sections_cpu_s": bolt.cpu,
               "llvm_bolt_update_debug_sections_peak_kb": bolt.peak_kb,
               "unsplit_debuginfo_s": ours.wall, "unsplit_debuginfo_cpu_s": ours.cpu,
               "unsplit_debuginfo_peak_kb": ours.peak_kb,
               "time_ratio": round(ours.wall / bolt.wall, 2),
               "cpu_ratio": round(ours.cpu / bolt.cpu, 2),
               "memory_ratio": round(ours.peak_kb / bolt.peak_kb, 2),
               "debug_file_bytes": out.stat().st_size,
               "verify_errors": {k: sum(v.values()) for k, v in errors.items()},
               "verify_errors_by_kind": errors, "verifies": not errors["ours"],
               "address": hex(address),
               **{f"gdb_{k}_s": v.wall for k, v in best.items()},
               **{f"gdb_{k}_cpu_s": v.cpu for k, v in best.items()},
               "info_line": said}
        row.update(_core_sessions(name, binary, twin, repeats, tmp))
        rows.append(row)
        print(f"{name:9} llvm-bolt-22 --update-debug-sections {bolt.wall:6.2f} s (cpu "
              f"{bolt.cpu:6.2f} s, {bolt.peak_kb // 1024} MB)  unsplit debuginfo "
              f"{ours.wall:6.2f} s (cpu {ours.cpu:6.2f} s, {ours.peak_kb // 1024} MB): "
              f"{row['time_ratio']}x wall, {row['cpu_ratio']}x cpu, {row['memory_ratio']}x "
              f"memory; {row['debug_file_bytes']} bytes; verify errors "
              + ", ".join(f"{k} {v}" for k, v in row["verify_errors"].items()), flush=True)
        print(f"{'':9} gdb " + ", ".join(f"{k} {v.wall:5.2f} s (cpu {v.cpu:5.2f} s)"
                                         for k, v in best.items())
              + f"  [{said['first']}]", flush=True)
        _print_sessions(name, row)
    return {"rows": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--realworld", action="store_true",
                    help="Lua's, simdjson's and sqlite3's BOLT builds instead of the zoo")
    ap.add_argument("--sessions-only", action="store_true",
                    help="with --realworld: GDB's sessions on the cores alone")
    ap.add_argument("--files-only", action="store_true",
                    help="--realworld: the debug files alone (BOLT's, ours), no GDB session")
    ap.add_argument("--before", type=Path, metavar="DIR",
                    help="--realworld: also time `unsplit debuginfo` with DIR/plugin (e.g. "
                         "`git archive REV plugin | tar -x -C DIR`) in the same run; with "
                         "--sessions-only, GDB's sessions with DIR/gdb/unsplit_gdb.py (`git "
                         "archive REV plugin gdb`, and DIR/.venv linked to this one's)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="unsplit-bench-debuginfo-") as tmp:
        if args.realworld and args.sessions_only:
            print(save("debuginfo-realworld-sessions", sessions(args.repeats, Path(tmp),
                                                                args.before)))
        elif args.realworld:
            print(save("debuginfo-files" if args.files_only else "debuginfo-realworld",
                       realworld(args.repeats, Path(tmp), args.files_only, args.before)))
        else:
            print(save("debuginfo", zoo(args.repeats, Path(tmp))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
