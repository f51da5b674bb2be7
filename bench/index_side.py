"""Benchmark: the CPU of the index side of `unsplit debuginfo` on the BOLTed libLLVM
(bench/libllvm.py's cache) from an empty cache, in-process: the index opened (BAT's scan, its
lookup columns, the symbols, the persistent index saved) and every procedure's spans, with the
cycle collector off as the command line has it. The plugin is the one on PYTHONPATH: run it with
another checkout's ``plugin/`` to compare, alternately.

    PYTHONPATH=TREE/plugin .venv/bin/python bench/index_side.py [--scan FILE] [--repeat N]

``--scan FILE``: instead, BAT's scan alone (``formats.bat_scan._scan`` of the descriptor),
this plugin's and the one in FILE (another checkout's ``formats/bat_scan.py``) alternated in
one process, the least CPU of ``--repeat`` runs each, their columns compared."""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

LIBRARY = Path(__file__).resolve().parent / "libllvm" / "cache" / "libLLVM.so.22.1"


def index_side() -> None:
    os.environ["UNSPLIT_CACHE"] = tempfile.mkdtemp(prefix="unsplit-index-side-")
    start = time.process_time()
    from unsplit.index.cache.store import IndexStore
    from unsplit.index.module_index import IndexCache

    index = IndexCache(IndexStore(), lambda _: None).open(str(LIBRARY))
    opened = time.process_time()
    count = sum(1 for _ in index.procedure_spans())
    done = time.process_time()
    print(f"index opened {opened - start:.2f} s, {count} procedures' spans "
          f"{done - opened:.2f} s, CPU {done - start:.2f} s")


def scans(other: str, repeat: int) -> None:
    from unsplit.elf.binary import Binary
    from unsplit.formats import bat, bat_scan

    spec = importlib.util.spec_from_file_location("other_bat_scan", other)
    assert spec is not None and spec.loader is not None
    theirs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(theirs)
    desc, _ = bat.note_descriptor(Binary(str(LIBRARY)).section_data(bat.SECTION) or b"")

    def columns(s: Any) -> tuple[Any, ...]:
        return (s.addresses, s.offsets, s.cursors, s.hot_indices, s.parents, s.hot_count)

    best = {"this": float("inf"), "other": float("inf")}
    for _ in range(repeat):
        found = {}
        for name, scan in (("other", theirs._scan), ("this", bat_scan._scan)):
            start = time.process_time()
            found[name] = scan(desc)
            best[name] = min(best[name], time.process_time() - start)
        assert columns(found["this"]) == columns(found["other"]), "the scans differ"
    print(f"scan of {len(desc):,} bytes: this plugin {best['this']:.2f} s, {other} "
          f"{best['other']:.2f} s (least of {repeat}, the same columns)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--scan", metavar="FILE", help="BAT's scan alone, against FILE's")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not LIBRARY.exists():
        print(f"{LIBRARY}: missing; build it with bench/libllvm.py --build-only", file=sys.stderr)
        return 1
    gc.disable()  # as the command line has it (unsplit.collector)
    print(f"load {os.getloadavg()[0]:.1f}")
    if args.scan:
        scans(args.scan, args.repeat)
    else:
        index_side()
    return 0


if __name__ == "__main__":
    sys.exit(main())
