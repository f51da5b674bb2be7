"""Command-line tools beyond `where`: each module registers its subcommands with add_cli()."""

from __future__ import annotations

from typing import Any, Protocol


class Tool(Protocol):
    def add_cli(self, subparsers: Any) -> None: ...


def tools() -> list[Tool]:
    """Every tool module, in the order `unsplit --help` lists them."""
    from . import annotate, bbmap, cache, debuginfo, frames, lldb_cfi, symbolize, unwind

    return [bbmap, annotate, symbolize, frames, unwind, lldb_cfi, debuginfo, cache]
