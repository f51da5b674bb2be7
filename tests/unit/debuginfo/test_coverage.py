"""Variable location coverage of `unsplit debuginfo`'s file (llvm-dwarfdump-22 --statistics)
is the input's, less only what BAT cannot map. Bytes cannot be compared with the input's (BOLT's
code is longer, jumps between fragments, or shorter, jumps made short), so the oracles are two:
the input says how many variables and parameters there are and how many have no location at
all (none gained or lost one), and BOLT's own --update-debug-sections twin, the same code bytes,
says how many bytes of each scope each location covers once moved, where BOLT's DWARF writer
is right: clang's DWARF 5. For clang's DWARF 4 the twin is that of the same program built with
DWARF 5 (the same code bytes: BOLT's own DWARF 4 output loses 114 bytes of `except`'s scopes).
GCC's inputs get the input's counts only: BOLT's twin of GCC's `except` covers 1,247 bytes of
the input's 1,417 (it drops ranges), so it is no oracle there."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile

from ...conftest import ROOT, facts

# variant -> the variant whose --update-debug-sections twin has the same code bytes (None:
# the input's counts only).
VARIANTS = {"bolt-all": "bolt-all-dbg", "bolt-cdsplit": "bolt-cdsplit-dbg",
            "bolt-reverse": "bolt-reverse-dbg", "bolt-clang-dwarf4": "bolt-all-dbg",
            "bolt-gcc": None, "bolt-gcc-dwarf4": None}
PROGRAMS = ["crash", "except", "loop", "recurse", "switch"]
# What the input alone decides: variables counted, and those with no location anywhere.
COUNTS = ("#variables processed by location statistics", "#params processed by location "
          "statistics", "#local vars processed by location statistics",
          "#variables with 0% of parent scope covered by DW_AT_location",
          "#params with 0% of parent scope covered by DW_AT_location",
          "#local vars with 0% of parent scope covered by DW_AT_location")


def _statistics(path: Path) -> dict[str, Any]:
    run = subprocess.run(["llvm-dwarfdump-22", "--statistics", str(path)], capture_output=True,
                         text=True, timeout=120, check=True)
    found: dict[str, Any] = json.loads(run.stdout)
    return found


def _bytes_covered(stats: dict[str, Any]) -> dict[str, int]:
    """The byte sums of scopes and of what locations cover in them."""
    return {k: v for k, v in stats.items() if k.startswith("sum_all_") and "bytes" in k}


def _code(path: Path) -> list[tuple[str, int, bytes]]:
    with path.open("rb") as f:
        return [(s.name, s["sh_addr"], s.data()) for s in ELFFile(f).iter_sections()
                if s["sh_flags"] & 4 and s["sh_type"] == "SHT_PROGBITS"]  # SHF_EXECINSTR


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_location_coverage_is_the_inputs(zoo: dict[str, Any], variant: str, program: str,
                                         tmp_path: Path) -> None:
    f = facts(zoo, variant, program)
    debug = tmp_path / "out.debug"
    run = subprocess.run([sys.executable, "-m", "unsplit", "debuginfo", str(ROOT / f["binary"]),
                          "-o", str(debug)], capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": str(ROOT / "plugin")}, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    ours = _statistics(debug)
    given = _statistics(ROOT / f["input"])
    for key in COUNTS:
        assert ours[key] == given[key], (key, ours[key], given[key])
    assert given[COUNTS[0]] > given[COUNTS[3]]  # some variables have a location
    twin_variant = VARIANTS[variant]
    if twin_variant is not None:
        twin = ROOT / facts(zoo, twin_variant, program)["binary"]
        assert _code(twin) == _code(ROOT / f["binary"])
        assert _bytes_covered(ours) == _bytes_covered(_statistics(twin))


def _dies(path: Path) -> list[tuple[str, str]]:
    """(tag, name) of each DIE llvm-dwarfdump-22 --debug-info decodes, in order."""
    dump = subprocess.run(["llvm-dwarfdump-22", "--debug-info", str(path)], capture_output=True,
                          text=True, timeout=120, check=True).stdout
    out = []
    for die in re.split(r"\n(?=0x[0-9a-f]+: )", dump):
        tag = re.match(r"0x[0-9a-f]+: +(DW_TAG_\w+|NULL)", die)
        if tag:
            name = re.search(r'DW_AT_name\t\("([^"]*)"\)', die)
            out.append((tag.group(1), name.group(1) if name else ""))
    return out


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("variant", ["bolt-gcc", "bolt-gcc-dwarf4"])
def test_gccs_dies_are_the_inputs(zoo: dict[str, Any], variant: str, program: str,
                                  tmp_path: Path) -> None:
    """llvm-dwarfdump-22 --verify does not finish on GCC 12's DWARF, -g or -gdwarf-4 (stuck at
    "Verifying unit: 1 / 1" of crash.c's input for 5 minutes, ours for 1; clang's verifies in
    a second): what it decodes is compared instead, every DIE of the input in the same order,
    then the units of names and lines for code no input unit describes."""
    f = facts(zoo, variant, program)
    debug = tmp_path / "out.debug"
    subprocess.run([sys.executable, "-m", "unsplit", "debuginfo", str(ROOT / f["binary"]), "-o",
                    str(debug)], capture_output=True, text=True, timeout=300, check=True,
                   env={"PYTHONPATH": str(ROOT / "plugin")}, cwd=ROOT)
    given, ours = _dies(ROOT / f["input"]), _dies(debug)
    assert len(given) > 50
    assert ours[:len(given)] == given
    assert all(tag == "DW_TAG_compile_unit" for tag, _ in ours[len(given):]
               if tag not in ("DW_TAG_subprogram", "DW_TAG_inlined_subroutine", "NULL"))
