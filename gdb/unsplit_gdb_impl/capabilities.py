"""What the running GDB's Python API offers, probed by attribute (never by version number): frame
filters (without them `bt` keeps GDB's names), ``gdb.Breakpoint.locations`` (GDB 13+),
``gdb.missing_debug`` (GDB 15+). docs/versions.md says which GDB has which."""

from __future__ import annotations

import importlib
from typing import Any


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def has_frame_filters(gdb: Any) -> bool:
    return isinstance(getattr(gdb, "frame_filters", None), dict) and \
        _importable("gdb.FrameDecorator")


def has_unwinders(gdb: Any) -> bool:
    """Python frame unwinders (module ``gdb.unwinder``, PendingFrame.level: GDB 11+)."""
    return _importable("gdb.unwinder") and hasattr(getattr(gdb, "PendingFrame", None), "level")


def missing_notes(gdb: Any) -> list[str]:
    """One line per feature this GDB cannot have, saying what is missing and what still works."""
    notes = []
    if not has_frame_filters(gdb):
        notes.append("unsplit: this GDB has no Python frame filters (gdb.frame_filters, "
                     "gdb.FrameDecorator): bt keeps GDB's own frame names; bb commands work")
    return notes
