"""formats.unit_ranges against llvm-dwarfdump-22: each compile unit's code ranges, from its
top DIE's DW_AT_low_pc/DW_AT_high_pc or DW_AT_ranges, on programs of two units built by clang-22
and GCC in DWARF 4 and 5 (a pair, a range list through .debug_ranges, .debug_rnglists with
DW_FORM_rnglistx and DW_FORM_sec_offset, addresses through .debug_addr), and the zoo's inputs."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from unsplit.elf.binary import Binary
from unsplit.errors import DecodeError
from unsplit.formats.unit_ranges import Sections, unit_ranges

from ...conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("llvm-dwarfdump-22") is None,
                                reason="llvm-dwarfdump-22 is not installed")

SOURCES = {"a.c": "int f(int x) { return x * 3 + 1; }\n",
           "m.c": "int f(int);\nint main(int c, char **v) { (void)v; return f(c); }\n",
           "s.c": "__attribute__((cold, noinline)) int g(int x) { return x - 7; }\n"
                  "__attribute__((section(\".text.other\"))) int h(int x) { return g(x) * 2; }\n"}
BUILDS = {"clang5": ["clang-22", "-O2", "-g"], "clang4": ["clang-22", "-O2", "-gdwarf-4"],
          "clang5-fs": ["clang-22", "-O2", "-g", "-ffunction-sections"],
          "gcc5": ["gcc", "-O2", "-g"], "gcc4": ["gcc", "-O2", "-gdwarf-4"]}


def _dwarfdump(path: Path) -> dict[int, list[tuple[int, int]]]:
    """Unit offset -> the non-empty ranges llvm-dwarfdump-22 prints for its top DIE."""
    text = subprocess.run(["llvm-dwarfdump-22", "--debug-info", str(path)], check=True,
                          capture_output=True, text=True).stdout
    out: dict[int, list[tuple[int, int]]] = {}
    for chunk in re.split(r"^(?=0x[0-9a-f]+: Compile Unit:)", text, flags=re.M)[1:]:
        offset = int(chunk.split(":", 1)[0], 16)
        tags = [i for i, ln in enumerate(chunk.splitlines())
                if re.match(r"^0x[0-9a-f]+:\s+DW_TAG", ln)]
        die = "\n".join(chunk.splitlines()[tags[0]:tags[1] if len(tags) > 1 else None])
        ranges = [(int(a, 16), int(b, 16)) for a, b in
                  re.findall(r"^\s+\[0x([0-9a-f]+), 0x([0-9a-f]+)\)", die, re.M)]
        if "DW_AT_ranges" not in die:
            low = re.search(r"DW_AT_low_pc\s+\(0x([0-9a-f]+)\)", die)
            high = re.search(r"DW_AT_high_pc\s+\(0x([0-9a-f]+)\)", die)
            ranges = [(int(low[1], 16), int(high[1], 16))] if low and high else []
        out[offset] = [(lo, hi) for lo, hi in ranges if hi > lo]
    return out


def _ours(path: Path) -> dict[int, list[tuple[int, int]]]:
    b = Binary(str(path))
    data = b.section_data
    sections = Sections(*(data(n) or b"" for n in (".debug_info", ".debug_abbrev", ".debug_addr",
                                                   ".debug_rnglists", ".debug_ranges")))
    out: dict[int, list[tuple[int, int]]] = {}
    for at, ranges in unit_ranges(sections):
        assert not isinstance(ranges, DecodeError), ranges
        out[at] = ranges
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    work = tmp_path_factory.mktemp("unit-ranges")
    for name, text in SOURCES.items():
        (work / name).write_text(text)
    made = []
    for name, compiler in BUILDS.items():
        if shutil.which(compiler[0]) is None:
            continue
        subprocess.run([*compiler, *SOURCES, "-o", name], cwd=work, check=True)
        made.append(work / name)
    return made


def test_two_unit_programs_match_llvm_dwarfdump(built: list[Path]) -> None:
    assert len(built) >= 3
    kinds = set()
    for path in built:
        theirs = _dwarfdump(path)
        assert len(theirs) >= 3 and all(theirs.values()), (path, theirs)
        kinds.update(len(r) for r in theirs.values())
        assert _ours(path) == theirs, path
    assert {1, 2} <= kinds  # pairs (or one-range lists) and lists of several


@pytest.mark.parametrize("variant", ["bolt-all", "bolt-gcc", "bolt-gcc-dwarf4",
                                     "bolt-clang-dwarf4", "bolt-all-dbg"])
def test_zoo_matches_llvm_dwarfdump(variant: str) -> None:
    path = ROOT / "fixtures" / "build" / variant / ("crash" if variant.endswith("-dbg")
                                                     else "input/crash")
    theirs = _dwarfdump(path)
    assert theirs and _ours(path) == theirs


def test_damaged_unit_is_said_and_the_next_is_read(built: list[Path]) -> None:
    """A top DIE whose abbreviation code is not in its table: that unit's error, then the next
    unit's ranges."""
    b = Binary(str(built[0]))
    info = bytearray(b.section_data(".debug_info") or b"")
    sections = Sections(bytes(info), b.section_data(".debug_abbrev") or b"",
                        b.section_data(".debug_addr") or b"",
                        b.section_data(".debug_rnglists") or b"",
                        b.section_data(".debug_ranges") or b"")
    first = next(unit_ranges(sections))[0]
    header_size = 12 if info[first + 4] >= 5 else 11
    info[first + header_size] = 0x7F  # the first DIE's code
    said = list(unit_ranges(Sections(bytes(info), *(sections.abbrev, sections.addr,
                                                     sections.rnglists, sections.ranges))))
    assert isinstance(said[0][1], DecodeError) and "abbreviation 127" in str(said[0][1])
    assert said[1:] == list(_dwarfdump(built[0]).items())[1:]
