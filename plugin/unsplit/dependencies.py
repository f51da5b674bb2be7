"""The third-party packages the core imports, checked before anything imports them.

The command line and both debugger adapters ask :func:`missing` first, so a machine without
pyelftools (or with Debian's 0.29, which cannot read DWARF 5 line tables) gets one line that
says what to install instead of a ModuleNotFoundError traceback half-way through an import.
Keep REQUIRED in step with requirements.txt (tests/unit/test_dependencies.py checks it).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Requirement:
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
