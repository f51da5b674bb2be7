"""`unsplit debuginfo BINARY [--input PRE_BOLT] (-o FILE | --build-id-dir DIR) [--json]`: a
separate debug file of what unsplit knows of a split module (a BOLT output: its input's DWARF
moved through BAT; else DWARF 5 naming each procedure over its fragments, with its lines).
A module whose own DWARF covers its moved code is left to it (exit 0, nothing written)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from unsplit.errors import UsageError
from unsplit.render.lists import summarized


def output_path(build_id: bytes | None, build_id_dir: str, binary: str) -> str:
    """Where GDB, LLDB and debuginfod look for the debug file of build-id `build_id`."""
    if not build_id or len(build_id) < 2:
        raise UsageError(f"{binary}: no build-id note: give -o FILE instead of --build-id-dir")
    h = build_id.hex()
    return os.path.join(build_id_dir, ".build-id", h[:2], h[2:] + ".debug")


def _progress(text: str) -> None:
    """What a long first index or file says while it runs (as a debugging session says it)."""
    print(text, file=sys.stderr, flush=True)


def _run(args: argparse.Namespace) -> str:
    from unsplit.collector import collector_paused

    with collector_paused():  # over _write's imports too
        return _write(args)


def _write(args: argparse.Namespace) -> str:
    from unsplit.debuginfo.debug_file import make
    from unsplit.debuginfo.synthesize import has_own_dwarf
    from unsplit.index.bolt import prebolt
    from unsplit.index.cache.store import IndexStore
    from unsplit.index.module_index import IndexCache

    # the persistent index, as a debugging session opens it: a second run skips BAT's scan
    index = IndexCache(IndexStore(), _progress).open(args.binary)
    if args.input:
        prebolt.set_input(index.binary, args.input)
    report: dict[str, Any] = {"binary": args.binary, "written": None}
    if not index.has_moved_fragments():
        report["skipped"] = "no split procedure: nothing to add"
    elif has_own_dwarf(index):
        report["skipped"] = "its own DWARF already describes its moved code"
    else:
        path = args.output or output_path(index.binary.build_id, args.build_id_dir, args.binary)
        made = make(index, _progress)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(made.data)
        os.replace(tmp, path)  # a reader never sees half a file
        report.update(written=path, **made.report(), warnings=index.warnings)
    if args.json:
        return json.dumps(report)
    if report["written"] is None:
        return f"{args.binary}: {report['skipped']}; nothing written"
    text = _translated(report) if report["made_from"] == "input DWARF" else _synthesized(report)
    text.append(f"call frame information: {report['cfi_fdes']} FDEs (.debug_frame)"
                + (f", {report['cfi_fragments_not_whole']} fragments in part without one"
                   if report["cfi_fragments_not_whole"] else ""))
    problems = report["cfi_problems"]
    text += [f"warning: CFI {p}" for p in problems[:_SHOWN]]
    if len(problems) > _SHOWN:
        text.append(f"... and {len(problems) - _SHOWN} more (--json lists them all)")
    text += [f"warning: {w}" for w in index.warnings]
    return "\n".join(text)


def _translated(report: dict[str, Any]) -> list[str]:
    text = [f"{report['binary']}: wrote {report['written']}: the DWARF of {report['input']} "
            f"({report['units']} units), through BAT ({report['input_functions_placed']} "
            "functions moved)"]
    dropped = report["dropped"]
    if dropped:
        text.append("BAT gives no place to: " + ", ".join(f"{n} {what}" for what, n in
                                                          dropped.items()))
    lines = report["units_left_out"] + report["damaged"]
    text += lines[:_SHOWN]
    if len(lines) > _SHOWN:
        text.append(f"... and {len(lines) - _SHOWN:,} more (--json lists them all)")
    return text


_SHOWN = 10  # lines of their own (a unit left out, a damaged list: each says why)


def _synthesized(report: dict[str, Any]) -> list[str]:
    text = [f"{report['binary']}: wrote {report['written']}: {report['procedures']} procedures "
            f"({report['split_procedures']} split) in {report['units']} units, "
            f"{report['line_rows']} line rows"]
    without = report["split_without_lines"]
    if without:
        text.append(f"no source of lines describes {len(without):,} split procedures "
                    "(subprograms and ranges only): " + summarized(without))
    elif report["moved_bytes_without_lines"]:
        text.append(f"{report['moved_bytes_without_lines']} bytes of moved code have no line "
                    "(line 0)")
    return text


def add_cli(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "debuginfo", help="write a separate DWARF debug file for a split module",
        description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("binary", metavar="BINARY", help="the split ELF module")
    p.add_argument("--input", metavar="PRE_BOLT",
                   help="the pre-BOLT binary of a BOLTed BINARY (default: found by build-id)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("-o", "--output", metavar="FILE", help="the debug file to write")
    where.add_argument("--build-id-dir", metavar="DIR",
                       help="write DIR/.build-id/xx/rest.debug")
    p.add_argument("--json", action="store_true", help="say what was written as one JSON object")
    p.set_defaults(handler=_run)
