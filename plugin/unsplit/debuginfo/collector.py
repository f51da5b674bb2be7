"""Python's cycle collector paused while a process of its own makes a debug file."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a process of its own (the command line, the
    background writer) imports the writer, opens a module and makes its file: what it makes
    stays alive until the file is written, and nothing of it is in a cycle (none found on the
    BOLTed libLLVM), yet the collector went over it again and again as it grew, and over the
    classes and functions the imports make (docs/benchmarks.md). Not for a debugger's own
    process: the collector is the whole process's."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
