"""What `bb next`/`step`/`finish`/`until`/`advance`/`stepi` print in GDB: what GDB prints for its
own steps (infrun.c print_stop_location, stack.c print_frame_info), with the procedure as
written and its true line in moved code (unsplit.render.stop); the frame line only when the
logical frame changed, as GDB does."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import gdb  # type: ignore[import-not-found, unused-ignore]
from unsplit.host import Host
from unsplit.index.model.records import Location
from unsplit.index.names.matching import names_procedure
from unsplit.render import stop as stop_text
from unsplit.session import Session

from . import console
from .locator import Locator

# Return types whose value GDB's `finish` reads from $rax (x86-64 SysV).
_SCALAR = {getattr(gdb, name) for name in ("TYPE_CODE_INT", "TYPE_CODE_PTR", "TYPE_CODE_ENUM",
                                           "TYPE_CODE_BOOL", "TYPE_CODE_CHAR")
           if hasattr(gdb, name)}


class StepContext(NamedTuple):
    """What a step's report compares with once it stops (Host.step_context)."""

    frame: tuple[str | None, int | None]  # (procedure or GDB's name, CFA) of the stepping frame
    located: bool  # finish, until LINE, advance LINE: GDB prints the frame line whatever frame
    return_type: gdb.Type | None  # finish: the type of a scalar return value


def parameter(name: str, default: Any) -> Any:
    try:
        return gdb.parameter(name)
    except (gdb.error, RuntimeError):
        return default


def frame_output(frame: gdb.Frame) -> list[str]:
    """GDB's own `frame` output for `frame` (its location line, then its source line); []
    when GDB cannot print it (the report is then made from the core's answer alone)."""
    try:
        selected = gdb.selected_frame()
        try:
            if frame != selected:
                frame.select()
            return console.execute("frame").splitlines()
        finally:
            if frame != selected and selected.is_valid():
                selected.select()
    except gdb.error:
        return []


class StepReporter:
    """Host.step_context / Host.stop_report for the GdbHost."""

    def __init__(self, locator: Locator) -> None:
        self.locator = locator

    @property
    def session(self) -> Session:
        return self.locator.session

    def _key(self, frame: gdb.Frame) -> tuple[str | None, int | None]:
        loc = self.locator.procedure_at(frame)
        name = loc.procedure if loc is not None and loc.procedure else frame.name()
        older = frame.older()
        return name, None if older is None else int(older.read_register("sp"))

    def context(self, kind: str, line: int | None) -> StepContext:
        frame = gdb.selected_frame()
        return_type = None
        if kind == "finish":
            native = frame_output(frame)
            loc = self.locator.shown(frame)
            first = native[0] if native else ""
            # An inlined call's frame GDB names rightly: the function inlined, at its line.
            if loc is not None and frame.type() != gdb.INLINE_FRAME:
                level = re.match(r"#\d+\s+", first)
                first = (level[0] if level else f"#{frame.level()}  ") + \
                    stop_text.gdb_location_line(first, loc, int(frame.pc()), False,
                                                style=self.session.demangling())
            gdb.write(f"Run till exit from {first}\n")  # before it runs, as GDB's finish does
            function = frame.function()
            # Out of an inlined call there is no return to read a value from (GDB's own
            # finish prints none).
            if function is not None and function.type is not None \
                    and frame.type() != gdb.INLINE_FRAME:
                target = function.type.target()
                if target is not None and target.strip_typedefs().code in _SCALAR:
                    return_type = target
        located = kind == "finish" or line is not None  # (until_break_command: no step)
        return StepContext(self._key(frame), located, return_type)

    def report(self, host: Host, kind: str, loc: Location | None, pc: int,
               step: object) -> str:
        """`step`: what context() said before the step (None: nothing known)."""
        context = step if isinstance(step, StepContext) else None
        frame = gdb.newest_frame()
        if loc is not None and loc.inlined and frame.type() != gdb.INLINE_FRAME:
            # GDB stops at the start of inlined code in the frame it was inlined into (at the
            # call site, its inlined frames skipped): the procedure's own line, the call's.
            loc = loc.as_procedure()
        changed = context is None or context.located or self._key(frame) != context.frame
        what = stop_text.gdb_what(str(parameter("print frame-info", "auto")), changed)
        if what == stop_text.SRC_LINE and loc is not None and loc.line and loc.in_moved_code \
                and not self._gdb_is_right(frame, loc, []):
            # Only our source line is shown: GDB's `frame` (its arguments read, a third of a
            # step's cost) is not needed; GDB's stop has made this frame `list`'s current line.
            native: list[str] = []
        else:
            native = frame_output(frame)
        out = []
        if self._gdb_is_right(frame, loc, native):
            out.append(_native_stop(native, what, pc, bool(parameter("print address", True))))
        else:
            out.append(stop_text.gdb_stop(
                loc, pc, native_frame=native[0] if native else "", what=what,
                at_line_start=stop_text.at_line_start(self.session, host, pc),
                print_address=bool(parameter("print address", True)),
                read=self.session.source_lines, style=self.session.demangling()))
        if context is not None and context.return_type is not None:
            out.append(_value_returned(context.return_type))
        return "\n".join(line for line in out if line)

    def _gdb_is_right(self, frame: gdb.Frame, loc: Location | None, native: list[str]) -> bool:
        """GDB's own stop names this frame as the procedure and knows its line: outside moved
        code where GDB has a line (BOLT without DWARF: only the pre-BOLT binary has it), or in
        a function inlined into moved code (GDB names the inlined function, rightly)."""
        if loc is None or not loc.line:
            return True
        if not loc.in_moved_code:
            return len(native) > 1 and re.match(r"^\d+\t", native[1]) is not None
        name = frame.name() or ""
        return frame.type() == gdb.INLINE_FRAME and name != loc.fragment_symbol and not (
            loc.procedure is not None and names_procedure(name, loc.procedure))


def _native_stop(native: list[str], what: str, pc: int, print_address: bool) -> str:
    """GDB's own stop, from its `frame` output: the level dropped, the parts `what` asks for."""
    if not native:
        return ""
    location = re.sub(r"^#\d+\s+", "", native[0])
    source = native[1] if len(native) > 1 and re.match(r"^\d+\t", native[1]) else None
    if source is None:  # no line: GDB prints the frame line whatever `what` says
        return location
    if what == stop_text.SRC_LINE:
        if print_address and location.startswith("0x"):  # mid-statement
            return f"{pc:#018x}\t{source}"
        return source
    if what == stop_text.SRC_AND_LOC:
        return f"{location}\n{source}"
    if what == stop_text.SHORT_LOCATION:
        return re.sub(r" at \S+$| from \S+$", "", location)
    if what == stop_text.LOC_AND_ADDRESS and not location.startswith("0x"):
        return f"{pc:#018x} in {location}"
    return location


def _value_returned(return_type: gdb.Type) -> str:
    """`Value returned is $N = V`, as GDB's finish prints it (the value joins the history)."""
    try:
        value = gdb.parse_and_eval("$rax").cast(return_type)
        number = gdb.add_history(value)
        shown = value.format_string()
        if return_type.strip_typedefs().code == gdb.TYPE_CODE_PTR:
            shown = f"({return_type}) {shown}"
        return f"Value returned is ${number} = {shown}"
    except (gdb.error, RuntimeError, AttributeError):
        return ""
