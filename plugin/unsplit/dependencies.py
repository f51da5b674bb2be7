"""The third-party packages the core imports, checked before anything imports them.

The command line and both debugger adapters ask :func:`missing` first, so a machine without
pyelftools (or with Debian's 0.29, which cannot read DWARF 5 line tables) gets one line that
says what to install instead of a ModuleNotFoundError traceback half-way through an import.
Keep REQUIRED in step with requirements.txt (tests/unit/test_dependencies.py checks it).
"""

from __future__ import annotations

import importlib
import os
import site
import sys
from typing import NamedTuple


class Requirement(NamedTuple):
    distribution: str  # what pip installs
    module: str  # what the core imports
    minimum: tuple[int, ...]

    @property
    def spec(self) -> str:
        return f"{self.distribution}>={'.'.join(map(str, self.minimum))}"


REQUIRED = (Requirement("pyelftools", "elftools", (0, 33)),)


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for part in text.split("."):
        digits = "".join(c for c in part if c.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def missing() -> str | None:
    """One line naming what to install, or None when every requirement imports."""
    for req in REQUIRED:
        try:
            module = importlib.import_module(req.module)
        except ImportError as e:
            found = f"{req.distribution} is not installed ({e})"
        else:
            version = str(getattr(module, "__version__", ""))
            if not version or _version(version) >= req.minimum:
                continue
            found = f"{req.distribution} {version} is too old"
        return (f"{found}: install {req.spec} for this Python "
                f"(python3 -m pip install '{req.spec}', or run setup.sh in the repository)")
    return None


def adapter_problem(adapter_dir: str) -> str | None:
    """What a debugger adapter (the folder of gdb/unsplit_gdb.py or lldb/unsplit_lldb.py) does
    first: put itself, this checkout's core and the project venv's site-packages first on the
    debugger's Python path, then say in one line what keeps the plugin from loading (None:
    nothing). The venv's pyelftools (0.33) must win over a distribution's older one (Debian's
    0.29 cannot read DWARF 5), and this checkout's core over the one an editable install's
    .pth in the venv names (a git worktree sharing the venv)."""
    repo = os.path.dirname(adapter_dir)
    ours = [adapter_dir, os.path.join(repo, "plugin")]
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    venv_site = os.path.join(repo, ".venv", "lib", version, "site-packages")
    added: list[str] = []
    if os.path.isdir(venv_site) and venv_site not in sys.path:
        before = list(sys.path)
        site.addsitedir(venv_site)  # appends: what it added goes to the front, after ours
        added = [p for p in sys.path if p not in before]
    rest = [p for p in sys.path if p not in ours and p not in added]
    sys.path[:] = ours + added + rest
    problem = missing()
    return None if problem is None else f"unsplit: not loaded: {problem}"
