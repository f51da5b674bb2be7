"""A pre-BOLT input whose DWARF is damaged: `unsplit debuginfo` leaves out the unit (or list)
that does not decode, says which and why in one line, writes the rest, never a traceback."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile
from unsplit.debuginfo.translate import build as translate
from unsplit.elf.binary import Binary
from unsplit.errors import DecodeError
from unsplit.formats import dwarf_lists, line_program
from unsplit.formats.line_program import LineHeader, ProgramWriter
from unsplit.index.module_index import ModuleIndex

from ...conftest import ROOT, facts


def _section(path: Path, name: str) -> tuple[int, int]:
    with path.open("rb") as f:
        sec = ELFFile(f).get_section_by_name(name)
        assert sec is not None
        return int(sec["sh_offset"]), int(sec["sh_size"])


def test_a_unit_that_does_not_decode_is_left_out(zoo: dict[str, Any], tmp_path: Path) -> None:
    f = facts(zoo, "bolt-all", "crash")
    work = tmp_path / "out"
    (work / "input").mkdir(parents=True)
    shutil.copy(ROOT / f["binary"], work / "crash")
    damaged = work / "input" / "crash"
    shutil.copy(ROOT / f["input"], damaged)
    offset, _ = _section(damaged, ".debug_info")
    data = bytearray(damaged.read_bytes())
    data[offset + 12] = 0x7F  # the unit's first DIE names an abbreviation its table lacks
    damaged.write_bytes(bytes(data))
    run = subprocess.run([sys.executable, "-m", "unsplit", "debuginfo", str(work / "crash"),
                          "-o", str(tmp_path / "x.debug"), "--json"], capture_output=True,
                         text=True, timeout=300, env={"PYTHONPATH": str(ROOT / "plugin")})
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    report = json.loads(run.stdout)
    assert report["made_from"] == "input DWARF"
    (line,) = report["units_left_out"]
    assert ".debug_info+0x0" in line and "abbreviation 127" in line, line
    verify = subprocess.run(["llvm-dwarfdump-22", "--verify", str(tmp_path / "x.debug")],
                            capture_output=True, text=True, timeout=120)
    assert "No errors." in verify.stdout, verify.stdout[-2000:]


# Crashers bench/fuzz.py's debuginfo target found (each failed before its fix), checked on the
# decoders and writers the rewriter calls, then through the rewriter.

def test_a_lists_header_cut_short_is_a_decode_error() -> None:
    cut = (6).to_bytes(4, "little") + b"\x05\x00"  # unit_length, then 2 bytes of the header
    with pytest.raises(DecodeError) as e:
        dwarf_lists.read_lists_header(cut, 12, ".debug_rnglists")
    assert e.value.section == ".debug_rnglists" and e.value.offset == 0


def _header(line_base: int, line_range: int, opcode_base: int = 13) -> LineHeader:
    return LineHeader(0, 0, 4, 4, 4, 4, 1, True, line_base, line_range, opcode_base,
                      bytes(opcode_base - 1))


@pytest.mark.parametrize("line_base,line_range", [(46, 14), (-20, 10), (-5, 1), (3, 255)])
def test_rows_round_trip_whatever_the_headers_line_base(line_base: int,
                                                       line_range: int) -> None:
    """A header whose special opcodes cannot say "same line" (line_base above 0, or a range
    that ends below 0) still gets every row written: it crashed the writer."""
    h = _header(line_base, line_range)
    rows = [(0x401000, 1, 10, 0, 1, 0, 0), (0x401004, 1, 10, 2, 1, 0, 0),
            (0x401010, 1, 58, 0, 1, 0, 0), (0x401010, 2, 3, 0, 0, 0, 0),
            (0x402000, 2, 3, 0, 1, 0, 0)]
    writer = ProgramWriter(h)
    for row in rows:
        writer.row(row)
    writer.end_sequence(0x402008)
    program = bytes(writer.out)
    decoded = line_program.sequences(program, LineHeader(
        0, len(program), 4, 4, 0, 0, 1, True, line_base, line_range, 13, bytes(12)))
    assert decoded == [(rows, 0x402008)]


def test_a_header_whose_standard_opcodes_are_special_is_a_decode_error() -> None:
    with pytest.raises(DecodeError):
        ProgramWriter(_header(-5, 14, opcode_base=4))


class _Damaged:
    """The input's DWARF as translate.build reads it (section_data), one section replaced."""

    def __init__(self, real: Binary, name: str, data: bytes) -> None:
        self.real, self.name, self.data = real, name, data

    def section_data(self, name: str) -> bytes | None:
        return self.data if name == self.name else self.real.section_data(name)


def _translate(variant: str, program: str, section: str,
               damage: Callable[[bytes], bytes]) -> tuple[bytes, translate.Summary]:
    index = ModuleIndex.open(str(ROOT / "fixtures" / "build" / variant / program))
    given = Binary(str(ROOT / "fixtures" / "build" / variant / "input" / program))
    data = given.section_data(section)
    assert data is not None
    return translate.build(index, given, _Damaged(given, section, damage(data)))  # type: ignore[arg-type]


def test_rnglists_cut_short_leave_the_unit_out_with_one_line(zoo: dict[str, Any]) -> None:
    _, summary = _translate("bolt-all", "except", ".debug_rnglists", lambda d: d[:6])
    (line,) = summary.left_out
    assert line.startswith("unit at .debug_info+0x0: .debug_rnglists: at offset 0x0: "), line
    assert "past the end" in line, line


