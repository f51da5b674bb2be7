"""`unsplit lldb-cfi BINARY...`: write the CFI symbol files LLDB needs in moved fragments
(unsplit.debug.breakpad) into the cache the LLDB plugin searches, ahead of any session (for
lldb-dap, SB API scripts); ``--print`` to stdout, ``--cache DIR`` also by build-id."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from unsplit.debug import breakpad
from unsplit.errors import UnsplitError
from unsplit.session import Session


def _run(args: argparse.Namespace) -> str:
    session = Session()
    records: list[dict[str, Any]] = []
    failed = []
    for path in args.binary:
        try:
            index = session.index(path)
            record: dict[str, Any] = {"binary": path, "path": None, "written": False}
            if index.binary.dwarf_binary is not None:
                record["skipped"] = "has DWARF: LLDB unwinds with its ranges"
            else:
                text = breakpad.for_index(index)
                if text is None:
                    record["skipped"] = "no moved fragments with CFI"
                elif args.print:
                    sys.stdout.write(text)
                    continue
                elif index.binary.build_id is None:
                    record["skipped"] = ("no build-id: LLDB cannot find it; use --print and "
                                         "`target symbols add`")
                else:
                    # where the plugin looks first (a BOLT output's build-id is shared)
                    record["kept"] = breakpad.kept_path(index.binary, root=args.cache)
                    written = not breakpad.made_from(record["kept"], index.binary)
                    if written:
                        breakpad.write(record["kept"], text)
                    if args.cache is not None or breakpad.alone_under_build_id(index.binary):
                        record["path"], record["written"] = breakpad.save(index, text,
                                                                          root=args.cache)
                    else:  # never by build-id in the plugin's cache: LLDB would find it there
                        record["path"], record["written"] = record["kept"], written
                    record["functions"] = text.count("STACK CFI INIT")
        except UnsplitError as e:
            failed.append(f"unsplit: {path}: {e}")
            continue
        records.append(record)
    for line in failed:
        print(line, file=sys.stderr)
    if args.print:
        return ""
    if args.json:
        out = json.dumps(records)
    else:
        out = "\n".join(f"{r['binary']}: " + (r.get("skipped") or (
            f"{r['functions']} functions' CFI " + ("written to " if r["written"] else
                                                   "already in ") + r["path"]))
            for r in records)
    if failed:
        print(out)
        raise UnsplitError(f"{len(failed)} of {len(args.binary)} binaries failed")
    return out


def add_cli(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "lldb-cfi", help="write the CFI symbol files LLDB needs to unwind moved fragments",
        description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("binary", nargs="+", help="ELF files (executables, shared libraries)")
    p.add_argument("--cache", metavar="DIR",
                   help=f"where to write (default: {breakpad.cache_dir()}, from $UNSPLIT_CACHE "
                        "or $XDG_CACHE_HOME, where a BOLT output's file is kept by digest "
                        "only); in DIR, every file is also written by build-id, which all BOLT "
                        "outputs of one input share")
    p.add_argument("--json", action="store_true", help="one JSON list of what was done")
    p.add_argument("--print", action="store_true", help="write the symbol file to stdout")
    p.set_defaults(handler=_run)
