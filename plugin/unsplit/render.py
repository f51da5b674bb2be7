"""The text every command prints, made once here so both debuggers and the CLI agree."""

from __future__ import annotations

import os
from typing import Any

from .model import Location


def source_position(loc: Location) -> str | None:
    if loc.file is None or loc.line is None:
        return None
    pos = f"{loc.file}:{loc.line}"
    return f"{pos}:{loc.column}" if loc.column else pos


def where_text(loc: Location | None, address: int) -> str:
    """A few lines that explain one address."""
    if loc is None:
        return f"{address:#x} is not in the code of any loaded module"
    module = os.path.basename(loc.module)
    if loc.procedure is None:
        text = f"{address:#x} is in {module}, outside every known procedure"
        pos = source_position(loc)
        return text + (f"\n  line      {pos}" if pos else "")
    lines = [f"{loc.address:#x} is in {loc.label()} ({module})"]
    lines.append(f"  procedure {loc.procedure}+{loc.offset:#x}  (offset in the original layout)")
    frag = loc.fragment
    if loc.fragment_symbol and loc.fragment_start is not None:
        frag = f"{frag}  ({loc.fragment_symbol}+{loc.address - loc.fragment_start:#x},"
        frag += f" starts at {loc.fragment_start:#x})"
    lines.append(f"  fragment  {frag}")
    if loc.block is not None:
        flags = f" [{', '.join(loc.block.flags)}]" if loc.block.flags else ""
        lines.append(f"  block     %{loc.block.id}+{loc.file_address - loc.block.start:#x}{flags}")
    lines.append(f"  line      {source_position(loc) or 'unknown (no line information)'}")
    return "\n".join(lines)


def frame_text(number: int, loc: Location) -> str:
    """One backtrace-style line: `#0  0x... in transfer [cold] at crash.c:20`."""
    pos = source_position(loc)
    at = f" at {pos}" if pos else f" from {os.path.basename(loc.module)}"
    return f"#{number:<2} {loc.address:#018x} in {loc.label()}+{loc.offset or 0:#x}{at}"


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
