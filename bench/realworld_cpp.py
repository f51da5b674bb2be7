"""Acceptance benchmark: unsplit on a real C++ library nobody tuned it for (bench/realworld.py's
checks, on C++: demangled names, templates, headers full of inlined code).

    .venv/bin/python bench/realworld_cpp.py [--force] [--only BUILD]... [--no-debuggers]

The program is simdjson (the single-file amalgamation, ~180k lines of C++17, that PyPI's
`pysimdjson` sdist bundles; downloaded once with `pip download --no-binary pysimdjson
--no-deps pysimdjson` into bench/realworld/cpp-cache, git-ignored) with a small driver of ours,
bench/realworld/simdjson_main.cpp. Each build is made once (a stamp holds its recipe's hash):

    gcc-pgo        g++ -O2 -g -fprofile-generate, the training run, -fprofile-use
                   -freorder-blocks-and-partition                              (foo.cold)
    clang-mfs      clang++-22 -O2 -g, instrumented PGO, -fsplit-machine-functions
                   -fbasic-block-address-map; clang-mfs-nodwarf: llvm-strip-22 -g of it
    bolt           clang++-22 -O2 -g -fuse-ld=lld -Wl,--emit-relocs (PIE), llvm-bolt-22
                   -instrument, the training run, -reorder-blocks=ext-tsp -split-functions
                   -split-all-cold -enable-bat; bolt-dbg: with --update-debug-sections

Training parses a generated document (3,000 random values) and a few small ones; the probes
are the rare paths: a document nested deeper than the parser allows, an empty one, an atom
misspelt, an array of mixed types summed as doubles, a file that does not exist.

Checks (the oracles are LLVM's tools, as in bench/realworld.py, whose functions this reuses):
symbolize against llvm-symbolizer-22 on every instruction of every moved fragment, where on
the first, middle and last instruction of each, bbmap against llvm-readobj-22, and a gdb and
an lldb session with the plugin stopped at every fragment start the probes reach: frames in
moved code named `proc [cold…]`, and no frame the plugin names (or, in a build without DWARF,
names through the debug file it writes) shown by a mangled (`_Z…`) name.
Results go to bench/results/realworld_cpp.json.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import random
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import realworld as rw  # noqa: E402
from saving import save  # noqa: E402

HERE = ROOT / "bench" / "realworld"
CACHE = HERE / "cpp-cache"
BUILD = CACHE / "build"
DRIVER = HERE / "simdjson_main.cpp"
PACKAGE = "pysimdjson"
FLAGS = ["-O2", "-g", "-std=c++17"]
SMALL = ['[1,2,3]', 'sum:[1,2,3.5]', '{"a":[1,{"b":null}]}']
PROBES = ["deep.json", "", 'sum:[1,"x",3]', '[1,2,{"a":[tru]}]', "no-such-file.json"]


def fetch_source() -> Path:
    """simdjson.h and simdjson.cpp, extracted from the cached sdist (downloaded once)."""
    src = CACHE / "src"
    if (src / "simdjson.cpp").is_file() and (src / "simdjson.h").is_file():
        return src
    CACHE.mkdir(parents=True, exist_ok=True)
    sdists = sorted(CACHE.glob(f"{PACKAGE}-*.tar.gz"))
    if not sdists:
        rw.run([rw.PY, "-m", "pip", "download", "--no-binary", PACKAGE, "--no-deps", PACKAGE,
                "-d", str(CACHE)], timeout=600)
        sdists = sorted(CACHE.glob(f"{PACKAGE}-*.tar.gz"))
    if not sdists:
        raise rw.BuildError(f"pip download {PACKAGE}: no sdist in {CACHE}")
    src.mkdir(parents=True, exist_ok=True)
    with tarfile.open(sdists[-1]) as tar:
        for member in tar.getmembers():
            name = member.name.split("/", 1)[-1]
            if name in ("simdjson/simdjson.h", "simdjson/simdjson.cpp") and member.isfile():
                data = tar.extractfile(member)
                assert data is not None
                (src / name.split("/")[-1]).write_bytes(data.read())
    if not (src / "simdjson.cpp").is_file():
        raise rw.BuildError(f"{sdists[-1]}: no simdjson/simdjson.cpp")
    return src


def inputs(work: Path) -> None:
    """train.json (a deterministic random document) and deep.json (nested past the limit)."""
    rnd = random.Random(1)

    def value(depth: int) -> Any:
        if depth > 4:
            return rnd.choice([1, 2.5, "s", True, None])
        r = rnd.random()
        if r < 0.3:
            return {f"k{i}": value(depth + 1) for i in range(rnd.randint(1, 6))}
        if r < 0.6:
            return [value(depth + 1) for _ in range(rnd.randint(1, 6))]
        return rnd.choice([rnd.randint(-1000, 1000), rnd.random() * 100, "str\u00e9\n", False])

    (work / "train.json").write_text(json.dumps([value(0) for _ in range(3000)]))
    (work / "deep.json").write_text("[" * 1100 + "]" * 1100)


def train(binary: Path, env: dict[str, str] | None = None) -> None:
    rw.run([str(binary), "train.json", *SMALL], cwd=binary.parent, env=env, timeout=300)


def _sources(src: Path) -> list[str]:
    return [str(DRIVER), str(src / "simdjson.cpp"), f"-I{src}"]


def build_gcc(src: Path, out: Path) -> list[str]:
    work = rw._fresh(out / "work")
    inputs(work)
    gen = ["g++", *FLAGS, "-fprofile-generate", *_sources(src), "-o", "sj"]
    rw.run(gen, cwd=work, timeout=900)
    train(work / "sj")
    use = ["g++", *FLAGS, "-fprofile-use", "-freorder-blocks-and-partition",
           "-Wno-missing-profile", *_sources(src), "-o", "sj"]
    rw.run(use, cwd=work, timeout=900)
    shutil.copy2(work / "sj", out / "sj")
    return [" ".join(gen), "sj train.json …", " ".join(use)]


def build_clang(src: Path, out: Path) -> list[str]:
    work = rw._fresh(out / "work")
    inputs(work)
    raw, prof = work / "sj.profraw", work / "sj.profdata"
    gen = ["clang++-22", *FLAGS, "-fprofile-instr-generate", *_sources(src), "-o", "sj.gen"]
    rw.run(gen, cwd=work, timeout=900)
    train(work / "sj.gen", env={"LLVM_PROFILE_FILE": str(raw)})
    rw.run(["llvm-profdata-22", "merge", "-o", str(prof), str(raw)])
    use = ["clang++-22", *FLAGS, f"-fprofile-instr-use={prof}", "-fsplit-machine-functions",
           "-fbasic-block-address-map", *_sources(src), "-o", str(out / "sj")]
    rw.run(use, cwd=work, timeout=900)
    rw.run(["llvm-strip-22", "-g", str(out / "sj"), "-o", str(out / "sj-nodwarf")])
    return [" ".join(gen), "sj.gen train.json …", "llvm-profdata-22 merge", " ".join(use),
            "llvm-strip-22 -g"]


def build_bolt(src: Path, out: Path) -> list[str]:
    work = rw._fresh(out / "work")
    inputs(work)
    inp = out / "sj.input"
    cc = ["clang++-22", *FLAGS, *rw.BOLT_LINK, *_sources(src), "-o", str(inp)]
    rw.run(cc, cwd=work, timeout=900)
    inst, fdata = work / "sj.inst", work / "sj.fdata"
    rw.run(["llvm-bolt-22", str(inp), "-instrument", f"-instrumentation-file={fdata}",
            "-instrumentation-file-append-pid=0", "-o", str(inst)], timeout=600)
    train(inst)
    if not fdata.is_file():
        raise rw.BuildError(f"{inst}: wrote no {fdata}")
    for name, extra in (("sj", []), ("sj-dbg", ["--update-debug-sections"])):
        rw.run(["llvm-bolt-22", str(inp), f"-data={fdata}", *rw.BOLT_OPTS, *extra,
                "-o", str(out / name)], timeout=600)
    return [" ".join(cc), "llvm-bolt-22 -instrument", "sj.inst train.json …",
            f"llvm-bolt-22 -data=sj.fdata {' '.join(rw.BOLT_OPTS)} [--update-debug-sections]"]


RECIPES = {"gcc": build_gcc, "clang": build_clang, "bolt": build_bolt}


def _stamp(name: str, src: Path) -> str:
    h = hashlib.sha256()
    h.update(name.encode())
    h.update(inspect.getsource(RECIPES[name]).encode())
    h.update(inspect.getsource(inputs).encode())
    h.update(json.dumps([FLAGS, SMALL, rw.BOLT_LINK, rw.BOLT_OPTS]).encode())
    for path in (DRIVER, src / "simdjson.h", src / "simdjson.cpp"):
        h.update(path.read_bytes())
    for tool in ("g++", "clang++-22", "llvm-bolt-22"):
        h.update(rw.run([tool, "--version"]).encode())
    return h.hexdigest()


def builds(recipes: dict[str, list[str]]) -> list[rw.Build]:
    g, c, b = BUILD / "gcc", BUILD / "clang", BUILD / "bolt"
    return [
        rw.Build("gcc-pgo", g / "sj", g / "sj", True, recipe=recipes["gcc"]),
        rw.Build("clang-mfs", c / "sj", c / "sj", True, bbmap=True, recipe=recipes["clang"]),
        rw.Build("clang-mfs-nodwarf", c / "sj-nodwarf", c / "sj", False, bbmap=True,
                 recipe=recipes["clang"]),
        rw.Build("bolt", b / "sj", b / "sj-dbg", False, pre_bolt=b / "sj.input",
                 recipe=recipes["bolt"]),
        rw.Build("bolt-dbg", b / "sj-dbg", b / "sj-dbg", True, pre_bolt=b / "sj.input",
                 recipe=recipes["bolt"]),
    ]


# ---------------------------------------------------------------------------- debuggers

_FRAME = re.compile(r"^\s*\*?\s*(?:#|frame #)(\d+):?\s+(?:(0x[0-9a-f]+) (?:in )?)?(.*)$")
_TAG = re.compile(r"\[(?:cold|warm|part)[\w.]*\]")
STOPS = 12  # stops looked at per session (the probes reach fewer fragments than that)


def _session(b: rw.Build, frags: list[rw.Fragment], gdb: bool) -> str:
    """One batch session with the plugin: a breakpoint at every moved fragment's start, the
    probes run, `bt` at each stop."""
    work = rw._fresh(CACHE / "probe")
    inputs(work)
    starts = sorted({f.symbol for f in frags})
    if gdb:
        cmds = ["set pagination off", "set confirm off", f"source {rw.GDB_PLUGIN}",
                *(f"break *'{s}'" for s in starts), "run", *["bt", "continue"] * STOPS]
        argv = ["gdb", "-nx", "-batch", *(x for c in cmds for x in ("-ex", c)), "--args",
                str(b.binary), *PROBES]
    else:
        cmds = [f"command script import {rw.LLDB_PLUGIN}",
                *(f"breakpoint set --skip-prologue false -s {b.binary.name} -n {s}"
                  for s in starts),
                "process launch -- " + " ".join(json.dumps(p) for p in PROBES),
                *["bt", "process continue"] * STOPS]
        argv = ["lldb-22", "-b", *(x for c in cmds for x in ("-o", c)), str(b.binary)]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=work, timeout=600,
                          check=False)
    return proc.stdout + proc.stderr


def debug_names(b: rw.Build, frags: list[rw.Fragment]) -> dict[str, Any]:
    """Per debugger: stops made, frames seen, frames in moved code named `proc [tag]`, and the
    problems: a mangled name in a frame, an internal error, a traceback."""
    out: dict[str, Any] = {}
    moved = {f.symbol for f in frags}
    for name, gdb in (("gdb", True), ("lldb", False)):
        text = _session(b, frags, gdb)
        frames = [m.group(3) for line in text.splitlines() if (m := _FRAME.match(line))]
        # A frame's name is the plugin's where it tags the fragment, and all names are where the
        # build has no DWARF of its own (they come from the debug file unsplit writes); in a
        # build with DWARF an inlined frame may keep a name GDB 13 cannot demangle (clang
        # 22's `Tn` template-parameter mangling), as it does without the plugin.
        problems = [f"mangled: {f[:120]}" for f in frames
                    if re.search(r"(?<![\w.])_Z\w", f) and (not b.dwarf or _TAG.search(f))]
        problems += [line for line in text.splitlines()
                     if "Traceback" in line or "internal error" in line]
        stops = len(re.findall(r"^(?:Breakpoint \d+, |\* thread #\d+.*stop reason = breakpoint)",
                               text, re.M))
        tagged = sum(1 for f in frames if _TAG.search(f))
        raw = sum(1 for f in frames if any(s in f for s in moved))
        out[name] = {"stops": stops, "frames": len(frames), "named_as_fragment": tagged,
                     "named_by_fragment_symbol": raw, "problems": problems[:10]}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="rebuild every build")
    ap.add_argument("--only", action="append", help="compare only this build (repeatable)")
    ap.add_argument("--no-debuggers", action="store_true", help="skip the gdb/lldb sessions")
    args = ap.parse_args(argv)
    src = fetch_source()
    lines = sum(len(p.read_text(errors="replace").splitlines())
                for p in (src / "simdjson.h", src / "simdjson.cpp", DRIVER))
    print(f"simdjson from {PACKAGE}: {lines} lines of C++")
    recipes = rw.build_all(src, args.force, RECIPES, BUILD, _stamp)
    results: dict[str, dict[str, Any]] = {}
    for b in builds(recipes):
        if args.only and b.name not in args.only:
            continue
        frags = rw.moved_fragments(b.binary)
        results[b.name] = {"symbolize": rw.compare_symbolize(b, frags),
                           "where": rw.compare_where(b, frags)}
        if b.bbmap:
            results[b.name]["bbmap"] = rw.compare_bbmap(b)
        if not args.no_debuggers:
            results[b.name]["names"] = debug_names(b, frags)
        print(f"{b.name}: done", flush=True)
    print(rw.table(results))
    for name, r in results.items():
        for debugger, v in r.get("names", {}).items():
            print(f"{name:<18} {debugger:<5} stops {v['stops']:>3}  frames {v['frames']:>4}  "
                  f"[cold…] {v['named_as_fragment']:>3}  by fragment symbol "
                  f"{v['named_by_fragment_symbol']:>3}  problems {len(v['problems'])}")
            for p in v["problems"]:
                print(f"  problem: {p}")
    path = save("realworld_cpp", {"program": f"simdjson ({PACKAGE} sdist) + {DRIVER.name}",
                                  "lines": lines, "recipes": recipes, "results": results})
    print(f"saved {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
