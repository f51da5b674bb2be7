"""The `unsplit` frame filter (GDB's gdb.frames API, gdb/python/lib/gdb/FrameDecorator.py): frames
in moved code get the logical procedure and fragment (``transfer [cold]``), frames GDB has no
line for get the core's; every other frame, and every backtrace with no such frame, is GDB's
own, word for word (docs/architecture.md: how GDB's Python printer words frames).
``disable frame-filter global unsplit`` or ``bb disable`` turns it off."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import gdb  # type: ignore[import-not-found, unused-ignore]
from gdb.FrameDecorator import (  # type: ignore[import-not-found, attr-defined, unused-ignore]
    FrameDecorator,
    FrameVars,
)
from unsplit.debug.frame_namer import Naming, Shown, holds_return_address
from unsplit.index.model.records import Location

from . import console, local_errors
from .argument_mode import frame_arguments
from .frame_view import UNASKED, GdbFrame
from .locator import Locator
from .optimized_out import entirely_optimized_out
from .report import report_internal

NAME = "unsplit"
_HAS_LEVEL = hasattr(gdb.Frame, "level")  # GDB 11+
STACK_CHECK_LIMIT = 4096  # frames looked at for one shown differently before a backtrace


_UNKNOWN = object()


class BacktraceMemo:
    """What one backtrace works out once for many frames (a deep recursion repeats one
    caller): the naming of a place, the arguments GDB lists at a return address, and the
    frames' labels."""

    __slots__ = ("args", "labels", "namings", "sals")

    def __init__(self) -> None:
        self.args: dict[int, tuple[list[Any] | None, tuple[bool, ...]]] = {}
        self.labels: dict[tuple[int, bool], tuple[Location, str]] = {}
        self.namings: dict[tuple[int, int, bool], Naming] = {}
        # GDB's line of a normal frame called from a normal frame, by pc: GDB looks it up at
        # pc - 1 whatever the frame (frame.c, find_frame_sal and get_frame_address_in_block)
        self.sals: dict[int, Any] = {}


