"""`unsplit cache info|clear|warm BINARY...`: the persistent index cache (unsplit.index.store).

    info  [BINARY...]   where the cache is and what it holds: per BINARY whether its index is
                        there and current; without BINARY every index file
    clear [BINARY...]   delete the indexes of BINARY (without BINARY: every index)
    warm  BINARY...     build the indexes now (a deploy step), so that no debugger session
                        pays for the first build
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from unsplit.elf.binary import Binary
from unsplit.errors import UnsplitError
from unsplit.index.module_index import ModuleIndex
from unsplit.index.store import IndexStore


def _info(store: IndexStore, paths: list[str]) -> list[dict[str, Any]]:
    if not paths:
        return [{"index": p, "size": size} for p, size in store.entries()]
    out = []
    for path in paths:
        binary = _open(path)
        index_path = store.path_for(binary)
        parts = store.load(binary)
        out.append({"binary": path, "index": index_path, "cached": parts is not None,
                    "size": os.path.getsize(index_path) if parts is not None else None})
        binary.close()
    return out


def _clear(store: IndexStore, paths: list[str]) -> list[dict[str, Any]]:
    if not paths:
        return [{"removed": p} for p in store.remove()]
    out = []
    for path in paths:
        binary = _open(path)
        out.append({"binary": path, "removed": store.remove(binary)})
        binary.close()
    return out


def _warm(store: IndexStore, paths: list[str]) -> list[dict[str, Any]]:
    out = []
    for path in paths:
        binary = _open(path)
        was = store.load(binary) is not None
        start = time.perf_counter()
        index = ModuleIndex(binary, store) if not was else None
        seconds = time.perf_counter() - start
        cached = was or store.load(binary) is not None
        record: dict[str, Any] = {"binary": path, "index": store.path_for(binary),
                                  "built": not was, "cached": cached}
        if index is not None:
            record["seconds"] = round(seconds, 3)
            if index.warnings:
                record["warnings"] = index.warnings
        out.append(record)
        binary.close()
    return out


def _open(path: str) -> Binary:
    if not os.path.isfile(path):
        raise UnsplitError(f"{path}: no such file")
    return Binary(path)


def _text(action: str, store: IndexStore, records: list[dict[str, Any]]) -> str:
    lines = [f"index cache: {store.directory}"] if action == "info" else []
    for r in records:
        if action == "info" and "binary" not in r:
            lines.append(f"{r['index']}  {r['size']} bytes")
        elif action == "info":
            state = f"cached ({r['size']} bytes)" if r["cached"] else "not cached"
            lines.append(f"{r['binary']}: {state}: {r['index']}")
        elif action == "clear" and "binary" not in r:
            lines.append(f"removed {r['removed']}")
        elif action == "clear":
            lines.append(f"{r['binary']}: " + (", ".join(f"removed {p}" for p in r["removed"])
                                               or "nothing cached"))
        else:
            state = f"indexed in {r['seconds']} s" if r["built"] else "already cached"
            if not r["cached"]:
                state += " (not cached: see the warnings)"
            lines.append(f"{r['binary']}: {state}: {r['index']}")
    if action == "clear" and not records:
        lines.append("nothing cached")
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> str:
    store = IndexStore()
    records = {"info": _info, "clear": _clear, "warm": _warm}[args.action](store, args.binary)
    if args.json:
        return json.dumps({"cache": store.directory, args.action: records})
    return _text(args.action, store, records)


def add_cli(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "cache", help="the persistent index cache: info, clear, warm",
        description=__doc__.splitlines()[0] if __doc__ else None)
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in (("info", "where the cache is and what it holds"),
                       ("clear", "delete indexes (of BINARY, else all)"),
                       ("warm", "build the indexes of BINARY now")):
        a = actions.add_parser(name, help=text)
        a.add_argument("binary", nargs="+" if name == "warm" else "*", help="ELF files")
        a.add_argument("--json", action="store_true", help="one JSON object")
        a.set_defaults(handler=_run)
