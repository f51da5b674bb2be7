"""formats/line_program.file_table: the directories and files of every line program header of
DWARF 4 and 5 inputs (GCC's, clang's) as llvm-dwarfdump-22 --debug-line prints them."""

from __future__ import annotations

import re
import subprocess

import pytest
from unsplit.elf.binary import Binary
from unsplit.errors import DecodeError
from unsplit.formats import line_program

from ...conftest import ROOT

INPUTS = ["_gcc-dwarf4-input/recurse", "_gcc-input/switch", "_clang-dwarf4-input/loop",
          "_bolt-input/crash", "_statics-input/statics"]
_TABLE = re.compile(r'^include_directories\[\s*(\d+)\] = "([^"]*)"', re.M)
_FILE = re.compile(r'^file_names\[\s*(\d+)\]:\n\s+name: "([^"]*)"\n\s+dir_index: (\d+)', re.M)


def _dwarfdump(path: str) -> list[tuple[list[str], list[tuple[str, int]]]]:
    text = subprocess.run(["llvm-dwarfdump-22", "--debug-line", path], capture_output=True,
                          text=True, check=True).stdout
    out = []
    for program in text.split("debug_line[")[1:]:
        dirs = [name for _, name in _TABLE.findall(program)]
        files = [(name, int(index)) for _, name, index in _FILE.findall(program)]
        out.append((dirs, files))
    return out


@pytest.mark.parametrize("name", INPUTS)
def test_file_tables_are_dwarfdumps(name: str) -> None:
    path = str(ROOT / "fixtures/build" / name)
    binary = Binary(path)
    data = binary.section_data(".debug_line") or b""
    strings = (binary.section_data(".debug_str") or b"",
               binary.section_data(".debug_line_str") or b"")
    ours = []
    offset = 0
    while offset < len(data):
        h = line_program.read_header(data, offset)
        ours.append(line_program.file_table(data, h, *strings))
        offset = h.end
    assert ours == _dwarfdump(path)
    assert any(files for _, files in ours)


def test_a_file_table_cut_short_is_a_decode_error() -> None:
    binary = Binary(str(ROOT / "fixtures/build/_gcc-input/switch"))
    data = binary.section_data(".debug_line") or b""
    h = line_program.read_header(data, 0)
    cut = data[:h.tables_start + 3]
    with pytest.raises(DecodeError):
        line_program.file_table(cut, h, b"", b"")
