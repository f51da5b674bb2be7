"""How a debugger's frame is shown: kept as the debugger shows it, renamed by its procedure
(moved code), or given the source line the debugger lacks. One set of rules for GDB's frame
filter and stop line and LLDB's frame formats; the adapters only translate their frames to a
:class:`FrameView` and the answer back.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from enum import Enum
from typing import NamedTuple, Protocol

from unsplit.debug.module_map import ModuleMap, ReadMemory
from unsplit.host import LoadedModule
from unsplit.index.cache.locations import LINES, MOVED_LINES, NAMES, WHOLE, LocationCache
from unsplit.index.model.frame import is_signal_trampoline, lookup_pc
from unsplit.index.model.records import Location
from unsplit.index.module_index import IndexCache
from unsplit.index.names.matching import names_procedure


class FrameKind(Enum):
    NORMAL = "normal"  # a real frame (a call)
    INLINE = "inline"  # an inlined call, within a real frame
    SIGNAL = "signal"  # a signal trampoline: the frame above it was interrupted, not calling
    OTHER = "other"  # anything else the debugger makes (a dummy call, an arch frame …)


def kind_by_name(inlined: bool, name: str | None) -> FrameKind:
    """The kind of a frame of a debugger that marks inlined calls but not signal trampolines
    (LLDB), which are then known by their names."""
    if inlined:
        return FrameKind.INLINE
    return FrameKind.SIGNAL if is_signal_trampoline(name) else FrameKind.NORMAL


class FrameView(Protocol):
    """What the rules read of a debugger's frame. Asked lazily: an adapter fetches each
    answer from its debugger only when a rule needs it."""

    def pc(self) -> int: ...

    def kind(self) -> FrameKind: ...

    def newer(self) -> FrameView | None:
        """The frame it called (None for frame 0)."""
        ...

    def has_line(self) -> bool:
        """The debugger itself knows a source line for it (line 0 is none)."""
        ...

    def name(self) -> str:
        """The debugger's own name for it ("" when it has none)."""
        ...


def holds_return_address(frame: FrameView) -> bool:
    """A caller's pc is a return address (named by its call, pc - 1). Not so for frame 0, for
    a frame a signal interrupted, nor where the frame shares its pc with an inlined call made in
    it (that call's frame answers: GDB gives both the same pc); a frame whose newer frame is an
    inlined call at another pc (LLDB: the inlined block's first address) is no caller either."""
    if frame.kind() not in (FrameKind.NORMAL, FrameKind.INLINE):
        return False
    newer = frame.newer()
    if newer is None:
        return False
    kind = newer.kind()
    if kind is FrameKind.INLINE:
        return newer.pc() == frame.pc() and holds_return_address(newer)
    return kind is FrameKind.NORMAL


def lookup_address(frame: FrameView) -> int:
    """The address that names `frame` (unsplit.index.model.frame.lookup_pc)."""
    return lookup_pc(frame.pc(), holds_return_address(frame))


class Shown(Enum):
    KEEP = "keep"  # the debugger's frame stands as it is
    RENAME = "rename"  # moved code: named by its procedure and fragment, with the core's line
    ADD_LINE = "add line"  # the debugger's name, the core's line (it has none)


class Naming(NamedTuple):
    """The answer for one frame: what to do, the Location (None for KEEP) and the address it
    was looked up at (`pc - lookup` is how far the pc lies past it). A tuple: made per frame
    of every `bt`."""

    shown: Shown
    location: Location | None
    pc: int
    lookup: int