class LineDecorator(FrameDecorator):
    """A frame named as GDB's own `bt` names it (gdb.Frame.name: pc - 1 in a caller without
    debug information, where a filtered frame would be looked up at the pc), with the core's
    line where GDB has none. Over GDB's own FrameDecorator of the frame, what it would answer
    is read from the frame directly, GDB's line once per frame."""

    def __init__(self, base: Any, loc: Location | None, full_paths: bool = False,
                 arguments: str | None = None, view: GdbFrame | None = None,
                 caller: bool = False, memo: BacktraceMemo | None = None,
                 style: str | None = None, plain: bool | None = None) -> None:
        self._base = base  # as FrameDecorator.__init__ (a frame's every decorator is made here)
        self._loc = loc
        self._full_paths = full_paths  # GDB/MI: the file is the source's full path
        self._arguments = arguments  # argument_mode.MODES (None: asked when needed)
        self._view = view if view is not None else GdbFrame(base.inferior_frame())
        # GDB's own decorator of the frame: its answers are the frame's own
        self._plain = plain if plain is not None else _plain(base)
        self._caller = caller  # the pc is a return address (memo: its arguments are shared)
        self._memo = memo
        self._style = style  # GDB's `print demangle`, as unsplit.index.demangle's style
        self._core: object = _UNKNOWN if loc is not None else None
        self._framed = False  # GDB asked the address: it prints a frame line, not MI's lists

    def inferior_frame(self) -> Any:
        return self._view.frame

    def address(self) -> Any:
        self._framed = True
        return self._view.pc() if self._plain else super().address()

    def elided(self) -> Any:
        return None if self._plain else super().elided()

    def function(self) -> Any:
        try:
            return self._view.frame.name() or "??"
        except Exception as e:
            return self._fallback(e, FrameDecorator.function)

    def _fallback(self, error: Exception, method: Callable[[Any], Any]) -> Any:
        """A method GDB calls as it prints the frame failed: the bug is reported once and the
        frame keeps what the decorator below gives (FrameDecorator's `method`), as a raise
        would cost the user the rest of the backtrace (GDB stops printing it). The methods
        catch it themselves: a wrapper would be one more call per method per frame."""
        report_internal(error, once=True)
        return method(self)

    def _gdb_has_line(self) -> bool:
        return self._view.has_line()  # asked by function(), filename() and line(): once

    def _gdb_has_function(self) -> bool:
        """Whether GDB has the DWARF of the frame's function (a call's frame, not a
        trampoline's)."""
        try:
            return self._view.gdb_type() in (gdb.NORMAL_FRAME, gdb.INLINE_FRAME) and \
                self._view.frame.function() is not None
        except (gdb.error, RuntimeError):
            return False

    def _core_line(self) -> Location | None:
        """The core's line where it stands for GDB's (asked by filename() and line(): once)."""
        if self._core is _UNKNOWN:
            self._core = self._find_core_line()
        return self._core  # type: ignore[return-value]

    def _find_core_line(self) -> Location | None:
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
        frame = self._view.frame
        try:
            newer = frame.newer()
            return newer is not None and newer.type() == gdb.INLINE_FRAME and \
                newer.pc() == frame.pc()
        except gdb.error:
            return False

    def filename(self) -> Any:
        try:
            return self._filename()
        except Exception as e:
            return self._fallback(e, FrameDecorator.filename)

    def _filename(self) -> Any:
        loc = self._core_line()
        if loc is not None:
            return (loc.path or loc.file) if self._full_paths or self._for_dap() else loc.file
        # GDB's source file, or none rather than the library as if it were one (module doc);
        # the name as the decorator below gives it: the symtab's in `bt`, its full path under
        # GDB's DAP (DAPFrameDecorator), so that an IDE can open a relative name (`./foo.h`).
        # GDB/MI's printer of a filtered frame has no `fullname` (py-framefilter.c): its
        # `file` is the full path, which IDEs open when `fullname` is missing.
        sal = self._view.sal()
        if not (sal.symtab and sal.symtab.filename):
            return None
        if self._full_paths:
            return sal.symtab.fullname()
        return sal.symtab.filename if self._plain else super().filename()

    def _for_dap(self) -> bool:
        """Whether GDB's DAP server asks (its frames are DAPFrameDecorators, GDB >= 14)."""
        if self._plain:
            return False
        base: Any = getattr(self, "_base", None)
        while base is not None and not isinstance(base, gdb.Frame):
            if type(base).__name__ == "DAPFrameDecorator":
                return True
            base = getattr(base, "_base", None)
        return False

    def _limited(self) -> bool:
        """FrameDecorator's "special or limited" frame: no source file, or not a call."""
        sal = self._view.sal()
        return not (sal.symtab and sal.symtab.filename) or \
            self._view.gdb_type() in (gdb.DUMMY_FRAME, gdb.SIGTRAMP_FRAME)

    def line(self) -> Any:
        try:
            loc = self._core_line()
            if loc is not None:
                return loc.line
            if not self._plain:
                return super().line()
            sal = self._view.sal()  # as _limited(), with GDB's line read once
            symtab = sal.symtab
            if not (symtab and symtab.filename) or \
                    self._view.gdb_type() in (gdb.DUMMY_FRAME, gdb.SIGTRAMP_FRAME):
                return None
            return sal.line
        except Exception as e:
            return self._fallback(e, FrameDecorator.line)

    def frame_args(self) -> Any:
        """The arguments wherever GDB has the function's DWARF, as GDB's own `bt` gives them;
        FrameDecorator gives them only where the pc has a line, and the first instruction of a
        cold fragment often has none (clang's machine function splitting: line 0), so a stop
        at `main.cold` read `main [cold] ()` against GDB's `main (argc=4, argv=…)`."""
        try:
            args = self._frame_args()
        except Exception as e:
            return self._fallback(e, FrameDecorator.frame_args)
        return args if args is None or not self._full_paths or self._framed else \
            _mi_printed(args)

    def _frame_args(self) -> Any:
        if self._arguments is None:
            self._arguments = frame_arguments()
        # MI prints every value in full (`...` would read as a string there); `presence`
        # prints none
        shown = self._full_paths or self._arguments == "presence"
        memo = self._memo
        if memo is None or not (self._plain and self._caller) or \
                self._view.gdb_type() != gdb.NORMAL_FRAME:
            args = self._args()
            return args if args is None or shown else [self._as_gdb_prints(item)
                                                       for item in args]
        # A caller's arguments are its function's at its return address, whatever the frame
        # (GDB reads each value by its symbol in the frame it prints): a recursion asks once.
        key = self._view.pc()
        known = memo.args.get(key)
        if known is None:
            args = self._args()
            if args is not None and any(item.value() is not None for item in args):
                return args if shown else [self._as_gdb_prints(item) for item in args]
            known = memo.args[key] = (args, tuple(_typed_scalar(item) for item in args or ()))
        args, scalar = known
        every = self._arguments == "none"  # each printed `...`, a scalar too
        if args is None or shown or (all(scalar) and not every):
            return args
        return [item if ok and not every else self._as_gdb_prints(item)
                for item, ok in zip(args, scalar, strict=True)]

    def _args(self) -> Any:
        frame = self._view.frame
        if self._plain:
            if not self._limited():
                return FrameVars(frame).fetch_frame_args()
        else:
            args = super().frame_args()
            if args is not None:
                return args
        try:
            if self._view.gdb_type() not in (gdb.NORMAL_FRAME, gdb.INLINE_FRAME) or \
                    frame.function() is None:
                return None
        except (gdb.error, RuntimeError):
            return None
        return FrameVars(frame).fetch_frame_args()

    def _as_gdb_prints(self, item: Any) -> Any:
        if self._arguments == "none":  # `n=...`, not the `n=n@entry=...` of Python's printer
            return _Ellipsis(item.symbol())
        return _as_gdb_prints(self._view.frame, item, self._arguments == "all")

    def frame_locals(self) -> Any:
        """The locals GDB's own `bt full` prints (stack.c, iterate_over_block_local_vars): the
        blocks from the pc's out to its function's, constant and optimized-out ones included.
        GDB 13's FrameVars leaves out a local with no location (`crash = <optimized out>`) or
        with a constant value (GCC's `DW_AT_const_value`: `crash = 1`), and goes on past an
        inlined call's block into the locals of the function it is inlined in."""
        try:
            found = self._frame_locals()
            if not found and self._framed and not self._for_dap():
                # GDB's printer of filtered frames says nothing where a frame has none
                # (py-framefilter.c, py_print_locals), GDB's own `bt full` says why (stack.c,
                # print_frame_local_vars): said here, as that printer asks for the locals
                # right after the frame's line
                gdb.write("No locals.\n" if found is not None else
                          "No symbol table info available.\n")
            return found
        except Exception as e:
            return self._fallback(e, FrameDecorator.frame_locals)

    def _frame_locals(self) -> Any:
        frame = self.inferior_frame()
        if super().frame_locals() is None and not self._gdb_has_function():
            # a frame FrameDecorator shows without locals (no line, a trampoline) and GDB too
            # (`bt full` lists those of a function it has DWARF for at a line 0 row: LevelDB's
            # ReadPhysicalRecord under an inlined ReportDrop)
            return None
        block: gdb.Block | None
        try:
            block = frame.block()
        except RuntimeError:  # GDB has no block of the function's here
            return None
        dap = self._for_dap()  # DAP prints each local's value as GDB's Python printer does
        found: list[_Local | local_errors.Printed] = []
        while block is not None and not (block.is_global or block.is_static):
            found += [_Local(s) if dap else _local(frame, s, self._full_paths) for s in block
                      if not s.is_argument and s.addr_class in _LOCAL_CLASSES]
            if block.function is not None:
                break
            block = block.superblock
        return found