def test_a_line_table_with_a_positive_line_base_is_written(zoo: dict[str, Any]) -> None:
    def positive_line_base(data: bytes) -> bytes:
        h = line_program.read_header(data, 0)
        at = h.header_start + 2 + (2 if h.version >= 5 else 0) + h.offset_size + \
            (2 if h.version >= 4 else 1) + 1
        assert int.from_bytes(data[at:at + 1], "little", signed=True) == h.line_base
        return data[:at] + bytes([46]) + data[at + 1:]

    data, summary = _translate("bolt-gcc-dwarf4", "crash", ".debug_line", positive_line_base)
    assert not summary.left_out, summary.left_out
    assert data


# DW_FORM_ref_addr across units (clang's LTO names a DIE of another unit so): a unit left out
# moves the units after it up, and a reference into it names nothing.

@pytest.fixture(scope="module")
def lto(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A BOLT output (o/statics) of an LTO build (o/input/statics) whose first unit is a
    plain C one that nothing names, then five LTO units that name each other's DIEs."""
    work = tmp_path_factory.mktemp("lto")
    (work / "o" / "input").mkdir(parents=True)
    (work / "extra.c").write_text("int unsplit_extra_unit(int x) { return x * 3; }\n")
    src = ROOT / "fixtures" / "src"
    given = work / "o" / "input" / "statics"
    subprocess.run(["clang-22", "-O2", "-g", "-c", str(work / "extra.c"), "-o",
                    str(work / "extra.o")], check=True)
    subprocess.run(["clang++-22", "-O2", "-g", "-flto", "-fuse-ld=lld", "-fno-pie", "-no-pie",
                    "-Wl,--emit-relocs", str(work / "extra.o"),
                    *(str(src / f"statics_{u}.cpp") for u in ("main", "a", "b", "c", "d")),
                    "-o", str(given)], check=True)
    subprocess.run(["llvm-bolt-22", str(given), "-o", str(work / "o" / "statics"),
                    "--split-functions", "--split-strategy=all", "--enable-bat"], check=True,
                   capture_output=True)
    return work / "o"


def _damaged_unit(out: Path, unit: int, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The BOLT output in `tmp_path` with its input's `unit`th unit's first DIE naming an
    abbreviation its table lacks; unsplit debuginfo's --json report of it."""
    work = tmp_path / "o"
    (work / "input").mkdir(parents=True)
    shutil.copy(out / "statics", work / "statics")
    damaged = work / "input" / "statics"
    shutil.copy(out / "input" / "statics", damaged)
    offset, _ = _section(damaged, ".debug_info")
    data = bytearray(damaged.read_bytes())
    at = offset
    for _ in range(unit):
        at += 4 + int.from_bytes(data[at:at + 4], "little")
    data[at + 12] = 0x7F
    damaged.write_bytes(bytes(data))
    debug = tmp_path / "x.debug"
    run = subprocess.run([sys.executable, "-m", "unsplit", "debuginfo", str(work / "statics"),
                          "-o", str(debug), "--json"], capture_output=True, text=True,
                         timeout=300, env={"PYTHONPATH": str(ROOT / "plugin")})
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    verify = subprocess.run(["llvm-dwarfdump-22", "--verify", str(debug)], capture_output=True,
                            text=True, timeout=120)
    assert "No errors." in verify.stdout, verify.stdout[-2000:]
    return debug, json.loads(run.stdout)


def _origins(path: Path) -> list[str]:
    """The name each DW_AT_abstract_origin names, as llvm-dwarfdump-22 resolves it."""
    dump = subprocess.run(["llvm-dwarfdump-22", "--debug-info", str(path)], capture_output=True,
                          text=True, timeout=120, check=True).stdout
    return re.findall(r'DW_AT_abstract_origin\t\(0x[0-9a-f]+ "([^"]*)"\)', dump)


def test_references_across_units_move_with_them(lto: Path, tmp_path: Path) -> None:
    debug, report = _damaged_unit(lto, 0, tmp_path)
    (line,) = report["units_left_out"]
    assert line.startswith("unit at .debug_info+0x0: "), line
    assert report["units"] == 5
    origins = _origins(lto / "input" / "statics")
    assert len(origins) > 10
    assert _origins(debug) == origins


def test_a_unit_naming_a_unit_left_out_is_left_out(lto: Path, tmp_path: Path) -> None:
    _, report = _damaged_unit(lto, 1, tmp_path)
    first, *naming = report["units_left_out"]
    assert "no abbreviation 127" in first
    assert naming and all("its DW_FORM_ref_addr at .debug_info+0x" in n for n in naming)
    assert report["units"] == 5 - len(naming)


# Found by the 100,000 inputs of `bench/fuzz.py --only debuginfo --seed 1` (fail before).

def test_a_units_low_pc_in_a_block_form_leaves_the_unit_out(zoo: dict[str, Any]) -> None:
    def low_pc_as_block(data: bytes) -> bytes:
        # GCC's first declaration, the unit's: code 1, DW_TAG_compile_unit, children, ...
        at = data.index(b"\x11\x01", 3)  # DW_AT_low_pc, DW_FORM_addr
        return data[:at + 1] + b"\x09" + data[at + 2:]  # DW_FORM_block

    _, summary = _translate("bolt-gcc-dwarf4", "crash", ".debug_abbrev", low_pc_as_block)
    (line,) = summary.left_out
    assert line.startswith("unit at .debug_info+0x0: ") and "not a number" in line, line


def test_a_block_longer_than_2_64_leaves_the_unit_out(zoo: dict[str, Any]) -> None:
    # a run of 0xff over a DW_FORM_block's ULEB128 length (inside a location expression)
    _, summary = _translate("bolt-gcc-dwarf4", "crash", ".debug_info",
                            lambda d: d[:1410] + b"\xff" * 19 + d[1429:])
    (line,) = summary.left_out
    assert line.startswith("unit at .debug_info+0x0: ") and "runs past the end" in line, line
