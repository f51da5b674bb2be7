"""Breakpad ``FILE``, ``INLINE_ORIGIN``, ``FUNC``, ``INLINE`` and line records for a module's moved
fragments, so that LLDB has lines and ``[inlined]`` frames there from the symbol file of
unsplit.debug.breakpad. Each fragment is a ``FUNC`` named by its symbol; rows from
unsplit.index.code_lines. ``INLINE`` ranges are written relative to the function's ELF section,
as LLDB 19 and 22 read them (not as the spec says)."""

from __future__ import annotations

import os
from bisect import bisect_right
from typing import TYPE_CHECKING

from unsplit.index.code_lines import CodeWalker, InlinedRun, Row

if TYPE_CHECKING:
    from unsplit.elf.binary import Binary
    from unsplit.index.module_index import ModuleIndex


def max_code_bytes() -> int:
    """The most moved code a debugger session describes when it gives a module its symbol file
    (``UNSPLIT_LLDB_LINES_MAX_KB``, default 64 KB: seconds, once, then the text is kept);
    `unsplit lldb-cfi` ahead of time has no limit."""
    try:
        return int(os.environ.get("UNSPLIT_LLDB_LINES_MAX_KB", "64")) * 1024
    except ValueError:
        return 64 * 1024


def line_records(index: ModuleIndex, base: int, max_code: int | None = None) -> list[str]:
    """The records for every moved fragment of `index` that has a line; [] when none has or
    (`max_code`) its moved fragments hold more bytes than that (the rows are asked of the core
    byte by byte)."""
    fragments = [f for f in index.moved_fragments() if f.end > f.start]
    if not fragments or (max_code is not None
                         and sum(f.end - f.start for f in fragments) > max_code):
        return []
    walker = CodeWalker(index)
    if not walker.has_lines:
        return []
    sections = _sections(index.binary)
    files: dict[str, int] = {}
    origins: dict[str, int] = {}
    funcs: list[str] = []
    for frag in sorted(fragments, key=lambda f: f.start):
        rows, runs = walker.walk(frag.start, frag.end)
        lines = line_rows(rows, frag.end, base, files)
        if not lines:
            continue
        name = frag.symbol or f"{frag.procedure}.{frag.name}"
        funcs.append(f"FUNC {frag.start - base:x} {frag.end - frag.start:x} 0 {word(name)}")
        section = _section_start(sections, frag.start)
        funcs += inline_records(runs, 0, section, files, origins)
        funcs += lines
    if not funcs:
        return []
    return ([f"FILE {n} {word(path)}" for path, n in files.items()]
            + [f"INLINE_ORIGIN {n} {word(name)}" for name, n in origins.items()] + funcs)


def line_rows(rows: list[Row], end: int, base: int, files: dict[str, int]) -> list[str]:
    """`address size line file` for each row with a line (line 0 is "no source": a gap)."""
    out: list[str] = []
    bounds = [r[0] for r in rows[1:]] + [end] if rows else []
    for (address, path, line, _, _), nxt in zip(rows, bounds, strict=True):
        if line > 0 and path and nxt > address:
            number = files.setdefault(path, len(files))
            out.append(f"{address - base:x} {nxt - address:x} {line} {number}")
    return out


def inline_records(runs: list[InlinedRun], level: int, section: int, files: dict[str, int],
                    origins: dict[str, int]) -> list[str]:
    out = []
    for run in runs:
        callee, path, line, _ = run.call
        file = files.setdefault(path or "??", len(files))
        origin = origins.setdefault(callee, len(origins))
        out.append(f"INLINE {level} {line} {file} {origin} {run.start - section:x} "
                   f"{run.end - run.start:x}")
        out += inline_records(run.children, level + 1, section, files, origins)
    return out


def _sections(binary: Binary) -> list[tuple[int, int]]:
    """(start, end) of the allocated sections with code or data, sorted by start."""
    out = []
    for sec in binary.elf.iter_sections():
        if sec["sh_flags"] & 2 and sec["sh_size"] and sec["sh_type"] != "SHT_NOBITS":  # ALLOC
            out.append((int(sec["sh_addr"]), int(sec["sh_addr"]) + int(sec["sh_size"])))
    return sorted(out)


def _section_start(sections: list[tuple[int, int]], address: int) -> int:
    """The start of the section holding `address` (what LLDB takes INLINE ranges from)."""
    i = bisect_right([s for s, _ in sections], address) - 1
    return sections[i][0] if i >= 0 and address < sections[i][1] else address


def word(text: str) -> str:
    """A record's last field (a name, a path: the rest of the line), on one line whatever the
    file said."""
    return " ".join(text.splitlines()) or "??"
