"""Both adapters put the project venv's site-packages first on the debugger's Python path:
Debian's python3-pyelftools 0.29 cannot read clang-22's DWARF 5 (shared/NOTES.md), and any
other elftools on the path (the distribution's, a PYTHONPATH entry) must lose to the venv's.

A decoy ``elftools`` on PYTHONPATH, which a debugger's Python puts before its own
site-packages, stands for a shadowing copy on every machine; where Debian's package is
installed, the venv must come before it too.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts
from .conftest import json_lines

pytestmark = pytest.mark.e2e

DIST = "/usr/lib/python3/dist-packages"
PROBE = ("import elftools, json, sys; print(json.dumps({'file': elftools.__file__, "
         "'path': sys.path, 'version': '%d.%d' % sys.version_info[:2]}))")


def test_the_venvs_pyelftools_wins(debugger: Callable[..., Any], zoo: dict[str, Any],
                                   tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    decoy = tmp_path / "decoy"
    (decoy / "elftools").mkdir(parents=True)
    (decoy / "elftools" / "__init__.py").write_text("raise ImportError('the decoy elftools')\n")
    monkeypatch.setenv("PYTHONPATH", str(decoy))
    f = facts(zoo, "clang-mfs", "crash")  # clang-22 -g: DWARF 5 line tables
    session = debugger(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]))

    out = session.script(PROBE)
    found = json_lines(out)
    assert len(found) == 1, out  # the decoy raises ImportError when it wins
    seen = found[0]
    venv = os.path.realpath(ROOT / ".venv" / "lib" / f"python{seen['version']}" /
                            "site-packages")
    assert os.path.realpath(seen["file"]).startswith(venv + os.sep), seen["file"]
    path = [os.path.realpath(p) for p in seen["path"]]
    assert str(decoy) in seen["path"], seen["path"]  # the debugger did see the decoy
    assert path.index(venv) < path.index(os.path.realpath(decoy)), path
    if DIST in seen["path"]:
        assert path.index(venv) < path.index(DIST), path
    if os.path.isdir(os.path.join(DIST, "elftools")):
        print(f"{session.name}: Debian's python3-pyelftools is installed and loses")

    # And the DWARF 5 line of the crash is read, through the venv's pyelftools.
    (loc,) = json_lines(session.command("bb where --json"))
    assert loc["line"] == f["markers"]["crash.c"]["crash site"], loc
