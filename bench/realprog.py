"""The Brotli check of docs/debug-info.md ("Checked on programs nobody here built before"),
rebuilt: PyPI's `brotli` 1.2.1 sdist (its C sources and command-line tool, fetched once with
`pip download` into bench/realworld/brotli-cache, git-ignored), built as its users build it
and BOLTed:

    clang-22 -O2 -g -Ic/include c/common/*.c c/dec/*.c c/enc/*.c c/tools/brotli.c -lm
        -fuse-ld=lld -Wl,--emit-relocs; llvm-bolt-22 -instrument, brotli -q 1|5|9|11 and -d on
        its own sources, merge-fdata-22; llvm-bolt-22 -data= --enable-bat -reorder-blocks=ext-tsp
        --split-functions --split-all-cold --split-strategy=cdsplit (its DWARF dropped, as
        shipped); the twin: the same with --update-debug-sections

Then, at the first stop in cold code of three runs (a truncated file, `-q 0`, a corrupt file;
found by breaking on every statement row of the twin's cold fragments), a core of the BOLT
output and one of the input at the input address BAT names; `bt full 8` on each, value by value
(a frame's name and line, each argument, each local), GDB with the plugin on the BOLT output
(its debug file written at load) and plain GDB on the twin against plain GDB on the input;
`llvm-dwarfdump-22 --verify` of the plugin's file, the input and the twin.

    .venv/bin/python bench/realprog.py
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "bench" / "realworld" / "brotli-cache"
PACKAGE = "brotli==1.2.1"
BOLT = ["--enable-bat", "-reorder-blocks=ext-tsp", "--split-functions", "--split-all-cold",
        "--split-strategy=cdsplit"]
RUNS = {"truncated": ["-d", "-f", "trunc.br", "-o", "x.out"],
        "fastest": ["-f", "-q", "0", "train.txt", "-o", "x.br"],
        "corrupt": ["-d", "-f", "bad.br", "-o", "x.out"]}
ENV = {**os.environ, "UNSPLIT_CACHE": str(CACHE / "unsplit-cache")}


def run(cmd: list[str], cwd: Path = CACHE, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900,
                          env=env or ENV)
    return done.stdout + done.stderr


def build() -> None:
    """The input (pre/brotli), the BOLT output with the input beside it (bol/), the twin (twn/)."""
    if (CACHE / "twn" / "brotli").is_file():
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", PACKAGE])
    with tarfile.open(next(CACHE.glob("brotli-*.tar.gz"))) as tar:
        tar.extractall(CACHE)
    c = next(CACHE.glob("brotli-*/c"))
    sources = [str(p) for d in ("common", "dec", "enc") for p in sorted((c / d).glob("*.c"))]
    run(["clang-22", "-O2", "-g", f"-I{c / 'include'}", *sources, str(c / "tools/brotli.c"),
         "-lm", "-fuse-ld=lld", "-Wl,--emit-relocs", "-o", "brotli"])
    (CACHE / "train.txt").write_bytes(b"".join(Path(s).read_bytes() for s in sources))
    shutil.rmtree(CACHE / "prof", ignore_errors=True)
    (CACHE / "prof").mkdir()
    run(["llvm-bolt-22", "brotli", "-instrument", f"-instrumentation-file={CACHE}/prof/b",
         "-instrumentation-file-append-pid", "-o", "brotli.inst"])
    for q in ("1", "5", "9", "11"):
        run(["./brotli.inst", "-f", "-q", q, "train.txt", "-o", f"t{q}.br"])
        run(["./brotli.inst", "-f", "-d", f"t{q}.br", "-o", "t.out"])
    run(["merge-fdata-22", *map(str, (CACHE / "prof").glob("*.fdata")), "-o", "brotli.fdata"])
    data = (CACHE / "t9.br").read_bytes()
    (CACHE / "trunc.br").write_bytes(data[:500])
    bad = bytearray(data)
    for i in range(40):
        bad[2000 + (i * 7919) % 50000] ^= 0xFF
    (CACHE / "bad.br").write_bytes(bytes(bad))
    for d in ("pre", "bol/input", "twn"):
        (CACHE / d).mkdir(parents=True, exist_ok=True)
    for name, extra in (("bol/brotli", []), ("twn/brotli", ["--update-debug-sections"])):
        out = run(["llvm-bolt-22", "brotli", "-data=brotli.fdata", *BOLT, *extra, "-o", name])
        if not (CACHE / name).is_file():
            raise SystemExit(f"realprog: llvm-bolt-22 wrote no {name}: {out[-2000:]}")
    shutil.copy2(CACHE / "brotli", CACHE / "pre" / "brotli")
    shutil.copy2(CACHE / "brotli", CACHE / "bol" / "input" / "brotli")


def cold_rows() -> list[tuple[int, str, int]]:
    """(file address, fragment symbol, its start) of every statement row in the twin's cold
    fragments."""
    frags = []
    for line in run(["nm", "-S", "twn/brotli"]).splitlines():
        p = line.split()
        if len(p) == 4 and p[3].endswith(".cold"):
            frags.append((int(p[0], 16), int(p[0], 16) + int(p[1], 16), p[3]))
    rows = []
    for m in re.finditer(r"^0x([0-9a-f]{16})\s+([1-9]\d*)\s.*is_stmt",
                         run(["llvm-dwarfdump-22", "--debug-line", "twn/brotli"]), re.M):
        a = int(m.group(1), 16)
        rows += [(a, f[2], f[0]) for f in frags if f[0] <= a < f[1]]
    return sorted(set(rows))


def first_cold_stop(args: list[str], rows: list[tuple[int, str, int]]
                    ) -> tuple[str, int] | None:
    """The fragment symbol and offset of the first cold row the run reaches."""
    script = CACHE / "rows.gdb"
    script.write_text("".join(f"break *'{s}'+{a - start}\n" for a, s, start in rows))
    out = run(["gdb", "-nx", "-q", "-batch", "-x", str(script), "-ex", "run", "-ex",
               "info symbol $pc", "--args", "twn/brotli", *args])
    m = re.search(r"^(\S+\.cold) \+ (\d+) in section", out, re.M)
    return None if m is None else (m.group(1), int(m.group(2)))


def input_location(symbol: str, offset: int) -> str:
    """`PROC+OFF` of the input: BAT's input address of the BOLT output's cold code."""
    address = int(run(["nm", "bol/brotli"]).split(f" t {symbol}\n")[0].rsplit("\n", 1)[-1]
                  .split()[0], 16) + offset
    out = run([sys.executable, "-m", "unsplit", "where", "--exe", "bol/brotli", hex(address)],
              env={**ENV, "PYTHONPATH": str(ROOT / "plugin")})
    m = re.search(r"bolt\s+input (\S+)\+(0x[0-9a-f]+) at", out)
    if m is None:
        raise SystemExit(f"realprog: no BAT input for {symbol}+{offset}: {out}")
    return f"'{m.group(1)}'+{m.group(2)}"


def core(exe: str, where: str, args: list[str], name: str) -> None:
    run(["gdb", "-nx", "-q", "-batch", "-ex", f"break *{where}", "-ex", "run", "-ex",
         f"gcore {name}", "--args", exe, *args])


def values(exe: str, core_file: str, plugin: bool) -> list[tuple[str, ...]]:
    argv = ["gdb", "-nx", "-q", "-batch", "-iex", "set width 0"]
    if plugin:
        argv += ["-iex", f"source {ROOT / 'gdb' / 'unsplit_gdb.py'}"]
    # The debug file written at load (a first session's `bt full` comes before a file written
    # in the background: frames named and lined, no values yet; docs/debug-info.md).
    out = run([*argv, "-ex", "bt full 8", exe, core_file],
              env={**ENV, "UNSPLIT_DEBUGINFO_BACKGROUND": "0"})
    out = out[out.find("\n#0"):]
    out = re.sub(r"0x(0000)?5555(55[4-9a-f]|56|57|58|54)[0-9a-f]+", "H", out)  # code, heap
    out = re.sub(r" \[(cold|warm)[.\d]*\]", "", re.sub(r"#(\d+) +(H in )?", r"#\1 ", out))
    found: list[tuple[str, ...]] = []
    for line in out.splitlines():
        m = re.match(r"#\d+ (.*?) \((.*)\) at (\S+)$", line)
        if m:
            found.append(("frame", m.group(1), m.group(3)))
            found += [("arg", a) for a in re.split(r", (?=\w+=)", m.group(2))]
        elif " = " in line and not line.startswith("#"):
            found.append(("local", line.strip()))
    return found


def right(ours: list[tuple[str, ...]], truth: list[tuple[str, ...]]) -> int:
    left = collections.Counter(truth)
    n = 0
    for v in ours:
        if left[v] > 0:
            left[v] -= 1
            n += 1
    return n


def main() -> int:
    build()
    rows = cold_rows()
    print(f"brotli: {len({r[1] for r in rows})} cold fragments, {len(rows)} statement rows")
    totals = collections.Counter[str]()
    for name, args in RUNS.items():
        stop = first_cold_stop(args, rows)
        if stop is None:
            print(f"{name}: no stop in cold code")
            continue
        core("bol/brotli", f"'{stop[0]}'+{stop[1]}", args, f"bol.{name}.core")
        core("pre/brotli", input_location(*stop), args, f"pre.{name}.core")
        truth = values("pre/brotli", f"pre.{name}.core", False)
        ours = values("bol/brotli", f"bol.{name}.core", True)
        twin = values("twn/brotli", f"bol.{name}.core", False)
        print(f"{name}: {stop[0]}+{stop[1]}: {len(truth)} values on the input; with the "
              f"plugin {right(ours, truth)} right, BOLT's twin {right(twin, truth)} right")
        totals.update(truth=len(truth), ours=right(ours, truth), twin=right(twin, truth))
    print(f"total: {totals['truth']} values, plugin {totals['ours']} right, "
          f"twin {totals['twin']} right")
    debug = run([sys.executable, "-m", "unsplit", "debuginfo", "bol/brotli", "-o",
                 "brotli.debug"], env={**ENV, "PYTHONPATH": str(ROOT / "plugin")})
    print(debug.strip().splitlines()[0] if debug.strip() else "unsplit debuginfo: no output")
    for f in ("pre/brotli", "brotli.debug", "twn/brotli"):
        out = run(["llvm-dwarfdump-22", "--verify", f])
        errors = re.findall(r"^error: (.*?)(?: occurred (\d+) time)?", out, re.M)
        print(f"--verify {f}: " + ("no errors" if "No errors." in out else
                                    f"{len(re.findall(r'^error: DIE', out, re.M))} DIE errors"
                                    f" ({len(errors)} error lines)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