_LOCAL_CLASSES = (gdb.SYMBOL_LOC_CONST, gdb.SYMBOL_LOC_LOCAL, gdb.SYMBOL_LOC_REGISTER,
                  gdb.SYMBOL_LOC_STATIC, gdb.SYMBOL_LOC_COMPUTED, gdb.SYMBOL_LOC_OPTIMIZED_OUT)
"""The classes of symbol GDB's `bt full` and `info locals` list (stack.c)."""


def _mi_printed(args: Iterable[Any]) -> list[Any]:
    """The arguments GDB/MI prints (mi-cmd-stack.c, mi_should_print): GDB's Python printer of a
    filtered frame skips the others with a `continue` that never takes the next one
    (py-framefilter.c, enumerate_args), so one constant (`DW_AT_const_value`) or location-less
    argument made `-stack-list-variables` and `-stack-list-arguments` spin forever. A frame
    line (`bt` through `-interpreter-exec console`) asks the address first and prints them all."""
    return [item for item in args if not isinstance(sym := item.symbol(), gdb.Symbol) or
            (sym.is_argument and sym.addr_class in _MI_ARG_CLASSES)]


_MI_ARG_CLASSES = (gdb.SYMBOL_LOC_ARG, gdb.SYMBOL_LOC_REF_ARG, gdb.SYMBOL_LOC_REGPARM_ADDR,
                   gdb.SYMBOL_LOC_LOCAL, gdb.SYMBOL_LOC_STATIC, gdb.SYMBOL_LOC_REGISTER,
                   gdb.SYMBOL_LOC_COMPUTED)
