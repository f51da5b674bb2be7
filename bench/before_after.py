"""`make bench` on two trees in one run: every bench of the Makefile's recipe, old tree then new.

    .venv/bin/python bench/before_after.py --before TREE [--after TREE] [--only WORD]... [--twice]

TREE is another checkout of the project (e.g. `git worktree add /tmp/old COMMIT`, with `.venv`
and the bench caches linked as in main). The commands are read from the Makefile's `bench:`
recipe, so this runs what `make bench` runs; each is run in the old tree and then in the new one
(this checkout unless --after)
(with --twice, old-new-new-old, so that a load that grows or falls during the run weighs on
both). Each run uses its own tree's bench scripts and plugin (PYTHONPATH). Afterwards every
number a bench saved in bench/results/ that names a time, a ratio or a size is set side by
side, the best of a side's runs: bench/results/before-after.md (and .json).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "before-after"
MEASURE = re.compile(r"ratio|_x$|time|_s$|sec|_ms|ms$|_us|cpu|wall|rss|_mb|mb$|peak|bytes|size",
                     re.IGNORECASE)


def bench_commands(makefile: Path) -> list[str]:
    """The `bench:` recipe's lines, `$(PY)` and `$(GDB18)` left for `expand`."""
    lines = makefile.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("bench:"))
    recipe = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


def expand(command: str, tree: Path) -> str:
    return (command.replace("$(PY)", str(tree / ".venv" / "bin" / "python"))
            .replace("$(GDB18)", str(tree / ".debuggers" / "bin" / "gdb-18")))


def run(command: str, tree: Path, side: str, log: Any) -> dict[str, Any]:
    """Run one bench command in `tree`; keep the results files it wrote under OUT/side."""
    results = tree / "bench" / "results"
    before = {p: p.stat().st_mtime for p in results.glob("*.json")} if results.exists() else {}
    env = dict(os.environ, PYTHONPATH=str(tree / "plugin"))
    t0 = time.monotonic()
    proc = subprocess.run(expand(command, tree), shell=True, cwd=tree, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - t0
    log.write(f"\n===== {side}: {command} (exit {proc.returncode}, {wall:.0f} s)\n{proc.stdout}")
    log.flush()
    saved = []
    for path in sorted(results.glob("*.json")) if results.exists() else []:
        if before.get(path) != path.stat().st_mtime:
            (OUT / side).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, OUT / side / path.name)
            saved.append(path.name)
    return {"command": command, "side": side, "exit": proc.returncode, "wall_s": wall,
            "results": saved}


def flatten(data: Any, prefix: str = "") -> dict[str, float]:
    """Numeric leaves by path; a list's items are named by their string fields, else their place."""
    out: dict[str, float] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(data, list):
        for i, item in enumerate(data):
            label = str(i)
            if isinstance(item, dict):
                words = [str(v) for v in item.values() if isinstance(v, str) and len(v) < 40]
                label = "/".join(words) or label
            out.update(flatten(item, f"{prefix}[{label}]"))
    elif isinstance(data, (int, float)) and not isinstance(data, bool):
        out[prefix] = float(data)
    return out


def compare(olds: list[Path], news: list[Path]) -> list[dict[str, Any]]:
    """Each figure both sides saved, the best (lowest) of each side's runs (--twice: two)."""
    def best(dirs: list[Path], name: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for d in dirs:
            if (d / name).exists():
                for key, value in flatten(json.loads((d / name).read_text())).items():
                    out[key] = min(value, out.get(key, value))
        return out

    rows = []
    for name in sorted({p.name for d in news for p in d.glob("*.json")}):
        a, b = best(olds, name), best(news, name)
        a.update({key: a[old] for key, old in _renamed(a, b).items()})
        for key in sorted(a.keys() & b.keys()):
            if MEASURE.search(key.rsplit(".", 1)[-1]) and a[key] != 0:
                rows.append({"file": name, "key": key, "before": a[key], "after": b[key],
                             "after_over_before": b[key] / a[key]})
    return rows


def _renamed(a: dict[str, float], b: dict[str, float]) -> dict[str, str]:
    """b's key -> a's, for figures whose list item gained or lost a string field between the
    two trees (a bench that now also records its clock): the one of a's whose item names are
    a subset of b's, or the other way round, where just one is."""
    def parts(key: str) -> tuple[frozenset[str], str]:
        return frozenset(re.findall(r"[^\[\]/.]+", key.rsplit(".", 1)[0])), key.rsplit(".", 1)[-1]

    lonely = [k for k in a if k not in b]
    out = {}
    for key in b:
        if key in a:
            continue
        names, leaf = parts(key)
        found = [k for k in lonely if parts(k)[1] == leaf
                 and (parts(k)[0] <= names or names <= parts(k)[0])]
        if len(found) == 1:
            out[key] = found[0]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="the old tree")
    ap.add_argument("--after", type=Path, default=ROOT, help="the new tree (this one)")
    ap.add_argument("--only", action="append", help="only commands containing this word")
    ap.add_argument("--twice", action="store_true", help="old, new, new, old")
    args = ap.parse_args()
    old, new = args.before.resolve(), args.after.resolve()
    commands = [c for c in bench_commands(ROOT / "Makefile")
                if not args.only or any(w in c for w in args.only)]
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    runs = []
    with open(OUT / "log.txt", "w") as log:
        for command in commands:
            order = [(old, "before"), (new, "after")]
            if args.twice:
                order += [(new, "after2"), (old, "before2")]
            for tree, side in order:
                if not (tree / command.split()[1]).exists():
                    runs.append({"command": command, "side": side, "exit": None,
                                 "note": "not in this tree"})
                    continue
                print(f"{side}: {command}", flush=True)
                runs.append(run(command, tree, side, log))
                print(f"  exit {runs[-1]['exit']}, {runs[-1]['wall_s']:.0f} s", flush=True)
    rows = compare([OUT / "before", OUT / "before2"], [OUT / "after", OUT / "after2"])
    summary = {"before": str(old), "after": str(new), "runs": runs, "rows": rows}
    (ROOT / "bench" / "results" / "before-after.json").write_text(
        json.dumps(summary, indent=1) + "\n")
    md = ["| command | before: exit, wall | after: exit, wall |", "|---|---|---|"]
    for command in commands:
        sides = {r["side"]: r for r in runs if r["command"] == command}
        cells = [f"{sides[s]['exit']}, {sides[s].get('wall_s', 0):.0f} s" if s in sides else "-"
                 for s in ("before", "after")]
        md.append(f"| `{command}` | {cells[0]} | {cells[1]} |")
    md += ["", "| results file | figure | before | after | after/before |", "|---|---|---|---|---|"]
    md += [f"| {r['file']} | {r['key']} | {r['before']:.4g} | {r['after']:.4g} | "
           f"{r['after_over_before']:.2f} |" for r in rows]
    (ROOT / "bench" / "results" / "before-after.md").write_text("\n".join(md) + "\n")
    print(f"{len(rows)} figures side by side: bench/results/before-after.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
