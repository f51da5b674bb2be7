"""A line row whose code starts with a jump BOLT rebuilt and goes on past it (ninja's
`HashCommand`: `jmp` then `cmp; jb` at build_log.cc:72, the jump placed right after the
block before): the jump keeps the row before, as in BOLT's own table, and the code after it
keeps its row. The file had dropped the row, so the `cmp` read the line of the block before
(0, where the input and BOLT's twin say 72)."""

from __future__ import annotations

from unsplit.debuginfo.translate.lines import LineTables
from unsplit.debuginfo.translate.lists import Mover
from unsplit.elf.binary import Binary
from unsplit.formats import line_program
from unsplit.formats.line_program import IS_STMT, ProgramWriter
from unsplit.index.bolt.input_map import InputMap

from ...conftest import ROOT

JMP = 0x5006  # the jump BOLT made, 5 bytes: e9 rel32


class _Output:
    """The output's code bytes, as rebuilt_jump reads them: a jmp rel32 at JMP."""

    def code_bytes(self, address: int, size: int) -> bytes:
        return bytes(0xE9 if a == JMP else 0x90 for a in range(address, address + size))

    def code_byte(self, address: int) -> int:
        return 0xE9 if address == JMP else 0x90


def _program(rows: list[tuple[int, int]], end: int) -> bytes:
    """A line program with the header of a real clang-22 unit and rows (address, line)."""
    data = Binary(str(ROOT / "fixtures/build/bolt-all/input/crash")).section_data(".debug_line")
    assert data
    header = line_program.read_header(data, 0)
    writer = ProgramWriter(header)
    for address, line in rows:
        writer.row((address, 1, line, 0, IS_STMT, 0, 0))
    writer.end_sequence(end)
    return writer.program(data)


def test_the_code_after_a_rebuilt_jump_keeps_its_row() -> None:
    # Input: [0x1000, 0x1006) line 10; [0x1006, 0x1010) line 72, a jmp and then a cmp at
    # 0x100b. All of it placed at 0x5000 in one run: the jmp at 0x5006, the cmp at 0x500b.
    data = _program([(0x1000, 10), (0x1006, 72)], 0x1010)
    imap = InputMap([(0x1000, 0x1010, 0x5000, 0x5010)], [(0x1000, 0x1010)],
                    [(0x1000, 0x1010)], [], [])
    imap.output, imap.x86 = _Output(), True  # type: ignore[assignment]
    assert imap.rebuilt_jump(JMP) == 5
    tables = LineTables(data, Mover(imap))
    tables.moved(0, "unit")
    moved = bytes(tables.out)
    rows = [(r[0], r[2]) for rows, _ in line_program.sequences(
        moved, line_program.read_header(moved, 0)) for r in rows]
    assert rows == [(0x5000, 10), (0x500B, 72)]
