"""The `unsplit` frame filter (GDB's gdb.frames API, gdb/python/lib/gdb/FrameDecorator.py).

Frames whose PC lies in a non-entry fragment are named by their logical procedure with a
fragment tag (``transfer [cold]``); every frame GDB has no line for (no DWARF for that code: a
BOLTed binary's hot part as much as its moved fragments) gets a file and line from the core
when it has one (locator.Locator.shown). Every other frame keeps GDB's name and line. GDB
applies frame filters to ``bt`` and to MI's ``-stack-list-frames`` after
``-enable-frame-filters`` only, not to the stop line or ``frame``: stop.py and frame_hooks.py
cover those.

``info frame-filter`` lists it; ``disable frame-filter global unsplit`` turns it off, as do
``bb disable`` and ``bb enable`` through GdbHost.set_frame_naming.

GDB prints a filtered backtrace with its Python printer (py-framefilter.c), which words some
frames differently from its own: a frame with no line in a shared library reads
`` at /lib/libX.so`` (the file name a decorator gives is always printed after " at ") where
GDB says `` from /lib/libX.so``, a C++ function with DWARF reads with its parameter types, and
a frame without debug information is named by the symbol at its pc rather than at pc - 1.
So the filter takes part only in backtraces that have a frame the plugin shows differently
(Locator.shown: moved code, or a line where GDB has none; ``enabled`` is asked before each
backtrace: the selected thread's frames are checked, from the cache); every other backtrace
is GDB's own, word for word. In one that has, every frame the plugin does not change is named
as GDB names it (``frame.name()``: pc - 1 in callers, no parameter types), and a frame without
a line shows no file rather than its library as if it were a source file: GDB 13's printer
has no `` from LIB``. (``info frame-filter`` asks ``enabled`` too: it says Yes while the
stack has such a frame.)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import gdb  # type: ignore[import-not-found, unused-ignore]
from gdb.FrameDecorator import (  # type: ignore[import-not-found, attr-defined, unused-ignore]
    FrameDecorator,
    FrameVars,
)
from unsplit.index.model import Location

from . import console
from .frame_view import gdb_has_line
from .locator import Locator
from .report import report_internal

NAME = "unsplit"
STACK_CHECK_LIMIT = 4096  # frames looked at for one shown differently before a backtrace


def _guarded(method: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A decorator method GDB calls as it prints the frame: a bug there is reported once and
    the frame keeps what the decorator below gives (FrameDecorator's method), as a raise would
    cost the user the rest of the backtrace (GDB stops printing it)."""
    fallback = getattr(FrameDecorator, method.__name__)

    @functools.wraps(method)
    def guarded(self: Any) -> Any:
        try:
            return method(self)
        except Exception as e:
            report_internal(e, once=True)
            return fallback(self)

    return guarded


