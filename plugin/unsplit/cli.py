"""The `unsplit` command line: the core's answers without a debugger (docs/command-line.md). Names
are demangled in LLVM's wording, as llvm-symbolizer's; errors are one line on stderr and exit
status 1 (a bug: 2, as a usage error; UNSPLIT_DEBUG=1 for tracebacks); a check that finds
something exits with 3 (tools.EXIT_FOUND)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from unsplit import __version__, dependencies
from unsplit.errors import UnsplitError, internal_error
from unsplit.index.names.demangle import LLVM
from unsplit.tools import COMMANDS as TOOL_COMMANDS
from unsplit.tools import Outcome, tool_for

if TYPE_CHECKING:
    from unsplit.tools import Tool

# The modules that need pyelftools are imported inside the functions below, after main() has
# checked that it is installed (dependencies.missing), so a missing one is a line, not a traceback.


def _style(args: argparse.Namespace) -> str | None:
    return None if args.no_demangle else LLVM


def _where(args: argparse.Namespace) -> str:
    from unsplit.host import LoadedModule, StaticHost
    from unsplit.index.bolt import prebolt
    from unsplit.render.frames import where_text
    from unsplit.session import Session

    session = Session()
    index = session.index(args.exe)
    if args.input:
        prebolt.set_input(index.binary, args.input)
    host = StaticHost([LoadedModule(args.exe, 0)])
    out = []
    for text in args.address:
        address = host.evaluate_address(text)
        loc = index.locate(address)
        if args.json:
            out.append(json.dumps(loc.to_json(_style(args))))
        else:
            out.append(where_text(loc, address, _style(args)))
    return "\n".join(out)


def _core_command(name: str) -> Callable[[argparse.Namespace], str]:
    """A `bb` command run on one binary with no debugger (file addresses)."""

    def handler(args: argparse.Namespace) -> str:
        from unsplit.commands import COMMANDS
        from unsplit.host import LoadedModule, StaticHost
        from unsplit.session import Session

        host = StaticHost([LoadedModule(args.exe, 0)])
        style = _style(args)
        return COMMANDS[name].run(Session(lambda: style), host, args)

    return handler


def _columns() -> int:
    """The terminal's width as shutil.get_terminal_size() finds it ($COLUMNS, then stdout's
    terminal, else 80)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # no stdout, or not a terminal
            columns = 0
    return columns or 80


class _Formatter(argparse.HelpFormatter):
    """argparse's own help layout, given its width: argparse makes a formatter for every
    argument added, and its own finds the width through shutil, whose import (and its
    compression modules') costs a command more than building its parser."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_columns() - 2)


class _Parser(argparse.ArgumentParser):
    """A parser (the subcommands' too) laid out by _Formatter."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or (``command``) the one subcommand about to run: a tool's
    parser imports its module, and `where` needs none of them."""
    parser = _Parser(
        prog="unsplit", description="Explain hot/cold split code: procedures, fragments, lines.")
    parser.add_argument("--version", action="version", version=f"unsplit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=_Parser)
    if command in (None, "where"):
        _add_where(sub)
    if command in (None, "blocks"):
        _add_blocks(sub)
    if command is None:
        for module in _tool_modules():
            module.add_cli(sub)
    elif command in TOOL_COMMANDS:
        tool_for(command).add_cli(sub)
    return parser


def _add_where(sub: Any) -> None:
    where = sub.add_parser("where", help="explain file addresses of a binary")
    where.add_argument("--exe", required=True, metavar="BINARY", help="the ELF file")
    where.add_argument("--json", action="store_true", help="one JSON object per line")
    where.add_argument("--input", metavar="PRE_BOLT",
                       help="the pre-BOLT binary of a BOLTed BINARY (default: found by build-id)")
    where.add_argument("address", nargs="+", help="file virtual addresses (0x… or decimal)")
    _demangle_option(where)
    where.set_defaults(handler=_where)


def _add_blocks(sub: Any) -> None:
    from unsplit.commands import COMMANDS

    blocks = sub.add_parser("blocks", help="list a procedure's basic blocks")
    blocks.add_argument("--exe", required=True, metavar="BINARY", help="the ELF file")
    COMMANDS["blocks"].arguments(blocks)
    _demangle_option(blocks)
    blocks.set_defaults(handler=_core_command("blocks"))


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names when it is one we know, else None (the whole parser
    then says what is wrong, or prints the full help)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in ("where", "blocks", *TOOL_COMMANDS) else None


def _demangle_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-demangle", action="store_true",
                        help="print linkage names (`_Z7processPKii`), as llvm-symbolizer's "
                             "option")


def _tool_modules() -> list[Tool]:
    from unsplit.tools import tools

    return tools()


def main(argv: Sequence[str] | None = None) -> int:
    problem = dependencies.missing()
    if problem is not None:
        print(f"unsplit: {problem}", file=sys.stderr)
        return 1
    if argv is None:
        argv = sys.argv[1:]
    args = build_parser(_command(argv)).parse_args(argv)
    status = 0
    try:
        text = args.handler(args)
        if isinstance(text, Outcome):
            text, status = text
    except UnsplitError as e:
        print(f"unsplit: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # a bug: one line unless asked for more
        if os.environ.get("UNSPLIT_DEBUG"):
            raise
        print(internal_error(e), file=sys.stderr)
        return 2
    try:
        if text:
            print(text)
    except BrokenPipeError:  # `unsplit … | head`
        sys.stderr.close()
    return status
