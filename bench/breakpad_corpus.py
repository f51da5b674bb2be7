"""Check: `unsplit breakpad` of the corpus's programs, read back through Sentry's `symbolic`.

    .venv/bin/python bench/breakpad_corpus.py [--corpus DIR] [--addresses N]

The programs are the builds bench/realworld.py and bench/realworld_sqlite.py leave under DIR
(default bench/realworld; read, never built here): Lua 5.4 BOLTed (`cache/build/bolt/lua`, its
input `lua.input`), GCC PGO (`cache/build/gcc/lua`) and clang MFS (`cache/build/clang/lua`,
and `lua-nodwarf` without DWARF), and sqlite3 BOLTed (`sqlite-cache/build/bolt/sq`, input
`sq.input`); a build that is not there is said and left out. Each gets `unsplit breakpad
BINARY [--input INPUT] -o FILE`, timed, and N instructions of its moved fragments (nm's
`.cold`/`.warm` symbols, llvm-objdump-22's instructions; a fixed random choice) are looked up
in the file with `symbolic` (what Sentry's symbolicator reads it with).

The oracle, independent of unsplit: the function is perf2bolt-22's BAT translation of the
address for BOLT (tests/bolt_truth.py), the symbol table's parent for the compilers' splits
(`foo.cold` is `foo`); the line is llvm-symbolizer-22's in the pre-BOLT input at the translated
address (an instruction the input has there: BOLT's own jumps have no input line), or in the
binary itself (none for `lua-nodwarf`: no DWARF, no input). symbolic's outermost frame must be the
function at every address; its innermost frame's file and line must be the oracle's wherever
the oracle has a line, but for jumps BOLT rebuilt (`jmp`: no input line of their own).
Results: bench/results/breakpad-corpus.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from saving import save  # noqa: E402

from fixtures import toolbox  # noqa: E402
from tests import bolt_truth  # noqa: E402


def builds(corpus: Path) -> list[dict[str, Any]]:
    """The corpus builds that are there: binary, its pre-BOLT input, where its lines are."""
    lua, sq = corpus / "cache/build", corpus / "sqlite-cache/build"
    found = []
    for name, binary, inp, lines in (
            ("lua-bolt", lua / "bolt/lua", lua / "bolt/lua.input", None),
            ("lua-gcc-pgo", lua / "gcc/lua", None, lua / "gcc/lua"),
            ("lua-clang-mfs", lua / "clang/lua", None, lua / "clang/lua"),
            ("lua-clang-mfs-nodwarf", lua / "clang/lua-nodwarf", None, None),
            ("sqlite3-bolt", sq / "bolt/sq", sq / "bolt/sq.input", None)):
        if binary.is_file():
            found.append({"name": name, "binary": binary, "input": inp, "lines": lines})
        else:
            print(f"{name}: {binary} is not built (bench/realworld*.py build it); left out",
                  flush=True)
    return found


def base(binary: Path) -> int:
    """The first PT_LOAD's address, which Breakpad addresses are relative to."""
    segs = subprocess.run(["llvm-readelf-22", "-lW", str(binary)], capture_output=True,
                          text=True, check=True).stdout
    return min(int(line.split()[2], 16) for line in segs.splitlines()
               if line.strip().startswith("LOAD"))


def moved_instructions(binary: Path, count: int, seed: int = 27) -> list[tuple[int, str]]:
    """(address, fragment symbol) of `count` instructions of moved fragments, chosen at
    random (fixed seed), sorted."""
    code = bolt_truth.instructions(binary)
    out = []
    for s in toolbox.text_symbols(binary):
        if toolbox.fragment_name(s.name)[1] != "hot" and s.size:
            out += [(a, s.name) for a in code if s.start <= a < s.end]
    out = sorted(set(out))
    return sorted(random.Random(seed).sample(out, min(count, len(out))))


