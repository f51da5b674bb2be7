"""The corrected stop line (gdb.events.stop, and gdb.events.before_prompt for core files).

GDB 13 prints the stop location itself, before Python's stop observers run, and frame filters
do not reach it; so when the program stops inside moved code, one more line follows GDB's:
the core's render.frame_text for frame 0 (``#0  0x… in transfer [cold]+0x39 at crash.c:32``).
Loading a core file is not a stop event: the first prompt after a core appears prints the same
line once.
"""

from __future__ import annotations

import os
from typing import Any

import gdb  # type: ignore[import-not-found, unused-ignore]
from unsplit.names import names_procedure
from unsplit.render import frame_text

from .locator import Locator
from .report import report_internal


def _styled(text: str, label: str) -> str:
    """Colour the procedure name as GDB colours function names, when styling is on (GDB itself
    does not style output to a pipe, whatever `set style enabled` says)."""
    try:
        if not gdb.parameter("style enabled") or not os.isatty(1):
            return text
        colour = str(gdb.parameter("style function foreground") or "yellow")
    except (gdb.error, RuntimeError):
        return text
    codes = {"black": 30, "red": 31, "green": 32, "yellow": 33, "blue": 34, "magenta": 35,
             "cyan": 36, "white": 37}
    code = codes.get(colour)
    if code is None:
        return text
    return text.replace(label, f"\x1b[{code}m{label}\x1b[m", 1)


class StopPrinter:
    def __init__(self, locator: Locator) -> None:
        self.locator = locator
        self.enabled = True
        self._core_seen: tuple[object, ...] | None = None

    def line(self) -> str | None:
        """The corrected line for the newest frame, or None when it is not in moved code."""
        try:
            frame = gdb.newest_frame()
        except gdb.error:
            return None
        loc = self.locator.moved(frame)
        if loc is None:
            return None
        name = frame.name()
        if frame.type() == gdb.INLINE_FRAME and loc.procedure is not None and \
                name != loc.fragment_symbol and not names_procedure(name or "", loc.procedure):
            return None  # GDB's line names the inlined function, rightly (as `bt` does)
        style = self.locator.session.demangling()
        return _styled(frame_text(0, loc, style), loc.label(style))

    def on_stop(self, event: Any) -> None:
        if not self.enabled:
            return
        try:
            text = self.line()
            if text:
                gdb.write(text + "\n")
        except Exception as e:
            report_internal(e, once=True)

    def on_prompt(self) -> None:
        """After a core file is loaded, say where its frame 0 is, once per core."""
        try:
            inferior = gdb.selected_inferior()
            connection = getattr(inferior, "connection", None)
            if connection is None or getattr(connection, "type", None) != "core":
                self._core_seen = None
                return
            key = (inferior.num, inferior.pid, gdb.current_progspace().filename)
            if key == self._core_seen:
                return
            self._core_seen = key
            if self.enabled:
                text = self.line()
                if text:
                    gdb.write(text + "\n")
        except Exception as e:
            report_internal(e, once=True)
