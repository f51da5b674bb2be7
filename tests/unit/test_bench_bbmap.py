"""bench/bbmap.py's synthetic map (make bench): it is built from the format's own constants, so a
renamed constant breaks the bench only when `make bench` runs, unless this test builds a small
one. llvm-readobj-22 is the oracle for what was encoded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1].parent
sys.path.insert(0, str(ROOT / "bench"))

import bbmap  # noqa: E402


def test_a_small_synthetic_map_reads_back_and_readobj_agrees(tmp_path: Path) -> None:
    maps = bbmap.synthesize(40, 1)
    data = bbmap.fmt.encode(maps)
    decoded = bbmap.fmt.decode(data)
    assert decoded.error is None and not decoded.rejected
    assert [m.ranges for m in decoded.functions] == [m.ranges for m in maps]
    path = bbmap.with_map(data, tmp_path)
    out = subprocess.run(["llvm-readobj-22", "--bb-addr-map", str(path)], capture_output=True,
                         text=True, check=True).stdout
    assert out.count("Function {") == len(maps), out[:2000]
