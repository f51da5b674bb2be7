"""What `bb break` prints: the debugger's own `break` message, and `bb break --list`.

`bb break` answers as the debugger's `break` does for the same kind of breakpoint (measured on
gdb 13.1 and lldb 22.1.8, a line of an inline function with two places):

    GDB   Breakpoint 1 at 0x1170: inl.c:3. (2 locations)
          Breakpoint 2 at 0x1050: file inl.c, line 8.
          Breakpoint 3 (nosuch) pending.
    LLDB  Breakpoint 1: 2 locations.
          Breakpoint 2: where = inl`main at inl.c:7:33, address = 0x0000000000001050
          Breakpoint 3: no locations (pending).

with the procedure as written and its true line where the debugger would name a fragment or
know no line. The locations themselves are listed by `info breakpoints` / `breakpoint list`,
and with the procedure, fragment, original offset and block of each by `bb break --list`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from unsplit.errors import UnsplitError
from unsplit.index.demangle import LLVM
from unsplit.index.model import Location
from unsplit.index.session_view import SessionView


@dataclass(frozen=True, slots=True)
class Placed:
    """One location of a `bb break`, as the adapter made it."""

    label: str  # how the debugger names it: LLDB `1.2`, GDB the native breakpoint's number
    module: str
    file_address: int
    bias: int
    enabled: bool = True


@dataclass(frozen=True, slots=True)
class BreakGroup:
    """One `bb break` and its locations (an adapter's Host.bb_breakpoints())."""

    number: int
    text: str  # the location and options as given (BreakSpec.option_text)
    locations: tuple[Placed, ...]


def locate(session: SessionView, module: str, file_address: int, bias: int) -> Location | None:
    try:
        return session.index(module).locate(file_address, bias)
    except UnsplitError:  # an unreadable module: the message goes on without a line
        return None


def gdb_created(number: int, location: str, address: int, count: int,
                loc: Location | None) -> str:
    """GDB's `break` message for a breakpoint at `count` addresses, the first `address`."""
    if count > 1:
        return f"Breakpoint {number} at {address:#x}: {location}. ({count} locations)"
    if loc is not None and loc.line:
        return f"Breakpoint {number} at {address:#x}: file {loc.file}, " \
               f"line {loc.line}."
    return f"Breakpoint {number} at {address:#x}"


def gdb_pending(number: int, location: str) -> str:
    return f"Breakpoint {number} ({location}) pending."


def lldb_created(number: int, count: int, address: int, loc: Location | None,
                 style: str | None = LLVM) -> str:
    """LLDB's `breakpoint set` message; `address` as LLDB shows it (file address before the
    process exists); the procedure demangled in `style` (unsplit.index.demangle)."""
    if count == 0:
        return f"Breakpoint {number}: no locations (pending)."
    if count > 1:
        return f"Breakpoint {number}: {count} locations."
    if loc is None or loc.procedure is None:
        return f"Breakpoint {number}: address = {address:#018x}"
    where = f"{os.path.basename(loc.module)}`{loc.label(style)}"
    if loc.offset:
        where += f" + {loc.offset}"  # LLDB writes symbol offsets in decimal
    if loc.line:
        where += f" at {os.path.basename(loc.file or '')}:{loc.line}"
        where += f":{loc.column}" if loc.column else ""
    return f"Breakpoint {number}: where = {where}, address = {address:#018x}"


def list_text(session: SessionView, groups: list[BreakGroup]) -> str:
    """`bb break --list`: every `bb break` and, for each location, the debugger's name for it,
    the address, the procedure as written (the session's demangling) with fragment and
    original offset, block and line. In GDB a location's name is its native breakpoint's
    number (see the adapter)."""
    if not groups:
        return "No bb breakpoints."
    out = []
    style = session.demangling()
    for g in groups:
        n = len(g.locations)
        head = f"Breakpoint {g.number} (bb break {g.text}): "
        out.append(head + (f"{n} location{'s' if n != 1 else ''}" if n else "pending"))
        for p in g.locations:
            out.append("  " + _location_line(session, p, style))
    return "\n".join(out)


def _location_line(session: SessionView, p: Placed, style: str | None) -> str:
    address = p.bias + p.file_address
    loc = locate(session, p.module, p.file_address, p.bias)
    text = f"{p.label:<6} {'y' if p.enabled else 'n'}  {address:#018x} in "
    if loc is None or loc.procedure is None:
        return text + f"?? ({os.path.basename(p.module)})"
    text += f"{loc.name(style)}+{loc.offset or 0:#x}  {loc.fragment or '?'}"
    if loc.fragment_symbol and loc.fragment_start is not None:
        text += f" ({loc.fragment_symbol}+{address - loc.fragment_start:#x})"
    if loc.block is not None:
        text += f"  %{loc.block.id}+{loc.file_address - loc.block.start:#x}"
    if loc.line:
        text += f"  at {os.path.basename(loc.file or '')}:{loc.line}"
    return text
