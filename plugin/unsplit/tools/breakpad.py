"""`unsplit breakpad BINARY (-o FILE | --symbol-store DIR)`: a complete Breakpad symbol file whose
functions are named by their procedure (unsplit.debug.breakpad_symbols), where dump_syms names
moved code by its fragment; ``--symbol-store`` writes ``DIR/NAME/ID/NAME.sym``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, TextIO

from unsplit.debug import breakpad_symbols
from unsplit.errors import UsageError
from unsplit.index.bolt import bat_translate, prebolt
from unsplit.index.names.demangle import GNU
from unsplit.session import Session


class _Checked:
    """The file being written, whose failures (a full disk) are the user's one-line error."""

    def __init__(self, f: TextIO, shown: str) -> None:
        self.f, self.shown = f, shown

    def write(self, text: str) -> int:
        try:
            return self.f.write(text)
        except OSError as e:
            raise self._error(e) from None

    def flush(self) -> None:
        try:
            self.f.flush()
        except OSError as e:
            raise self._error(e) from None

    def _error(self, e: OSError) -> UsageError:
        return UsageError(f"{self.shown}: cannot write it ({e.strerror})")


@contextmanager
def _destination(path: str, shown: str) -> Iterator[_Checked]:
    """Where the records go as they are made: a file beside `path` that takes its place only
    once complete (a crash server polling the store never reads half a file)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        f = open(tmp, "w", encoding="utf-8")
    except OSError as e:
        raise UsageError(f"{shown}: cannot write it ({e.strerror})") from None
    out = _Checked(f, shown)
    try:
        yield out
        out.flush()
        f.close()
        try:
            os.replace(tmp, path)
        except OSError as e:
            raise out._error(e) from None
    finally:
        if not f.closed:
            with suppress(OSError):  # what could not be written is already the error
                f.close()
        if os.path.exists(tmp):
            os.unlink(tmp)


def _run(args: argparse.Namespace) -> str:
    if (args.output is None) == (args.symbol_store is None):
        raise UsageError("give one of -o FILE and --symbol-store DIR")
    index = Session().index(args.binary)
    if args.input:
        if not bat_translate.has_bat(index.binary):
            raise UsageError(f"{args.binary} has no BOLT address translation: --input is for "
                             "BOLTed binaries")
        prebolt.set_input(index.binary, args.input)
    style = None if args.no_demangle else GNU
    ident = breakpad_symbols.identity(index.binary)
    path = args.output or breakpad_symbols.store_path(args.symbol_store, ident)
    if args.output == "-":
        stdout = _Checked(sys.stdout, "stdout")
        counts = breakpad_symbols.write_symbol_file(index, stdout, style)
        stdout.flush()
    else:
        with _destination(os.path.abspath(path), path) as out:
            counts = breakpad_symbols.write_symbol_file(index, out, style)
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
