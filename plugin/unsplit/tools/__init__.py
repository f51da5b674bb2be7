"""Command-line tools beyond `where`: each module registers its subcommands with add_cli()."""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple, Protocol, cast

# A check that ran and found something (`unsplit check-cfi`): not 1 (bad input) nor 2 (usage,
# or a bug), so a script can tell "found" from "could not look".
EXIT_FOUND = 3


class Outcome(NamedTuple):
    """What a subcommand prints and the exit status it asks for (a plain str means 0)."""

    text: str
    status: int


class Tool(Protocol):
    def add_cli(self, subparsers: Any) -> None: ...


# The subcommands each tool module registers: `unsplit CMD ...` imports CMD's module alone
# (importing every tool costs more than a warm `unsplit symbolize` answer).
COMMANDS = {
    "bbmap": "bbmap", "ranges": "annotate", "lines": "annotate", "annotate": "annotate",
    "symbolize": "symbolize", "frames": "frames", "bt": "unwind", "lldb-cfi": "lldb_cfi",
    "debuginfo": "debuginfo", "cache": "cache", "fold": "perf_fold", "perf-script": "perf_fold",
    "breakpad": "breakpad", "perf-symfs": "perf_symfs", "check-cfi": "check_cfi",
}


def tool_for(command: str) -> Tool:
    """The module that registers subcommand ``command`` (a key of COMMANDS)."""
    return cast("Tool", importlib.import_module(f"{__name__}.{COMMANDS[command]}"))


def tools() -> list[Tool]:
    """Every tool module, in the order `unsplit --help` lists them."""
    from unsplit.tools import (
        annotate,
        bbmap,
        breakpad,
        cache,
        check_cfi,
        debuginfo,
        frames,
        lldb_cfi,
        perf_fold,
        perf_symfs,
        symbolize,
        unwind,
    )

    return [bbmap, annotate, symbolize, frames, unwind, lldb_cfi, check_cfi, debuginfo, breakpad,
            perf_fold, perf_symfs, cache]
