"""The corrected stop location (gdb.events.stop; before_prompt for core files): where the program
stops in a frame the plugin shows differently (moved code, or a line GDB lacks), GDB's own
location is followed by the one GDB would print had it known the procedure and its line
(unsplit.render.stop), unless GDB's line already says it (the debug file loaded)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import gdb  # type: ignore[import-not-found, unused-ignore]
from unsplit.index.model.records import Location
from unsplit.index.names.matching import names_procedure
from unsplit.render import stop as stop_text
from unsplit.render.frames import frame_text

from . import capabilities
from .host import loaded_core
from .locator import Locator
from .report import report_internal
from .step_report import frame_output, parameter


def _styled(text: str, loc: Location, style: str | None) -> str:
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
    # The name as the line shows it: with its parameter types or without (stop_text).
    label = next((label for label in (loc.label(style), loc.label(style, parameters=False))
                  if label in text), None)
    return text if label is None else text.replace(label, f"\x1b[{code}m{label}\x1b[m", 1)


def _gdb_says_it(frame: gdb.Frame, loc: Location, described: bool,
                 just_printed: bool = False) -> bool:
    """GDB's own line for `frame` is already right: it names the procedure (not a fragment
    symbol) and the line the plugin would print (DWARF that covers the moved code), or any line
    where its debug info is unsplit's file (`described`), or, in a stop GDB has `just_printed`
    (not a core's frame printed as it loaded), no line where the plugin has none either (an
    input row of line 0). Then the plugin adds no second line."""
    if loc.procedure is None:
        return False
    name = frame.name() or ""
    if name == loc.fragment_symbol or not names_procedure(name, loc.procedure):
        return False
    if loc.line is None and (just_printed or not described):
        return just_printed
    try:
        sal = frame.find_sal()
    except gdb.error:
        return False
    if described:
        return sal.symtab is not None and bool(sal.line)
    return sal.symtab is not None and sal.line == loc.line and \
        os.path.basename(sal.symtab.filename) == os.path.basename(loc.file or "")


class StopPrinter:
    def __init__(self, locator: Locator,
                 after_core: Mapping[str, tuple[object, ...]] | None = None) -> None:
        self.locator = locator
        self.after_core = {} if after_core is None else after_core  # DebugInfoLoader's
        self.enabled = True
        self._core_seen: tuple[object, ...] | None = None
        self._busy = False

    def frame_line(self, frame: gdb.Frame) -> str | None:
        """The corrected line for `frame` as `bt` words it, or None when GDB's own stands."""
        loc = self._shown(frame)
        if loc is None or _gdb_says_it(frame, loc, self._described(loc)):
            return None
        style = self.locator.session.demangling()
        if not capabilities.has_frame_filters(gdb):  # no filtered `bt` to read alike
            return _styled(frame_text(frame.level(), loc, int(frame.pc()), style), loc, style)
        from gdb.FrameDecorator import (  # type: ignore[import-not-found, unused-ignore]
            FrameDecorator,
        )

        from .frames import decorated

        self._busy = True  # GDB's own `frame` line, asked below, runs our hook again
        try:
            native = frame_output(frame)
        finally:
            self._busy = False
        shown = decorated(FrameDecorator(frame), loc, style)
        text = stop_text.gdb_backtrace_line(frame.level(), native[0] if native else "",
                                            int(frame.pc()), str(shown.function()),
                                            shown.filename(), shown.line())
        return _styled(text, loc, style)

    def _shown(self, frame: gdb.Frame) -> Location | None:
        """What the plugin shows for `frame` (None: GDB's own frame stands): the procedure's
        frame, at its own line where code is inlined (never with a callee's line); a frame of
        a function inlined into moved code is GDB's (FrameNamer.name)."""
        loc = self.locator.shown(frame)
        return None if loc is None else loc.as_procedure()

    def _described(self, loc: Location) -> bool:
        return self.locator.session.namer.describes(loc.module)

    def line(self, just_printed: bool = False) -> str | None:
        """The corrected line for the newest frame (`just_printed`: after GDB's own report of
        it, with the debug info it has now)."""
        try:
            frame = gdb.newest_frame()
        except gdb.error:
            return None
        loc = self._shown(frame)
        if loc is None or _gdb_says_it(frame, loc, self._described(loc), just_printed):
            return None
        pc = int(frame.pc())
        style = self.locator.session.demangling()
        what = stop_text.gdb_what(str(parameter("print frame-info", "auto")), True)
        native = frame_output(frame)
        text = stop_text.gdb_stop(
            loc, pc, native_frame=native[0] if native else "", what=what,
            at_line_start=stop_text.at_line_start(self.locator.session, self.locator.host, pc),
            print_address=bool(parameter("print address", True)),
            read=self.locator.session.source_lines, style=style)
        if self.locator.session.verbose:
            if self._described(loc):  # the namer's Location has no line, offset nor block
                loc = (self.locator.session.namer.locate_all(pc) or loc).as_procedure()
            text += "\n" + stop_text.verbose_line(loc, pc, style)
        return _styled(text, loc, style)

    def on_frame_command(self) -> None:
        """After GDB printed the selected frame (`frame`, `up`, `down`, `info frame`)."""
        if not self.enabled or self._busy:
            return
        try:
            frame = gdb.selected_frame()
        except gdb.error:
            return
        try:
            text = self.frame_line(frame)
            if text:
                gdb.write(text + "\n")
        except Exception as e:
            report_internal(e, once=True)

    def on_stop(self, event: Any) -> None:
        if not self.enabled:
            return
        try:
            text = self.line(just_printed=True)
            if text:
                gdb.write(text + "\n")
        except Exception as e:
            report_internal(e, once=True)

    def on_prompt(self, _: object = None) -> None:
        """After a core file is loaded, say where its frame 0 is, once per core."""
        try:
            key = loaded_core()
            if key is None or key == self._core_seen:
                self._core_seen = key
                return
            self._core_seen = key
            if self.enabled:
                text = self.line() or self._again(key)
                if text:
                    gdb.write(text + "\n")
        except Exception as e:
            report_internal(e, once=True)

    def _again(self, core: tuple[object, ...]) -> str | None:
        """GDB's own frame 0 again where its module's debug file, written in the background,
        was loaded after GDB printed the core's frame without it (naming a fragment symbol):
        the line GDB prints with the file."""
        try:
            frame = gdb.newest_frame()
        except gdb.error:
            return None
        loc = self.locator.procedure_at(frame)
        if loc is None or self.after_core.get(loc.module) != core:
            return None
        self._busy = True  # GDB's own `frame` line, asked below, runs our hook again
        try:
            return "\n".join(frame_output(frame)) or None
        finally:
            self._busy = False
