"""GDB's frames as the core's FrameView, and the session's FrameNamer kept in step with GDB's
module list: what the frame filter, the stop line and the step reports ask."""

from __future__ import annotations

import gdb  # type: ignore[import-not-found, unused-ignore]
from unsplit.debug.frame_namer import Naming, Shown, lookup_address
from unsplit.index.model.records import Location
from unsplit.session import Session

from .frame_view import GdbFrame
from .host import GdbHost


class Locator:
    def __init__(self, session: Session, host: GdbHost) -> None:
        self.session = session
        self.host = host

    def sync(self) -> None:
        """Bring the session's module map up to GDB's module list (once for a whole `bt`: it
        cannot change while one prints, and checking costs a third of a warm frame's naming)."""
        host = self.host
        host.mapped()
        self.session.namer.sync(host.generation, host.modules, host.read_memory)

    def name(self, frame: gdb.Frame | GdbFrame, *, checked: bool = False) -> Naming:
        """`checked`: sync() was called for this backtrace. A GdbFrame keeps what GDB said of
        the frame for whoever prints it next (the frame filter's decorator)."""
        if not checked:
            self.sync()
        namer = self.session.namer
        naming = namer.name(frame if isinstance(frame, GdbFrame) else GdbFrame(frame))
        for warning in namer.take_warnings():  # e.g. damaged DWARF: said once
            gdb.write(f"unsplit: {warning}\n", gdb.STDERR)
        return naming

    def shown(self, frame: gdb.Frame | GdbFrame, *, checked: bool = False) -> Location | None:
        """The Location the plugin shows for `frame` instead of GDB's own (renamed, or with the
        core's line), None when GDB's frame stands as it is."""
        naming = self.name(frame, checked=checked)
        return None if naming.shown is Shown.KEEP else naming.location

    def procedure_at(self, frame: gdb.Frame) -> Location | None:
        """Where `frame` is, whatever is shown of it (the step reports' frame identity)."""
        self.sync()
        return self.session.namer.locate(lookup_address(GdbFrame(frame)))
