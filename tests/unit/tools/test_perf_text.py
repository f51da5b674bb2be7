"""perf script's text as unsplit.tools.perf_text reads it: the shapes perf 6.1 prints (written
here as perf prints them: tools/perf/util/evsel_fprintf.c) and damaged text."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator

import pytest
from unsplit.tools.perf_text import BadLine, PerfSample, frames_of, read_samples, samples

Reader = Callable[[str], Iterator[PerfSample | BadLine]]
READERS: dict[str, Reader] = {
    "lines": lambda text: samples(text.splitlines(keepends=True)),
    "chunks": lambda text: read_samples(io.StringIO(text), chunk=7),
    "whole": lambda text: read_samples(io.StringIO(text)),
}

TEXT = """\
my prog 1234/1240 [002] 10.500000:     250000 cpu-clock:u:\x20
\t          401136 foo.cold+0x6 (/tmp/a.out)
\t    7f00000000aa operator()(int) const+0x1c (/usr/lib/libx (copy).so)
\t    7f00000000bb [unknown] ([unknown])

sh  77 11.000000:      50000 cpu-clock:\x20
\tffffffff81000130 entry_SYSCALL_64+0x76 ([kernel.kallsyms])
\t            1234 main (/bin/sh)
next  78 11.000001:      50000 cpu-clock:      401136 foo.cold+0x6 (/tmp/a.out)
\tstray text that is no frame
"""


@pytest.mark.parametrize("reader", READERS)
def test_frames_headers_and_damage(reader: str) -> None:
    got = list(READERS[reader](TEXT))
    kinds = [type(g).__name__ for g in got]
    assert kinds == ["PerfSample", "PerfSample", "PerfSample"]
    first, second, third = (g for g in got if isinstance(g, PerfSample))
    assert (first.comm, first.line) == ("my prog", 1)
    frames, bad = frames_of(first)
    assert not bad
    assert [(f.address, f.symbol, f.offset, f.dso) for f in frames] == [
        (0x401136, "foo.cold", 6, "/tmp/a.out"),
        (0x7F00000000AA, "operator()(int) const", 0x1C, "/usr/lib/libx (copy).so"),
        (0x7F00000000BB, "[unknown]", None, "[unknown]")]
    frames, _ = frames_of(second)  # ended by the next header, no blank line
    assert [f.symbol for f in frames] == ["entry_SYSCALL_64", "main"]
    assert frames[1].offset is None
    # a recording without call chains: the frame on the header line
    assert third.one_line and third.header.endswith("cpu-clock:")
    frames, bad = frames_of(third)
    assert [(f.symbol, f.offset) for f in frames] == [("foo.cold", 6)]
    assert bad == [BadLine(10, "\tstray text that is no frame")]


@pytest.mark.parametrize("reader", READERS)
def test_lines_outside_samples_are_reported_each(reader: str) -> None:
    got = list(READERS[reader]("\t  401136 foo+0x1 (/a)\ngarbage\n\np 1 1.0: 1 cpu-clock: \n"
                               "\t zz not a frame\n"))
    assert got[0] == BadLine(1, "\t  401136 foo+0x1 (/a)")
    assert got[1] == BadLine(2, "garbage")
    assert isinstance(got[2], PerfSample)
    assert frames_of(got[2]) == ([], [BadLine(5, "\t zz not a frame")])
