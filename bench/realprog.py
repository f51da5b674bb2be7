"""The checks of docs/debug-info.md ("Checked on programs nobody here built before"), rebuilt
for each program of PROGRAMS, each built as its users build it and BOLTed:

- **brotli**: PyPI's `brotli` 1.2.1 sdist (`pip download`), its C sources and command-line tool:
  `clang-22 -O2 -g -Ic/include c/common/*.c c/dec/*.c c/enc/*.c c/tools/brotli.c -lm
  -fuse-ld=lld -Wl,--emit-relocs`; profile: `llvm-bolt-22 -instrument`, `brotli -q 1|5|9|11`
  and `-d` on its own sources, `merge-fdata-22`.
- **ninja**: Debian 12's `ninja-build` 1.11.1 source (`apt-get source`; needs a `deb-src`
  line), C++: `CXX=clang++-22 LDFLAGS="-fuse-ld=lld -Wl,--emit-relocs" ./configure.py
  --bootstrap` (its own `-O2 -g`); profile: `llvm-bolt-22 -instrument`, ninja's dry run and
  tools on its own tree, a 22-object C build (clean, rebuild after a header change, `-t deps`).
- **zstd**: Debian 12's `libzstd` 1.5.4 source, C: `make -C programs zstd CC=clang-22
  CFLAGS="-O2 -g" LDFLAGS="-fuse-ld=lld -Wl,--emit-relocs"`; profile: `perf record -e
  cpu-clock` (no LBR on this machine) of compressions at levels 1, 3, 9, 19 and their
  decompression, `perf2bolt-22 -nl`.
- **leveldb**: Debian 12's `leveldb` 1.23 source, C++, its `db_bench` as its README builds it
  (cmake; `-DCMAKE_BUILD_TYPE=RelWithDebInfo`, clang-22, `-DLEVELDB_BUILD_TESTS=OFF`; db_bench
  includes gmock: `apt-get install libgmock-dev`); profile: `llvm-bolt-22 -instrument`, fills,
  reads, seeks, deletes, a compaction and a reopen; rare paths: databases with a damaged log,
  table or MANIFEST, a missing table, an unknown benchmark.
- **lz4**: Debian 12's `lz4` 1.9.4 source, C, built by GCC with Debian's flags: `make -C
  programs lz4 CC=gcc CFLAGS="-g -O2 -fstack-protector-strong …" LDFLAGS="-Wl,-z,relro -Wl,-q"`;
  profile: `llvm-bolt-22 -instrument`, compressions at levels 1/3/9/12, --fast, legacy and
  block options, their decompression, `-t`. Also a GCC PGO build (`-fprofile-generate`, the
  same training, `-fprofile-use`: GCC's own `.cold`), checked first against plain GDB, LLDB,
  lldb-dap and GDB/MI on itself, from cores and live (check_gcc_pgo).

Each is BOLTed `-data=… --enable-bat -reorder-blocks=ext-tsp --split-functions --split-all-cold
--split-strategy=cdsplit` (its DWARF dropped, as shipped); the twin: the same with
`--update-debug-sections`. Then, at the first stop in cold code of each of the program's runs
of rare paths (found by breaking on every statement row of the twin's cold fragments, or, for a
run of Program.within, of one procedure's cold fragment at one line), a core of
the BOLT output and one of the input at the input address BAT names; `bt full 8` on each, value
by value (a frame's name and line, each argument, each local), GDB with the plugin on the BOLT
output (its debug file written at load) and plain GDB on the twin against plain GDB on the
input; the same for LLDB (`bt 8`, `frame variable` in frames 0-2) with the plugin against plain
LLDB on the input; `llvm-dwarfdump-22 --verify` and `--statistics` of the plugin's file, the
input and the twin; llvm-symbolizer-22 on the plugin's file against perf2bolt-22's BAT
translation and the input's lines, for every instruction of every cold fragment.

    .venv/bin/python bench/realprog.py [PROGRAM...]     (default: all; caches git-ignored in
                                                         bench/realworld/PROGRAM-cache)
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import bolt_truth  # noqa: E402
from tests.e2e.driver_dap import DapSession  # noqa: E402
from tests.e2e.driver_mi import MiSession  # noqa: E402

BOLT = ["--enable-bat", "-reorder-blocks=ext-tsp", "--split-functions", "--split-all-cold",
        "--split-strategy=cdsplit"]
LINK = ["-fuse-ld=lld", "-Wl,--emit-relocs"]


@dataclass(frozen=True, slots=True)
class Program:
    name: str
    build: Callable[[Path], None]  # writes CACHE/NAME (the BOLT input) and CACHE/NAME.fdata
    runs: dict[str, list[str]]  # rare paths: the arguments of each, run in the cache
    prepare: Callable[[Path], None] = lambda cache: None  # before each run: what runs change
    project: str = ""  # the command line's and the cache's name, when not the program's
    # runs that stop in one procedure's cold code (a fragment symbol's part), at one line
    within: dict[str, tuple[str, int]] = field(default_factory=dict)
    # a GCC PGO build of the program (its own `.cold` fragments), in the cache: checked with
    # the plugin against plain GDB/LLDB on itself (GCC's DWARF covers its cold code)
    gcc_pgo: str = ""


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "UNSPLIT_CACHE": str(cwd / "unsplit-cache"),
                               **(env or {})})
    return done.stdout + done.stderr


def instrumented_profile(cache: Path, exe: str, train: Callable[[str], None]) -> None:
    """CACHE/EXE.fdata from `llvm-bolt-22 -instrument` and the runs `train(instrumented)`."""
    shutil.rmtree(cache / "prof", ignore_errors=True)
    (cache / "prof").mkdir()
    run(["llvm-bolt-22", exe, "-instrument", f"-instrumentation-file={cache}/prof/b",
         "-instrumentation-file-append-pid", "-o", f"{exe}.inst"], cache)
    train(f"./{exe}.inst")
    run(["merge-fdata-22", *map(str, (cache / "prof").glob("*.fdata")), "-o", f"{exe}.fdata"],
        cache)


def debian_source(cache: Path, package: str) -> Path:
    """The unpacked upstream tree of a Debian source package (`apt-get source`)."""
    cache.mkdir(parents=True, exist_ok=True)
    if not list(cache.glob("*.orig.tar.[gx]z")):
        out = run(["apt-get", "source", "--download-only", package], cache)
        if not list(cache.glob("*.orig.tar.[gx]z")):
            raise SystemExit(f"realprog: apt-get source {package} (is there a deb-src line "
                             f"in /etc/apt/sources.list.d?): {out[-1000:]}")
    with tarfile.open(next(cache.glob("*.orig.tar.[gx]z"))) as tar:
        tree = cache / tar.getnames()[0].split("/")[0]
        if not tree.is_dir():
            tar.extractall(cache)
    return tree


def build_brotli(cache: Path) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
         "brotli==1.2.1"], cache)
    with tarfile.open(next(cache.glob("brotli-*.tar.gz"))) as tar:
        tar.extractall(cache)
    c = next(cache.glob("brotli-*/c"))
    sources = [str(p) for d in ("common", "dec", "enc") for p in sorted((c / d).glob("*.c"))]
    run(["clang-22", "-O2", "-g", f"-I{c / 'include'}", *sources, str(c / "tools/brotli.c"),
         "-lm", *LINK, "-o", "brotli"], cache)
    (cache / "train.txt").write_bytes(b"".join(Path(s).read_bytes() for s in sources))

    def train(exe: str) -> None:
        for q in ("1", "5", "9", "11"):
            run([exe, "-f", "-q", q, "train.txt", "-o", f"t{q}.br"], cache)
            run([exe, "-f", "-d", f"t{q}.br", "-o", "t.out"], cache)

    instrumented_profile(cache, "brotli", train)
    data = (cache / "t9.br").read_bytes()
    (cache / "trunc.br").write_bytes(data[:500])
    bad = bytearray(data)
    for i in range(40):
        bad[2000 + (i * 7919) % 50000] ^= 0xFF
    (cache / "bad.br").write_bytes(bytes(bad))


def build_ninja(cache: Path) -> None:
    tree = debian_source(cache, "ninja-build")
    run([sys.executable, "configure.py", "--bootstrap"], tree,
        {"CXX": "clang++-22", "LDFLAGS": " ".join(LINK)})
    shutil.copy2(tree / "ninja", cache / "ninja")
    # Training: its own tree's build graph (dry run, tools) and a small real C build.
    shutil.rmtree(cache / "own", ignore_errors=True)
    shutil.copytree(tree, cache / "own", ignore=shutil.ignore_patterns("build", "ninja"))
    run([sys.executable, "configure.py"], cache / "own", {"CXX": "clang++-22"})
    proj = cache / "proj"
    proj.mkdir(exist_ok=True)
    rules = ["rule cc\n  command = gcc -MMD -MF $out.d -c $in -o $out\n  depfile = $out.d\n"
             "  deps = gcc\n  description = CC $out\n", "rule link\n  command = gcc $in -o $out\n"]
    for i in range(20):
        (proj / f"f{i}.c").write_text(f'#include "h.h"\nint f{i}(void) {{ return H + {i}; }}\n')
        rules.append(f"build f{i}.o: cc f{i}.c\n")
    (proj / "h.h").write_text("#define H 1\n")
    (proj / "main.c").write_text("int main(void) { return 0; }\n")
    rules.append("build main.o: cc main.c\nbuild app: link main.o "
                 + " ".join(f"f{i}.o" for i in range(20)) + "\ndefault app\n")
    (proj / "build.ninja").write_text("".join(rules))

    def train(exe: str) -> None:
        for tool in (["-n"], ["-t", "targets", "all"], ["-t", "commands"], ["-t", "query",
                     "ninja"], ["-t", "graph"], ["-t", "compdb"], ["-t", "inputs", "ninja"]):
            run([exe, "-C", "own", *tool], cache)
        for step in ([], ["-t", "clean"], ["-j2"], ["-t", "deps"]):
            run([exe, "-C", "proj", *step], cache)
        (proj / "h.h").write_text("#define H 2\n")
        run([exe, "-C", "proj"], cache)

    instrumented_profile(cache, "ninja", train)
    # The rare paths' manifests: an unknown rule, a missing input, a cycle, a failing command.
    bad = {"syntax": "rule r\n  command = true\nbuild a: nosuch b\n",
           "missing": "rule r\n  command = true\nbuild a: r gone.c\n",
           "cycle": "rule r\n  command = true\nbuild a: r b\nbuild b: r c\nbuild c: r a\n",
           "fails": "rule r\n  command = false\nbuild a: r\n"}
    for name, text in bad.items():
        (cache / name).mkdir(exist_ok=True)
        (cache / name / "build.ninja").write_text(text)


def build_zstd(cache: Path) -> None:
    tree = debian_source(cache, "libzstd")
    run(["make", "-C", "programs", "zstd", "CC=clang-22", "CFLAGS=-O2 -g",
         f"LDFLAGS={' '.join(LINK)}"], tree)
    shutil.copy2(tree / "programs" / "zstd", cache / "zstd")
    train = cache / "train.bin"
    train.write_bytes(b"".join(p.read_bytes() for p in sorted((tree / "lib").rglob("*.[ch]"))))
    script = " && ".join(f"./zstd -f -q -{lv} train.bin -o t{lv}.zst && ./zstd -f -q -d "
                         f"t{lv}.zst -o t.out" for lv in (1, 3, 9, 19))
    run(["perf", "record", "-e", "cpu-clock", "-F", "5000", "-o", "zstd.perf", "--", "sh",
         "-c", script], cache)
    run(["perf2bolt-22", "zstd", "-nl", "-p", "zstd.perf", "-o", "zstd.fdata"], cache)
    data = (cache / "t19.zst").read_bytes()
    (cache / "trunc.zst").write_bytes(data[: len(data) // 3])
    bad = bytearray(data)
    for i in range(40):
        bad[200 + (i * 7919) % (len(data) - 400)] ^= 0xFF
    (cache / "bad.zst").write_bytes(bytes(bad))
    (cache / "notzstd.zst").write_bytes(b"plain text, not a frame\n" * 10)


def build_leveldb(cache: Path) -> None:
    tree = debian_source(cache, "leveldb")
    (tree / "build").mkdir(exist_ok=True)
    run(["cmake", "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DCMAKE_C_COMPILER=clang-22",
         "-DCMAKE_CXX_COMPILER=clang++-22", f"-DCMAKE_EXE_LINKER_FLAGS={' '.join(LINK)}",
         "-DLEVELDB_BUILD_TESTS=OFF", ".."], tree / "build")
    said = run(["cmake", "--build", ".", "--target", "db_bench", "-j2"], tree / "build")
    if not (tree / "build" / "db_bench").is_file():
        raise SystemExit(f"realprog: no db_bench (db_bench's util/testutil.h includes gmock: "
                         f"apt-get install libgmock-dev): {said[-1500:]}")
    shutil.copy2(tree / "build" / "db_bench", cache / "db_bench")

    def train(exe: str) -> None:
        shutil.rmtree(cache / "train", ignore_errors=True)
        common = ["--db=train", "--num=30000", "--value_size=200"]
        run([exe, *common, "--benchmarks=fillseq,fillrandom,overwrite,readrandom,readseq,"
             "readreverse,seekrandom,deleterandom,compact,readrandom,readhot,stats"], cache)
        run([exe, *common, "--use_existing_db=1", "--benchmarks=readrandom,readseq"], cache)
        run([exe, *common, "--benchmarks=fillsync,fill100K,crc32c,acquireload"], cache)

    instrumented_profile(cache, "db_bench", train)
    # The rare paths' databases (a run changes its database: copied afresh by leveldb_dbs).
    dbs = cache / "dbs"
    shutil.rmtree(dbs, ignore_errors=True)
    dbs.mkdir()
    for name in ("badlog", "badmanifest", "badtable", "missing"):
        # A log left unflushed: the overwrites after the compaction stay in it at exit.
        run(["./db_bench", f"--db=dbs/{name}", "--num=5000", "--value_size=200",
             "--write_buffer_size=4000000", "--benchmarks=fillseq,compact,overwrite"], cache)
    log = next((dbs / "badlog").glob("*.log"))
    data = bytearray(log.read_bytes())
    for i in range(8):
        data[len(data) // 3 + i * 9001] ^= 0x5A
    log.write_bytes(bytes(data))
    manifest = next((dbs / "badmanifest").glob("MANIFEST-*"))
    manifest.write_bytes(manifest.read_bytes()[:40] + b"\xff" * 30)
    table = max((dbs / "badtable").glob("*.ldb"), key=lambda t: t.stat().st_size)
    data = bytearray(table.read_bytes())
    for i in range(60):
        data[(i * 7919) % (len(data) // 2)] ^= 0xFF
    table.write_bytes(bytes(data))
    next((dbs / "missing").glob("*.ldb")).unlink()


# Debian's flags for lz4 (`dpkg-buildflags`, debian/rules), without -ffile-prefix-map
DEBIAN_CFLAGS = "-g -O2 -fstack-protector-strong -Wformat -Werror=format-security"


def build_lz4(cache: Path) -> None:
    """lz4 by GCC twice from one tree: the BOLT input (`-Wl,-q`), and a GCC PGO build
    (`-fprofile-generate`, the training, `-fprofile-use`: GCC's own `.cold` fragments)."""
    tree = debian_source(cache, "lz4")
    cache.joinpath("train.txt").write_bytes(b"".join(
        p.read_bytes() for d in ("lib", "programs") for p in sorted((tree / d).glob("*.[ch]"))))

    def train(exe: str) -> None:
        for lv in ("1", "3", "9", "12"):
            run([exe, "-f", "-q", f"-{lv}", "train.txt", f"t{lv}.lz4"], cache)
            run([exe, "-f", "-q", "-d", f"t{lv}.lz4", "t.out"], cache)
        for extra in (["--fast=3"], ["-l"], ["-B4", "-BD"]):
            run([exe, "-f", "-q", *extra, "train.txt", "t.lz4"], cache)
            run([exe, "-f", "-q", "-d", "t.lz4", "t.out"], cache)
        run([exe, "-q", "-t", "t9.lz4"], cache)

    def make(tree_copy: str, cflags: str, ldflags: str, fresh: bool = True) -> Path:
        built = cache / tree_copy
        if fresh:
            shutil.rmtree(built, ignore_errors=True)
            shutil.copytree(tree, built)
        run(["make", "-C", "programs", "lz4", "CC=gcc", f"CFLAGS={DEBIAN_CFLAGS} {cflags}",
             f"LDFLAGS=-Wl,-z,relro {ldflags}", "-j2"], built)
        return built / "programs" / "lz4"

    shutil.copy2(make("plain", "", "-Wl,-q"), cache / "lz4")
    instrumented_profile(cache, "lz4", train)
    train(str(make("pgo", "-fprofile-generate", "-fprofile-generate")))
    for o in [*(cache / "pgo").rglob("*.o"), cache / "pgo" / "programs" / "lz4"]:
        o.unlink()
    (cache / "gccpgo").mkdir(exist_ok=True)
    shutil.copy2(make("pgo", "-fprofile-use -Wno-missing-profile", "", fresh=False),
                 cache / "gccpgo" / "lz4")
    # The rare paths' files: truncated, damaged, not lz4 at all.
    data = (cache / "t9.lz4").read_bytes()
    (cache / "trunc.lz4").write_bytes(data[: len(data) // 3])
    bad = bytearray(data)
    for i in range(40):
        bad[200 + (i * 7919) % (len(data) - 400)] ^= 0xFF
    (cache / "bad.lz4").write_bytes(bytes(bad))
    (cache / "notlz4.lz4").write_bytes(b"plain text, not a frame\n" * 10)


def leveldb_dbs(cache: Path) -> None:
    """Each rare path's database as built (recovery rewrites a log, compaction moves tables)."""
    shutil.rmtree(cache / "run", ignore_errors=True)
    shutil.copytree(cache / "dbs", cache / "run")


def leveldb_run(db: str, benchmarks: str = "readrandom,readseq") -> list[str]:
    return [f"--db=run/{db}", "--use_existing_db=1", "--num=5000", "--value_size=200",
            f"--benchmarks={benchmarks}"]


PROGRAMS = {p.project or p.name: p for p in (
    Program("brotli", build_brotli, {"truncated": ["-d", "-f", "trunc.br", "-o", "x.out"],
                                     "fastest": ["-f", "-q", "0", "train.txt", "-o", "x.br"],
                                     "corrupt": ["-d", "-f", "bad.br", "-o", "x.out"]}),
    Program("ninja", build_ninja, {"syntax": ["-C", "syntax"], "missing": ["-C", "missing"],
                                   "cycle": ["-C", "cycle"], "fails": ["-C", "fails"],
                                   "tool": ["-t", "nosuch"],
                                   "target": ["-C", "proj", "nosuch.o"],
                                   "query": ["-C", "own", "-t", "query", "ninja.o"]}),
    Program("zstd", build_zstd, {"truncated": ["-d", "-f", "trunc.zst", "-o", "x.out"],
                                 "corrupt": ["-d", "-f", "bad.zst", "-o", "x.out"],
                                 "notzstd": ["-d", "-f", "notzstd.zst", "-o", "x.out"],
                                 "test": ["-t", "bad.zst"]}),
    Program("db_bench", build_leveldb, {"badlog": leveldb_run("badlog"),
                                        "badtable": leveldb_run("badtable"),
                                        "badmanifest": leveldb_run("badmanifest"),
                                        "missing": leveldb_run("missing"),
                                        "nosuch": leveldb_run("badlog", "nosuch"),
                                        # the damaged log again: past the moved code above
                                        "badlog2": leveldb_run("badlog"),
                                        "badlog3": leveldb_run("badlog"),
                                        # log_reader.cc:185, ReportDrop inlined in moved code
                                        "drop": leveldb_run("badlog")},
            leveldb_dbs, "leveldb", {"drop": ("ReadPhysicalRecord", 185)}),
    Program("lz4", build_lz4, {"truncated": ["-d", "-f", "trunc.lz4", "x.out"],
                               "corrupt": ["-d", "-f", "bad.lz4", "x.out"],
                               "notlz4": ["-d", "-f", "notlz4.lz4", "x.out"],
                               "test": ["-t", "bad.lz4"], "option": ["--nosuch"],
                               "missing": ["-d", "-f", "gone.lz4", "x.out"]},
            gcc_pgo="gccpgo/lz4"),
)}


def build(p: Program, cache: Path) -> None:
    """The input (pre/), the BOLT output with the input beside it (bol/), the twin (twn/)."""
    if (cache / "twn" / p.name).is_file():
        return
    p.build(cache)
    for d in ("pre", "bol/input", "twn"):
        (cache / d).mkdir(parents=True, exist_ok=True)
    for out, extra in ((f"bol/{p.name}", []), (f"twn/{p.name}", ["--update-debug-sections"])):
        said = run(["llvm-bolt-22", p.name, f"-data={p.name}.fdata", *BOLT, *extra, "-o", out],
                   cache)
        if not (cache / out).is_file():
            raise SystemExit(f"realprog: llvm-bolt-22 wrote no {out}: {said[-2000:]}")
    shutil.copy2(cache / p.name, cache / "pre" / p.name)
    shutil.copy2(cache / p.name, cache / "bol" / "input" / p.name)


def cold_fragments(cache: Path, exe: str) -> list[tuple[int, int, str]]:
    frags = []
    for line in run(["nm", "-S", exe], cache).splitlines():
        p = line.split()
        if len(p) == 4 and p[3].endswith(".cold"):
            frags.append((int(p[0], 16), int(p[0], 16) + int(p[1], 16), p[3]))
    return frags


def cold_rows(cache: Path, name: str, line: int | None = None, exe: str = ""
              ) -> list[tuple[int, str, int]]:
    """(file address, fragment symbol, its start) of every statement row (of `line`) in the
    cold fragments of `exe` (default: the twin)."""
    exe = exe or f"twn/{name}"
    frags = cold_fragments(cache, exe)
    rows = []
    for m in re.finditer(r"^0x([0-9a-f]{16})\s+([1-9]\d*)\s.*is_stmt",
                         run(["llvm-dwarfdump-22", "--debug-line", exe], cache), re.M):
        if line is not None and int(m.group(2)) != line:
            continue
        a = int(m.group(1), 16)
        rows += [(a, f[2], f[0]) for f in frags if f[0] <= a < f[1]]
    return sorted(set(rows))


def first_cold_stop(cache: Path, name: str, args: list[str], rows: list[tuple[int, str, int]],
                    exe: str = "") -> tuple[str, int] | None:
    """The fragment symbol and offset of the first cold row the run of `exe` (default: the
    twin) reaches (kept in stops.json: thousands of breakpoints take GDB minutes)."""
    known = cache / "stops.json"
    stops = json.loads(known.read_text()) if known.is_file() else {}
    key = (f"{exe}: " if exe else "") + " ".join(args) + f" ({len(rows)} rows)"
    if key not in stops:
        stops[key] = _first_cold_stop(cache, exe or f"twn/{name}", args, rows)
        known.write_text(json.dumps(stops))
    return None if stops[key] is None else (stops[key][0], stops[key][1])


def _first_cold_stop(cache: Path, exe: str, args: list[str], rows: list[tuple[int, str, int]]
                     ) -> tuple[str, int] | None:
    script = cache / "rows.gdb"
    script.write_text("".join(f"break *'{s}'+{a - start}\n" for a, s, start in rows))
    out = run(["gdb", "-nx", "-q", "-batch", "-iex", "set print asm-demangle off", "-iex",
               "set print demangle off", "-x", str(script), "-ex", "run", "-ex",
               "info symbol $pc", "--args", exe, *args], cache)
    # (`SYMBOL in section`, without `+ 0`, at a fragment's first instruction)
    m = re.search(r"^(\S+\.cold)(?: \+ (\d+))? in section", out, re.M)
    return None if m is None else (m.group(1), int(m.group(2) or 0))


def where(cache: Path, name: str, address: int) -> str:
    return run([sys.executable, "-m", "unsplit", "where", "--exe", f"bol/{name}", hex(address)],
               cache, {"PYTHONPATH": str(ROOT / "plugin")})


def input_location(cache: Path, name: str, symbol: str, offset: int) -> tuple[str, int]:
    """The input's symbol and offset of BAT's input address of the BOLT output's cold code."""
    start = next(f[0] for f in cold_fragments(cache, f"bol/{name}") if f[2] == symbol)
    out = where(cache, name, start + offset)
    m = re.search(r"bolt\s+input .* at (0x[0-9a-f]+) ", out)
    if m is None:
        raise SystemExit(f"realprog: no BAT input for {symbol}+{offset}: {out}")
    at = int(m.group(1), 16)
    # The nearest code symbol at or before it (an assembly label has no size).
    value, owner = max(s for s in code_symbols(cache, name) if s[0] <= at)
    return owner, at - value


def code_symbols(cache: Path, exe: str) -> list[tuple[int, str]]:
    return [(int(v, 16), n) for v, t, n in (line.split() for line in run(
        ["nm", "--defined-only", exe], cache).splitlines() if line.count(" ") == 2)
        if t in "tTW" and not n.endswith(".org.0")]


def core(cache: Path, exe: str, at: str, args: list[str], core_file: str) -> None:
    run(["gdb", "-nx", "-q", "-batch", "-ex", f"break *{at}", "-ex", "run", "-ex",
         f"gcore {core_file}", "--args", exe, *args], cache)


def normal(out: str) -> str:
    """Code and heap addresses (which BOLT and the run move) as H; fragment marks dropped."""
    out = re.sub(r"0x(0000)?5555(55[4-9a-f]|56|57|58|54)[0-9a-f]+", "H", out)
    out = re.sub(r"0x0000000000[2-9a-f][0-9a-f]{5}\b", "H", out)  # non-PIE code
    out = re.sub(r"(?<= @ )0x[0-9a-f]{16}\b", "H", out)  # LLDB's copy of a value, in its memory
    return re.sub(r" \[(cold|warm)[.\d]*\]", "", out)


def gdb_values(cache: Path, exe: str, core_file: str, plugin: bool) -> list[tuple[str, ...]]:
    argv = ["gdb", "-nx", "-q", "-batch", "-iex", "set width 0"]
    if plugin:
        argv += ["-iex", f"source {ROOT / 'gdb' / 'unsplit_gdb.py'}"]
    # The debug file written at load (a first session's `bt full` comes before a file written
    # in the background: frames named and lined, no values yet; docs/debug-info.md).
    out = run([*argv, "-ex", "bt full 8", exe, core_file], cache,
              {"UNSPLIT_DEBUGINFO_BACKGROUND": "0"})
    out = normal(out[out.find("\n#0"):])
    out = re.sub(r"#(\d+) +(H in )?", r"#\1 ", out)
    found: list[tuple[str, ...]] = []
    for line in out.splitlines():
        m = re.match(r"#\d+ (.*?) \((.*)\) at (\S+)$", line)
        if m:
            found.append(("frame", m.group(1), m.group(3)))
            found += [("arg", a) for a in re.split(r", (?=\w+=)", m.group(2))]
        elif " = " in line and not line.startswith("#"):
            found.append(("local", line.strip()))
    return found


def lldb_values(cache: Path, exe: str, core_file: str, plugin: bool) -> list[tuple[str, ...]]:
    argv = ["lldb-22", "--no-lldbinit", "-b", "-o", "settings set use-color false"]
    if plugin:
        argv += ["-o", f"command script import {ROOT / 'lldb' / 'unsplit_lldb.py'}"]
    argv += ["-c", core_file, exe, "-o", "bt 8"]
    for n in range(3):
        argv += ["-o", f"frame select {n}", "-o", "frame variable"]
    out = normal(run(argv, cache, {"UNSPLIT_DEBUGINFO_BACKGROUND": "0"}))
    found: list[tuple[str, ...]] = []
    for line in out.splitlines():
        m = re.match(r"\s*\*?\s*frame #\d+: H \S+`(.*?) at (\S+?)(:\d+)?$", line)
        if m:
            found.append(("frame", m.group(1), m.group(2)))
        elif re.match(r"\(.+\) \w+ = ", line):
            found.append(("var", line.strip()))
    return found


def dap_values(cache: Path, exe: str, core_file: str, plugin: bool) -> list[tuple[str, ...]]:
    """lldb-dap-22 attached to the core: `stackTrace`, then `scopes` and `variables` of frames
    0-2 (what an IDE's call stack and Variables pane show)."""
    init = [f'command script import "{ROOT / "lldb" / "unsplit_lldb.py"}"'] if plugin else []
    session = DapSession(["lldb-dap-22"], env={"UNSPLIT_CACHE": str(cache / "unsplit-cache"),
                                                "UNSPLIT_DEBUGINFO_BACKGROUND": "0"})
    found: list[tuple[str, ...]] = []
    try:
        session.request("initialize", adapterID="realprog", linesStartAt1=True,
                        columnsStartAt1=True, pathFormat="path")
        session.send("attach", program=str(cache / exe), coreFile=str(cache / core_file),
                     initCommands=init)
        session.wait("event", "initialized", 600)
        session.request("configurationDone")
        session.wait("event", "stopped", 600)
        thread = session.request("threads")["threads"][0]["id"]
        frames = session.request("stackTrace", 600, threadId=thread, startFrame=0,
                                 levels=8)["stackFrames"]
        for n, f in enumerate(frames):
            source = (f.get("source") or {}).get("path", "")
            found.append(("frame", f["name"], f"{Path(source).name}:{f.get('line')}"))
            if n > 2:
                continue
            for scope in session.request("scopes", frameId=f["id"])["scopes"]:
                if scope["name"] not in ("Locals", "Arguments"):
                    continue
                for v in session.request("variables", variablesReference=scope[
                        "variablesReference"])["variables"]:
                    found.append(("var", v["name"], normal(str(v.get("value")))))
    finally:
        session.close()
    return found


def mi_values(cache: Path, exe: str, core_file: str, plugin: bool) -> list[tuple[str, ...]]:
    """GDB/MI on the core: `-stack-list-frames` (frame filters on) and `-stack-list-variables
    --all-values` in frames 0-2."""
    session = MiSession([str(cache / exe)], plugin=plugin,
                        env={"UNSPLIT_CACHE": str(cache / "unsplit-cache"),
                             "UNSPLIT_DEBUGINFO_BACKGROUND": "0"})
    found: list[tuple[str, ...]] = []
    try:
        session.command(f'-interpreter-exec console "core-file {cache / core_file}"', 600)
        session.command("-enable-frame-filters")
        frames = session.command("-stack-list-frames 0 7", 600)["stack"]
        for f in frames:
            f = f.get("frame", f)
            found.append(("frame", normal(str(f.get("func"))),
                          f"{Path(str(f.get('file', ''))).name}:{f.get('line')}"))
        for n in range(min(3, len(frames))):
            for v in session.command(f"-stack-list-variables --thread 1 --frame {n} "
                                     "--all-values")["variables"]:
                found.append(("var", v["name"], normal(str(v.get("value")))))
    finally:
        session.close()
    return found


def right(ours: Sequence[Hashable], truth: Sequence[Hashable]) -> int:
    left = collections.Counter(truth)
    n = 0
    for v in ours:
        if left[v] > 0:
            left[v] -= 1
            n += 1
    return n


def verify(cache: Path, file: str) -> str:
    out = run(["llvm-dwarfdump-22", "--verify", file], cache)
    if "No errors." in out:
        return "no errors"
    return f"{len(re.findall(r'^error: ', out, re.M))} errors"


def coverage(cache: Path, file: str) -> str:
    s = json.loads(run(["llvm-dwarfdump-22", "--statistics", file], cache))
    have = s["#params with binary location"] + s["#local vars with binary location"]
    total = s["#variables processed by location statistics"]
    cov, scope = (s["sum_all_variables(#bytes in parent scope covered by DW_AT_location)"],
                  s["sum_all_variables(#bytes in parent scope)"])
    return f"variables with a location {have}/{total}, scope bytes covered {cov}/{scope}"


def symbolized(cache: Path, name: str) -> str:
    """llvm-symbolizer-22 on the plugin's file against BAT's truth for each cold instruction:
    the input function (perf2bolt-22) and the input's line of the same instruction."""
    addresses = sorted(a for s, e, _ in cold_fragments(cache, f"bol/{name}")
                       for a in bolt_truth.instructions(cache / f"bol/{name}", s, e))
    truth = bolt_truth.perf2bolt_targets(cache / f"bol/{name}", addresses, cache)
    # (an assembly label is no STT_FUNC of the input: its input address is not looked up)
    funcs = {(f.name, f.unit) for f in bolt_truth.functions(cache / name)}
    known = [a for a in addresses if a in truth and truth[a][:2] in funcs]
    labels = sum(a in truth and truth[a][:2] not in funcs for a in addresses)
    _, lines = bolt_truth.input_lines(cache / f"bol/{name}", cache / name, truth, known)
    twin = bolt_truth.symbolize(cache / f"twn/{name}", known)
    text = bolt_truth.run("llvm-symbolizer-22", "--obj", cache / f"{name}.debug", "--no-inlines",
                          "--basenames", "--functions=linkage", "--no-demangle",
                          stdin="".join(f"{a:#x}\n" for a in known))
    got = [b.split("\n") for b in text.strip("\n").split("\n\n")]
    funcs = lines_ok = lines_n = as_twin = 0
    bad: list[str] = []
    for a, (fn, loc), line, theirs in zip(known, got, lines, twin, strict=True):
        funcs += re.sub(r"\.(cold|warm)(\.\d+)?$", "", fn) == truth[a][0]  # fragment symbols
        if line is not None and line[1]:
            lines_n += 1
            file, number = loc.rsplit(":", 2)[:2]
            ours = (file, int(number) if number.isdigit() else 0)
            lines_ok += ours == line
            as_twin += ours != line and ours == theirs
            if ours not in (line, theirs) and len(bad) < 5:
                bad.append(f"{a:#x} {fn} {loc} (input {line[0]}:{line[1]}, twin {theirs})")
    return (f"{len(known)}/{len(addresses)} cold instructions BAT maps to an input function "
            f"({labels} more to an assembly label): function right "
            f"{funcs}, line right {lines_ok}/{lines_n}, BOLT's twin's line where not "
            f"{as_twin}" + "".join(f"\n  {b}" for b in bad))


VIEWS = (("gdb", gdb_values), ("lldb", lldb_values), ("dap", dap_values), ("mi", mi_values))


def live(cache: Path, exe: str, stop: tuple[str, int], args: list[str], debugger: str,
         plugin: bool) -> list[str]:
    """The lines a live session stopped at `stop` (a fragment symbol and offset) prints for
    `bt 8`, the arguments and locals of frames 0 and 1 and the return from frame 0 (GDB:
    `finish`; LLDB: `thread step-out`), code and heap addresses as H."""
    if debugger == "gdb":
        argv = ["gdb", "-nx", "-q", "-batch", "-iex", "set width 0", "-iex", "set height 0"]
        if plugin:
            argv += ["-iex", f"source {ROOT / 'gdb' / 'unsplit_gdb.py'}"]
        cmds = [f"break *'{stop[0]}'+{stop[1]}", "run", "bt 8", "info args", "info locals",
                "up", "info args", "info locals", "down", "finish"]
        argv += [a for c in cmds for a in ("-ex", c)] + ["--args", exe, *args]
    else:
        argv = ["lldb-22", "--no-lldbinit", "-b", "-o", "settings set use-color false"]
        if plugin:
            argv += ["-o", f"command script import {ROOT / 'lldb' / 'unsplit_lldb.py'}"]
        # (a file address of the module: `-s` keeps it one before the program is loaded)
        address = next(v for v, n in code_symbols(cache, exe) if n == stop[0]) + stop[1]
        cmds = [f"breakpoint set -s {Path(exe).name} -a {address:#x}", "run", "bt 8",
                "frame variable", "frame select 1", "frame variable", "frame select 0",
                "thread step-out"]
        argv += [a for c in cmds for a in ("-o", c)] + ["--", exe, *args]
    out = normal(run(argv, cache, {"UNSPLIT_DEBUGINFO_BACKGROUND": "0"}))
    # From the run on: setting the breakpoint names each binary's own address. Left out too:
    # the plugin's load line, and the process's id.
    out = out[out.find("(lldb) run"):] if debugger == "lldb" else re.sub(
        r"^Breakpoint \d+ at .*$", "", out, flags=re.M)
    return [line.strip() for line in out.splitlines() if line.strip()
            and not line.startswith("unsplit:") and "process" not in line.lower()
            and "LWP" not in line]


def check_gcc_pgo(p: Program, cache: Path) -> None:
    """The GCC PGO build at the first stop in its own cold code of each run: every view with
    the plugin against the same view without it (GCC's DWARF covers `.cold`: the plugin may
    add a fragment tag, nothing else may change)."""
    exe = p.gcc_pgo
    rows = cold_rows(cache, p.name, exe=exe)
    print(f"{exe} (GCC PGO): {len({r[1] for r in rows})} cold fragments, {len(rows)} "
          f"statement rows")
    totals = collections.Counter[str]()
    seen: set[int] = set()
    for run_name, args in p.runs.items():
        p.prepare(cache)
        stop = first_cold_stop(cache, p.name, args, [r for r in rows if r[2] not in seen], exe)
        if stop is None:
            print(f"  {run_name}: no stop in cold code")
            continue
        seen.update(r[2] for r in rows if r[1] == stop[0])
        at, core_file = f"'{stop[0]}'+{stop[1]}", f"gcc.{run_name}.core"
        p.prepare(cache)
        core(cache, exe, at, args, core_file)
        said = []
        for kind, view in VIEWS:
            want, got = view(cache, exe, core_file, False), view(cache, exe, core_file, True)
            totals.update({kind: len(want), f"{kind}_ours": right(got, want)})
            said.append(f"{kind} {right(got, want)}/{len(want)}")
            for v in (collections.Counter(want) - collections.Counter(got)):
                print(f"      {kind} missing: {v}")
        for debugger in ("gdb", "lldb"):
            p.prepare(cache)
            plain = live(cache, exe, stop, args, debugger, False)
            p.prepare(cache)
            ours = live(cache, exe, stop, args, debugger, True)
            totals.update({f"{debugger} live": len(plain),
                           f"{debugger} live_ours": right(ours, plain)})
            said.append(f"{debugger} live {right(ours, plain)}/{len(plain)} lines")
            for line in (collections.Counter(plain) - collections.Counter(ours)):
                print(f"      {debugger} live missing: {line[:200]}")
        print(f"  {run_name}: {stop[0]}+{stop[1]}: the same with the plugin as without: "
              + ", ".join(said))
    print("  total: " + ", ".join(f"{k} {totals[k + '_ours']}/{totals[k]}" for k in (
        "gdb", "lldb", "dap", "mi", "gdb live", "lldb live")))


def check(p: Program) -> None:
    cache = ROOT / "bench" / "realworld" / f"{p.project or p.name}-cache"
    build(p, cache)
    if p.gcc_pgo:
        check_gcc_pgo(p, cache)
    rows = cold_rows(cache, p.name)
    print(f"{p.name}: {len({r[1] for r in rows})} cold fragments, {len(rows)} statement rows")
    totals = collections.Counter[str]()
    seen: set[int] = set()  # a fragment stopped in once is not a stop again: other code
    for run_name, args in p.runs.items():
        p.prepare(cache)
        chosen = [r for r in rows if r[2] not in seen]
        if run_name in p.within:
            part, line = p.within[run_name]
            at = {r[0] for r in cold_rows(cache, p.name, line)}
            chosen = [r for r in chosen if part in r[1] and r[0] in at]
        stop = first_cold_stop(cache, p.name, args, chosen)
        if stop is None:
            print(f"  {run_name}: no stop in cold code")
            continue
        seen.update(r[2] for r in rows if r[1] == stop[0])
        bol, pre = f"bol.{run_name}.core", f"pre.{run_name}.core"
        p.prepare(cache)
        core(cache, f"bol/{p.name}", f"'{stop[0]}'+{stop[1]}", args, bol)
        p.prepare(cache)
        at_input = input_location(cache, p.name, *stop)
        core(cache, f"pre/{p.name}", "'{}'+{}".format(*at_input), args, pre)
        truth = gdb_values(cache, f"pre/{p.name}", pre, False)
        ours = gdb_values(cache, f"bol/{p.name}", bol, True)
        twin = gdb_values(cache, f"twn/{p.name}", bol, False)
        print(f"  {run_name}: {stop[0]}+{stop[1]}: GDB {len(truth)} values on the input, with "
              f"the plugin {right(ours, truth)} right, BOLT's twin {right(twin, truth)}")
        totals.update(gdb=len(truth), gdb_ours=right(ours, truth), gdb_twin=right(twin, truth))
        for kind, view in (("lldb", lldb_values), ("dap", dap_values), ("mi", mi_values)):
            want = view(cache, f"pre/{p.name}", pre, False)
            try:
                got = view(cache, f"bol/{p.name}", bol, True)
            except TimeoutError:  # the driver's: the debugger answered nothing in time
                print(f"    {kind}: with the plugin, no answer in time")
                totals.update({kind: len(want)})
                continue
            print(f"    {kind}: {len(want)} values on the input, with the plugin "
                  f"{right(got, want)} right")
            totals.update({kind: len(want), f"{kind}_ours": right(got, want)})
            for v in (collections.Counter(want) - collections.Counter(got)):
                print(f"      missing: {v}")
        for v in (collections.Counter(truth) - collections.Counter(ours)):
            print(f"      gdb missing: {v}")
        for debugger in ("gdb", "lldb"):  # live: the input stopped at BAT's input address
            p.prepare(cache)
            on_input = live(cache, f"pre/{p.name}", at_input, args, debugger, False)
            p.prepare(cache)
            shown = live(cache, f"bol/{p.name}", stop, args, debugger, True)
            print(f"    {debugger} live: {len(on_input)} lines on the input, with the plugin "
                  f"{right(shown, on_input)} the same")
            totals.update({f"{debugger} live": len(on_input),
                           f"{debugger} live_ours": right(shown, on_input)})
            for text in (collections.Counter(on_input) - collections.Counter(shown)):
                print(f"      missing: {text[:200]}")
    print(f"  total: GDB {totals['gdb']} values, plugin {totals['gdb_ours']} right, twin "
          f"{totals['gdb_twin']} right; " + ", ".join(
              f"{k} {totals[k + '_ours']}/{totals[k]}" for k in ("lldb", "dap", "mi",
                                                                 "gdb live", "lldb live")))
    debug = run([sys.executable, "-m", "unsplit", "debuginfo", f"bol/{p.name}", "-o",
                 f"{p.name}.debug"], cache, {"PYTHONPATH": str(ROOT / "plugin")})
    print("  " + (debug.strip().splitlines()[0] if debug.strip() else "unsplit debuginfo: -"))
    for f in (f"pre/{p.name}", f"{p.name}.debug", f"twn/{p.name}"):
        print(f"  --verify {f}: {verify(cache, f)}; {coverage(cache, f)}")
    print(f"  llvm-symbolizer-22 on {p.name}.debug: {symbolized(cache, p.name)}")


def main() -> int:
    for name in sys.argv[1:] or list(PROGRAMS):
        check(PROGRAMS[name])
    return 0


if __name__ == "__main__":
    sys.exit(main())
