"""How a stop reads in each debugger, for `bb next`/`step`/`finish`/… and GDB's stop printer: as
the debugger prints its own (GDB's ``print_stop_event``, LLDB's ``Thread::GetStatus``), with the
procedure as written and its true line where the debugger would name a fragment or know no
line; `bb set verbose on` adds :func:`verbose_line`."""

from __future__ import annotations

import os
import re

from unsplit.host import Host
from unsplit.index.model.records import Location
from unsplit.index.names.demangle import GNU
from unsplit.index.session_view import SessionView
from unsplit.render.frames import Reader, frame_text, source_lines

# GDB's `print frame-info` values (gdb/stack.c print_frame_info_choices).
SRC_LINE, LOCATION, SRC_AND_LOC = "source-line", "location", "source-and-location"
LOC_AND_ADDRESS, SHORT_LOCATION = "location-and-address", "short-location"


def at_line_start(session: SessionView, host: Host, pc: int) -> bool:
    """Whether `pc` begins a row of the best line table of its module: where GDB prints a
    stop without its address (frame_show_address)."""
    found = session.module_of(host, pc)
    if found is None:
        return False
    mod, index = found
    row = index.line_at(pc - mod.bias)
    return row is not None and row.address == pc - mod.bias


def verbose_line(loc: Location | None, pc: int, style: str | None = GNU) -> str:
    """`#0  0x… in transfer [cold]+0x39 at crash.c:32:10  (block %2+0x4)`: every extra
    (the procedure demangled in `style`, unsplit.index.names.demangle)."""
    if loc is None:
        return f"#0  {pc:#018x} in ??"
    text = frame_text(0, loc, style=style)
    if loc.block is not None:
        text += f"  (block %{loc.block.id}+{loc.file_address - loc.block.start:#x})"
    return text


# -- GDB --------------------------------------------------------------------------------------

_GDB_FRAME = re.compile(r"^(?:#\d+\s+)?(?P<addr>0x[0-9a-f]+ in )?(?P<name>.+?) "
                        r"(?P<args>\(.*\))(?P<where> (?:at|from) \S+)?$")


def gdb_what(frame_info: str, frame_changed: bool) -> str:
    """What GDB prints of a stop after a step (infrun.c print_stop_location)."""
    if frame_info and frame_info != "auto":
        return frame_info
    return SRC_AND_LOC if frame_changed else SRC_LINE


def gdb_location_line(native: str, loc: Location | None, pc: int, at_line_start: bool,
                      print_address: bool = True, style: str | None = GNU) -> str:
    """GDB's frame line for the stop (`native`: the first line of its own `frame`), naming
    the procedure as written (demangled in `style`) and its line:
    `0x… in transfer [cold] (…) at crash.c:32`."""
    m = _GDB_FRAME.match(native.strip())
    args = m["args"] if m else "()"
    if loc is None or loc.procedure is None:
        return re.sub(r"^#\d+\s+", "", native.strip()) if native.strip() else f"{pc:#018x} in ?? ()"
    show_address = print_address and not (at_line_start and loc.line)
    text = f"{pc:#018x} in " if show_address else ""
    # GDB names a function it has DWARF for (its line says so) without its parameter types,
    # which follow as arguments; one it knows by its ELF symbol alone with them.
    gdb_has_line = bool(m and m["where"] and m["where"].startswith(" at "))
    text += f"{loc.label(style, parameters=not gdb_has_line)} {args}"
    if loc.line:
        # GDB's own name for the file (its symtab's), when it names the same one.
        file = loc.path or loc.file or "??"
        native_file = re.match(r" at (\S+):\d+$", m["where"] or "") if m else None
        if native_file and os.path.basename(native_file[1]) == os.path.basename(file):
            file = native_file[1]
        text += f" at {file}:{loc.line}"
    elif m and m["where"]:
        text += m["where"]
    else:
        text += f" from {loc.module}"
    return text


def gdb_backtrace_line(level: int, native: str, pc: int, name: str, file: str | None,
                       line: int | None) -> str:
    """A frame as GDB's `bt` prints it through a frame filter (py-framefilter.c,
    py_print_frame), from what the filter's decorator gives (`name`, `file`, `line`) and what
    GDB's own `frame` line (`native`) shows of it (its arguments, whether the address):
    `#1  0x… in work [cold] () at libwork.c:76`. That printer has no ` from LIB`."""
    m = _GDB_FRAME.match(native.strip())
    text = f"#{level:<2} " + (f"{pc:#018x} in " if m is None or m["addr"] else "")
    text += f"{name} {m['args'] if m else '()'}"
    if file:
        text += f" at {file}"
    if line:
        text += f":{line}"
    return text


def gdb_source_line(loc: Location | None, pc: int, mid_statement: bool,
                    print_address: bool = True, read: Reader = source_lines) -> str | None:
    """`43\\t<text>` (`0x…\\t43\\t<text>` mid-statement); None without a line."""
    if loc is None or not loc.line:
        return None
    lines = read(loc.path or loc.file or "")
    prefix = f"{pc:#018x}\t" if mid_statement and print_address else ""
    if lines is None or loc.line > len(lines):
        return f"{prefix}{loc.line}\tin {loc.path or loc.file}"
    return f"{prefix}{loc.line}\t{lines[loc.line - 1]}"


def gdb_stop(loc: Location | None, pc: int, *, native_frame: str, what: str,
             at_line_start: bool, print_address: bool = True,
             read: Reader = source_lines, style: str | None = GNU) -> str:
    """The whole stop as GDB prints it for `what` (a print frame-info value), the procedure
    demangled in `style` (unsplit.index.names.demangle)."""
    out = []
    no_line = loc is None or not loc.line
    if what in (LOCATION, SRC_AND_LOC, LOC_AND_ADDRESS, SHORT_LOCATION) or no_line:
        line = gdb_location_line(native_frame, loc, pc, at_line_start, print_address, style)
        if what == SHORT_LOCATION:
            line = re.sub(r" at \S+$| from \S+$", "", line)
        if what == LOC_AND_ADDRESS and not line.startswith("0x"):
            line = f"{pc:#018x} in {line}"
        out.append(line)
    if what in (SRC_LINE, SRC_AND_LOC):
        src = gdb_source_line(loc, pc, what == SRC_LINE and not at_line_start, print_address,
                              read)
        if src is not None:
            out.append(src)
    return "\n".join(out)


# -- LLDB -------------------------------------------------------------------------------------

def lldb_source_block(loc: Location, before: int, after: int, caret: bool,
                      read: Reader = source_lines) -> str | None:
    """The source lines LLDB shows under a stop's frame line, for our line of `loc`."""
    lines = read(loc.path or loc.file or "")
    if lines is None or not loc.line or loc.line > len(lines):
        return None
    out = []
    for n in range(max(1, loc.line - before), min(len(lines), loc.line + after) + 1):
        mark = "->" if n == loc.line else ""
        out.append(f"{mark:>2.2} {n:<4}\t{lines[n - 1]}")
        if n == loc.line and caret and loc.column:
            out.append("    \t" + " " * (loc.column - 1) + "^")
    return "\n".join(out)