"""The classes of symbol mi_should_print lets GDB/MI print."""


def _local(frame: gdb.Frame, symbol: gdb.Symbol, mi: bool) -> _Local | local_errors.Printed:
    """A local of `bt full`; one of a type with many parts goes by local_errors (a part that
    cannot be read would end the frame's locals)."""
    try:
        whole = symbol.type is not None and _non_scalar(symbol.type)
    except gdb.error:
        whole = False
    return (whole and local_errors.checked(frame, symbol, mi)) or _Local(symbol)


class _Local:
    """A local whose value GDB reads from the frame (GDB's Symbol/Value interface)."""

    def __init__(self, symbol: gdb.Symbol) -> None:
        self._symbol = symbol

    def symbol(self) -> gdb.Symbol:
        return self._symbol

    def value(self) -> None:
        return None


_NON_SCALAR = (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION, gdb.TYPE_CODE_ARRAY,
               gdb.TYPE_CODE_SET, gdb.TYPE_CODE_STRING)


def _as_gdb_prints(frame: gdb.Frame, item: Any, every: bool) -> Any:
    """An argument as GDB's own `bt` prints it (`every`: in mode `all`, `<optimized out>` where
    no part of it is there; else `scalars`, `...`) where it is optimized out and no scalar.
    GDB's Python frame printer instead hands such a value to its pretty-printer
    (py-framefilter.c calls common_val_print, not the _checked variant GDB's own printer
    calls), and libstdc++'s printers raise on it: the frame line broke after `filename=` with
    "Python Exception <class 'gdb.error'>: value has been optimized out" (simdjson built by
    clang with machine function splitting). A character array is what GDB prints as `...` in
    that mode, whatever its bytes."""
    if _typed_scalar(item):
        return item
    symbol = item.symbol()
    try:
        value = frame.read_var(symbol)
        if not value.is_optimized_out or not _non_scalar(value.type):
            return item
    except gdb.error:  # GDB reads it again and says why it cannot
        return item
    if every:
        return local_errors.Printed(symbol, "<optimized out>") \
            if entirely_optimized_out(value) else item
    return _Ellipsis(symbol)


