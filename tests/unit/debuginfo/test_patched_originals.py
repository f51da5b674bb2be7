"""BOLT's patched originals (`foo.org.0`: a jump at foo's input address to foo's new code) in a
debug file translated from the pre-BOLT input: each keeps the line of foo's entry, so that GDB's
`step` through an old function pointer stops there instead of stepping over foo. The
translator describes them by name and line only (their inlined calls would be the input's at
foo's entry, which foo's own translated DIEs already hold)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ...conftest import ROOT, facts


def _line(obj: Path, address: str) -> str:
    """file:line llvm-symbolizer-22 gives `address` in `obj` (the line table's own row)."""
    out = subprocess.run(["llvm-symbolizer-22", "--obj", str(obj), "--no-inlines",
                          "--basenames", address], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    return out[1].rsplit(":", 1)[0]


@pytest.mark.parametrize("program", ["loop", "crash"])
def test_a_patched_original_keeps_its_functions_entry_line(zoo: dict[str, Any],
                                                           tmp_path: Path, program: str) -> None:
    f = facts(zoo, "bolt-patched", program)
    debug = tmp_path / "out.debug"
    run = subprocess.run([sys.executable, "-m", "unsplit", "debuginfo", str(ROOT / f["binary"]),
                          "--input", str(ROOT / f["input"]), "-o", str(debug)],
                         capture_output=True, text=True, timeout=600,
                         env={"PYTHONPATH": str(ROOT / "plugin")})
    assert run.returncode == 0, run.stderr
    assert "through BAT" in run.stdout, run.stdout  # translated, not names and lines
    checked = 0
    for name, at in f["bolt_originals"].items():
        if name[:-len(".org.0")] not in f["split_functions"]:
            continue
        expected = _line(ROOT / f["input"], at)  # foo's entry, in the pre-BOLT input
        assert not expected.endswith(":0"), (name, expected)  # the premise: it has a line
        assert _line(debug, at) == expected, name
        checked += 1
    assert checked