def check(build: dict[str, Any], count: int, tmp: Path, cache: str) -> dict[str, Any]:
    import symbolic  # requirements-dev.txt

    binary: Path = build["binary"]
    sym = tmp / f"{build['name']}.sym"
    args = [str(binary), "-o", str(sym), "--json"]
    if build["input"] is not None:
        args += ["--input", str(build["input"])]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "plugin"), UNSPLIT_CACHE=cache)
    start = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "unsplit", "breakpad", *args], text=True,
                       capture_output=True, env=env, timeout=1800)
    seconds = time.perf_counter() - start
    if r.returncode != 0:
        raise SystemExit(f"unsplit breakpad {binary}: exit {r.returncode}: {r.stderr[-500:]}")
    report = json.loads(r.stdout)
    moved = moved_instructions(binary, count)
    addresses = [a for a, _ in moved]
    lines: dict[int, tuple[str, int] | None]
    if build["input"] is not None:
        truth = bolt_truth.perf2bolt_targets(binary, addresses, tmp)
        names = {a: truth[a][0] for a in addresses}
        _, found = bolt_truth.input_lines(binary, build["input"], truth, addresses)
        lines = dict(zip(addresses, found, strict=True))
    else:
        names = {a: toolbox.fragment_name(s)[0] for a, s in moved}
        said = [None] * len(addresses) if build["lines"] is None else \
            bolt_truth.symbolize(build["lines"], addresses)
        lines = dict(zip(addresses, said, strict=True))
    cache_file = symbolic.Archive.open(str(sym)).get_object(arch="x86_64").make_symcache()
    code = bolt_truth.instructions(binary)
    at = base(binary)
    wrong_name, wrong_line, jumps, checked = [], [], 0, 0
    for a in addresses:
        frames = cache_file.lookup(a - at)
        if not frames or frames[-1].symbol != names[a]:
            wrong_name.append((hex(a), names[a], frames[-1].symbol if frames else None))
            continue
        line = lines[a]
        if line is None or line[1] <= 0:
            continue
        have = (os.path.basename(frames[0].full_path or ""), frames[0].line)
        if have == line:
            checked += 1
        elif code.get(a, "").startswith("jmp"):
            jumps += 1
        else:
            wrong_line.append((hex(a), line, have))
    result = {"seconds": round(seconds, 2), "bytes": sym.stat().st_size,
              "functions": report["functions"], "lines": report["lines"],
              "inlines": report["inlines"], "addresses": len(addresses),
              "lines_agree": checked, "rebuilt_jumps": jumps,
              "wrong_names": wrong_name[:5], "wrong_name_count": len(wrong_name),
              "wrong_lines": wrong_line[:5], "wrong_line_count": len(wrong_line)}
    print(f"{build['name']:22} {seconds:6.2f} s, {report['functions']} FUNC, {report['lines']} "
          f"lines, {report['inlines']} INLINE; of {len(addresses)} moved instructions: "
          f"{len(addresses) - len(wrong_name)} named as the oracle, {checked} lines agree, "
          f"{jumps} jumps BOLT rebuilt, {len(wrong_line)} other lines differ", flush=True)
    for row in wrong_name[:5] + wrong_line[:5]:
        print("    ", row, flush=True)
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--corpus", type=Path, default=ROOT / "bench" / "realworld",
                   help="where bench/realworld*.py left their builds (read only)")
    p.add_argument("--addresses", type=int, default=2000,
                   help="moved instructions checked per build")
    args = p.parse_args()
    results: dict[str, Any] = {"corpus": str(args.corpus)}
    failed = False
    with tempfile.TemporaryDirectory(prefix="unsplit-breakpad-corpus-") as tmp:
        cache = str(Path(tmp) / "cache")
        for build in builds(args.corpus):
            result = results[build["name"]] = check(build, args.addresses, Path(tmp), cache)
            failed |= bool(result["wrong_name_count"] or result["wrong_line_count"])
    print(save("breakpad-corpus", results))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
