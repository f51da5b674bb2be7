"""The text `perf script` prints, read one sample at a time.

perf's default output (tools/perf/builtin-script.c, util/evsel_fprintf.c): a sample is a header
line (``comm  tid [cpu] time: period event:``, ``tid`` as ``pid/tid`` with ``-F pid,tid``; a
recording without call chains has its one frame on the same line), then with ``-g`` one line per
frame, leaf first, each ``<tab>ADDRESS SYMBOL+0xOFF (DSO)`` (``[unknown]`` for either name; no
offset without ``symoff``), then a blank line. Where ``--inline`` is given perf adds frames for
inlined calls, with the same address. Anything else (perf's own warnings, a damaged line) is a
:class:`BadLine` the caller reports with its line number; the rest is read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

UNKNOWN = "[unknown]"


@dataclass(frozen=True, slots=True)
class PerfFrame:
    """One frame as perf printed it."""

    address: int  # what perf printed: a module-relative address for a file, else the pc
    symbol: str  # "[unknown]" when perf had none
    offset: int | None  # the +0xOFF after the symbol, when printed
    dso: str  # the path in parentheses, "[unknown]", "[kernel.kallsyms]", "[vdso]"…
    text: str  # the line as read (without its newline), for what is printed unchanged


@dataclass(frozen=True, slots=True)
class PerfSample:
    """One sample: its header line, the command name, and its frames (leaf first)."""

    header: str
    comm: str
    frames: tuple[PerfFrame, ...]
    line: int  # the header's line number, from 1
    one_line: bool = False  # its one frame is on the header line (no call chains recorded)


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line that is not part of perf's format where it stands."""

    line: int
    text: str


# comm (may hold spaces) up to the first `  TID` or `  PID/TID` word, which a time or a cpu
# (`[003]`) follows.
_HEADER = re.compile(r"^(?P<comm>\S(?:.*?\S)?)\s+\d+(?:/\d+)?\s+(?:\[\d+\]\s+)?[\d.]+:")
_FRAME = re.compile(r"^\s*(?P<address>[0-9a-fA-F]+)\s+(?P<rest>.*?)\s*$")
# the frame on a header line of a recording without call chains: after the time's colon, the
# period and the event (`cpu-clock:u:`), then the frame
_HEADER_FRAME = re.compile(r"(?:\s+\d+)?\s+\S+:(?P<space>\s+)(?P<address>[0-9a-fA-F]+)\s+"
                           r"(?P<rest>\S.*\))\s*$")
_OFFSET = re.compile(r"\+0x(?P<offset>[0-9a-fA-F]+)$")


def frame_of(text: str, address: str, rest: str) -> PerfFrame | None:
    """A frame from its address and ``SYMBOL+0xOFF (DSO)`` text (the DSO's parentheses are the
    last ones: a C++ symbol has its own), or None when the text has no DSO."""
    if not rest.endswith(")"):
        return None
    depth = 0
    for i in range(len(rest) - 1, -1, -1):
        c = rest[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                break
    else:
        return None
    dso = rest[i + 1:-1]
    symbol = rest[:i].rstrip()
    offset = None
    m = _OFFSET.search(symbol)
    if m is not None:
        offset = int(m["offset"], 16)
        symbol = symbol[:m.start()]
    return PerfFrame(int(address, 16), symbol or UNKNOWN, offset, dso, text)


def samples(lines: Iterable[str]) -> Iterator[PerfSample | BadLine]:
    """The samples of `lines` (perf script's text) as they end, and each line that does not
    read, in order; memory: one sample."""
    header: str | None = None
    comm = ""
    start = 0
    frames: list[PerfFrame] = []
    one_line = False
    for number, raw in enumerate(lines, 1):
        text = raw.rstrip("\n")
        if not text.strip():
            if header is not None:
                yield PerfSample(header, comm, tuple(frames), start, one_line)
                header, frames = None, []
            continue
        if text[0] in " \t":
            m = _FRAME.match(text)
            frame = None if m is None or header is None else \
                frame_of(text, m["address"], m["rest"])
            if frame is None:
                yield BadLine(number, text)
            else:
                frames.append(frame)
            continue
        if header is not None:  # a header without the blank line that ends the last sample
            yield PerfSample(header, comm, tuple(frames), start, one_line)
            header, frames = None, []
        m = _HEADER.match(text)
        if m is None:
            yield BadLine(number, text)
            continue
        header, comm, start, one_line = text, m["comm"], number, False
        inline = _HEADER_FRAME.match(text, m.end())
        if inline is not None:
            frame = frame_of(text[inline.start("space"):], inline["address"], inline["rest"])
            if frame is not None:
                header, one_line = text[:inline.start("space")], True
                frames.append(frame)
    if header is not None:
        yield PerfSample(header, comm, tuple(frames), start, one_line)
