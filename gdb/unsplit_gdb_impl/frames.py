"""The `unsplit` frame filter (GDB's gdb.frames API, gdb/python/lib/gdb/FrameDecorator.py).

Frames whose PC lies in a non-entry fragment are named by their logical procedure with a
fragment tag (``transfer [cold]``); every frame GDB has no line for (no DWARF for that code: a
BOLTed binary's hot part as much as its moved fragments) gets a file and line from the core
when it has one (locator.Locator.shown). Every other frame is passed through untouched. GDB
applies frame filters to ``bt`` and to MI's ``-stack-list-frames`` after
``-enable-frame-filters`` only, not to the stop line or ``frame``: stop.py and frame_hooks.py
cover those.

``info frame-filter`` lists it; ``disable frame-filter global unsplit`` turns it off, as do
``bb disable`` and ``bb enable`` through GdbHost.set_frame_naming.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import gdb  # type: ignore[import-not-found, unused-ignore]
from gdb.FrameDecorator import FrameDecorator  # type: ignore[import-not-found, unused-ignore]
from unsplit.model import Location

from .locator import Locator, gdb_has_line
from .report import report_internal

NAME = "unsplit"


class LineDecorator(FrameDecorator):  # type: ignore[misc]
    """A frame with the core's line where GDB has none (GDB's name stands)."""

    def __init__(self, base: Any, loc: Location | None) -> None:
        super().__init__(base)
        self._loc = loc
        self._has_line: bool | None = None

    def _gdb_has_line(self) -> bool:
        if self._has_line is None:  # asked by filename() and line(): one find_sal per frame
            self._has_line = gdb_has_line(self.inferior_frame())
        return self._has_line

    def _core_line(self) -> Location | None:
        loc = self._loc
        if loc is None or not loc.file or not loc.line or self._gdb_has_line():
            return None
        return loc

    def filename(self) -> Any:
        loc = self._core_line()
        return super().filename() if loc is None else loc.file

    def line(self) -> Any:
        loc = self._core_line()
        return super().line() if loc is None else loc.line


class MovedCodeDecorator(LineDecorator):
    """A frame in moved code, named as the procedure it belongs to."""

    def __init__(self, base: Any, loc: Location) -> None:
        super().__init__(base, loc)
        self._label = loc.label()

    def function(self) -> str:
        return self._label


class MinimalSymbolDecorator(LineDecorator):
    """A frame without debug information, named as GDB's own `bt` names it: by the minimal
    symbol at pc - 1 in a caller (gdb.Frame.name). Once a frame filter is active, GDB looks the
    name up at the pc itself, which after a call to a function that does not return is the next
    function or padding (an empty name, where GDB's own `bt` says `??`)."""

    def __init__(self, base: Any, loc: Location | None, name: str | None) -> None:
        super().__init__(base, loc)
        self._name = name or "??"

    def function(self) -> str:
        return self._name


class UnsplitFrameFilter:
    """Registered as gdb.frame_filters["unsplit"]."""

    def __init__(self, locator: Locator) -> None:
        self.name = NAME
        self.priority = 100
        self.enabled = True
        self.locator = locator

    def filter(self, frame_iter: Iterable[Any]) -> Iterator[Any]:
        try:
            self.locator.begin_backtrace()
            checked = True
        except Exception as e:
            report_internal(e, once=True)
            checked = False
        for decorator in frame_iter:
            yield self._decorate(decorator, checked)

    def _decorate(self, decorator: Any, checked: bool = False) -> Any:
        try:
            frame = decorator.inferior_frame()
            if frame.type() not in (gdb.NORMAL_FRAME, gdb.INLINE_FRAME):
                return decorator
            loc = self.locator.shown(frame, checked=checked)
            if loc is None or not loc.in_moved_code:
                if frame.function() is None:
                    return MinimalSymbolDecorator(decorator, loc, frame.name())
                return decorator if loc is None else LineDecorator(decorator, loc)
            if frame.type() == gdb.INLINE_FRAME and not _names_procedure(decorator, loc):
                return decorator  # a function inlined into moved code keeps its own name
            return MovedCodeDecorator(decorator, loc)
        except Exception as e:  # a bug here must never cost the user their backtrace
            report_internal(e, once=True)
            return decorator


def _names_procedure(decorator: Any, loc: Location) -> bool:
    name = decorator.function()
    return isinstance(name, str) and name in (loc.procedure, loc.fragment_symbol)


def install(locator: Locator) -> UnsplitFrameFilter:
    """Register the filter (replacing an earlier one of ours: loading twice is harmless)."""
    frame_filter = UnsplitFrameFilter(locator)
    old = gdb.frame_filters.get(NAME)
    if old is not None:
        frame_filter.enabled = old.enabled
    gdb.frame_filters[NAME] = frame_filter
    return frame_filter


def set_enabled(flag: bool) -> None:
    frame_filter = gdb.frame_filters.get(NAME)
    if frame_filter is not None:
        frame_filter.enabled = flag
