"""A gdb.Frame as the core's FrameView (unsplit.debug.frame_namer): what its naming rules read
of a frame, each answer fetched from GDB only when a rule asks, and once (the frame filter
asks the type, the pc and the line again as it prints the frame)."""

from __future__ import annotations

from typing import Any

import gdb  # type: ignore[import-not-found, unused-ignore]
from unsplit.debug.frame_namer import FrameKind, FrameView

_KINDS = {gdb.NORMAL_FRAME: FrameKind.NORMAL, gdb.INLINE_FRAME: FrameKind.INLINE,
          gdb.SIGTRAMP_FRAME: FrameKind.SIGNAL}
UNASKED: Any = object()  # GdbFrame(newer=...): not known, asked of GDB when needed


class GdbFrame:
    __slots__ = ("_has_line", "_name", "_newer", "_pc", "_sal", "_type", "frame")

    def __init__(self, frame: gdb.Frame, frame_type: int | None = None,
                 newer: GdbFrame | None = UNASKED) -> None:
        """`frame_type`: gdb.Frame.type(), `newer`: the view of gdb.Frame.newer(), when the
        caller knows them already (a backtrace prints the newer frame just before)."""
        self.frame = frame
        self._type = frame_type
        self._pc: int | None = None
        self._newer = newer
        self._sal: Any = None
        self._has_line: bool | None = None
        self._name: str | None = None

    def gdb_type(self) -> int:
        if self._type is None:
            self._type = self.frame.type()
        return self._type

    def kind(self) -> FrameKind:
        return _KINDS.get(self.gdb_type(), FrameKind.OTHER)

    def pc(self) -> int:
        if self._pc is None:
            self._pc = int(self.frame.pc())
        return self._pc

    def newer(self) -> FrameView | None:
        if self._newer is UNASKED:
            newer = self.frame.newer()
            self._newer = None if newer is None else GdbFrame(newer)
        return self._newer

    def sal(self) -> Any:
        """GDB's symtab and line for the frame (gdb.Frame.find_sal)."""
        if self._sal is None:
            self._sal = self.frame.find_sal()
        return self._sal

    def known_sal(self, sal: Any) -> None:
        """Give sal() its answer, found for another frame GDB looks up at the same address."""
        self._sal = sal

    def has_line(self) -> bool:
        if self._has_line is None:
            self._has_line = sal_has_line(self.sal())
        return self._has_line

    def name(self) -> str:
        if self._name is None:
            self._name = str(self.frame.name() or "")
        return self._name

    def place_only(self) -> bool:
        """Whether nothing was asked of the frame but its place: its pc, its kind and its
        newer frames' (so an answer made from it holds for any frame of that place)."""
        return self._has_line is None and self._name is None


def sal_has_line(sal: Any) -> bool:
    """Does GDB itself know a source line there (line 0 is "no source", as BOLT's
    --update-debug-sections writes for much of its cold code)?"""
    return bool(sal.symtab and sal.symtab.filename and sal.line)