class FrameNamer:
    """Names frames from the session's module map and location cache. The adapter calls
    :meth:`sync` before naming (once per backtrace, or per frame where it cannot tell a
    backtrace), and prints :meth:`take_warnings` (each warning once per session)."""

    def __init__(self, indexes: IndexCache) -> None:
        self.modules = ModuleMap(indexes)
        self.locations = LocationCache()
        self._key: object = None
        self._described: set[str] = set()  # real paths: see describe()
        self._real: dict[str, str] = {}  # a module's path -> its real path (a syscall a lookup)
        self._said: set[str] = set()
        self._unsaid: list[str] = []

    # -- the module map --------------------------------------------------------------------

    def sync(self, key: object, modules: Callable[[], Iterable[LoadedModule]],
             read: ReadMemory | None) -> None:
        """The adapter's module list may have changed when `key` did (its fingerprint of the
        debugger's modules): ask `modules` then, and forget the locations if it did."""
        if key != self._key:
            self.update(modules(), read)
            self._key = key

    def update(self, modules: Iterable[LoadedModule], read: ReadMemory | None) -> None:
        """The debugger's module list now (`read`: its memory, to check each new module's
        image against its file)."""
        if self.modules.update(modules, read):
            self.locations.invalidate()

    def describe(self, path: str, described: bool = True) -> None:
        """The debugger reads unsplit's debug file for the module at `path`: that file holds
        the core's lines and inlined calls, so the debugger's own answer them from now on,
        and a Location there has the procedure and fragment alone (no line or inline chain
        read from the pre-BOLT input's DWARF, no offset or block: what names a frame).
        `described` False: the file no longer says what the core would (`bb input`)."""
        real = self._real_path(path)
        if (real in self._described) != described:
            if described:
                self._described.add(real)
            else:
                self._described.discard(real)
            self.locations.invalidate()

    def describes(self, path: str) -> bool:
        """Whether the debugger reads unsplit's debug file for the module at `path`."""
        return bool(self._described) and self._real_path(path) in self._described

    def _real_path(self, path: str) -> str:
        """`path`'s real path, resolved once: describes() is asked for every location looked
        up, and each os.path.realpath is a system call per component of the path."""
        real = self._real.get(path)
        if real is None:
            real = self._real[path] = os.path.realpath(path)
        return real

    # -- the rules -------------------------------------------------------------------------

    def name(self, frame: FrameView, own_lines: bool = False) -> Naming:
        """Keep, rename or add a line: moved code is renamed (unless the frame is a function
        inlined there, which keeps its own name); elsewhere a frame the debugger has no line
        for gets the core's, where it has one. `own_lines`: the adapter shows the debugger's
        line wherever it has one, so a renamed frame's Location has none there."""
        pc = frame.pc()
        lookup = lookup_pc(pc, holds_return_address(frame))
        loc = self.locate(lookup, NAMES if own_lines and frame.has_line() else MOVED_LINES)
        if loc is not None and loc.in_moved_code:
            if frame.kind() is FrameKind.INLINE and not names_location(frame.name(), loc):
                return Naming(Shown.KEEP, None, pc, lookup)
            return Naming(Shown.RENAME, loc, pc, lookup)
        if loc is None or frame.has_line():
            return Naming(Shown.KEEP, None, pc, lookup)
        loc = self.locate(lookup, LINES)
        if loc is None or not loc.file or not loc.line:
            return Naming(Shown.KEEP, None, pc, lookup)
        return Naming(Shown.ADD_LINE, loc, pc, lookup)

    def locate(self, address: int, what: str = MOVED_LINES) -> Location | None:
        """Where runtime `address` is (None: in no attached module's code); `what`: LINES,
        MOVED_LINES, NAMES or WHOLE (unsplit.index.cache.locations), a line question costing a
        DWARF look-up."""
        key = (address, what)
        cache = self.locations
        if key in cache:
            return cache[key]
        loc = cache[key] = self._locate(address, what)
        if loc is not None and loc.warnings:
            self._warn(loc)
        return loc

    def locate_all(self, address: int) -> Location | None:
        """Everything the core knows of runtime `address` (line, offset, block), also in a
        module the debugger reads our file for (describe()): `bb set verbose`'s extras."""
        return self.locate(address, WHOLE)

    def _locate(self, address: int, what: str) -> Location | None:
        attached = self.modules.at(address)
        if attached is None:
            return None
        mod = attached.module
        if attached.mismatch is not None:  # never name code by the wrong file
            return Location(address, address - mod.bias, mod.path, None,
                            warnings=(attached.mismatch,))
        index = self.modules.index(attached)
        if index is None:
            return None
        # MOVED_LINES: lines only for moved code, as elsewhere the debugger's own line stands,
        # and a line question costs a scan of big DWARF (libc's) the first time. No line where
        # the debugger reads our debug file: its lines are the core's (describe()).
        if what != WHOLE and self.describes(mod.path):
            return index.locate(address - mod.bias, mod.bias, lines=False, blocks=False,
                                offsets=False)
        return index.locate(address - mod.bias, mod.bias,
                            lines=True if what in (LINES, WHOLE) else False if what == NAMES
                            else None, frame=True)

    # -- warnings, each said once ----------------------------------------------------------

    def _warn(self, loc: Location) -> None:
        module = os.path.basename(loc.module)
        for warning in dict.fromkeys(f"warning: {module}: {w}" for w in loc.warnings):
            if warning not in self._said:
                self._said.add(warning)
                self._unsaid.append(warning)

    def take_warnings(self) -> list[str]:
        """Warnings not yet printed (a damaged section that costs frames their lines …)."""
        out, self._unsaid = self._unsaid, []
        return out


def names_location(name: str, loc: Location) -> bool:
    """Does the debugger's frame name `name` name the procedure of `loc` (or its fragment
    symbol)? A function inlined into moved code has a name of its own."""
    return loc.procedure is not None and (name == loc.fragment_symbol
                                          or names_procedure(name, loc.procedure))
