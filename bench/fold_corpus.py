"""Check: `unsplit fold` on real profiles of the corpus's programs, sample by sample.

    .venv/bin/python bench/fold_corpus.py [--corpus DIR] [--frequency HZ]

The programs are the builds bench/realworld.py and bench/realworld_sqlite.py leave under DIR
(default bench/realworld; read, never built here): Lua 5.4 BOLTed (`cache/build/bolt/lua`:
`-split-functions -split-all-cold -enable-bat`) and GCC PGO (`cache/build/gcc/lua`:
`-freorder-blocks-and-partition`), and sqlite3 BOLTed (`sqlite-cache/build/bolt/sq`); a build
that is not there is said and left out. Each runs a workload its training never ran (Lua: the
probe's error paths in a loop; sqlite3: SQL functions, window functions and errors the
training's statements do not use), under `perf record -e cpu-clock -g`.

The oracle, independent of unsplit: each frame's address is perf's module-relative address
through the program's PT_LOAD headers (llvm-readelf-22), checked against perf's symbol plus
offset (nm) where the name is unique; a caller's is its return address minus one. For BOLT,
perf2bolt-22 translates it through BAT to the input function (tests/bolt_truth.py), and where
BAT does not hold it (code BOLT left alone), the symbol table's function there; for GCC, the
symbol table's parent (`foo.cold` is `foo`). Each sample whose leaf is in the program, cut at
its first frame elsewhere, is folded by the oracle's names (`comm;outer;...;leaf`); `unsplit
fold` of the same samples must give the same stacks with the same counts, and `unsplit fold -i
perf.data` (whole stacks, every module) no fragment's symbol of the program. Results:
bench/results/fold-corpus.json.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from saving import save  # noqa: E402

from fixtures import toolbox  # noqa: E402
from tests import bolt_truth  # noqa: E402

LUA_WORK = """
local function try(f, ...) local ok, err = pcall(f, ...) return ok, err end
for _ = 1, %d do
  try(function() return nil + 1 end)
  try(function() local t = nil; return t.x end)
  try(function() return ("x"):rep(-1, 5) .. {} end)
  try(function() error({code = 1}) end)
  try(function() return 1 < "2" end)
  try(function() return 1 // 0 end)
  try(string.format, "%%d", 1.5)
  try(utf8.char, -1)
  try(function() return utf8.len("\\xff") end)
  local co = coroutine.wrap(function(a) local b = coroutine.yield(a + 1); error("co " .. b) end)
  try(co, 1); try(co, 2)
  try(load, "return +")
  try(function() local s = string.pack("i4", 7); return string.unpack("i8", s) end)
  try(function() return table.concat({1, {}, 3}) end)
  try(function() return select(-5, 1) end)
end
"""

SQL_WORK = [
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d) "
    "SELECT count(*), sum(length(printf('%%08x-%%s', i, hex(randomblob(8))))), "
    "max(upper(quote(i * 1.5))), sum(instr(replace(i, '1', 'ab'), 'b')) FROM n",
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d) "
    "SELECT max(s) FROM (SELECT sum(i) OVER (ORDER BY i %% 97 ROWS 5 PRECEDING) AS s, "
    "ntile(7) OVER (PARTITION BY i %% 13 ORDER BY i) AS t FROM n)",
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d) "
    "SELECT count(*) FROM n WHERE printf('%%x', i) GLOB '*a?b*' OR trim(i || '  ') LIKE '%%77%%'",
    "SELECT * FROM no_such_table",
    "SELECT 1 +",
]


def builds(corpus: Path, work: Path, repeat: int) -> list[dict[str, Any]]:
    """The corpus builds that are there: binary, kind, the command to profile."""
    lua = work / "work.lua"
    lua.write_text(LUA_WORK % repeat)
    sql = [s % (repeat * 40) if "%d" in s else s for s in SQL_WORK]
    found = []
    for name, kind, binary, command in (
            ("lua-bolt", "bolt", corpus / "cache/build/bolt/lua", [str(lua)]),
            ("lua-gcc-pgo", "gcc", corpus / "cache/build/gcc/lua", [str(lua)]),
            ("sqlite3-bolt", "bolt", corpus / "sqlite-cache/build/bolt/sq", sql)):
        if binary.is_file():
            found.append({"name": name, "kind": kind, "binary": binary,
                          "command": [str(binary), *command]})
        else:
            print(f"{name}: {binary} is not built (bench/realworld*.py build it); left out",
                  flush=True)
    return found


_FRAME = re.compile(r"^\s+([0-9a-f]+) (\S+?)(?:\+0x([0-9a-f]+))? \((.*)\)$")


def segments(binary: Path) -> list[tuple[int, int, int]]:
    """(p_offset, p_vaddr, p_filesz) of each PT_LOAD, by llvm-readelf-22."""
    out = subprocess.run(["llvm-readelf-22", "-lW", str(binary)], capture_output=True,
                         text=True, check=True).stdout
    return [(int(m[1], 16), int(m[2], 16), int(m[3], 16)) for m in re.finditer(
        r"^\s+LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+\S+\s+(0x[0-9a-f]+)", out, re.M)]


def plt_ranges(binary: Path) -> list[tuple[int, int]]:
    """[start, end) of the PLT sections (llvm-readelf-22): stubs, no procedure's code; perf
    calls them `[unknown]` or `name@plt`, a sample is cut there as at a frame elsewhere."""
    out = subprocess.run(["llvm-readelf-22", "-SW", str(binary)], capture_output=True,
                         text=True, check=True).stdout
    return [(int(m[1], 16), int(m[1], 16) + int(m[2], 16)) for m in re.finditer(
        r"\]\s+\.plt\S*\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", out)]


def file_address(segs: list[tuple[int, int, int]], relative: int) -> int | None:
    """perf's module-relative address (the file offset) as the ELF address."""
    for offset, vaddr, size in segs:
        if offset <= relative < offset + size:
            return relative - offset + vaddr
    return None


def own_samples(text: str, binary: Path, segs: list[tuple[int, int, int]],
                symbols: dict[str, list[int]], plt: list[tuple[int, int]]
                ) -> list[tuple[str, list[tuple[int, bool]], str]]:
    """(comm, [(ELF address, is a caller)], the sample's text cut there) of each sample whose
    leaf is in `binary`'s code, its frames up to the first one elsewhere (a PLT stub too)."""
    out = []
    for block in text.split("\n\n"):
        lines = block.strip("\n").splitlines()
        frames: list[tuple[int, bool]] = []
        for k, line in enumerate(lines[1:]):
            m = _FRAME.match(line)
            if m is None or m[4] != str(binary):
                break
            address = file_address(segs, int(m[1], 16))
            assert address is not None, line
            if any(lo <= address < hi for lo, hi in plt):
                break
            starts = symbols.get(m[2], [])
            if len(starts) == 1 and m[3] is not None:  # perf's symbol says the same
                assert starts[0] + int(m[3], 16) == address, (line, hex(address))
            frames.append((address, k > 0))
        if frames:
            out.append((lines[0].split()[0], frames,
                        "\n".join(lines[:len(frames) + 1]) + "\n\n"))
    return out


def oracle_names(kind: str, binary: Path, addresses: list[int], syms: list[Any], tmp: Path
                 ) -> tuple[dict[int, str], int]:
    """Each address's procedure by the oracle; how many BAT translated (BOLT)."""
    names: dict[int, str] = {}
    translated = {}
    if kind == "bolt":
        translated = bolt_truth.perf2bolt_targets(binary, addresses, tmp)
    for a in addresses:
        if a in translated:
            names[a] = translated[a][0]
            continue
        sym = toolbox.symbol_at(syms, a)
        assert sym is not None, f"{binary}: no symbol at {a:#x}"
        names[a] = toolbox.fragment_name(sym.name)[0]
    return names, len(translated)


def _unsplit(args: list[str], stdin: str | None, cache: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "plugin"), UNSPLIT_CACHE=cache)
    r = subprocess.run([sys.executable, "-m", "unsplit", *args], input=stdin, text=True,
                       capture_output=True, env=env, timeout=1800)
    if r.returncode != 0:
        raise SystemExit(f"unsplit {' '.join(args)}: exit {r.returncode}: {r.stderr[-500:]}")
    return r.stdout


