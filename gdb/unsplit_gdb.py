"""What GDB sources to load unsplit (``source /path/to/unsplit/gdb/unsplit_gdb.py`` in ~/.gdbinit):
makes the core, the adapter and the venv's pyelftools importable and registers the ``bb``
commands, the ``unsplit`` frame filter and the stop printer, once however often it is sourced.
No ``__init__.py`` here: a package named ``gdb`` on sys.path would hijack ``import gdb``."""

from __future__ import annotations

import os
import sys


def _load() -> None:
    """Register the plugin, or say in one line what is missing (the session goes on)."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(os.path.dirname(here), "plugin"))  # this checkout's core
    from unsplit.collector import collector_paused, spare_what_lives_on

    with collector_paused():  # its modules and classes live as long as GDB
        _register(here)
    spare_what_lives_on()


def _register(here: str) -> None:
    from unsplit import dependencies

    problem = dependencies.adapter_problem(here)
    if problem is not None:
        print(problem, file=sys.stderr)
        return
    import unsplit_gdb_impl

    unsplit_gdb_impl.register()


_load()
