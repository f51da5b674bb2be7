"""Fragment sources: each turns one on-disk format of a Binary into model Procedures.

A source module exposes ``procedures(binary) -> list[Procedure]``; it returns [] when the binary
lacks its format. The index asks every source in PRIORITY order and, per procedure name, keeps
the fragments of the first source that knows the procedure (the most precise one) and the
blocks of the first source that has blocks.
"""

from __future__ import annotations

from collections.abc import Callable

from ..binary import Binary
from ..model import Procedure

SourceFn = Callable[[Binary], list[Procedure]]


def registered() -> list[tuple[str, SourceFn]]:
    """(name, function) of every source, most precise first.

    Formats that record the original layout exactly come before naming conventions. MIP's
    map comes last: it knows only the part of a function that holds its entry, so the
    fragments of a split function are the symbols', and MIP gives their blocks.
    """
    from . import bat, bb_addr_map, mip, split_info, symbols

    return [
        ("split_info", split_info.procedures),
        ("bat", bat.procedures),
        ("bb_addr_map", bb_addr_map.procedures),
        ("symbols", symbols.procedures),
        ("mip", mip.procedures),
    ]
