"""Without pyelftools, the command line and both debuggers say in one line what to install.

The repository is copied without its .venv (as a fresh checkout is), and a package named
``elftools`` that fails to import as a missing one does is put first on PYTHONPATH, so the
machine's own pyelftools, if any, cannot hide the case. The expected text comes from
requirements.txt (what setup.sh installs), not from the plugin.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT

pytestmark = pytest.mark.e2e


def _requirement() -> str:
    """pyelftools' pin in requirements.txt, as `pyelftools>=X.Y` (the oracle for the message)."""
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        m = re.fullmatch(r"pyelftools[=>]=([\d.]+)", line.strip())
        if m:
            return f"pyelftools>={m.group(1)}"
    raise AssertionError("requirements.txt pins no pyelftools")


def _fresh_checkout(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    for part in ("plugin", "gdb", "lldb"):
        shutil.copytree(ROOT / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
    return repo


def _shadow(tmp_path: Path, body: str) -> dict[str, str]:
    """An environment whose first PYTHONPATH entry holds an `elftools` package made of ``body``."""
    shadow = tmp_path / "shadow" / "elftools"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(body)
    env = dict(os.environ, PYTHONPATH=str(shadow.parent), TERM="dumb")
    env.pop("UNSPLIT_DEBUG", None)
    return env


_MISSING = 'raise ModuleNotFoundError("No module named \'elftools\'", name="elftools")\n'


def _one_line(stderr: str, what: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("unsplit:")]
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1, stderr
    line = lines[0]
    assert what in line and f"pip install '{_requirement()}'" in line, line
    return line


def test_cli_says_what_to_install(tmp_path: Path) -> None:
    repo = _fresh_checkout(tmp_path)
    env = _shadow(tmp_path, _MISSING)
    env["PYTHONPATH"] += os.pathsep + str(repo / "plugin")
    out = subprocess.run([sys.executable, "-m", "unsplit", "where", "--exe", sys.executable,
                          "0x1000"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and out.stdout == ""
    _one_line(out.stderr, "pyelftools is not installed")


def test_cli_names_a_pyelftools_too_old(tmp_path: Path) -> None:
    """Debian's python3-pyelftools (0.29) cannot read DWARF 5 line tables: said up front."""
    repo = _fresh_checkout(tmp_path)
    env = _shadow(tmp_path, '__version__ = "0.29"\n')
    env["PYTHONPATH"] += os.pathsep + str(repo / "plugin")
    out = subprocess.run([sys.executable, "-m", "unsplit", "bbmap", sys.executable],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    _one_line(out.stderr, "pyelftools 0.29 is too old")


def test_gdb_loads_without_it_and_goes_on(tmp_path: Path) -> None:
    if shutil.which("gdb") is None:
        pytest.skip("gdb not installed")
    repo = _fresh_checkout(tmp_path)
    out = subprocess.run(
        ["gdb", "-nx", "-q", "-batch", "-iex", f"source {repo / 'gdb' / 'unsplit_gdb.py'}",
         "-ex", "echo alive\\n", "-ex", "help bb"],
        env=_shadow(tmp_path, _MISSING), capture_output=True, text=True, timeout=120)
    _one_line(out.stderr, "not loaded: pyelftools is not installed")
    assert out.stdout.splitlines()[0] == "alive"  # the session went on
    assert 'Undefined command: "bb"' in out.stderr  # and registered nothing


def test_lldb_loads_without_it_and_goes_on(tmp_path: Path) -> None:
    if shutil.which("lldb-22") is None:
        pytest.skip("lldb-22 not installed")
    repo = _fresh_checkout(tmp_path)
    out = subprocess.run(
        ["lldb-22", "--no-lldbinit", "-b",
         "-o", f"command script import {repo / 'lldb' / 'unsplit_lldb.py'}",
         "-o", 'script print("al" + "ive")', "-o", "help bb"],
        env=_shadow(tmp_path, _MISSING), capture_output=True, text=True, timeout=120)
    _one_line(out.stderr, "not loaded: pyelftools is not installed")
    assert "\nalive\n" in out.stdout  # the session went on
    assert "'bb' is not a known command" in out.stderr  # and registered nothing
