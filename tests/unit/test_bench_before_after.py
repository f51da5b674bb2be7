"""bench/before_after.py runs what `make bench` runs and sets two trees' saved figures side by
side; a recipe line it missed, or a figure filed under the wrong run, would go unseen until
`make bench`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1].parent
sys.path.insert(0, str(ROOT / "bench"))

import before_after  # noqa: E402


def test_the_commands_are_make_bench_s() -> None:
    dry = subprocess.run(["make", "-n", "--no-print-directory", "bench"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    made = [line for line in dry.splitlines() if line.startswith(".venv/bin/python bench/")]
    ours = [before_after.expand(c, Path(".")).replace(".debuggers/bin/gdb-18",
                                                       str(ROOT / ".debuggers/bin/gdb-18"))
            for c in before_after.bench_commands(ROOT / "Makefile")]
    assert ours == made


def test_figures_are_set_side_by_side_by_the_run_they_came_from(tmp_path: Path) -> None:
    old, new = tmp_path / "before", tmp_path / "after"
    old.mkdir()
    new.mkdir()
    rows = [{"debugger": "gdb", "ratio": 2.0, "sessions": 5},
            {"debugger": "lldb", "ratio": 3.0, "sessions": 5}]
    (old / "stepping.json").write_text(json.dumps(rows))
    rows[1]["ratio"] = 1.5
    (new / "stepping.json").write_text(json.dumps(rows))
    (new / "only-after.json").write_text(json.dumps({"wall_s": 1.0}))
    got = {r["key"]: r["after_over_before"] for r in before_after.compare([old], [new])}
    assert got == {"[gdb].ratio": 1.0, "[lldb].ratio": 0.5}
    again = tmp_path / "after2"  # --twice: the best of a side's two runs
    again.mkdir()
    rows[0]["ratio"] = 1.0
    (again / "stepping.json").write_text(json.dumps(rows))
    got = {r["key"]: r["after_over_before"] for r in before_after.compare([old], [new, again])}
    assert got == {"[gdb].ratio": 0.5, "[lldb].ratio": 0.5}


def test_an_item_that_gained_a_field_is_still_set_beside_its_old_self(tmp_path: Path) -> None:
    old, new = tmp_path / "before", tmp_path / "after"
    old.mkdir()
    new.mkdir()
    (old / "bt.json").write_text(json.dumps([{"debugger": "gdb", "mode": "plain", "warm_ms": 2.0},
                                             {"debugger": "gdb", "mode": "noop", "warm_ms": 3.0}]))
    (new / "bt.json").write_text(json.dumps([
        {"debugger": "gdb", "mode": "plain", "clock": "cpu", "warm_ms": 1.0},
        {"debugger": "gdb", "mode": "noop", "clock": "cpu", "warm_ms": 3.0}]))
    got = {r["key"]: r["after_over_before"] for r in before_after.compare([old], [new])}
    assert got == {"[gdb/plain/cpu].warm_ms": 0.5, "[gdb/noop/cpu].warm_ms": 1.0}