def _typed_scalar(item: Any) -> bool:
    """Whether :func:`_as_gdb_prints` leaves `item` as it is in any frame: a value given, or a
    symbol whose type is a scalar (never `...`; the type is asked first, as reading the value
    costs a frame read)."""
    symbol = item.symbol()
    if item.value() is not None or not isinstance(symbol, gdb.Symbol):
        return True
    try:
        return symbol.type is not None and not _non_scalar(symbol.type)
    except gdb.error:  # GDB reads it again and says why it cannot
        return True


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

    def function(self) -> Any:
        try:
            # GDB names a function it has DWARF for without its parameters (they follow as
            # arguments), one it knows by its ELF symbol alone with them. Whether GDB has a
            # line here says it has DWARF, and costs no more (filename() and line() ask it
            # too); without one (a line 0 row: LevelDB's ReadPhysicalRecord), its block.
            parameters = not self._gdb_has_line() and not self._gdb_has_function()
            loc: Location = self._loc  # type: ignore[assignment]  # moved code has one
            memo = self._memo
            if memo is None:
                return loc.label(self._style, parameters=parameters)
            key = (id(loc), parameters)  # the backtrace's one style; the Location kept alive
            known = memo.labels.get(key)
            if known is None or known[0] is not loc:
                known = memo.labels[key] = (loc, loc.label(self._style, parameters=parameters))
            return known[1]
        except Exception as e:
            return self._fallback(e, FrameDecorator.function)


_SOURCE_LINES = ("source-line", "source-and-location")


def _source_lines_crash() -> bool:
    """Whether GDB's Python printer would crash on this backtrace: under `print frame-info
    source-line` or `source-and-location` it prints each frame's source line without checking
    that GDB has one (py-framefilter.c, print_source_lines of a null symtab: GDB 13 and 18
    segfault with any frame filter on a frame without debug information). Then GDB's own
    printer prints the backtrace."""
    if gdb.parameter("print frame-info") not in _SOURCE_LINES:
        return False
    frame: gdb.Frame | None = gdb.newest_frame()
    for _ in range(STACK_CHECK_LIMIT):
        if frame is None:
            return False
        if frame.find_sal().symtab is None:
            return True
        frame = frame.older()
    return True  # deeper than we look: a frame further out may have none


_SOURCE_LINES_WARNING = (
    "unsplit: `print frame-info` prints source lines, and GDB's frame-filter printer crashes "
    "on a frame without them: this backtrace is GDB's own, frames in moved code not renamed "
    "(`set print frame-info auto` names them)")


