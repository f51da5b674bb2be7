"""The text every command prints, made once here so both debuggers and the CLI agree."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from unsplit.formats.dwarf_expr import register_name
from unsplit.index.model.frame import Frame
from unsplit.index.model.records import BatFacts, InlineFrame, Location
from unsplit.index.names.demangle import GNU, LLVM, shown


def source_position(loc: Location) -> str | None:
    if loc.file is None or loc.line is None:
        return None
    pos = f"{loc.file}:{loc.line}"
    return f"{pos}:{loc.column}" if loc.column else pos


def where_text(loc: Location | None, address: int, style: str | None = GNU) -> str:
    """A few lines that explain one address (names demangled in `style`,
    unsplit.index.names.demangle)."""
    if loc is None:
        return f"{address:#x} is not in the code of any loaded module"
    module = os.path.basename(loc.module)
    # What the index could not read, one line each, before the answer it weakens.
    warned = [f"warning: {module}: {w}" for w in loc.warnings]
    if loc.procedure is None:
        text = f"{address:#x} is in {module}, outside every known procedure"
        pos = source_position(loc)
        return "\n".join([*warned, text + (f"\n  line      {pos}" if pos else "")])
    lines = [*warned, f"{loc.address:#x} is in {loc.label(style)} ({module})"]
    lines.append(f"  procedure {loc.name(style)}+{loc.offset:#x}  (offset in the original "
                 "layout)")
    frag = loc.fragment
    if loc.fragment_symbol and loc.fragment_start is not None:
        frag = f"{frag}  ({loc.fragment_symbol}+{loc.address - loc.fragment_start:#x},"
        frag += f" starts at {loc.fragment_start:#x})"
    lines.append(f"  fragment  {frag}")
    if loc.block is not None:
        flags = f" [{', '.join(loc.block.flags)}]" if loc.block.flags else ""
        lines.append(f"  block     %{loc.block.id}+{loc.file_address - loc.block.start:#x}{flags}")
    if loc.bat is not None:
        lines.append(f"  bolt      {bat_text(loc, loc.bat, style)}")
    # Inlined code: each inlined call at its line, innermost first, then the procedure's own.
    lines += [f"  inlined   {inlined_text(f, style)}" for f in loc.inlined]
    own = loc.as_procedure()
    lines.append(f"  line      {source_position(own) or 'unknown (no line information)'}")
    return "\n".join(lines)


def inlined_text(frame: InlineFrame, style: str | None = GNU) -> str:
    """`quarantine_record at verify.c:26:20`: an inlined call and its line in the callee."""
    pos = f"{frame.file or '??'}:{frame.line}" + (f":{frame.column}" if frame.column else "")
    return f"{shown(frame.function, style)} at {pos}"


def bat_text(loc: Location, bat: BatFacts, style: str | None = GNU) -> str:
    """`input main+0x33 at 0x401183 (block entry %4 +0x2, cold fragment)`: what BAT says."""
    at = "" if loc.input_address is None else f" at {loc.input_address:#x}"
    entry = f"{bat.entry} entry"
    if bat.entry == "block" and bat.block is not None:
        entry += f" %{bat.block}"
    if bat.entry_distance:
        entry += f" +{bat.entry_distance:#x}"
    return (f"input {loc.name(style)}+{bat.input_offset:#x}{at} "
            f"({entry}, {bat.fragment_kind} fragment)")


def frame_text(number: int, loc: Location, pc: int | None = None,
               style: str | None = GNU) -> str:
    """One backtrace-style line: `#0  0x... in transfer [cold] at crash.c:20`. `pc`: the
    frame's own pc when `loc` describes the byte before it (a caller's return address);
    `style`: how the procedure is demangled (unsplit.index.names.demangle). Where code is inlined,
    the procedure's own line (Location.as_procedure)."""
    loc = loc.as_procedure()
    pos = source_position(loc)
    at = f" at {pos}" if pos else f" from {os.path.basename(loc.module)}"
    shown = loc.address if pc is None else pc
    offset = (loc.offset or 0) + shown - loc.address
    return f"#{number:<2} {shown:#018x} in {loc.label(style)}+{offset:#x}{at}"


def blocks_text(procedure: str, rows: list[dict[str, Any]]) -> str:
    """The table `bb blocks` prints (rows as in its --json output)."""
    lines = [f"{procedure}: {len(rows)} blocks",
             f"  {'block':<7}{'fragment':<10}{'range':<37}{'offset':>8}  {'freq':>8}  flags"]
    for r in rows:
        freq = "" if r["frequency"] is None else f"{r['frequency']:.3g}"
        succ = " ".join(f"->%{s['block']}({s['probability']:.0%})" for s in r["successors"])
        offset = "" if r["offset"] is None else f"{r['offset']:#x}"
        lines.append(f"  %{r['block']:<6}{r['fragment'] or '?':<10}"
                     f"{r['start'] + '-' + r['end']:<37}{offset:>8}  {freq:>8}  "
                     f"{' '.join(r['flags'])} {succ}".rstrip())
    return "\n".join(lines)


