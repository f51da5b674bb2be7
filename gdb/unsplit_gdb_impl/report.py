"""How the adapter reports its own bugs: the core's one line (unsplit.errors.internal_error),
the traceback only with UNSPLIT_DEBUG=1. Every handler GDB calls (commands, the frame filter and
its decorators, stop and frame-command hooks, breakpoint and objfile events, the missing-debug
handler) reports through here."""

from __future__ import annotations

import os
import traceback

import gdb  # type: ignore[import-not-found, unused-ignore]
from unsplit.errors import internal_error

_said: set[str] = set()


def report_internal(e: BaseException, *, once: bool = False) -> None:
    """Print a bug from a hook (frame filter, stop handler), where raising would hurt the user."""
    text = internal_error(e)
    if once and text in _said:
        return
    _said.add(text)
    if os.environ.get("UNSPLIT_DEBUG"):
        gdb.write("".join(traceback.format_exception(e)), gdb.STDERR)
    gdb.write(text + "\n", gdb.STDERR)
