"""What an IDE on GDB/MI sees of a crash in moved code (issue 16 item 3): GDB in MI mode with
the plugin sourced and no other command (no ``-enable-frame-filters``). The ``*stopped`` record's
frame and ``-stack-list-frames`` name each split frame by its procedure with the file (and a
``fullname`` that exists, so the IDE opens the source) and the true line.

Oracles: the procedure chain gdb_probe.py recorded when the zoo was built (facts ``crash``), and
the lines of the source's ``BB:`` markers; never unsplit's output."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts
from .driver_mi import GDB, MiSession

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which(GDB) is None, reason=f"{GDB} is not installed"),
]

# The crash chain of crash.c and the marker of the line each frame is on.
CHAIN = [("transfer", "crash site"), ("run", "run cold call"), ("main", "main cold call")]


@pytest.fixture
def mi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    sessions: list[MiSession] = []

    def start(argv: list[str]) -> MiSession:
        sessions.append(MiSession(argv))
        return sessions[-1]
    yield start
    for s in sessions:
        s.close()


def _check_frame(frame: dict[str, Any], procedure: str, line: int) -> None:
    assert frame["func"] == procedure, frame
    assert frame.get("file", "").endswith("crash.c"), frame
    assert os.path.isfile(frame["fullname"]), frame
    assert Path(frame["fullname"]).name == "crash.c", frame
    assert int(frame["line"]) == line, frame


@pytest.mark.parametrize("variant", ["bolt-all", "bolt-random2", "bolt-cdsplit"])
def test_mi_crash_in_bolt_moved_code(mi: Any, zoo: dict[str, Any], variant: str) -> None:
    f = facts(zoo, variant, "crash")
    assert not f["has_debug_info"]
    assert f["crash"]["expected_chain"] == [p for p, _ in CHAIN]
    markers = f["markers"]["crash.c"]
    session = mi([str(ROOT / f["binary"]), *f["crash"]["argv"][1:]])
    session.command("-exec-run")
    stopped = session.wait_stopped()
    assert stopped["reason"] == "signal-received", stopped
    _check_frame(stopped["frame"], "transfer", markers["crash site"])
    frames = [next(iter(item.values())) for item in session.command("-stack-list-frames")["stack"]]
    for level, (procedure, marker) in enumerate(CHAIN):
        assert int(frames[level]["level"]) == level
        _check_frame(frames[level], procedure, markers[marker])


@pytest.mark.parametrize("variant", ["gcc-pgo-nodebug", "clang-mfs-nodebug"])
def test_mi_crash_in_compiler_split_without_dwarf(mi: Any, zoo: dict[str, Any],
                                                  variant: str) -> None:
    """A compiler split without DWARF: the frames are named by procedure (never `transfer.cold`),
    at the pcs gdb_probe.py saw."""
    f = facts(zoo, variant, "crash")
    assert not f["has_debug_info"]
    session = mi([str(ROOT / f["binary"]), *f["crash"]["argv"][1:]])
    session.command("-exec-run")
    stopped = session.wait_stopped()
    assert stopped["frame"]["func"] == "transfer", stopped
    frames = [next(iter(item.values())) for item in session.command("-stack-list-frames")["stack"]]
    for level, probed in enumerate(f["crash"]["frames"][:3]):
        assert int(frames[level]["addr"], 16) == int(probed["pc"], 16)
        assert frames[level]["func"] == probed["procedure"], frames[level]
