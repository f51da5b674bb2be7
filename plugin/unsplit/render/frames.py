"""The text every command prints, made once here so both debuggers and the CLI agree."""

from __future__ import annotations

import os
from typing import Any

from unsplit.index.demangle import GNU
from unsplit.index.model import Location


def source_position(loc: Location) -> str | None:
    if loc.file is None or loc.line is None:
        return None
    pos = f"{loc.file}:{loc.line}"
    return f"{pos}:{loc.column}" if loc.column else pos


def where_text(loc: Location | None, address: int, style: str | None = GNU) -> str:
    """A few lines that explain one address (names demangled in `style`, unsplit.index.demangle)."""
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
    if loc.bat_entry is not None:
        lines.append(f"  bolt      {bat_text(loc, style)}")
    lines.append(f"  line      {source_position(loc) or 'unknown (no line information)'}")
    return "\n".join(lines)


def bat_text(loc: Location, style: str | None = GNU) -> str:
    """`input main+0x33 at 0x401183 (block entry %4 +0x2, cold fragment)`: what BAT says."""
    at = "" if loc.input_address is None else f" at {loc.input_address:#x}"
    entry = f"{loc.bat_entry} entry"
    if loc.bat_entry == "block" and loc.bat_block is not None:
        entry += f" %{loc.bat_block}"
    if loc.bat_entry_distance:
        entry += f" +{loc.bat_entry_distance:#x}"
    return (f"input {loc.name(style)}+{loc.input_offset or 0:#x}{at} "
            f"({entry}, {loc.fragment_kind} fragment)")


def frame_text(number: int, loc: Location, pc: int | None = None,
               style: str | None = GNU) -> str:
    """One backtrace-style line: `#0  0x... in transfer [cold] at crash.c:20`. `pc`: the
    frame's own pc when `loc` describes the byte before it (a caller's return address);
    `style`: how the procedure is demangled (unsplit.index.demangle)."""
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
    for r, c in zip(rows, cells, strict=True):
        lines.append(line(c))
        if r["source"] is not None:
            lines.append(f"{'':{widths[0] + 2}}{r['line']:>5}  {r['source'].strip()}")
    return "\n".join(lines)
