"""A gdb.Frame as the core's FrameView (unsplit.debug.frame_namer): what its naming rules read
of a frame, each answer fetched from GDB only when a rule asks."""

from __future__ import annotations

import gdb  # type: ignore[import-not-found, unused-ignore]
from unsplit.debug.frame_namer import FrameKind, FrameView

_KINDS = {gdb.NORMAL_FRAME: FrameKind.NORMAL, gdb.INLINE_FRAME: FrameKind.INLINE,
          gdb.SIGTRAMP_FRAME: FrameKind.SIGNAL}


class GdbFrame:
    __slots__ = ("frame",)

    def __init__(self, frame: gdb.Frame) -> None:
        self.frame = frame

    def kind(self) -> FrameKind:
        return _KINDS.get(self.frame.type(), FrameKind.OTHER)

    def pc(self) -> int:
        return int(self.frame.pc())

    def newer(self) -> FrameView | None:
        newer = self.frame.newer()
        return None if newer is None else GdbFrame(newer)

    def has_line(self) -> bool:
        return gdb_has_line(self.frame)

    def name(self) -> str:
        return str(self.frame.name() or "")


def gdb_has_line(frame: gdb.Frame) -> bool:
    """Does GDB itself know a source line for `frame` (line 0 is "no source", as BOLT's
    --update-debug-sections writes for much of its cold code)?"""
    sal = frame.find_sal()
    return bool(sal.symtab and sal.symtab.filename and sal.line)
