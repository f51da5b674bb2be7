"""GDB's later session on a core of a BOLT output (its debug file already in the cache): what
its start and `bt` do not read is not imported (the CFI decoder and unwinder, the DWARF byte
readers, the formats the module lacks, the texts of commands not typed), and each comes with
the first command that needs it, which answers as the fixture's facts say; the unwinder's
policies come back as the first session counted them, and the `bb` commands' help as argparse
formats it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from unsplit.commands import COMMANDS

from ..conftest import ROOT, facts
from ..debug_files import written
from .driver_gdb import GdbDriver

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed"),
]

PLUGIN = ROOT / "gdb" / "unsplit_gdb.py"
COMMAND_NAMES = list(COMMANDS)
# (bolt-cdsplit: each moved fragment has its FDE, so a `bt` decodes no CFI)
NOT_AT_BT = ("unsplit.formats.eh_frame", "unsplit.debug.cfi", "unsplit.render.exact_frames",
             "unsplit.formats.esl", "unsplit.index.sources.bb_addr_map",
             "unsplit.index.sources.mip", "unsplit.formats.die_scan",
             "unsplit.formats.line_program", "unsplit.formats.unit_ranges",
             "unsplit.render.breaks", "unsplit.render.debuginfo", "dataclasses", "inspect")


def test_a_later_session_imports_what_bt_reads_and_the_rest_when_asked(
        gdb: Callable[..., GdbDriver], zoo: dict[str, Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("UNSPLIT_CACHE", str(cache))
    f = facts(zoo, "bolt-cdsplit", "crash")
    binary, core = ROOT / f["binary"], str(ROOT / f["crash"]["core"])
    site = f["markers"]["crash.c"]["crash site"]
    first = subprocess.run(
        ["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off", "-iex",
         f"source {PLUGIN}", str(binary), "-c", core, "-ex", "bt", "-ex", "echo <<exact>>\\n",
         "-ex", "bb exact-frames"],
        capture_output=True, text=True, timeout=120, env={**os.environ})
    assert first.returncode == 0, first.stderr
    counted = first.stdout.split("<<exact>>\n")[1].strip()
    assert "libc.so.6: " in counted and "crash: " in counted, first.stdout
    path = written(cache, timeout=120)

    session = gdb(binary, core=core)
    assert str(path) in session.startup, session.startup

    def loaded() -> list[str]:
        out = session.command(f"python print(*[m for m in {NOT_AT_BT!r} if m in sys.modules])")
        return out.split()

    bt = session.backtrace()
    assert re.search(rf"^#0\s+.*transfer \[cold\] \(.*\) at \S*crash\.c:{site}$", bt, re.M), bt
    session.command("python import sys")
    assert loaded() == []
    # What the load made is spared the cycle collector's later passes (collector.py).
    assert int(session.command("python import gc; print(gc.get_freeze_count())")) > 0
    assert session.command("help bb break").startswith("Break in a procedure as written")
    assert loaded() == []

    assert re.search(rf"^\s+line\s+crash\.c:{site}:\d+$", session.command("bb where $pc"),
                     re.M)
    assert loaded() == ["unsplit.formats.die_scan", "unsplit.formats.line_program",
                        "unsplit.formats.unit_ranges"]
    assert str(path) in session.command("bb debuginfo status")
    assert "No bb breakpoints." in session.command("bb break --list")
    # The unwinder's policies, read back without the modules' indexes, as the first counted
    assert session.command("bb exact-frames") == counted
    walked = session.command("bb bt")
    assert re.search(rf"^#0\s+0x[0-9a-f]+ in transfer \[cold\]\+0x[0-9a-f]+ at crash\.c:{site}",
                     walked, re.M), walked
    assert sorted(loaded()) == sorted(NOT_AT_BT[:3] + NOT_AT_BT[6:])


def _helps(env: dict[str, str]) -> str:
    out = subprocess.run(
        ["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off", "-iex",
         f"source {PLUGIN}", "-ex", "help bb", *(a for name in COMMAND_NAMES
                                                  for a in ("-ex", f"help bb {name}"))],
        capture_output=True, text=True, timeout=120, env={**os.environ, **env})
    assert out.returncode == 0 and not out.stderr, out.stderr
    return out.stdout


def test_the_help_a_later_session_reads_back_is_argparse_s(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    fresh = {"UNSPLIT_CACHE": str(tmp_path / "unwritable" / "cache")}  # formatted every time
    (tmp_path / "unwritable").write_text("")
    first = _helps({"UNSPLIT_CACHE": cache})
    assert list((tmp_path / "cache").glob("help-v*/*.json"))
    assert _helps({"UNSPLIT_CACHE": cache}) == first == _helps(fresh)
    assert "usage: bb break" in first
    narrow = _helps({"UNSPLIT_CACHE": cache, "COLUMNS": "50"})
    assert narrow != first and narrow == _helps({**fresh, "COLUMNS": "50"})
