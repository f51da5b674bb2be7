"""BOLTed code in both debuggers, live and from cores (issue 4).

BOLT strips the DWARF; the frames of `crash` (transfer, run, main, all in cold fragments) must
still be named by procedure and fragment, with the true line from the pre-BOLT binary, and
`bb where` must show what BAT says. Expected fragments come from the facts (nm), expected lines
from the marker comments in crash.c; neither from unsplit.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts
from ..variants import BOLT_LAYOUTS
from .conftest import json_lines, stop_names

pytestmark = pytest.mark.e2e

# The logical chain at the crash and the marker of each frame's line.
CHAIN = [("transfer", "crash site"), ("run", "run cold call"), ("main", "main cold call")]


def _start(debugger: Callable[..., Any], binary: Path, core: Path | None) -> tuple[Any, str]:
    if core is not None:
        return debugger(binary, core=str(core)), ""
    session = debugger(binary, args=["crash"])
    return session, session.run()


@pytest.mark.parametrize("mode", ["live", "core"])
@pytest.mark.parametrize("variant", BOLT_LAYOUTS)
def test_bolted_frames_have_true_lines_and_bat_facts(
    debugger: Callable[..., Any], zoo: dict[str, Any], variant: str, mode: str
) -> None:
    f = facts(zoo, variant, "crash")
    crash, markers = f["crash"], f["markers"]["crash.c"]
    session, stop = _start(debugger, ROOT / f["binary"],
                           ROOT / crash["core"] if mode == "core" else None)
    frames = crash["frames"][:3]
    assert [fr["procedure"] for fr in frames] == [p for p, _ in CHAIN]

    if mode == "live":  # the stop line names the fragment and the true line
        assert stop_names(stop, "transfer", crash["fragment"], markers["crash site"]), stop
        assert f"crash.c:{markers['crash site']}" in stop
    bt = session.backtrace()
    for fr, (proc, marker) in zip(frames, CHAIN, strict=True):
        line = next(ln for ln in bt.splitlines() if f"{proc} [{fr['fragment']}]" in ln)
        assert f"crash.c:{markers[marker]}" in line, (line, marker)

    loc = json_lines(session.command("bb where --json"))[0]
    assert (loc["procedure"], loc["fragment"], loc["line"]) == \
        ("transfer", crash["fragment"], markers["crash site"])
    assert loc["bat_entry"] in ("block", "branch")
    assert loc["input_offset"] == loc["offset"]
    assert loc["fragment_kind"] == crash["fragment"].split(".")[0]
    assert "warnings" not in loc
    text = session.command("bb where")
    bolt = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("bolt ")]
    assert bolt == [f"bolt      input transfer+{loc['offset']:#x} at {loc['input_address']} "
                    f"({loc['bat_entry']} entry" + bolt[0].split(" entry", 1)[1]], text
    assert f"{loc['fragment_kind']} fragment)" in bolt[0]


def test_warm_fragment_is_named(debugger: Callable[..., Any], zoo: dict[str, Any]) -> None:
    """cdsplit's warm fragment (hot/warm/cold): `bb where` at its entry says so."""
    f = facts(zoo, "bolt-cdsplit", "crash")
    warm = [(name, fr) for name, p in f["split_functions"].items()
            for fr in p["fragments"] if fr["fragment"] == "warm"]
    assert warm, "llvm-bolt-22's cdsplit made no warm fragment in crash"
    session = debugger(ROOT / f["binary"], core=str(ROOT / f["crash"]["core"]))
    name, fr = warm[0]
    loc = json_lines(session.command(f"bb where --json {fr['start']}"))[0]
    assert (loc["procedure"], loc["fragment"], loc["fragment_kind"]) == (name, "warm", "warm")
    assert loc["bat_entry"] == "block" and loc["bat_entry_distance"] == 0


def test_bb_input_right_and_wrong(debugger: Callable[..., Any], zoo: dict[str, Any],
                                  tmp_path: Path) -> None:
    """Without the input binary next to it: names and offsets exact, lines null; `bb input`
    refuses a wrong binary in one line and the right one brings the lines back."""
    f = facts(zoo, "bolt-random2", "crash")
    crash, markers = f["crash"], f["markers"]["crash.c"]
    binary, core = tmp_path / "crash", tmp_path / "crash.core"
    shutil.copy2(ROOT / f["binary"], binary)
    shutil.copy2(ROOT / crash["core"], core)
    session = debugger(binary, core=str(core))

    alone = json_lines(session.command("bb where --json"))[0]
    assert (alone["procedure"], alone["fragment"]) == ("transfer", crash["fragment"])
    assert alone["line"] is None and "input_address" not in alone
    assert alone["bat_entry"] in ("block", "branch") and alone["offset"] == alone["input_offset"]
    assert "transfer [" in session.backtrace()

    wrong = ROOT / zoo["bolt-all"]["programs"]["loop"]["binary"].replace("/loop", "/input/loop")
    said = session.command(f"bb input {wrong}")
    assert "not the input of" in said and len(said.strip().splitlines()) == 1, said
    assert json_lines(session.command("bb where --json"))[0]["line"] is None

    right = ROOT / f["input"]
    assert "pre-BOLT input" in session.command(f"bb input {right}")
    fixed = json_lines(session.command("bb where --json"))[0]
    assert fixed["line"] == markers["crash site"]
    assert (fixed["procedure"], fixed["offset"]) == (alone["procedure"], alone["offset"])
    assert fixed["input_address"] is not None
    assert f"crash.c:{markers['crash site']}" in session.backtrace()


def test_truncated_note_warns_and_symbols_still_work(
    debugger: Callable[..., Any], zoo: dict[str, Any], tmp_path: Path
) -> None:
    f = facts(zoo, "bolt-all", "crash")
    crash = f["crash"]
    note, binary = tmp_path / "note", tmp_path / "crash"
    subprocess.run(["llvm-objcopy-22", "--dump-section", f".note.bolt_bat={note}",
                    str(ROOT / f["binary"]), str(tmp_path / "scratch")], check=True)
    data = note.read_bytes()
    note.write_bytes(data[: len(data) // 2])  # the header still promises the whole descriptor
    subprocess.run(["llvm-objcopy-22", "--update-section", f".note.bolt_bat={note}",
                    str(ROOT / f["binary"]), str(binary)], check=True)
    session = debugger(binary, args=["crash"])
    session.run()
    text = session.command("bb where")
    first, *rest = text.strip().splitlines()
    assert first.startswith("warning: crash: BOLT address translation ignored: .note.bolt_bat"
                            ": at offset 0x"), text
    assert not any("warning" in ln for ln in rest)
    assert f"transfer [{crash['fragment']}]" in rest[0]  # named by its symbol alone
    loc = json_lines(session.command("bb where --json"))[0]
    assert (loc["procedure"], loc["fragment"]) == ("transfer", crash["fragment"])
    assert "bat_entry" not in loc and len(loc["warnings"]) == 1
    assert f"transfer [{crash['fragment']}]" in session.backtrace()
