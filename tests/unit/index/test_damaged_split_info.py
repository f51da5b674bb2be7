"""A damaged `.split_info` record whose moved range lies outside the module's code describes no
code: the section is refused with one warning naming it and the record's offset, and nothing
is made of the range (the CLI fuzz campaign found a range of 4 GB past 2^64 that made
`unsplit debuginfo` ask for the line of every byte of it: a hang). The copy is made by
`unsplit annotate` from a zoo binary; the damage is written at the record's offset (§1: a
16-byte header, then 24-byte records: branch_addr, vaddr, size, branch_size)."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

from unsplit import cli

from ...conftest import PYTHON_ERROR, ROOT, facts

FAR = 0x10_0000_0000  # past every section of a small executable


def _annotated(tmp_path: Path, variant: str = "gcc-pgo", *extra: str) -> Path:
    out = tmp_path / "crash"
    assert cli.main(["annotate", str(ROOT / "fixtures" / "build" / variant / "crash"),
                     "-o", str(out), *extra]) == 0
    return out


def _damage_record(path: Path, vaddr: int, size: int) -> int:
    """Give the first record another moved range; the record's offset in the section."""
    out = subprocess.run(["llvm-readobj-22", "--sections", str(path)], capture_output=True,
                         text=True, check=True).stdout
    block = out.split("Name: .split_info (")[1]
    offset = int(block.split("Offset: ")[1].split()[0], 16)
    data = bytearray(path.read_bytes())
    data[offset + 16 + 8:offset + 16 + 20] = struct.pack("<QI", vaddr, size)
    path.write_bytes(bytes(data))
    return 16


def _unsplit(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A process of its own: this one has read the file whole while annotating it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "plugin"),
           "UNSPLIT_CACHE": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-m", "unsplit", *args], env=env,
                          capture_output=True, text=True, timeout=60)


def test_a_moved_range_outside_the_code_is_refused(zoo: dict[str, Any], tmp_path: Path) -> None:
    facts(zoo, "gcc-pgo", "crash")
    path = _annotated(tmp_path)
    record = _damage_record(path, FAR, 0x20)
    p = _unsplit(tmp_path, "ranges", str(path))
    out, err = p.stdout, p.stderr
    assert p.returncode in (0, 1) and "internal error" not in err, err
    assert f"{FAR:#x}" not in out, out  # before: a fragment at [0x1000000000, 0x1000000020)
    said = [line for line in err.splitlines() if ".split_info" in line]
    assert said and all(f"at offset {record:#x}" in line and "not in the module's code" in line
                        for line in said), err
    assert not PYTHON_ERROR.search(err), err


def test_a_range_past_2_64_costs_no_time(zoo: dict[str, Any], tmp_path: Path) -> None:
    """4 GB past 2^64: refused at once (before: a walk over every byte, ended by the timeout).
    Without DWARF (lines from .opt_table), so that `debuginfo` writes a file."""
    facts(zoo, "gcc-pgo-nodebug", "crash")
    path = _annotated(tmp_path, "gcc-pgo-nodebug", "--debug",
                      str(ROOT / "fixtures" / "build" / "gcc-pgo" / "crash"))
    _damage_record(path, (1 << 64) - 1, 0xffff_fff0)
    p = _unsplit(tmp_path, "debuginfo", str(path), "-o", str(tmp_path / "out.debug"))
    assert p.returncode in (0, 1) and "internal error" not in p.stderr, p.stderr
    assert "not in the module's code" in p.stdout + p.stderr, p