class LineDecorator(FrameDecorator):
    """A frame named as GDB's own `bt` names it, with the core's line where GDB has none.

    GDB's name: the minimal symbol at pc - 1 in a caller for a frame without debug
    information, the function without parameter types for one with DWARF (gdb.Frame.name).
    Once a frame filter is active, GDB looks a name up at the pc itself, which after a call to
    a function that does not return is the next function or padding (an empty name, where
    GDB's own `bt` says `??`), and names a C++ function with DWARF with its parameter types."""

    def __init__(self, base: Any, loc: Location | None, full_paths: bool = False,
                 scalars: bool | None = None) -> None:
        super().__init__(base)
        self._loc = loc
        self._full_paths = full_paths  # GDB/MI: the file is the source's full path
        self._has_line: bool | None = None
        self._scalars = scalars  # `print frame-arguments scalars` (None: asked when needed)

    @_guarded
    def function(self) -> Any:
        return self.inferior_frame().name() or "??"

    def _gdb_has_line(self) -> bool:
        if self._has_line is None:  # asked by filename() and line(): one find_sal per frame
            self._has_line = gdb_has_line(self.inferior_frame())
        return self._has_line

    def _core_line(self) -> Location | None:
        loc = self._loc
        if loc is None:
            return None
        if loc.inlined and not self._gdb_shows_inlined():
            # GDB has no frames for the calls inlined here, so its line, if any, is a callee's:
            # the procedure's own line goes with the procedure's name.
            own = loc.as_procedure()
            return own if own.file and own.line else None
        if not loc.file or not loc.line or self._gdb_has_line():
            return None
        return loc

    def _gdb_shows_inlined(self) -> bool:
        """Whether GDB has a frame for a call inlined at this frame's pc (the frame just newer,
        at the same pc): then GDB's line for this frame is the call's, its own."""
        frame = self.inferior_frame()
        try:
            newer = frame.newer()
            return newer is not None and newer.type() == gdb.INLINE_FRAME and \
                newer.pc() == frame.pc()
        except gdb.error:
            return False

    @_guarded
    def filename(self) -> Any:
        loc = self._core_line()
        if loc is not None:
            return (loc.path or loc.file) if self._full_paths or self._for_dap() else loc.file
        # GDB's source file, or none rather than the library as if it were one (module doc);
        # the name as the decorator below gives it: the symtab's in `bt`, its full path under
        # GDB's DAP (DAPFrameDecorator), so that an IDE can open a relative name (`./foo.h`).
        # GDB/MI's printer of a filtered frame has no `fullname` (py-framefilter.c): its
        # `file` is the full path, which IDEs open when `fullname` is missing.
        sal = self.inferior_frame().find_sal()
        if not (sal.symtab and sal.symtab.filename):
            return None
        return sal.symtab.fullname() if self._full_paths else super().filename()

    def _for_dap(self) -> bool:
        """Whether GDB's DAP server asks (its frames are DAPFrameDecorators, GDB >= 14)."""
        base: Any = getattr(self, "_base", None)
        while base is not None and not isinstance(base, gdb.Frame):
            if type(base).__name__ == "DAPFrameDecorator":
                return True
            base = getattr(base, "_base", None)
        return False

    @_guarded
    def line(self) -> Any:
        loc = self._core_line()
        return super().line() if loc is None else loc.line

    @_guarded
    def frame_args(self) -> Any:
        """The arguments wherever GDB has the function's DWARF, as GDB's own `bt` gives them;
        FrameDecorator gives them only where the pc has a line, and the first instruction of a
        cold fragment often has none (clang's machine function splitting: line 0), so a stop
        at `main.cold` read `main [cold] ()` against GDB's `main (argc=4, argv=…)`."""
        frame = self.inferior_frame()
        args = super().frame_args()
        if args is None:
            try:
                if frame.type() not in (gdb.NORMAL_FRAME, gdb.INLINE_FRAME) or \
                        frame.function() is None:
                    return None
            except (gdb.error, RuntimeError):
                return None
            args = FrameVars(frame).fetch_frame_args()
        if self._scalars is None:
            self._scalars = scalars_only()
        if self._full_paths or not self._scalars:
            return args  # MI prints every value in full: `...` would read as a string there
        return [_as_gdb_prints(frame, item) for item in args]

    @_guarded
    def frame_locals(self) -> Any:
        """The locals GDB's own `bt full` prints (stack.c, iterate_over_block_local_vars): the
        blocks from the pc's out to its function's, constant and optimized-out ones included.
        GDB 13's FrameVars leaves out a local with no location (`crash = <optimized out>`) or
        with a constant value (GCC's `DW_AT_const_value`: `crash = 1`), and goes on past an
        inlined call's block into the locals of the function it is inlined in."""
        if super().frame_locals() is None:
            return None  # a frame FrameDecorator shows without locals (no line, a trampoline)
        block: gdb.Block | None
        try:
            block = self.inferior_frame().block()
        except RuntimeError:
            return []
        found: list[_Local] = []
        while block is not None and not (block.is_global or block.is_static):
            found += [_Local(s) for s in block
                      if not s.is_argument and s.addr_class in _LOCAL_CLASSES]
            if block.function is not None:
                break
            block = block.superblock
        return found


_LOCAL_CLASSES = (gdb.SYMBOL_LOC_CONST, gdb.SYMBOL_LOC_LOCAL, gdb.SYMBOL_LOC_REGISTER,
                  gdb.SYMBOL_LOC_STATIC, gdb.SYMBOL_LOC_COMPUTED, gdb.SYMBOL_LOC_OPTIMIZED_OUT)
"""The classes of symbol GDB's `bt full` and `info locals` list (stack.c)."""


class _Local:
    """A local whose value GDB reads from the frame (GDB's Symbol/Value interface)."""

    def __init__(self, symbol: gdb.Symbol) -> None:
        self._symbol = symbol

    def symbol(self) -> gdb.Symbol:
        return self._symbol

    def value(self) -> None:
        return None


def scalars_only() -> bool:
    return bool(gdb.parameter("print frame-arguments") == "scalars")


_NON_SCALAR = (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION, gdb.TYPE_CODE_ARRAY,
               gdb.TYPE_CODE_SET, gdb.TYPE_CODE_STRING)


def _as_gdb_prints(frame: gdb.Frame, item: Any) -> Any:
    """An argument as GDB's own `bt` prints it under `print frame-arguments scalars`: `...` for
    an optimized-out one that is no scalar. GDB's Python frame printer instead hands such a
    value to its pretty-printer (py-framefilter.c calls common_val_print, not the _checked
    variant GDB's own printer calls), and libstdc++'s printers raise on it: the frame line
    broke after `filename=` with "Python Exception <class 'gdb.error'>: value has been
    optimized out" (simdjson built by clang with machine function splitting). A character
    array is what GDB prints as `...` in that mode, whatever its bytes."""
    symbol = item.symbol()
    if item.value() is not None or not isinstance(symbol, gdb.Symbol):
        return item
    try:
        # The symbol's type first: a scalar is never `...`, and reading it costs a frame read.
        if symbol.type is not None and not _non_scalar(symbol.type):
            return item
        value = frame.read_var(symbol)
        if not value.is_optimized_out or not _non_scalar(value.type):
            return item
    except gdb.error:  # GDB reads it again and says why it cannot
        return item
    return _Ellipsis(symbol)


