"""How the adapter reports its own bugs: one line, the traceback only with UNSPLIT_DEBUG=1."""

from __future__ import annotations

import os
import traceback

import gdb  # type: ignore[import-not-found, unused-ignore]

_said: set[str] = set()


def internal_message(e: BaseException) -> str:
    return (f"unsplit: internal error: {type(e).__name__}: {e} "
            "(set UNSPLIT_DEBUG=1 for the traceback)")


def report_internal(e: BaseException, *, once: bool = False) -> None:
    """Print a bug from a hook (frame filter, stop handler), where raising would hurt the user."""
    text = internal_message(e)
    if once and text in _said:
        return
    _said.add(text)
    if os.environ.get("UNSPLIT_DEBUG"):
        gdb.write("".join(traceback.format_exception(e)), gdb.STDERR)
    gdb.write(text + "\n", gdb.STDERR)
