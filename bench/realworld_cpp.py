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

Checks (the oracles are LLVM's tools, as in bench/realworld.py, whose checks this runs): symbolize
against llvm-symbolizer-22 on every instruction of every moved fragment (timed on an empty
unsplit cache, then warm), where on the first, middle and last instruction of each, bbmap
against llvm-readobj-22, and a gdb and an lldb session with the plugin, a breakpoint on every
moved fragment's start, looked at in each of the first 12 stops the probes make
(realworld.debug_stop): every frame in moved code (a fragment from nm holds its pc) named
`proc [cold…]`, every other frame in the program's code named by the symbol that holds its pc
(llvm-cxxfilt-22's name, its parameters and return type aside), each with its line wherever
llvm-symbolizer-22 has one, no frame the plugin names (or, in a build without DWARF, names
through the debug file it writes) shown by a mangled (`_Z…`) name, LLDB's frames with no pc
twice in a row and, stopped where GDB stopped, GDB's caller chain.
Results go to bench/results/realworld_cpp.json.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import inspect
import json
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
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
    shutil.copy2(fdata, out / "sj.fdata")  # bench/debuginfo.py runs BOLT on it again
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

STOPS = 12  # stops looked at per session (the probes reach fewer fragments than that)
_QUALIFIERS = re.compile(r"(?:\s+(?:const|volatile|&&|&|noexcept))+$")
# Clone suffixes in GNU's words (`[clone .constprop.0]`) and LLVM's (`(.constprop.0)`).
_CLONES = re.compile(r"(?: \[clone [^\]]+\]| \(\.[^()\s]+\))+$")


@functools.cache
def demangled(name: str) -> str:
    """`name` as llvm-cxxfilt-22 writes it (the oracle; a C name comes back as it is)."""
    return subprocess.run(["llvm-cxxfilt-22", name], capture_output=True, text=True,
                          check=True).stdout.strip() or name


def cxx_base(text: str) -> str:
    """The qualified name of a demangled function without its parameters, qualifiers, clone
    suffixes and (a template's) return type: how GDB names a function it has DWARF for, and
    what every other spelling of it (LLDB's, the plugin's) holds."""
    text = _QUALIFIERS.sub("", _CLONES.sub("", text.strip()))
    if text.endswith(")"):
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(text[i], 0)
            if depth == 0:
                text = text[:i].rstrip() if i > 0 else text
                break
    depth, cut = 0, 0
    for i, c in enumerate(text):
        if text.startswith("operator", i) and (i == 0 or not (text[i - 1].isalnum()
                                                               or text[i - 1] in "_")):
            break  # `operator<`, `operator bool`: the rest is the operator's name
        depth += {"<": 1, "(": 1, ">": -1, ")": -1}.get(c, 0)
        if c == " " and depth == 0:
            cut = i + 1  # what comes before is a template's return type
    return text[cut:]


def cpp_named(dwarf: bool) -> Callable[[str, str | None, str], bool]:
    """realworld.check_frames' naming rule for C++: the frame holds the symbol's demangled
    qualified name (spaces aside: GDB writes `> >`, LLVM `>>`), followed in moved code by its
    parameters, if shown, and `[fragment`; and no mangled (`_Z…`) name where the plugin names
    the frame (moved code) or, in a build without DWARF, anywhere (the names then come from
    the debug file unsplit writes). In a build with DWARF a frame in code the plugin leaves
    alone may keep a name GDB 13 cannot demangle (clang 22's `Tn` template-parameter
    mangling), as it does without the plugin."""

    def named(name: str, fragment: str | None, text: str) -> bool:
        if re.search(r"(?<![\w.])_Z\w", text) and (fragment is not None or not dwarf):
            return False
        base = re.escape("".join(cxx_base(demangled(name)).split()))
        tail = r"(?![\w<])" if fragment is None else \
            r"(?:\(.*?\))?(?:const|volatile|&)*\[" + re.escape(fragment)
        return re.search(rf"(?<![\w:]){base}{tail}", "".join(text.split())) is not None

    return named


def workload(b: rw.Build) -> rw.Workload:
    """The probes, run where their inputs are (made again: deep.json, train.json)."""
    work = rw._fresh(CACHE / "probe")
    inputs(work)
    return rw.Workload(PROBES, work, STOPS, None, cpp_named(b.dwarf))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="rebuild every build")
    ap.add_argument("--only", action="append", help="compare only this build (repeatable)")
    ap.add_argument("--no-debuggers", action="store_true", help="skip the gdb/lldb sessions")
    ap.add_argument("--skip", action="append", default=[],
                    help="skip a check: symbolize, where, bbmap, debuggers")
    args = ap.parse_args(argv)
    src = fetch_source()
    lines = sum(len(p.read_text(errors="replace").splitlines())
                for p in (src / "simdjson.h", src / "simdjson.cpp", DRIVER))
    print(f"simdjson from {PACKAGE}: {lines} lines of C++")
    recipes = rw.build_all(src, args.force, RECIPES, BUILD, _stamp)
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="unsplit-realworld-cpp-") as tmp:
        for b in builds(recipes):
            if args.only and b.name not in args.only:
                continue
            results[b.name] = rw.check_build(b, args, Path(tmp) / b.name, workload(b),
                                             ("cold-entry",))
    print(rw.table(results))
    path = save("realworld_cpp", {"program": f"simdjson ({PACKAGE} sdist) + {DRIVER.name}",
                                  "lines": lines, "recipes": recipes, "results": results})
    print(f"saved {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
