"""Fragment sources: each turns one on-disk format of a Binary into model Procedures.

A source module exposes ``procedures(binary) -> list[Procedure]``; it returns [] when the binary
lacks its format. BAT's source returns a BatProcedures instead, which makes its procedures one
at a time when asked for (a BOLTed libLLVM has 129k). The index asks every source in PRIORITY
order and, per procedure (name and entry: static functions of several units share names),
keeps the fragments no earlier (more precise) source placed and the blocks of the first
source that has blocks at that entry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from unsplit.elf.binary import Binary
from unsplit.index.model import Procedure

if TYPE_CHECKING:
    from unsplit.index.sources.bat import BatProcedures

SourceFn = Callable[[Binary], "list[Procedure] | BatProcedures"]


def registered() -> list[tuple[str, SourceFn]]:
    """(name, function) of every source, most precise first.

    Formats that record the original layout exactly come before naming conventions. MIP's
    map comes last: it knows only the part of a function that holds its entry, so the
    fragments of a split function are the symbols', and MIP gives their blocks.
    """
    from unsplit.index.sources import bat, bb_addr_map, mip, split_info, symbols

    return [
        ("split_info", split_info.procedures),
        ("bat", bat.procedures),
        ("bb_addr_map", bb_addr_map.procedures),
        ("symbols", symbols.procedures),
        ("mip", mip.procedures),
    ]
