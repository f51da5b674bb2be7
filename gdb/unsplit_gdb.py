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
import site
import sys


def _add_paths() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(here)
    ours = [here, os.path.join(repo, "plugin")]
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    venv_site = os.path.join(repo, ".venv", "lib", version, "site-packages")
    added: list[str] = []
    if os.path.isdir(venv_site) and venv_site not in sys.path:
        # addsitedir appends; the venv's pyelftools (0.33) must win over a distribution's older
        # one (Debian's 0.29 cannot read DWARF 5), so what it added goes to the front, after
        # this checkout's own code: an editable install's .pth in the venv may name another
        # checkout's plugin/ (a git worktree sharing the venv), which must not win over ours.
        before = list(sys.path)
        site.addsitedir(venv_site)
        added = [p for p in sys.path if p not in before]
    rest = [p for p in sys.path if p not in ours and p not in added]
    sys.path[:] = ours + added + rest


def _load() -> None:
    """Register the plugin, or say in one line what is missing (the session goes on)."""
    _add_paths()
    from unsplit import dependencies

    problem = dependencies.missing()
    if problem is not None:
        print(f"unsplit: not loaded: {problem}", file=sys.stderr)
        return
    import unsplit_gdb_impl

    unsplit_gdb_impl.register()


_load()
