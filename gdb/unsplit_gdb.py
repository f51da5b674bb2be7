"""What GDB sources to load unsplit: put this line in ~/.gdbinit

    source /path/to/unsplit/gdb/unsplit_gdb.py

It makes the core (``<repo>/plugin``), the adapter package next to this file
(``unsplit_gdb_impl``) and the project venv's site-packages (pyelftools) importable from GDB's
embedded Python, then registers the ``bb`` commands, the ``unsplit`` frame filter and the stop
printer. Sourcing it again registers nothing twice (see unsplit_gdb_impl.register). Without
pyelftools it prints one line saying what to install and registers nothing.

There is deliberately no ``__init__.py`` in this folder: a package named ``gdb`` on sys.path
would hijack ``import gdb``.
"""

from __future__ import annotations

import os
import sys


def _load() -> None:
    """Register the plugin, or say in one line what is missing (the session goes on)."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(os.path.dirname(here), "plugin"))  # this checkout's core
    from unsplit import dependencies

    problem = dependencies.adapter_problem(here)
    if problem is not None:
        print(problem, file=sys.stderr)
        return
    import unsplit_gdb_impl

    unsplit_gdb_impl.register()


_load()
