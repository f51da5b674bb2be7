"""Python's cycle collector paused while a process imports or makes what lives to its end."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off, and given back as found: while the command line and the
    background writer import and make a debug file (nothing of it is in a cycle, none found on
    the BOLTed libLLVM, yet the collector went over it again and again as it grew), and while
    GDB loads the plugin (its modules and classes live as long as GDB); docs/benchmarks.md. Not
    around a debugger's session: the collector is the whole process's."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
