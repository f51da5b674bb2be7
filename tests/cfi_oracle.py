"""What llvm-dwarfdump-22 --eh-frame and llvm-readobj-22 --unwind say of a binary's CFI: the
oracles of the CFI tests (never unsplit)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from elftools.elf.elffile import ELFFile

_FDE = re.compile(r"^([0-9a-f]{8}) [0-9a-f]+ [0-9a-f]+ FDE cie=\S+ pc=([0-9a-f]+)\.\.\.([0-9a-f]+)")
_ROW = re.compile(r"^  0x([0-9a-f]+): (.*)$")


def dwarfdump_fdes(binary: Path) -> list[dict[str, Any]]:
    """Every FDE llvm-dwarfdump-22 --eh-frame lists: offset, [start, end), rows by address."""
    out = subprocess.run(["llvm-dwarfdump-22", "--eh-frame", str(binary)], capture_output=True,
                         text=True, check=True).stdout
    fdes: list[dict[str, Any]] = []
    for line in out.splitlines():
        m = _FDE.match(line)
        if m:
            fdes.append({"offset": int(m[1], 16), "start": int(m[2], 16), "end": int(m[3], 16),
                         "rows": {}})
            continue
        r = _ROW.match(line)
        if r and fdes:
            fdes[-1]["rows"][int(r[1], 16)] = r[2]
    return [f for f in fdes if f["end"] > f["start"]]


def hdr_table(binary: Path) -> dict[int, int]:
    """llvm-readobj-22 --unwind's `.eh_frame_hdr` table: start -> the FDE's section offset."""
    out = subprocess.run(["llvm-readobj-22", "--unwind", str(binary)], capture_output=True,
                         text=True, check=True).stdout
    with open(binary, "rb") as f:
        eh_frame = ELFFile(f).get_section_by_name(".eh_frame")["sh_addr"]
    pairs = re.findall(r"entry \d+ \{\s+initial_location: (0x[0-9a-f]+)\s+address: (0x[0-9a-f]+)",
                       out)
    return {int(a, 16): int(b, 16) - eh_frame for a, b in pairs}


def row_at(fde: dict[str, Any], address: int) -> str:
    return str(fde["rows"][max(a for a in fde["rows"] if a <= address)])


def first_difference(a: dict[str, Any], b: dict[str, Any]) -> int | None:
    lo, hi = max(a["start"], b["start"]), min(a["end"], b["end"])
    points = sorted({lo, *(x for x in [*a["rows"], *b["rows"]] if lo < x < hi)})
    return next((x for x in points if row_at(a, x) != row_at(b, x)), None)
