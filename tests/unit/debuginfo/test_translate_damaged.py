"""A pre-BOLT input whose DWARF is damaged: `unsplit debuginfo` leaves out the unit (or list)
that does not decode, says which and why in one line, writes the rest, never a traceback."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from elftools.elf.elffile import ELFFile

from ...conftest import ROOT, facts


def _section(path: Path, name: str) -> tuple[int, int]:
    with path.open("rb") as f:
        sec = ELFFile(f).get_section_by_name(name)
        assert sec is not None
        return int(sec["sh_offset"]), int(sec["sh_size"])


def test_a_unit_that_does_not_decode_is_left_out(zoo: dict[str, Any], tmp_path: Path) -> None:
    f = facts(zoo, "bolt-all", "crash")
    work = tmp_path / "out"
    (work / "input").mkdir(parents=True)
    shutil.copy(ROOT / f["binary"], work / "crash")
    damaged = work / "input" / "crash"
    shutil.copy(ROOT / f["input"], damaged)
    offset, _ = _section(damaged, ".debug_info")
    data = bytearray(damaged.read_bytes())
    data[offset + 12] = 0x7F  # the unit's first DIE names an abbreviation its table lacks
    damaged.write_bytes(bytes(data))
    run = subprocess.run([sys.executable, "-m", "unsplit", "debuginfo", str(work / "crash"),
                          "-o", str(tmp_path / "x.debug"), "--json"], capture_output=True,
                         text=True, timeout=300, env={"PYTHONPATH": str(ROOT / "plugin")})
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    report = json.loads(run.stdout)
    assert report["made_from"] == "input DWARF"
    (line,) = report["units_left_out"]
    assert ".debug_info+0x0" in line and "abbreviation 127" in line, line
    verify = subprocess.run(["llvm-dwarfdump-22", "--verify", str(tmp_path / "x.debug")],
                            capture_output=True, text=True, timeout=120)
    assert "No errors." in verify.stdout, verify.stdout[-2000:]
