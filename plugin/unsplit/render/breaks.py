"""What `bb break` prints: the debugger's own `break` message for the same kind of breakpoint
(GDB's ``Breakpoint 1 at 0x1170: inl.c:3. (2 locations)``, LLDB's ``Breakpoint 1: 2
locations.``), with the procedure as written and its true line, and `bb break --list`."""

from __future__ import annotations

import os
from dataclasses import dataclass

from unsplit.errors import UnsplitError
from unsplit.index.model.records import Location
from unsplit.index.names.demangle import LLVM, shown
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
    kind: str = "Breakpoint"  # what the debugger lists `number` as (GDB's placeholder: catchpoint)


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


def originals_note(names: list[str], style: str | None) -> str:
    """The one line `bb break` and `bb blocks` add when a name also named BOLT's patched
    originals (``foo.org.0``), which they leave out; `style`: the session's demangling."""
    first = shown(names[0], style)
    if len(names) == 1:
        return (f"note: left out {first}: BOLT's patched original entry, which only jumps to "
                "the function's new code")
    return (f"note: left out {len(names)} of BOLT's patched original entries ({first}, ...): "
            "each only jumps to its function's new code")


def gdb_pending(number: int, location: str) -> str:
    """GDB: a location no loaded module has is held by a placeholder that `info breakpoints`
    lists as a catchpoint; each location a module brings gets a breakpoint number of its own,
    the one its stops read (gdb_resolved says which)."""
    return (f"Catchpoint {number} ({location}) pending: its locations become breakpoints of "
            "their own as modules that have them load.")


def gdb_resolved(kind: str, number: int, text: str, numbers: list[int], module: str) -> str:
    """GDB: the breakpoints a loaded module brought to a `bb break`, by the numbers its stops
    will read."""
    word = "Breakpoint" if len(numbers) == 1 else "Breakpoints"
    return (f"unsplit: {kind} {number} (bb break {text}): {word} {_spans(numbers)} in "
            f"{os.path.basename(module)} (bb break --list)")


def gdb_inlined_only(number: int, text: str, name: str, module: str,
                     declared: tuple[str, int]) -> str:
    """GDB: a pending `bb break NAME` a loaded module can never resolve."""
    file, line = declared
    return (f"unsplit: Catchpoint {number} (bb break {text}): {name} has no code of its own in "
            f"{os.path.basename(module)}, every call of it was inlined (declared at "
            f"{file}:{line}): it stays pending; break on a line of its body (bb break FILE:LINE) "
            "or on its callers")


def _spans(numbers: list[int]) -> str:
    """3, 4, 5, 9 -> `3-5, 9`."""
    out: list[str] = []
    for n in sorted(numbers):
        if out and out[-1].split("-")[-1] == str(n - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{n}"
        else:
            out.append(str(n))
    return ", ".join(out)


def lldb_created(number: int, count: int, address: int, loc: Location | None,
                 style: str | None = LLVM) -> str:
    """LLDB's `breakpoint set` message; `address` as LLDB shows it (file address before the
    process exists); the procedure demangled in `style` (unsplit.index.names.demangle)."""
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
        head = f"{g.kind} {g.number} (bb break {g.text}): "
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