FRAME_COLUMNS = ("#", "pc", "procedure", "fragment", "bb", "offset", "line", "module")


def frames_text(rows: list[dict[str, Any]], thread: int | None = None) -> str:
    """The table `bb frames` prints (rows as in its --json output): one line per frame, then
    the frame's source line, indented, when the file could be read."""
    cells = []
    for r in rows:
        pos = None
        if r["file"] is not None and r["line"]:
            pos = f"{os.path.basename(r['file'])}:{r['line']}"
            pos += f":{r['column']}" if r["column"] else ""
        cells.append((str(r["frame"]), r["pc"], r["procedure"] or "??", r["fragment"] or "",
                      "" if r["block"] is None else f"%{r['block']}",
                      "" if r["offset"] is None else f"+{r['offset']:#x}", pos or "",
                      os.path.basename(r["module"]) if r["module"] else ""))
    widths = [max(len(c[k]) for c in [FRAME_COLUMNS, *cells]) for k in range(len(FRAME_COLUMNS))]

    def line(values: tuple[str, ...]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    lines = [] if thread is None else [f"thread {thread}:"]
    lines.append(line(FRAME_COLUMNS))
    indent = " " * (widths[0] + 2)
    for r, c in zip(rows, cells, strict=True):
        lines.append(line(c))
        if r["source"] is not None:
            lines.append(f"{indent}{r['line']:>5}  {r['source'].strip()}")
        for f in r.get("inlined", ()):  # the calls inlined here, innermost first
            pos = f"{f['file'] or '??'}:{f['line']}" + (f":{f['column']}" if f["column"] else "")
            lines.append(f"{indent}{'':5}  inlined {f['function']} at {pos}")
            if f["source"] is not None:
                lines.append(f"{indent}{f['line']:>5}  {f['source'].strip()}")
    return "\n".join(lines)


Reader = Callable[[str], "list[str] | None"]
"""A source file's lines, or None when it cannot be read (Session.source_lines caches them)."""


def source_lines(path: str) -> list[str] | None:
    """The lines of a source file, read now, or None when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return None


def source_line(read: Reader, path: str | None, line: int | None) -> str | None:
    """The text of `line` in `path`, or None when the file cannot be read (said nowhere)."""
    lines = read(path) if path is not None and line else None
    return lines[line - 1] if lines is not None and line and line <= len(lines) else None


# -- one frame, as JSON ------------------------------------------------------------------------
# Every command's frame objects share these keys; each command adds its own few (below).

def frame_fields(frame: Frame, style: str | None) -> dict[str, Any]:
    """The keys every frame object has: module, procedure (in `style`), linkage_name,
    fragment, fragment_symbol, original offset (of the pc), file and line (the procedure's
    own: where code is inlined, the line of the call), and the calls inlined there
    (innermost first, each at its line in the callee)."""
    loc = None if frame.location is None else frame.location.as_procedure()
    return {
        "module": frame.module,
        "procedure": None if loc is None else loc.name(style),
        "linkage_name": None if loc is None else loc.procedure,
        "fragment": None if loc is None else loc.fragment,
        "fragment_symbol": None if loc is None else loc.fragment_symbol,
        "offset": None if loc is None else loc.offset,
        "file": None if loc is None else loc.file,
        "line": None if loc is None else loc.line,
        "inlined": [] if frame.location is None else
        [f.to_json(style) for f in frame.location.inlined],
    }


def _registers(frame: Frame) -> dict[str, str] | None:
    if frame.registers is None:
        return None
    return {register_name(r).lower(): hex(v) for r, v in sorted(frame.registers.items())}


def _cfa(frame: Frame) -> str | None:
    return None if frame.cfa is None else hex(frame.cfa)


# -- bb bt, unsplit bt: the CFI's frames ---------------------------------------------------------

def bt_json(frame: Frame, style: str | None = GNU) -> dict[str, Any]:
    """One frame of `bb bt --json`: the shared keys, pc, cfa, file address, registers and,
    on the last frame, why the walk ended."""
    return {"frame": frame.number, "pc": hex(frame.pc), "cfa": _cfa(frame),
            **frame_fields(frame, style),
            "file_address": hex(frame.file_address) if frame.module else None,
            "registers": _registers(frame), "stop_reason": frame.stop_reason}


def bt_line(frame: Frame, style: str | None = GNU) -> str:
    """`#1  0x000055555555526d in run [cold]+0x4d at crash.c:43  cfa 0x7ffc…`; a physical
    frame where code is inlined reads at the procedure's own line (the inlined calls are rows of
    their own, `[inlined]`, as the debuggers number them)."""
    loc = frame.location
    if loc is not None and not frame.inlined:
        loc = loc.as_procedure()
    name = "??"
    if loc is not None and loc.procedure is not None:
        # An inlined call has no code of its own to be at an offset in, nor a fragment: the
        # function inlined, marked as LLDB marks it (GDB shows no pc for it).
        name = f"{loc.name(style) or '??'}" if frame.inlined else \
            f"{loc.label(style)}+{loc.offset or 0:#x}"
    pos = source_position(loc) if loc is not None else None
    where = f" at {pos}" if pos else (f" from {os.path.basename(frame.module)}"
                                      if frame.module else "")
    cfa = f"  cfa {frame.cfa:#x}" if frame.cfa is not None else ""
    inlined = " [inlined]" if frame.inlined else ""
    return f"#{frame.number:<2} {frame.pc:#018x} in {name}{where}{inlined}{cfa}"


def backtrace_text(frames: list[Frame], style: str | None = GNU) -> str:
    """What `bb bt` prints: one line per frame, then why the walk ended."""
    lines = [bt_line(f, style) for f in frames]
    if frames and frames[-1].stop_reason:
        lines.append(f"   ({frames[-1].stop_reason})")
    return "\n".join(lines)


def bt_report(frames: list[Frame], differences: list[str] | None,
              style: str | None = GNU) -> str:
    """`bb bt`'s text: the CFI's frames, then where the debugger's own list differs
    (unsplit.debug.unwind.compare; None: the debugger's list was not asked for)."""
    text = backtrace_text(frames, style)
    if differences is None:
        return text
    if not differences:
        return text + "\n(the debugger's own frames agree)"
    return (text + "\nthe debugger's own backtrace differs:\n"
            + "\n".join(f"  {d}" for d in differences))


# -- bb frames: the debugger's own frames ---------------------------------------------------------

def frame_row(frame: Frame, style: str | None, read: Reader = source_lines) -> dict[str, Any]:
    """One row of `bb frames --json` (what :func:`frames_text` prints): the shared keys, the
    block, the file's full path, column and the line's source text."""
    loc = None if frame.location is None else frame.location.as_procedure()
    path = None if loc is None else (loc.path or loc.file)
    fields = frame_fields(frame, style)
    for f in fields["inlined"]:  # each inlined call's line, with its text
        f["source"] = source_line(read, f["path"] or f["file"], f["line"])
    return {"frame": frame.number, "pc": f"{frame.pc:#018x}", **fields,
            "block": frame.block, "path": path,
            "column": None if loc is None else loc.column,
            "source": source_line(read, path, None if loc is None else loc.line)}


# -- unsplit frames: every thread of a core -------------------------------------------------------

def core_frame_json(frame: Frame, style: str | None = LLVM) -> dict[str, Any]:
    """One frame of `unsplit frames --json`: the shared keys (file and line DWARF's, as
    llvm-symbolizer says them), inlined calls, and what the CFI recovered (or null)."""
    outer = frame.lines[-1] if frame.lines else None
    fields = frame_fields(frame, style)
    fields["file"] = None if outer is None or outer.path is None else outer.path
    fields["line"] = None if outer is None or outer.path is None else outer.line
    return {"index": frame.number, "pc": hex(frame.pc), **fields,
            "inlined": [{"function": f.function, "file": f.path, "line": f.line}
                        for f in frame.lines[:-1]],
            "cfa": _cfa(frame), "registers": _registers(frame)}


def _signal_name(number: int) -> str:
    import signal  # (a core's table alone names signals)

    try:
        return f"{number} ({signal.Signals(number).name})"
    except ValueError:
        return str(number)


def core_table(threads: list[dict[str, Any]], style: str | None = LLVM) -> str:
    """What `unsplit frames` prints: per thread (`thread`, `lwp`, `signal`, `frames`, `error`)
    a heading, a line per frame and why the walk ended."""
    lines = []
    for t in threads:
        sig = f", signal {_signal_name(t['signal'])}" if t.get("signal") else ""
        lines.append(f"Thread {t['thread']} (LWP {t['lwp']}){sig}:")
        for f in t["frames"]:
            lines.append("  " + _core_frame_line(f, style))
        if t["error"]:
            lines.append(f"  ({t['error']})")
    return "\n".join(lines)


def _core_frame_line(f: Frame, style: str | None) -> str:
    head = f"#{f.number:<3} {f.pc:#018x}"
    module = f"  ({os.path.basename(f.module)})" if f.module else ""
    loc = f.location
    if loc is None or not f.lines:
        return f"{head}  ??{module}"
    offset = "" if loc.offset is None else f"+{loc.offset:#x}"
    outer = f.lines[-1]
    where = f"  {outer.path}:{outer.line}" if outer.path else ""
    inl = "".join(f"  [inlined {g.function} at {os.path.basename(g.path or '??')}:{g.line}]"
                  for g in f.lines[:-1])
    return f"{head}  {loc.label(style)}  {offset}{where}{inl}{module}"
