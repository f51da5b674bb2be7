"""The `unsplit` frame filter (GDB's gdb.frames API, gdb/python/lib/gdb/FrameDecorator.py).

Frames whose PC lies in a non-entry fragment are named by their logical procedure with a
fragment tag (``transfer [cold]``), and get a file and line from the core when GDB has none
(no DWARF for that code). Every other frame is passed through untouched. GDB applies frame
filters to ``bt`` only (not to the stop line or ``frame``); stop.py covers the stop line.

``info frame-filter`` lists it; ``disable frame-filter global unsplit`` turns it off, as do
``bb disable`` and ``bb enable`` through GdbHost.set_frame_naming.

GDB prints a filtered backtrace with its Python printer (py-framefilter.c), which words some
frames differently from its own: a frame with no line in a shared library reads
`` at /lib/libX.so`` (the file name a decorator gives is always printed after " at ") where
GDB says `` from /lib/libX.so``, and a C++ function with DWARF reads with its parameter types.
So the filter takes part only in backtraces that have a frame in moved code (``enabled`` is
asked before each backtrace: the selected thread's frames are checked, from the cache); every
other backtrace is GDB's own, word for word. In one that has, a frame GDB has a function for
is named as GDB names it (``frame.name()``), and a frame without a line shows no file rather
than its library as if it were a source file: GDB 13's printer has no `` from LIB``.
(``info frame-filter`` asks ``enabled`` too: it says Yes while the stack has moved code.)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import gdb  # type: ignore[import-not-found, unused-ignore]
from gdb.FrameDecorator import FrameDecorator  # type: ignore[import-not-found, unused-ignore]
from unsplit.model import Location
from unsplit.names import names_procedure

from .locator import Locator
from .report import report_internal

NAME = "unsplit"
STACK_CHECK_LIMIT = 4096  # frames looked at for moved code before a backtrace


class MovedCodeDecorator(FrameDecorator):  # type: ignore[misc]
    """A frame in moved code, named as the procedure it belongs to."""

    def __init__(self, base: Any, loc: Location, style: str | None) -> None:
        super().__init__(base)
        self._loc = loc
        self._style = style  # GDB's `print demangle`, as unsplit.demangle's style
        self._has_line: bool | None = None

    def function(self) -> str:
        # GDB names a function it has DWARF for without its parameters (they follow as
        # arguments), one it knows by its ELF symbol alone with them. Whether GDB has a line
        # here says whether it has DWARF, and costs no more: filename() and line() ask it too.
        return self._loc.label(self._style, parameters=not self._gdb_has_line())

    def _gdb_has_line(self) -> bool:
        if self._has_line is None:  # asked by filename() and line(): one find_sal per frame
            sal = self.inferior_frame().find_sal()
            self._has_line = bool(sal.symtab and sal.symtab.filename)
        return self._has_line

    def filename(self) -> Any:
        if not self._gdb_has_line():  # ours, or none rather than the library (module doc)
            return self._loc.file if self._loc.file and self._loc.line else None
        return super().filename()

    def line(self) -> Any:
        if not self._gdb_has_line() and self._loc.file and self._loc.line:
            return self._loc.line
        return super().line()


class NativeDecorator(FrameDecorator):  # type: ignore[misc]
    """A frame outside moved code, worded as GDB's own `bt` words it (see the module doc)."""

    def function(self) -> Any:
        frame = self.inferior_frame()
        name = frame.name() if frame.type() in (gdb.NORMAL_FRAME, gdb.INLINE_FRAME) else None
        return name if name is not None else super().function()

    def filename(self) -> Any:
        sal = self.inferior_frame().find_sal()
        return sal.symtab.filename if sal.symtab and sal.symtab.filename else None


class UnknownFunctionDecorator(FrameDecorator):  # type: ignore[misc]
    """A frame GDB cannot name at all. Its own `bt` says `??`, but once any frame filter is
    active GDB prints an unresolvable address as an empty name; keep the `??`."""

    def function(self) -> str:
        return "??"


def _has_symbol(address: int) -> bool:
    format_address = getattr(gdb, "format_address", None)  # GDB 13+
    if format_address is None:
        return True
    return "<" in format_address(address)


class UnsplitFrameFilter:
    """Registered as gdb.frame_filters["unsplit"]."""

    def __init__(self, locator: Locator) -> None:
        self.name = NAME
        self.priority = 100
        self.chosen = True  # the user's choice: bb enable/disable, enable/disable frame-filter
        self.locator = locator

    @property
    def enabled(self) -> bool:
        """GDB asks before each backtrace: on when chosen and the stack has moved code."""
        try:
            return self.chosen and self._stack_has_moved_code()
        except Exception as e:  # never cost the user their backtrace
            report_internal(e, once=True)
            return self.chosen

    @enabled.setter
    def enabled(self, flag: bool) -> None:
        self.chosen = bool(flag)

    def _stack_has_moved_code(self) -> bool:
        try:
            frame = gdb.newest_frame()
        except gdb.error:
            return True  # no stack: nothing is printed (`info frame-filter` says the choice)
        self.locator.begin_backtrace()
        for _ in range(STACK_CHECK_LIMIT):
            if frame is None:
                return False
            if frame.type() in (gdb.NORMAL_FRAME, gdb.INLINE_FRAME) and \
                    self.locator.moved(frame, checked=True) is not None:
                return True
            frame = frame.older()
        return True  # deeper than we look: let the filter see it

    def filter(self, frame_iter: Iterable[Any]) -> Iterator[Any]:
        style = self.locator.session.demangling()  # `print demangle`, asked once per bt
        try:
            self.locator.begin_backtrace()
            checked = True
        except Exception as e:
            report_internal(e, once=True)
            checked = False
        for decorator in frame_iter:
            yield self._decorate(decorator, style, checked)

    def _decorate(self, decorator: Any, style: str | None, checked: bool = False) -> Any:
        try:
            frame = decorator.inferior_frame()
            if frame.type() not in (gdb.NORMAL_FRAME, gdb.INLINE_FRAME):
                return decorator
            loc = self.locator.moved(frame, checked=checked)
            if loc is None:
                if frame.function() is None and not _has_symbol(int(frame.pc())):
                    return UnknownFunctionDecorator(decorator)
                return NativeDecorator(decorator)
            if frame.type() == gdb.INLINE_FRAME and not _names_procedure(decorator, loc):
                return NativeDecorator(decorator)  # an inlined function keeps its own name
            return MovedCodeDecorator(decorator, loc, style)
        except Exception as e:  # a bug here must never cost the user their backtrace
            report_internal(e, once=True)
            return decorator


def _names_procedure(decorator: Any, loc: Location) -> bool:
    name = decorator.function()
    return isinstance(name, str) and loc.procedure is not None and (
        name == loc.fragment_symbol or names_procedure(name, loc.procedure))


def install(locator: Locator) -> UnsplitFrameFilter:
    """Register the filter (replacing an earlier one of ours: loading twice is harmless)."""
    frame_filter = UnsplitFrameFilter(locator)
    old = gdb.frame_filters.get(NAME)
    if old is not None:
        frame_filter.chosen = getattr(old, "chosen", True)
    gdb.frame_filters[NAME] = frame_filter
    return frame_filter


def set_enabled(flag: bool) -> None:
    frame_filter = gdb.frame_filters.get(NAME)
    if frame_filter is not None:
        frame_filter.enabled = flag
