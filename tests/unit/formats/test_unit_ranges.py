"""formats.unit_ranges against llvm-dwarfdump-22: each compile unit's code ranges, from its
top DIE's DW_AT_low_pc/DW_AT_high_pc or DW_AT_ranges, on programs of two units built by clang-22
and GCC in DWARF 4 and 5 (a pair, a range list through .debug_ranges, .debug_rnglists with
DW_FORM_rnglistx and DW_FORM_sec_offset, addresses through .debug_addr), and the zoo's inputs;
and the ranges of every inlined call (inlined_ranges), on a program that inlines a lot."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from unsplit.elf.binary import Binary
from unsplit.errors import DecodeError
from unsplit.formats.unit_ranges import Sections, inlined_ranges, unit_ranges

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


INLINING = {"i.c": "static inline int sq(int x) { return x * x; }\n"
                   "static inline int cube(int x) { return sq(x) * x; }\n"
                   "static inline int mix(int x) { return x > 9 ? cube(x - 1) : sq(x) + 3; }\n"
                   "__attribute__((noinline)) int f(int x) {\n"
                   "  int t = 0; for (int i = 0; i < x; i++) t += mix(i) ^ cube(t);\n"
                   "  return t; }\n"
                   "int main(int c, char **v) { (void)v; return f(c) + mix(c) + cube(c); }\n"}


def _dwarfdump_inlined(path: Path) -> tuple[dict[int, list[tuple[int, int]]], int]:
    """(unit offset -> the non-empty ranges llvm-dwarfdump-22 prints for its
    DW_TAG_inlined_subroutine DIEs (a low/high pair, else the DW_AT_ranges list), sorted;
    how many of those DIEs have a range list)."""
    text = subprocess.run(["llvm-dwarfdump-22", "--debug-info", str(path)], check=True,
                          capture_output=True, text=True).stdout
    out: dict[int, list[tuple[int, int]]] = {}
    lists = 0
    for chunk in re.split(r"^(?=0x[0-9a-f]+: Compile Unit:)", text, flags=re.M)[1:]:
        found: list[tuple[int, int]] = []
        for die in re.split(r"^(?=0x[0-9a-f]+:\s+DW_TAG)", chunk, flags=re.M)[1:]:
            if not re.match(r"^0x[0-9a-f]+:\s+DW_TAG_inlined_subroutine", die):
                continue
            low = re.search(r"DW_AT_low_pc\s+\(0x([0-9a-f]+)\)", die)
            high = re.search(r"DW_AT_high_pc\s+\(0x([0-9a-f]+)\)", die)
            if low and high:
                found.append((int(low[1], 16), int(high[1], 16)))
            elif "DW_AT_ranges" in die:
                lists += 1
                found += [(int(a, 16), int(b, 16)) for a, b in
                          re.findall(r"^\s+\[0x([0-9a-f]+), 0x([0-9a-f]+)\)", die, re.M)]
        out[int(chunk.split(":", 1)[0], 16)] = sorted((lo, hi) for lo, hi in found if hi > lo)
    return out, lists


def test_inlined_calls_match_llvm_dwarfdump(tmp_path: Path) -> None:
    (tmp_path / "i.c").write_text(INLINING["i.c"])
    lists = 0
    for name, compiler in BUILDS.items():
        if shutil.which(compiler[0]) is None:
            continue
        subprocess.run([*compiler, "i.c", "-o", name], cwd=tmp_path, check=True)
        theirs, with_lists = _dwarfdump_inlined(tmp_path / name)
        lists += with_lists
        b = Binary(str(tmp_path / name))
        data = b.section_data
        sections = Sections(*(data(n) or b"" for n in (
            ".debug_info", ".debug_abbrev", ".debug_addr", ".debug_rnglists", ".debug_ranges")))
        ours = {at: sorted(inlined_ranges(sections, at)) for at in theirs}
        assert ours == theirs and sum(map(len, theirs.values())) >= 4, name
    assert lists  # some build gives an inlined call a range list
