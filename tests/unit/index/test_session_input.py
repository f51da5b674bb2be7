"""`bb input` is the session's (issue 14): the pre-BOLT input one session was given is not
another's, and each change drops that session's locations by pc (Session.locations, which both
adapters' frame naming read). A BOLTed binary alone in a directory has no input of its own."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from unsplit.errors import BinaryError
from unsplit.index.bolt import prebolt
from unsplit.index.cache.locations import LINES
from unsplit.session import Session

from ...conftest import ROOT, facts


def test_bb_input_is_one_sessions(zoo: dict[str, Any], tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(prebolt.ENV_PATH, raising=False)
    monkeypatch.setenv("DEBUGINFOD_CACHE_PATH", str(tmp_path / "no-debuginfod"))
    f = facts(zoo, "bolt-random2", "crash")
    binary = tmp_path / "crash"
    shutil.copy2(ROOT / f["binary"], binary)
    site = f["markers"]["crash.c"]["crash site"]

    given, other = Session(persistent=False), Session(persistent=False)
    index = given.index(str(binary))
    assert index.input_binary() is None  # alone: nothing found
    transfer = index.procedures["transfer"]
    moved = [fr for fr in transfer.fragments if fr.name != "hot"]
    assert moved, "bolt-random2 splits transfer"

    before = given.locations.generation
    given.locations[(moved[0].start, LINES)] = None
    with pytest.raises(BinaryError, match="not the input of"):
        given.set_input(index.binary, str(ROOT / f["binary"]))  # itself: not its input
    assert given.locations.generation > before and not given.locations

    before = given.locations.generation
    given.locations[(moved[0].start, LINES)] = None
    other.locations[(moved[0].start, LINES)] = None
    found = given.set_input(index.binary, str(ROOT / f["input"]))
    assert found is not None and given.locations.generation > before and not given.locations
    assert index.input_binary() is found
    rows = [index.line_at(a) for fr in transfer.fragments for a in range(fr.start, fr.end)]
    lines = {row.line for row in rows if row is not None}
    assert site in lines, (site, sorted(lines))

    theirs = other.index(str(binary))
    assert theirs.binary is not index.binary and theirs.input_binary() is None
    assert other.locations.generation == 0 and len(other.locations) == 1
    assert all(theirs.line_at(a) is None for fr in moved for a in range(fr.start, fr.end))


def test_a_later_session_says_the_input_is_missing_without_scanning_bat(
        zoo: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a session says of a BOLTed module's missing pre-BOLT input costs no second
    decoding of its BAT note: the persistent index holds the note's scan (a BOLTed libLLVM's
    36 MB note took 2 s to scan in every later session, bench/libllvm.py --dap-only)."""
    from unsplit.formats import bat_scan

    monkeypatch.delenv(prebolt.ENV_PATH, raising=False)
    monkeypatch.setenv("DEBUGINFOD_CACHE_PATH", str(tmp_path / "no-debuginfod"))
    f = facts(zoo, "bolt-dlopen", "libwork")
    (tmp_path / "alone").mkdir()
    lib = tmp_path / "alone" / "libwork.so"
    shutil.copy2(ROOT / f["binary"], lib)  # no input beside it
    monkeypatch.setenv("UNSPLIT_CACHE", str(tmp_path / "cache"))
    first = Session(progress=None)
    notes = first.input_notes(str(lib))
    assert len(notes) == 1 and "not found" in notes[0]
    assert first.indexes.get(str(lib)).moved_starts()  # the first session's index is kept
    scans: list[int] = []
    real = bat_scan.scan

    def counted(*args: Any, **kwargs: Any) -> Any:
        scans.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(bat_scan, "scan", counted)
    later = Session(progress=None)
    assert later.input_notes(str(lib)) == notes
    assert scans == []


def test_what_is_made_per_input_is_not_taken_for_another_input(
        zoo: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A module's DWARF frames and a procedure's own lines are made for its pre-BOLT input; `bb
    input` gives it another, which must get its own, also where the two share an id() (an
    input freed since leaves its id to the next object: here every object has one id)."""
    from unsplit.debug import stepping
    from unsplit.index import inlines

    monkeypatch.delenv(prebolt.ENV_PATH, raising=False)
    monkeypatch.setenv("DEBUGINFOD_CACHE_PATH", str(tmp_path / "no-debuginfod"))
    f = facts(zoo, "bolt-random2", "crash")
    binary = tmp_path / "crash"
    shutil.copy2(ROOT / f["binary"], binary)
    for module in (inlines, stepping):
        monkeypatch.setattr(module, "id", lambda _: 1, raising=False)
    session = Session(persistent=False)
    index = session.index(str(binary))
    transfer = index.procedures["transfer"]
    assert index.input_binary() is None  # alone: no input, no DWARF frames, no lines
    frames, lines = inlines.module_frames(index), stepping.own_lines(index, transfer)
    assert not any(s.line for s in lines.spans)
    given = session.set_input(index.binary, str(ROOT / f["input"]))
    assert given is not None and index.input_binary() is given
    assert inlines.module_frames(index) is not frames
    site = f["markers"]["crash.c"]["crash site"]
    assert site in {s.line for s in stepping.own_lines(index, transfer).spans}