def _non_scalar(kind: gdb.Type) -> bool:
    kind = kind.strip_typedefs()
    while kind.code in (gdb.TYPE_CODE_REF, gdb.TYPE_CODE_RVALUE_REF):
        kind = kind.target().strip_typedefs()
    return kind.code in _NON_SCALAR


class _Ellipsis:
    """An argument printed `...` (GDB's Symbol/Value interface: symbol() and value())."""

    def __init__(self, symbol: gdb.Symbol) -> None:
        self._symbol = symbol

    def symbol(self) -> gdb.Symbol:
        return self._symbol

    def value(self) -> str:
        return "..."


class MovedCodeDecorator(LineDecorator):
    """A frame in moved code, named as the procedure it belongs to."""

    def __init__(self, base: Any, loc: Location, style: str | None,
                 full_paths: bool = False, scalars: bool | None = None) -> None:
        super().__init__(base, loc, full_paths, scalars)
        self._shown = loc
        self._style = style  # GDB's `print demangle`, as unsplit.index.demangle's style

    @_guarded
    def function(self) -> str:
        # GDB names a function it has DWARF for without its parameters (they follow as
        # arguments), one it knows by its ELF symbol alone with them. Whether GDB has a line
        # here says whether it has DWARF, and costs no more: filename() and line() ask it too.
        return self._shown.label(self._style, parameters=not self._gdb_has_line())


class UnsplitFrameFilter:
    """Registered as gdb.frame_filters["unsplit"]."""

    def __init__(self, locator: Locator) -> None:
        self.name = NAME
        self.priority = 100
        self.chosen = True  # the user's choice: bb enable/disable, enable/disable frame-filter
        self.locator = locator
        self.full_paths = console.mi_interpreter()  # what MI's printer lacks (LineDecorator)

    @property
    def enabled(self) -> bool:
        """GDB asks before each backtrace: on when chosen and the stack has a frame the plugin
        shows differently (Locator.shown)."""
        try:
            return self.chosen and self._stack_has_shown_frame()
        except Exception as e:  # never cost the user their backtrace
            report_internal(e, once=True)
            return self.chosen

    @enabled.setter
    def enabled(self, flag: bool) -> None:
        self.chosen = bool(flag)

    def _stack_has_shown_frame(self) -> bool:
        frame: gdb.Frame | None
        try:
            frame = gdb.newest_frame()
        except gdb.error:
            return True  # no stack: nothing is printed (`info frame-filter` says the choice)
        self.locator.sync()
        for _ in range(STACK_CHECK_LIMIT):
            if frame is None:
                return False
            if frame.type() in (gdb.NORMAL_FRAME, gdb.INLINE_FRAME) and \
                    self.locator.shown(frame, checked=True) is not None:
                return True
            frame = frame.older()
        return True  # deeper than we look: let the filter see it

    def filter(self, frame_iter: Iterable[Any]) -> Iterator[Any]:
        style = self.locator.session.demangling()  # `print demangle`, asked once per bt
        scalars = scalars_only()  # and `print frame-arguments`
        try:
            self.locator.sync()
            checked = True
        except Exception as e:
            report_internal(e, once=True)
            checked = False
        for decorator in frame_iter:
            yield self._decorate(decorator, style, checked, scalars)

    def _decorate(self, decorator: Any, style: str | None, checked: bool = False,
                  scalars: bool | None = None) -> Any:
        try:
            frame = decorator.inferior_frame()
            if frame.type() not in (gdb.NORMAL_FRAME, gdb.INLINE_FRAME):
                return decorator
            return decorated(decorator, self.locator.shown(frame, checked=checked), style,
                             self.full_paths, scalars)
        except Exception as e:  # a bug here must never cost the user their backtrace
            report_internal(e, once=True)
            return decorator


def decorated(decorator: Any, loc: Location | None, style: str | None,
              full_paths: bool = False, scalars: bool | None = None) -> Any:
    """What `bt` prints a normal or inlined frame with, given where the plugin shows it (`loc`,
    Locator.shown): also how stop.py words the selected frame after `up`, so both read alike.
    `full_paths`: files by their full path (GDB/MI)."""
    if loc is None or not loc.in_moved_code:
        return LineDecorator(decorator, loc, full_paths, scalars)
    return MovedCodeDecorator(decorator, loc, style, full_paths, scalars)


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
