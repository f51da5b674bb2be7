"""unsplit.debuginfo.background: the process that writes a module's debug file while a
debugging session goes on, and cache.write_once's turns between two writers of one file."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from unsplit.debuginfo import background
from unsplit.debuginfo.cache import CACHED, MADE, TO_WRITE, debug_file_for
from unsplit.errors import DEBUG_HINT

from ...conftest import ROOT, facts


def test_a_second_writer_waits_and_takes_the_first_ones_file(
        zoo: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two debuggers on one cache: the writer that finds the lock taken waits for it, then finds
    the file made meanwhile and keeps it (CACHED), rather than write it again."""
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path))
    binary = str(ROOT / facts(zoo, "bolt-all", "crash")["binary"])
    planned = debug_file_for(binary, write=False)
    assert planned.reason == TO_WRITE and planned.path is not None
    path = Path(planned.path)
    path.parent.mkdir(parents=True)
    with open(f"{path}.lock", "ab") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        writer = background.start(binary)
        path.write_bytes(b"the other writer's")
    outcome = writer.wait()
    assert (outcome.path, outcome.reason) == (str(path), CACHED)
    assert path.read_bytes() == b"the other writer's"


def test_a_writer_alone_makes_the_file(zoo: dict[str, Any], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path))
    f = facts(zoo, "bolt-gcc", "crash")
    outcome = background.start(str(ROOT / f["binary"]), str(ROOT / f["input"])).wait()
    assert outcome.reason == MADE and outcome.path is not None
    assert debug_file_for(str(ROOT / f["binary"])).path == outcome.path  # the session's path
    assert Path(outcome.path).read_bytes()[:4] == b"\x7fELF"


def test_a_writer_that_fails_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in the writer: its last line and the hint, not its traceback (all of it with
    UNSPLIT_DEBUG set)."""
    said = ("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
            "KeyError: 'x'\n")

    def failing() -> background.Writer:
        out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        process = subprocess.Popen([background.interpreter(), "-c",
                                    f"import sys; sys.stderr.write({said!r}); sys.exit(1)"],
                                   stdout=out, stderr=err)
        return background.Writer("prog", process, out, err)

    monkeypatch.delenv("UNSPLIT_DEBUG", raising=False)
    outcome = failing().wait()
    assert outcome.path is None
    assert outcome.reason == f"the writer failed (exit 1): KeyError: 'x' {DEBUG_HINT}"
    monkeypatch.setenv("UNSPLIT_DEBUG", "1")
    assert failing().wait().reason == f"the writer failed (exit 1): {said.strip()}"


def test_interpreter_runs() -> None:
    path = background.interpreter()
    assert os.access(path, os.X_OK)
    out = subprocess.run([path, "-c", "import sys; print(sys.version_info[:2])"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(sys.version_info[:2])  # this Python's own
