"""Python's cycle collector paused while a process imports or makes what lives to its end, and
what it made then left out of the collector's later passes."""

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


def spare_what_lives_on() -> None:
    """Everything the process holds now left out of every later pass of the cycle collector
    (gc.freeze), once GDB has loaded the plugin: its modules, classes and functions live as
    long as GDB, yet the collector's first passes after the load went over all of them (made
    while it was paused, they were all young) and GDB's exit freed them one by one. What is
    made later is collected as before."""
    gc.freeze()
