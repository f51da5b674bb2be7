"""Locations by (pc, what was asked), one cache per Session for both adapters' frame naming, so a
warm backtrace costs one dictionary look-up per frame. The FrameNamer invalidates it when its
module map changes, `bb input` when the pre-BOLT input does; `generation` counts invalidations."""

from __future__ import annotations

from unsplit.index.model.records import Location

LINES = "lines"  # with the source line
MOVED_LINES = "lines in moved code"  # the line only where the pc is in moved code


class LocationCache(dict[tuple[int, str], "Location | None"]):
    """(pc, what was asked) -> Location, or None where no loaded module holds the pc."""

    def __init__(self) -> None:
        super().__init__()
        self.generation = 0

    def invalidate(self) -> None:
        """What the locations were made from changed: forget them all."""
        self.clear()
        self.generation += 1