class UnsplitFrameFilter:
    """Registered as gdb.frame_filters["unsplit"]."""

    def __init__(self, locator: Locator) -> None:
        self.name = NAME
        self.priority = 100
        self.chosen = True  # the user's choice: bb enable/disable, enable/disable frame-filter
        self.locator = locator
        self.full_paths = console.mi_interpreter()  # what MI's printer lacks (LineDecorator)
        self.said_crash = False  # _crash_ahead's warning

    @property
    def enabled(self) -> bool:
        """GDB asks before each backtrace: on when chosen and the stack has a frame the plugin
        shows differently (Locator.shown)."""
        try:
            return self.chosen and self._stack_has_shown_frame() and not self._crash_ahead()
        except Exception as e:  # never cost the user their backtrace
            report_internal(e, once=True)
            return self.chosen

    @enabled.setter
    def enabled(self, flag: bool) -> None:
        self.chosen = bool(flag)

    def _crash_ahead(self) -> bool:
        """_source_lines_crash, said once a session."""
        if not _source_lines_crash():
            return False
        if not self.said_crash:
            self.said_crash = True
            gdb.write(_SOURCE_LINES_WARNING + "\n", gdb.STDERR)
        return True

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
        arguments = frame_arguments()  # and how arguments are printed
        memo = BacktraceMemo()
        try:
            self.locator.sync()
            checked = True
        except Exception as e:
            report_internal(e, once=True)
            checked = False
        newer: tuple[int, GdbFrame] | None = None  # the frame printed last, and its level
        for decorator in frame_iter:
            shown, newer = self._decorate(decorator, style, checked, arguments, memo, newer)
            yield shown

    def _decorate(self, decorator: Any, style: str | None, checked: bool,
                  arguments: str | None, memo: BacktraceMemo,
                  newer: tuple[int, GdbFrame] | None) -> tuple[Any, tuple[int, GdbFrame] | None]:
        """The decorator `bt` prints the frame with, and the frame as the next one's newer
        (`newer`: the frame printed before, GDB's newer frame of this one when its level is one
        less: a backtrace asks GDB for it once, not once per frame)."""
        try:
            # _plain(decorator), without the call: this runs once per frame of every `bt`
            plain = type(decorator) is FrameDecorator and \
                isinstance(decorator._base, gdb.Frame)  # type: ignore[attr-defined, unused-ignore]
            # what inferior_frame() says, without its look-ups
            frame = decorator._base if plain else decorator.inferior_frame()
            level = frame.level() if _HAS_LEVEL else -2
            newer_view = newer[1] if newer is not None and newer[0] == level - 1 else None
            kind = frame.type()
            view = GdbFrame(frame, kind, UNASKED if newer_view is None else newer_view)
            if kind not in (gdb.NORMAL_FRAME, gdb.INLINE_FRAME):
                return decorator, (level, view)
            pc = view.pc()
            if kind == gdb.NORMAL_FRAME and newer_view is not None and \
                    newer_view.gdb_type() == gdb.NORMAL_FRAME:
                caller = True  # holds_return_address(view), known without its calls
                sal = memo.sals.get(pc)
                if sal is None:
                    sal = memo.sals[pc] = view.sal()
                else:
                    view.known_sal(sal)
            else:
                caller = holds_return_address(view)
            # A frame's naming depends on its place alone unless the rules asked its line or
            # name: a recursion's frames repeat one place (pc, kind, return address or not).
            place = (pc, kind, caller)
            naming = memo.namings.get(place)
            if naming is None:
                naming = self.locator.name(view, checked=checked)
                if checked and view.place_only():
                    memo.namings[place] = naming
            loc = None if naming.shown is Shown.KEEP else naming.location
            return decorated(decorator, loc, style, self.full_paths, arguments, view,
                             naming.lookup != naming.pc, memo, plain), (level, view)
        except Exception as e:  # a bug here must never cost the user their backtrace
            report_internal(e, once=True)
            return decorator, None


def decorated(decorator: Any, loc: Location | None, style: str | None,
              full_paths: bool = False, arguments: str | None = None,
              view: GdbFrame | None = None, caller: bool = False,
              memo: BacktraceMemo | None = None, plain: bool | None = None) -> Any:
    """What `bt` prints a normal or inlined frame with, given where the plugin shows it (`loc`,
    Locator.shown): also how stop.py words the selected frame after `up`, so both read alike.
    `full_paths`: files by their full path (GDB/MI); `view`: the frame as named, `caller`:
    its pc is a return address, `memo`: the backtrace's (BacktraceMemo), `plain`: the
    decorator is GDB's own FrameDecorator of the frame."""
    kind = MovedCodeDecorator if loc is not None and loc.in_moved_code else LineDecorator
    return kind(decorator, loc, full_paths, arguments, view, caller, memo, style, plain)


def _plain(decorator: Any) -> bool:
    """Is `decorator` GDB's own FrameDecorator of a frame (no other filter's between)?"""
    if type(decorator) is not FrameDecorator:
        return False
    base: Any = decorator._base  # type: ignore[attr-defined, unused-ignore]
    return isinstance(base, gdb.Frame)


def install(locator: Locator) -> UnsplitFrameFilter:
    """Register the filter (replacing an earlier one of ours: loading twice is harmless)."""
    frame_filter = UnsplitFrameFilter(locator)
    local_errors.install()
    old = gdb.frame_filters.get(NAME)
    if old is not None:
        frame_filter.chosen = getattr(old, "chosen", True)
    gdb.frame_filters[NAME] = frame_filter
    return frame_filter


def set_enabled(flag: bool) -> None:
    frame_filter = gdb.frame_filters.get(NAME)
    if frame_filter is not None:
        frame_filter.enabled = flag
