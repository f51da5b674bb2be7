"""`unsplit breakpad BINARY (-o FILE | --symbol-store DIR)`: a complete Breakpad symbol file
whose functions are named by their procedure (unsplit.debug.breakpad_symbols).

dump_syms names moved code by its fragment's symbol (``transfer.cold``) and gives a BOLT output
without DWARF no lines; crash servers (Sentry's symbolicator, Socorro, rust-minidump) then
group one function's crashes under several names. Here every fragment is a ``FUNC`` of its
procedure with the lines and inlined calls ``unsplit where`` gives (for BOLTed code, the
pre-BOLT input's: ``--input``, or found by build-id), plus ``PUBLIC`` and ``STACK CFI`` records.
``--symbol-store DIR`` writes ``DIR/NAME/ID/NAME.sym``, the layout symbol servers read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from unsplit.debug import breakpad, breakpad_symbols
from unsplit.errors import UsageError
from unsplit.index import bat_translate, prebolt
from unsplit.index.demangle import GNU
from unsplit.session import Session


def _run(args: argparse.Namespace) -> str:
    if (args.output is None) == (args.symbol_store is None):
        raise UsageError("give one of -o FILE and --symbol-store DIR")
    index = Session().index(args.binary)
    if args.input:
        if not bat_translate.has_bat(index.binary):
            raise UsageError(f"{args.binary} has no BOLT address translation: --input is for "
                             "BOLTed binaries")
        prebolt.set_input(index.binary, args.input)
    records, counts = breakpad_symbols.symbol_file(index, None if args.no_demangle else GNU)
    ident = breakpad_symbols.identity(index.binary)
    text = "\n".join(records) + "\n"
    path = args.output or breakpad_symbols.store_path(args.symbol_store, ident)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        try:
            breakpad.write(os.path.abspath(path), text)
        except OSError as e:
            raise UsageError(f"{path}: cannot write it ({e.strerror})") from None
    if ident.code_id is None:
        print(f"unsplit: warning: {args.binary} has no build-id: its MODULE id is a hash of "
              "its code (as dump_syms makes one), and no INFO CODE_ID", file=sys.stderr)
    for w in index.warnings:
        print(f"unsplit: warning: {w}", file=sys.stderr)
    if args.output == "-":
        return ""
    summary = {"binary": args.binary, "path": path, "module_id": ident.module_id,
               "code_id": ident.code_id, "functions": counts.functions, "lines": counts.lines,
               "inlines": counts.inlines, "publics": counts.publics,
               "stack_cfi": counts.stack_cfi}
    if args.json:
        return json.dumps(summary)
    return (f"{path}: {counts.functions} functions, {counts.lines} line records, "
            f"{counts.inlines} inlined calls, {counts.publics} public symbols, "
            f"{counts.stack_cfi} functions' CFI")


def add_cli(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "breakpad", help="write a Breakpad symbol file, split code named by its procedure",
        description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("binary", metavar="BINARY", help="the ELF file (executable, shared library)")
    p.add_argument("--input", metavar="PRE_BOLT",
                   help="the pre-BOLT binary of a BOLTed BINARY (default: found by build-id)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the symbol file here (- for "
                   "stdout)")
    p.add_argument("--symbol-store", metavar="DIR",
                   help="write it to DIR/NAME/ID/NAME.sym, as symbol servers lay files out")
    p.add_argument("--json", action="store_true", help="say what was written as one JSON object")
    p.add_argument("--no-demangle", action="store_true",
                   help="linkage names (`_Z7processPKii`) rather than demangled ones")
    p.set_defaults(handler=_run)
