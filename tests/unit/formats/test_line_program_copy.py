"""formats/line_program: a sequence written by ProgramWriter.copy, from its first row and the
input's opcodes between the marks `sequences` gives, is the input's sequence: every program of
GCC's and clang's DWARF 4 and 5 inputs so written and put in a debug file, llvm-dwarfdump-22
--debug-line prints the input's rows (address, line, column, file, flags, ISA,
discriminator), and the copied opcodes are the input's bytes. The translator copies the rows
of code BOLT left in place this way (translate/lines.py)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from unsplit.debuginfo.dwarf.elf import write_debug_file
from unsplit.elf.binary import Binary
from unsplit.formats import line_program

from ...conftest import ROOT

INPUTS = ["_gcc-dwarf4-input/recurse", "_gcc-input/switch", "_clang-dwarf4-input/loop",
          "_bolt-input/crash", "_statics-input/statics"]
_ROW = re.compile(r"^0x[0-9a-f]{16} .*$", re.M)


def _rows(path: Path) -> list[str]:
    text = subprocess.run(["llvm-dwarfdump-22", "--debug-line", str(path)], capture_output=True,
                          text=True, check=True, timeout=120).stdout
    return _ROW.findall(text)


@pytest.mark.parametrize("name", INPUTS)
def test_sequences_copied_between_marks_are_the_inputs(name: str, tmp_path: Path) -> None:
    path = ROOT / "fixtures/build" / name
    data = Binary(str(path)).section_data(".debug_line") or b""
    out = bytearray()
    offset = copied = 0
    while offset < len(data):
        header = line_program.read_header(data, offset)
        marks: list[list[int]] = []
        sequences = line_program.sequences(data, header, marks)
        assert len(marks) == len(sequences)
        writer = line_program.ProgramWriter(header)
        for (rows, end), ends in zip(sequences, marks, strict=True):
            assert len(ends) == len(rows)
            raw = data[ends[0]:ends[-1]]
            writer.copy(rows[0], raw, rows[-1])
            writer.end_sequence(end)
            assert raw in writer.out
            copied += len(rows) - 1
        out += writer.program(data)
        offset = header.end
    assert copied, "no row copied: the test checks nothing"
    debug = tmp_path / "copied.debug"
    debug.write_bytes(write_debug_file(path.read_bytes(), str(path), [(".debug_line", bytes(out))]))
    assert _rows(debug) == _rows(path)
