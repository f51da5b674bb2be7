"""What GDB sources to load unsplit: put this line in ~/.gdbinit

    source /path/to/unsplit/gdb/unsplit_gdb.py

It makes the core (``<repo>/plugin``), the adapter package next to this file
(``unsplit_gdb_impl``) and the project venv's site-packages (pyelftools) importable from GDB's
embedded Python, then registers the ``bb`` commands, the ``unsplit`` frame filter and the stop
printer. Sourcing it again registers nothing twice (see unsplit_gdb_impl.register).

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
    for path in (here, os.path.join(repo, "plugin")):
        if path not in sys.path:
            sys.path.insert(0, path)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    venv_site = os.path.join(repo, ".venv", "lib", version, "site-packages")
    if os.path.isdir(venv_site) and venv_site not in sys.path:
        # addsitedir appends; the venv's pyelftools (0.33) must win over a distribution's older
        # one (Debian's 0.29 cannot read DWARF 5), so move what it added to the front.
        before = list(sys.path)
        site.addsitedir(venv_site)
        added = [p for p in sys.path if p not in before]
        sys.path[:] = added + before
    # This checkout's code wins over an installed copy (the venv's editable install may point
    # at another checkout of the repository).
    ours = [here, os.path.join(repo, "plugin")]
    sys.path[:] = ours + [p for p in sys.path if p not in ours]


_add_paths()

import unsplit_gdb_impl  # noqa: E402  (needs the paths above)

unsplit_gdb_impl.register()
