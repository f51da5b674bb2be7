"""Both adapters put the project venv's site-packages first on the debugger's Python path:
Debian's python3-pyelftools 0.29 cannot read clang-22's DWARF 5 (shared/NOTES.md), and any
other elftools on the path (the distribution's, a PYTHONPATH entry) must lose to the venv's.

A decoy ``elftools`` on PYTHONPATH, which a debugger's Python puts before its own
site-packages, stands for a shadowing copy on every machine; where Debian's package is
installed, the venv must come before it too.
"""

from __future__ import annotations

import os
import shutil
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


def test_this_checkouts_core_wins_over_an_editable_install(
        debugger: Callable[..., Any], zoo: dict[str, Any], tmp_path: Path) -> None:
    """The venv's editable install of unsplit (a .pth in its site-packages) may name another
    checkout's plugin/ (git worktrees share one venv): the debugger runs the core of the
    checkout whose adapter it loaded. A copy of the adapters and the core whose venv's .pth
    names a decoy `unsplit` first, then the real venv (for pyelftools)."""
    repo = tmp_path / "repo"
    for part in ("plugin", "gdb", "lldb"):
        shutil.copytree(ROOT / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
    decoy = tmp_path / "decoy"
    (decoy / "unsplit").mkdir(parents=True)
    (decoy / "unsplit" / "__init__.py").write_text("raise ImportError('the decoy unsplit')\n")
    real = next((ROOT / ".venv" / "lib").glob("python3.*/site-packages"))
    site = repo / ".venv" / "lib" / real.parent.name / "site-packages"
    site.mkdir(parents=True)
    (site / "__editable__.unsplit-0.1.0.pth").write_text(f"{decoy}\n{real.resolve()}\n")

    f = facts(zoo, "gcc-pgo", "crash")
    session = debugger(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]), plugin=False)
    session.plugin_file = str(repo / Path(session.plugin_file).relative_to(ROOT))
    loaded = session.load_plugin()
    assert "decoy" not in loaded, loaded
    out = session.script("import unsplit; print(unsplit.__file__)")
    assert out.strip() == str(repo / "plugin" / "unsplit" / "__init__.py"), out
    assert "is in transfer [cold]" in session.command("bb where")