def check(build: dict[str, Any], frequency: int, tmp: Path, cache: str) -> dict[str, Any]:
    binary: Path = build["binary"]
    data = tmp / f"{build['name']}.data"
    rec = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(frequency), "-g",
                          "-o", str(data), "--", *build["command"]], capture_output=True,
                         text=True, timeout=600, cwd=tmp)
    if not data.is_file():  # the workload's own exit status says nothing (SQL errors: 1)
        raise SystemExit(f"perf record {build['name']}: {rec.stderr[-500:]}")
    text = subprocess.run(["perf", "script", "-i", str(data)], capture_output=True, text=True,
                          timeout=600, check=True).stdout
    syms = toolbox.text_symbols(binary)
    by_name: dict[str, list[int]] = {}
    for s in syms:
        by_name.setdefault(s.name, []).append(s.start)
    own = own_samples(text, binary, segments(binary), by_name, plt_ranges(binary))
    asked = sorted({a - caller for _, frames, _ in own for a, caller in frames})
    names, translated = oracle_names(build["kind"], binary, asked, syms, tmp)
    expected: Counter[str] = Counter()
    moved = 0
    fragments = {s.name for s in syms if toolbox.fragment_name(s.name)[1] != "hot"}
    for comm, frames, _ in own:
        expected[";".join([comm, *(names[a - caller] for a, caller in reversed(frames))])] += 1
        leaf = toolbox.symbol_at(syms, frames[0][0])
        moved += leaf is not None and leaf.name in fragments
    ours = bolt_truth.folded_counts(
        _unsplit(["fold"], "".join(block for _, _, block in own), cache))
    wrong = sorted(set(ours) ^ set(expected), key=lambda s: -(ours[s] + expected[s]))
    whole = bolt_truth.folded_counts(_unsplit(["fold", "-i", str(data)], None, cache))
    named = {n for stack in whole for n in stack.split(";")}
    disagree = [(s, expected.get(s, 0), ours.get(s, 0)) for s in wrong[:5]]
    result: dict[str, Any] = {"samples": text.count("cpu-clock"), "own_samples": len(own),
              "moved_leaf_samples": moved, "addresses": len(asked),
              "bat_translated": translated, "stacks": len(expected),
              "stacks_agree": sum(1 for s in expected if ours.get(s) == expected[s]),
              "disagree": disagree,
              "fragment_names_in_whole_profile": sorted(named & fragments)[:10]}
    print(f"{build['name']:13} {result['samples']} samples, {len(own)} with their leaf in the "
          f"program ({moved} in a moved fragment), {len(asked)} addresses ({translated} by "
          f"BAT): {result['stacks_agree']} of {len(expected)} stacks as the oracle folds them; "
          f"fragment symbols in the whole profile's folded stacks: "
          f"{result['fragment_names_in_whole_profile'] or 'none'}", flush=True)
    for stack, theirs, mine in disagree:
        print(f"    oracle {theirs:5} unsplit {mine:5}  {stack[:160]}", flush=True)
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--corpus", type=Path, default=ROOT / "bench" / "realworld",
                   help="where bench/realworld*.py left their builds (read only)")
    p.add_argument("--frequency", type=int, default=5000, help="perf record -F")
    p.add_argument("--repeat", type=int, default=40000, help="the workloads' loop count")
    args = p.parse_args()
    results: dict[str, Any] = {"corpus": str(args.corpus)}
    failed = False
    with tempfile.TemporaryDirectory(prefix="unsplit-fold-corpus-") as tmp:
        cache = str(Path(tmp) / "cache")
        for build in builds(args.corpus, Path(tmp), args.repeat):
            result = results[build["name"]] = check(build, args.frequency, Path(tmp), cache)
            failed |= bool(result["disagree"] or result["fragment_names_in_whole_profile"])
    print(save("fold-corpus", results))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
