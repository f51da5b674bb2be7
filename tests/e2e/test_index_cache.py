"""Debugger sessions and the persistent index (issue 15): the first session writes the module's
index to $UNSPLIT_CACHE, a later session reads it (the file is not rewritten) and names the
frames exactly as the first did, and a damaged index is said once, ignored and rebuilt.
Expected frames come from the facts (nm and the marker comments), not from unsplit."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from unsplit.elf.binary import Binary
from unsplit.index.cache.store import IndexStore

from ..conftest import ROOT, facts

pytestmark = pytest.mark.e2e

CHAIN = ["transfer", "run", "main"]


def _named_frames(debugger: Callable[..., Any], f: dict[str, Any]) -> tuple[list[str], str]:
    """The bt lines of the crash chain's moved frames, and the session's whole transcript."""
    session = debugger(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]))
    bt = session.backtrace()
    lines = []
    for fr, proc in zip(f["crash"]["frames"][:3], CHAIN, strict=True):
        line = next((ln for ln in bt.splitlines() if f"{proc} [{fr['fragment']}]" in ln), None)
        assert line is not None, (proc, bt)
        lines.append(line.strip())
    session.close()
    return lines, session.transcript


def test_later_sessions_read_the_index_the_first_wrote(
        debugger: Callable[..., Any], zoo: dict[str, Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "cache"
    monkeypatch.setenv("UNSPLIT_CACHE", str(root))
    f = facts(zoo, "bolt-all", "crash")
    index_file = IndexStore(str(root)).path_for(Binary(str(ROOT / f["binary"])))
    assert not os.path.exists(index_file)

    first, _ = _named_frames(debugger, f)
    assert os.path.isfile(index_file)
    written = os.stat(index_file).st_mtime_ns

    later, transcript = _named_frames(debugger, f)
    assert later == first
    assert os.stat(index_file).st_mtime_ns == written  # read, not rebuilt
    assert "unsplit: ignoring the cached index" not in transcript

    with open(index_file, "r+b") as fh:  # damage the arrays: the checksum catches it
        fh.seek(-5, os.SEEK_END)
        fh.write(b"\xa5")
    damaged, transcript = _named_frames(debugger, f)
    assert damaged == first
    said = [ln for ln in transcript.splitlines() if "ignoring the cached index" in ln]
    assert len(said) == 1 and index_file in said[0], transcript
    assert os.stat(index_file).st_mtime_ns != written  # rebuilt whole
    assert IndexStore(str(root), said.append).load(Binary(str(ROOT / f["binary"]))) is not None
