"""`unsplit cache info|clear|warm BINARY...`: the persistent index cache (unsplit.index.cache.store)
and the files kept beside it (LLDB's CFI symbol files, the debug files, the FDE ranges of
unsplit.debug.cfi_check): what it holds, deleting a binary's, building indexes ahead of time."""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from unsplit.cache_dir import cache_root
from unsplit.debug import breakpad, cfi_check
from unsplit.debuginfo import cache as debuginfo_cache
from unsplit.elf.binary import Binary
from unsplit.errors import UnsplitError
from unsplit.index.cache.store import IndexStore, remove_files
from unsplit.index.module_index import ModuleIndex

# The folders unsplit keeps under the cache root, any format version: (prefix, kind).
_KINDS = (("index-v", "index"), ("lldb-cfi-v", "lldb-cfi"), ("debuginfo-v", "debuginfo"),
          ("contested-v", "contested-cfi"), ("inputs-v", "verified-input"),
          ("help-v", "command-help"))


def _kept_files() -> list[tuple[str, str, int]]:
    """(kind, path, size) of every file in unsplit's folders of the cache root; nothing else
    there is touched (``$UNSPLIT_CACHE`` may be a folder other programs use too)."""
    root = cache_root()
    try:
        folders = sorted(os.listdir(root))
    except OSError:
        return []
    out = []
    for folder in folders:
        kind = next((k for prefix, k in _KINDS if folder.startswith(prefix)
                     and folder[len(prefix):].isdigit()), None)
        if kind is None:
            continue
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in files:
                p = os.path.join(dirpath, name)
                try:
                    out.append((kind, p, os.path.getsize(p)))
                except OSError:
                    continue
    return sorted(out, key=lambda e: e[1])


def _derived_files(binary: Binary) -> list[str]:
    """The debug file and LLDB CFI symbol files kept for `binary` that exist."""
    found = debuginfo_cache.kept_paths(binary)
    found.append(cfi_check.stored_path(binary))  # where FDEs compete (GDB's unwinder)
    if binary.build_id:
        by_id = breakpad.cache_path(binary.build_id)
        if breakpad.made_from(by_id, binary):
            found.append(by_id)
    by_file = os.path.join(breakpad.cache_dir(), "by-file")
    try:
        mine = f"{breakpad.fingerprint(binary.path)}-"
        found += [os.path.join(by_file, n) for n in sorted(os.listdir(by_file))
                  if n.startswith(mine)]
    except OSError:
        pass
    return [p for p in found if p is not None and os.path.isfile(p)]


def _info(store: IndexStore, paths: list[str]) -> list[dict[str, Any]]:
    if not paths:
        return [{"kind": kind, "index" if kind == "index" else "file": p, "size": size}
                for kind, p, size in _kept_files()]
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
        return [{"removed": p} for p in remove_files([p for _, p, _ in _kept_files()])]
    out = []
    for path in paths:
        binary = _open(path)
        out.append({"binary": path,
                    "removed": store.remove(binary) + remove_files(_derived_files(binary))})
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
            lines.append(f"{r.get('index') or r['file']}  {r['size']} bytes")
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
                       ("clear", "delete what is kept (for BINARY, else everything)"),
                       ("warm", "build the indexes of BINARY now")):
        a = actions.add_parser(name, help=text)
        a.add_argument("binary", nargs="+" if name == "warm" else "*", help="ELF files")
        a.add_argument("--json", action="store_true", help="one JSON object")
        a.set_defaults(handler=_run)
