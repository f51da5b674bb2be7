"""Benchmark: the CPU a names-first writer (``python -m unsplit.debuginfo.background --names``)
spends on the BOLTed libLLVM (bench/libllvm.py's cache) before its names file exists, from an
empty cache: what lldb-dap's first ``stackTrace`` on the ``opt -O3`` core waits for. In-process,
so that the writer's own CPU and its children's (``--ahead``: BAT scanned in a forked child,
unsplit.index.bolt.scan_ahead) are told apart. The plugin is the one on PYTHONPATH: run it
with another checkout's ``plugin/`` to compare (``--ahead`` needs this round's)."""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

LIBRARY = Path(__file__).resolve().parent / "libllvm" / "cache" / "libLLVM.so.22.1"


class _Named(Exception):
    """The names file is written: the rest of the writer is not measured."""


def _named() -> None:
    raise _Named


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--ahead", action="store_true", help="scan BAT in a forked child meanwhile")
    ap.add_argument("--module", default=str(LIBRARY))
    args = ap.parse_args()
    os.environ["UNSPLIT_CACHE"] = tempfile.mkdtemp(prefix="names-writer-")
    wall, cpu = time.monotonic(), time.process_time()
    import unsplit
    from unsplit.debuginfo import background, cache
    from unsplit.debuginfo.debug_file import collector_paused
    from unsplit.index.cache.store import IndexStore
    from unsplit.index.module_index import IndexCache

    indexes = IndexCache(IndexStore(), None)
    binary = indexes.binary(args.module)
    if args.ahead:
        from unsplit.index.bolt import scan_ahead

        if scan_ahead.start(binary):
            background._meanwhile(binary)
    try:
        with collector_paused():
            cache.debug_file_for(args.module, indexes, names=True, named=_named)
    except _Named:
        pass
    else:
        print(f"{args.module}: no names file written", file=sys.stderr)
        return 1
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"{os.path.dirname(os.path.dirname(unsplit.__file__))} "
          f"{'ahead' if args.ahead else 'in one process'}: wall {time.monotonic() - wall:.2f} s, "
          f"CPU {time.process_time() - cpu:.2f} s + {children.ru_utime + children.ru_stime:.2f} s "
          f"its children")
    return 0


if __name__ == "__main__":
    sys.exit(main())
