"""Annotated binaries in both debuggers: true procedures and lines from `.split_info` and ESL
alone, with no DWARF and no pre-BOLT binary to be found (issue 5, end to end).

Two copies are made once per session by `unsplit annotate`, each alone in its own directory:
the BOLTed `bolt-all/crash` (lines from BAT + its pre-BOLT binary's DWARF, at annotate time
only) and `gcc-pgo-nodebug/crash` (lines from the unstripped `gcc-pgo` build, `--debug`). The
variant's own core serves both: annotate only adds unloaded sections (checked here).
Expected procedures and fragments come from the facts, lines from the marker comments.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts
from .conftest import json_lines

pytestmark = pytest.mark.e2e

CASES = {  # variant -> the build whose DWARF gives the lines (None: BAT + the pre-BOLT binary)
    "bolt-all": None,
    "gcc-pgo-nodebug": "gcc-pgo",
}
CHAIN = ["crash site", "run cold call", "main cold call"]  # marker of each frame's line


@pytest.fixture(scope="session")
def annotated(zoo: dict[str, Any],
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    from unsplit.elf.binary import Binary
    from unsplit.index.bolt import prebolt
    from unsplit.tools import annotate

    out: dict[str, Path] = {}
    with pytest.MonkeyPatch.context() as mp:
        # Nothing may lead the plugin to a pre-BOLT binary or a debug file.
        mp.delenv(prebolt.ENV_PATH, raising=False)
        mp.delenv("UNSPLIT_DEBUG_FILE_DIRECTORY", raising=False)
        mp.setenv("DEBUGINFOD_CACHE_PATH", str(tmp_path_factory.mktemp("no-debuginfod")))
        for variant, debug in CASES.items():
            f = facts(zoo, variant, "crash")
            dst = tmp_path_factory.mktemp(f"esl-{variant}") / "crash"
            debug_path = None if debug is None else str(ROOT / facts(zoo, debug, "crash")["binary"])
            annotate.annotate(str(ROOT / f["binary"]), str(dst), debug_path=debug_path)
            copy, original = Binary(str(dst)), Binary(str(ROOT / f["binary"]))
            assert not copy.has_dwarf and copy.dwarf_binary is None
            assert prebolt.find_input(copy) is None
            for sec in original.elf.iter_sections():  # the variant's core fits the copy
                if sec["sh_flags"] & 2 and sec["sh_type"] != "SHT_NOBITS":
                    assert copy.section_data(sec.name) == sec.data(), sec.name
            copy.close()
            original.close()
            out[variant] = dst
        yield out


def _frame_line(bt: str, number: int) -> str:
    for line in bt.splitlines():
        if re.match(rf"^\s*\*?\s*(frame )?#{number}[: ]", line):
            return line
    raise AssertionError(f"no frame #{number} in:\n{bt}")


def _check_chain(bt: str, f: dict[str, Any], first: int) -> None:
    """Frames `first`.. of the crash chain: procedure [fragment] at crash.c:LINE."""
    markers = f["markers"]["crash.c"]
    for n, (frame, marker) in enumerate(zip(f["crash"]["frames"][first:], CHAIN[first:],
                                            strict=False)):
        text = _frame_line(bt, n)
        assert f"{frame['procedure']} [{frame['fragment']}]" in text, text
        assert re.search(rf"crash\.c:{markers[marker]}\b", text), (marker, text)


@pytest.mark.parametrize("mode", ["live", "core"])
@pytest.mark.parametrize("variant", list(CASES))
def test_crash_lines_from_esl(debugger: Callable[..., Any], zoo: dict[str, Any],
                              annotated: dict[str, Path], variant: str, mode: str) -> None:
    f = facts(zoo, variant, "crash")
    markers = f["markers"]["crash.c"]
    if mode == "core":
        session = debugger(annotated[variant], core=str(ROOT / f["crash"]["core"]))
    else:
        session = debugger(annotated[variant], args=["crash"])
        session.run()

    [loc] = json_lines(session.command("bb where --json"))
    crash = f["crash"]
    assert (loc["procedure"], loc["fragment"], loc["fragment_symbol"]) == \
        (crash["procedure"], crash["fragment"], crash["symbol"])
    # The table annotate wrote holds full paths: `file` is the table's path, as DWARF names it.
    assert (os.path.basename(loc["file"]), loc["line"]) == ("crash.c", markers["crash site"])

    session.command("up")
    [caller] = json_lines(session.command("bb where --json"))
    assert (caller["procedure"], caller["line"]) == ("run", markers["run cold call"])
    session.command("down")

    _check_chain(session.backtrace(), f, 0)


@pytest.mark.parametrize("variant", list(CASES))
def test_break_on_a_line_in_moved_code(debugger: Callable[..., Any], zoo: dict[str, Any],
                                       annotated: dict[str, Path], variant: str) -> None:
    """`bb break crash.c:LINE` for a line that lives only in a cold fragment stops there."""
    f = facts(zoo, variant, "crash")
    line = f["markers"]["crash.c"]["run cold call"]
    session = debugger(annotated[variant], args=["crash"])
    out = session.command(f"bb break crash.c:{line}")
    assert out.startswith("Breakpoint") and "Traceback" not in out, out
    assert " in run+0x" in session.command("bb break --list")
    session.run()
    [loc] = json_lines(session.command("bb where --json"))
    run_frame = f["crash"]["frames"][1]
    assert (loc["procedure"], loc["fragment"]) == (run_frame["procedure"], run_frame["fragment"])
    assert (os.path.basename(loc["file"]), loc["line"]) == ("crash.c", line)
    _check_chain(session.backtrace(), f, 1)
