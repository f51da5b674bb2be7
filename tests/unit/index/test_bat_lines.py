"""Issue 4's line oracle: BOLT's own line table against ours, address by address.

Every BOLT variant of the zoo has a ``-dbg`` twin made by the same command plus
``--update-debug-sections``, and BOLT lays out the same code bytes in both (checked here, per
executable section). For every instruction llvm-objdump-22 finds in the variant without debug
info, ``unsplit where --json`` (BAT + the pre-BOLT binary's DWARF) must give the line
llvm-symbolizer-22 gives for the same address in the twin, wherever the twin's line is not 0.
No address is excluded: the two places where BAT's interpolation alone is wrong are answered
right by the index and pinned down below.

* BOLT rebuilds unconditional jumps at layout; they have no BAT entry (spec §2.3) and BOLT's
  line table continues the row of the code before them (often a branch whose size BOLT changed).
* Lite mode leaves unprofiled functions (``audit``) unchanged and without BAT (spec §3.5):
  their line is the input's line at the same address.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile
from unsplit.elf.binary import Binary
from unsplit.index.bolt import bat_translate
from unsplit.index.module_index import ModuleIndex

from ...conftest import ROOT

OBJDUMP, SYMBOLIZER = "llvm-objdump-22", "llvm-symbolizer-22"
PROGRAMS = ["loop", "recurse", "switch", "except", "crash"]

pytestmark = pytest.mark.skipif(
    not (shutil.which(OBJDUMP) and shutil.which(SYMBOLIZER)),
    reason="needs llvm-objdump-22 and llvm-symbolizer-22",
)


def _pairs(zoo: dict[str, Any]) -> list[str]:
    return sorted(v for v in zoo if v.startswith("bolt-") and f"{v}-dbg" in zoo)


def code_sections(path: Path) -> dict[str, tuple[int, bytes]]:
    with path.open("rb") as f:
        elf = ELFFile(f)
        return {s.name: (s["sh_addr"], s.data()) for s in elf.iter_sections()
                if s["sh_flags"] & 0x4 and s["sh_type"] == "SHT_PROGBITS"}


def instructions(path: Path) -> list[tuple[int, str]]:
    out = subprocess.run([OBJDUMP, "-d", "--no-show-raw-insn", str(path)], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    return [(int(m[1], 16), m[2]) for m in re.finditer(r"(?m)^\s+([0-9a-f]+):\s+(\S+)", out)]


def twin_lines(path: Path, addresses: list[int]) -> list[tuple[str, int]]:
    proc = subprocess.run(
        [SYMBOLIZER, "--obj", str(path), "--no-inlines", "--basenames", "--output-style=GNU",
         "--functions=none"],
        input="".join(f"{a:#x}\n" for a in addresses), capture_output=True, text=True,
        check=True, timeout=60,
    )  # fmt: skip
    out = []
    for line in proc.stdout.splitlines():
        file, _, rest = line.rpartition(":")
        word = rest.split()[0]
        out.append((file, int(word) if word.isdigit() else 0))
    return out


def our_lines(path: Path, addresses: list[int]) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-m", "unsplit", "where", "--json", "--exe", str(path),
         *map(hex, addresses)],
        capture_output=True, text=True, check=True, timeout=120, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "plugin"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.fixture(scope="module")
def pairs(zoo: dict[str, Any]) -> list[str]:
    found = _pairs(zoo)
    assert len(found) >= 8, found
    return found


@pytest.mark.parametrize("program", PROGRAMS)
def test_lines_equal_the_debug_twin(zoo: dict[str, Any], pairs: list[str], program: str) -> None:
    compared = 0
    for variant in pairs:
        if program not in zoo[variant]["programs"]:
            continue  # bolt-statics has a program of its own
        path = ROOT / zoo[variant]["programs"][program]["binary"]
        twin = ROOT / zoo[f"{variant}-dbg"]["programs"][program]["binary"]
        if code_sections(path) != code_sections(twin):
            pytest.fail(f"{variant}/{program}: BOLT laid out different code with "
                        "--update-debug-sections; the twin is no oracle for it")
        insns = instructions(path)
        addresses = [a for a, _ in insns]
        theirs = twin_lines(twin, addresses)
        ours = our_lines(path, addresses)
        assert len(ours) == len(theirs) == len(addresses)
        wrong = []
        for a, o, t in zip(addresses, ours, theirs, strict=True):
            if not t[1]:
                continue
            compared += 1
            if ((o["file"] or "").rsplit("/", 1)[-1], o["line"]) != t:
                wrong.append((variant, hex(a), o["procedure"], o["fragment"], o["line"], t))
        assert not wrong, wrong[:10]
    assert compared > 300


def test_the_exceptions_occur_and_are_answered(zoo: dict[str, Any]) -> None:
    """The zoo exercises both rules above, so the equality test would fail without them."""
    path = ROOT / zoo["bolt-all"]["programs"]["crash"]["binary"]
    index = ModuleIndex(Binary(str(path)))
    jumps = [a for a, m in instructions(path) if m == "jmp" and index.sources.bat._inserted_jump(a)]
    assert jumps
    for a in jumps:
        tr = bat_translate.translate(index.binary, a)
        assert tr is not None and not tr.exact
    # Lines for them come through BAT (None where the code before has line 0, as in the twin).
    rows = [index.line_at(a) for a in jumps]
    assert any(rows) and all(r.source == "bat" for r in rows if r is not None)
    # A jump right after a branch BOLT widened (jne rel8 in the input, rel32 here): plain
    # interpolation from the branch would land past the input's branch.
    assert any(index.sources.bat._branch_right_before(a) is not None for a in jumps)

    lite = ROOT / zoo["bolt-profile2"]["programs"]["crash"]["binary"]
    index = ModuleIndex(Binary(str(lite)))
    audit = next(f for f in index.binary.functions if f.name == "audit")
    assert bat_translate.translate(index.binary, audit.value) is None  # lite: no BAT map
    row = index.line_at(audit.value)
    assert row is not None and row.source == "bat" and row.file == "crash.c"
