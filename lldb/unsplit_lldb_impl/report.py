"""How the adapter reports its own bugs: the core's one line (unsplit.errors.internal_error),
the traceback only with UNSPLIT_DEBUG=1. Every handler LLDB calls (commands, frame-format
callbacks, the `bb break` resolver, the stop hook, the stepping plan) reports through here;
a handler never raises into LLDB, which would print a traceback or drop what it was doing."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable

from unsplit.errors import internal_error


def with_traceback(e: BaseException) -> str:
    """The line for `e`, after its traceback when UNSPLIT_DEBUG is set."""
    line = internal_error(e)
    if os.environ.get("UNSPLIT_DEBUG"):
        return "".join(traceback.format_exception(e)) + line
    return line


def report_internal(e: BaseException, said: set[str] | None = None,
                    write: Callable[[str], object] | None = None) -> str:
    """Print the bug `e` (to stderr, or with `write`): once per text in `said` where given (a
    `bt` calls a callback for every frame). Returns the line."""
    line = internal_error(e)
    if said is not None:
        if line in said:
            return line
        said.add(line)
    text = with_traceback(e) + "\n"
    if write is not None:
        write(text)
    else:
        sys.stderr.write(text)
    return line
