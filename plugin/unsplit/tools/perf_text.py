"""The text `perf script` prints, read one sample at a time (tools/perf/builtin-script.c): a header
line, then with ``-g`` one ``ADDRESS SYMBOL+0xOFF (DSO)`` line per frame, leaf first (``-F
+srcline`` adds each frame's ``  FILE:LINE``), then a blank line. Anything else is a
:class:`BadLine` the caller reports with its line number."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import IO, NamedTuple

UNKNOWN = "[unknown]"


@dataclass(frozen=True, slots=True)
class PerfFrame:
    """One frame as perf printed it."""

    address: int  # what perf printed: a module-relative address for a file, else the pc
    symbol: str  # "[unknown]" when perf had none
    offset: int | None  # the +0xOFF after the symbol, when printed
    dso: str  # the path in parentheses, "[unknown]", "[kernel.kallsyms]", "[vdso]"…
    text: str  # the line as read (without its newline), for what is printed unchanged
    srcline: str | None = None  # the `  FILE:LINE` line perf printed after it (-F +srcline)


class PerfSample(NamedTuple):
    """One sample as read: its header line, the command name and its frame lines (leaf first,
    as one text: samples with the same text have the same frames, parsed once by the
    caller, :func:`frames_of`). A NamedTuple: made a million times a profile, it costs a
    third of a frozen dataclass."""

    header: str
    comm: str
    body: str  # the frame lines, each with its newline
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


def frames_of(sample: PerfSample) -> tuple[list[PerfFrame], list[BadLine]]:
    """The frames of a sample's lines, and the lines that are not frames."""
    frames: list[PerfFrame] = []
    bad: list[BadLine] = []
    for k, text in enumerate(sample.body.splitlines()):
        m = _FRAME.match(text)
        frame = None if m is None else frame_of(text, m["address"], m["rest"])
        if frame is not None:
            frames.append(frame)
        elif _SRCLINE.match(text) and frames and frames[-1].srcline is None:
            frames[-1] = replace(frames[-1], srcline=text)
        else:
            bad.append(BadLine(sample.line + k + (0 if sample.one_line else 1), text))
    return frames, bad


_SRCLINE = re.compile(r"^  \S")  # perf's "\n  " before a frame's srcline


def read_samples(stream: IO[str], chunk: int = 1 << 22) -> Iterator[PerfSample | BadLine]:
    """:func:`samples` of a stream, fast: perf ends each sample with a blank line, so the text
    is cut there in big chunks, and a sample's lines are looked at one by one only where one
    is not a frame line (perf's text otherwise, or damage): 1 million samples of 8 lines each
    in seconds."""
    rest = ""
    number = 1
    regular: set[str] = set()  # frame texts seen whole: one per distinct stack
    while True:
        data = stream.read(chunk)
        if not data:
            break
        parts = (rest + data).split("\n\n")
        rest = parts.pop()
        for block in parts:
            header, _, body = block.partition("\n")
            if body in regular and header[:1] not in ("", " ", "\t"):
                yield _sample(header, [body, "\n"], number)  # the common case, inline
            else:
                yield from _block(block, number, regular)
            number += block.count("\n") + 2
    if rest:
        yield from _block(rest, number, regular)


_IRREGULAR = re.compile(r"\n(?![ \t]+\S)")


def _block(block: str, number: int, regular: set[str]) -> Iterator[PerfSample | BadLine]:
    """The samples in the text between two blank lines, starting at line `number`."""
    header, _, body = block.partition("\n")
    if body and body not in regular:
        if _IRREGULAR.search("\n" + body) is None:
            regular.add(body)
        else:
            body = ""
            header = ""
    if not header or header[0] in " \t":
        yield from samples(block.splitlines(keepends=True), number)
    elif header.strip():
        yield _sample(header, [body + "\n"] if body else [], number)


def samples(lines: Iterable[str], line: int = 1) -> Iterator[PerfSample | BadLine]:
    """The samples of `lines` (perf script's text, the first at line number `line`) as they
    end, and each line outside a sample that does not read, in order; memory: one sample. A
    sample's frame lines are kept as they are."""
    header: str | None = None
    body: list[str] = []
    start = 0
    for number, text in enumerate(lines, line):
        first = text[:1]
        if (first == "\t" or first == " ") and header is not None and text.strip():
            body.append(text if text.endswith("\n") else text + "\n")  # a frame
            continue
        if header is not None and (first not in "\t " or not text.strip()):
            yield _sample(header, body, start)  # ended by a blank line or the next header
            header, body = None, []
        if not text.strip():
            continue
        if first in "\t ":  # a frame line outside any sample
            yield BadLine(number, text.rstrip("\n"))
        else:
            header, start = text.rstrip("\n"), number
    if header is not None:
        yield _sample(header, body, start)


def _sample(header: str, body: list[str], line: int) -> PerfSample | BadLine:
    m = _HEADER.match(header)
    if m is None:
        return BadLine(line, header)
    # a recording without call chains: the frame is on the header line
    inline = None if header.rstrip().endswith(":") else _HEADER_FRAME.match(header, m.end())
    if inline is not None and frame_of("", inline["address"], inline["rest"]) is not None:
        cut = inline.start("space")
        return PerfSample(header[:cut], m["comm"], header[cut:] + "\n" + "".join(body), line,
                          True)
    return PerfSample(header, m["comm"], "".join(body), line)
