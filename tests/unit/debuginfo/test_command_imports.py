"""`unsplit debuginfo` imports what writing the file needs, not what other commands or a
failed child need: argparse's formatter (shutil and its compression modules), the index
cache's temporary file (tempfile), the BAT scan's child (traceback) and dataclasses (each
compiles its methods at import; the records on this path are NamedTuples or slotted classes)
cost a whole command more than its parser (bench/debuginfo.py --realworld --files-only,
docs/benchmarks.md). The file it writes still verifies (llvm-dwarfdump-22), the index it
caches still opens, and `--help` keeps argparse's layout for the terminal's width."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ...conftest import ROOT, facts

_PROBE = """
import json, runpy, sys
sys.argv = ["unsplit", *sys.argv[1:]]
try:
    runpy.run_module("unsplit", run_name="__main__")
except SystemExit as e:
    status = e.code
print(json.dumps({"status": status, "modules": sorted(sys.modules)}), file=sys.stderr)
"""

_NOT_NEEDED = ("shutil", "tempfile", "traceback", "bz2", "lzma", "dataclasses", "inspect",
               "unsplit.commands", "unsplit.session")


def _run(tmp_path: Path, *args: str) -> tuple[str, dict[str, Any]]:
    env = {"PYTHONPATH": str(ROOT / "plugin"), "UNSPLIT_CACHE": str(tmp_path / "cache")}
    run = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True,
                         text=True, env=env, timeout=600, check=False)
    return run.stdout, json.loads(run.stderr.strip().splitlines()[-1])


def test_debuginfo_imports_only_what_writing_needs(zoo: dict[str, Any],
                                                   tmp_path: Path) -> None:
    f = facts(zoo, "bolt-random2", "crash")
    out = tmp_path / "crash.debug"
    text, said = _run(tmp_path, "debuginfo", str(ROOT / f["binary"]), "-o", str(out), "--json")
    assert said["status"] == 0
    assert json.loads(text)["written"] == str(out)
    assert [m for m in _NOT_NEEDED if m in said["modules"]] == []
    verify = subprocess.run(["llvm-dwarfdump-22", "--verify", str(out)], capture_output=True,
                            text=True, check=False)
    assert verify.returncode == 0, verify.stdout[-2000:]
    # the index it cached: one file, private as tempfile.mkstemp made it, no temporary left
    cached = [p for p in (tmp_path / "cache" / "index-v2").rglob("*") if p.is_file()]
    assert [p.suffix for p in cached] == [".idx"]
    assert stat.S_IMODE(os.stat(cached[0]).st_mode) == 0o600
    again, said = _run(tmp_path, "debuginfo", str(ROOT / f["binary"]), "-o", str(out), "--json")
    assert said["status"] == 0 and json.loads(again)["written"] == str(out)


def test_help_is_as_wide_as_argparse_makes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parser's formatter finds the width argparse's own finds (through shutil)."""
    import argparse

    from unsplit.cli import build_parser

    for columns in ("50", "100", "0", "junk"):
        monkeypatch.setenv("COLUMNS", columns)
        ours = build_parser("debuginfo")._get_formatter()
        theirs = argparse.HelpFormatter("unsplit")
        assert (ours._width, ours._max_help_position) == \
            (theirs._width, theirs._max_help_position)
    monkeypatch.setenv("COLUMNS", "60")
    sub = build_parser("debuginfo")._subparsers
    assert sub is not None
    parser = sub._group_actions[0].choices["debuginfo"]  # type: ignore[attr-defined]
    assert parser._get_formatter()._width == 58
