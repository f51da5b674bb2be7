"""Locations by pc for the hot paths (every frame of every `bt`, every stop), one cache per
Session that both adapters' frame naming use, so a warm backtrace costs one dictionary look-up
per frame.
A Location depends on the module list (which file holds the pc, at which bias) and on the
pre-BOLT input of a BOLTed module (its lines): the FrameNamer calls :meth:`invalidate` when its
module map changes, and `bb input` (Session.set_input) does when the input does.
`generation` counts the invalidations, for anything an adapter derives from the locations.
The cache is a dict (a subclass, so that a look-up stays a C-level one): its keys are (pc,
what was asked), what was asked one of the constants below."""

from __future__ import annotations

from unsplit.index.model.records import Location

LINES = "lines"  # with the source line
MOVED_LINES = "lines in moved code"  # the line only where the pc is in moved code
NAMES = "names"  # no line: for a frame the debugger has a line of its own for, that it shows
WHOLE = "whole location"  # lines, offset and block, even where the debugger has our file


class LocationCache(dict[tuple[int, str], "Location | None"]):
    """(pc, what was asked) -> Location, or None where no loaded module holds the pc."""

    def __init__(self) -> None:
        super().__init__()
        self.generation = 0

    def invalidate(self) -> None:
        """What the locations were made from changed: forget them all."""
        self.clear()
        self.generation += 1
