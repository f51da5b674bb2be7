"""`unsplit bt CORE --exe BINARY`: an alias of `unsplit frames` (tools/frames.py).

`unsplit frames` unwinds every thread of a core through the CFI of each frame's fragment by
default (no debugger; `--debugger gdb|lldb` to use one): what `unsplit bt` was written for, so
the two share one implementation, options and output.
"""

from __future__ import annotations

from typing import Any

from unsplit.tools import frames


def add_cli(subparsers: Any) -> None:
    """Register `bt` on the `unsplit` argparse subparsers, as `frames` under another name."""
    frames.add_cli(subparsers, "bt", "alias of `unsplit frames`: backtrace a core through the "
                   "CFI (.eh_frame), no debugger")
