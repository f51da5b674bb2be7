"""Line tables moved through the input map, row by row: each input row stands for the bytes
up to the next row's address; those bytes' output ranges each begin with it (the rows of one
address all where the first byte went, the last of them, the one in effect, at the others),
and the rows, sorted by output address, make one sequence per run of touching ranges. The
header (file and directory tables: DW_AT_decl_file and DW_AT_call_file numbers) is the
input's, byte for byte."""

from __future__ import annotations

from bisect import bisect_right
from operator import itemgetter

from unsplit.debuginfo.translate.lists import Mover
from unsplit.errors import DecodeError
from unsplit.formats import line_program
from unsplit.formats.line_program import PROGRAM_FLAGS_ONCE, ProgramWriter, Row


class LineTables:
    """The new .debug_line, each input program moved once (units may share one)."""

    def __init__(self, data: bytes, mover: Mover) -> None:
        self.data = data
        self.mover = mover
        self.out = bytearray()
        self._done: dict[int, int] = {}
        self.rows: dict[int, list[tuple[list[Row], int]]] = {}  # each input program's

    def forget_after(self, size: int) -> None:
        """Drops the programs written from `size` on (a unit left out wrote them)."""
        del self.out[size:]
        self._done = {k: v for k, v in self._done.items() if v < size}

    def moved(self, offset: int, where: str) -> int:
        """The new offset of the input program at `offset`; DecodeError when its header does
        not decode (rows that do not are dropped, and said)."""
        found = self._done.get(offset)
        if found is not None:
            return found
        header = line_program.read_header(self.data, offset)
        try:
            sequences = line_program.sequences(self.data, header)
        except DecodeError as e:
            self.mover.warnings.append(f"{where}: line table at .debug_line+{offset:#x}: "
                                       f"{e.message}: its rows are left out")
            sequences = []
        self.rows[offset] = sequences
        segments = self._segments(sequences)
        writer = ProgramWriter(header)
        last = -1
        imap = self.mover.imap
        for start, end, rows in segments:
            if start < last:
                if end <= last:
                    continue  # code placed twice: the first place's rows stand
                start = last
            elif start > last >= 0:
                writer.end_sequence(last)
            elif start == last and (jump := imap.rebuilt_jump(start)):
                # The row before goes on over the jump (BOLT's own table does the same); the
                # input code placed after it has these rows.
                if start + jump >= end:
                    last = end
                    continue
                start += jump
            for row in rows:
                writer.row((start, *row[1:]))
            last = end
        if last >= 0:
            writer.end_sequence(last)
        new = self._done[offset] = len(self.out)
        self.out += writer.program(self.data)
        return new

    def _segments(self, sequences: list[tuple[list[Row], int]]
                  ) -> list[tuple[int, int, list[Row]]]:
        """(output start, output end, rows) of every placed run of input rows, by start."""
        imap = self.mover.imap
        out: list[tuple[int, int, list[Row]]] = []
        append, place_from = out.append, imap.place_from
        los, his, outs, tails = imap.lo, imap.hi, imap.out, imap.tail
        runs = len(los)
        dropped = 0
        # The run the last group fell in, [lo, hi) -> out: the next groups most often fall in
        # it too, and are placed here without place_from (what it would answer, for rows of
        # one run that no duplicated run overlaps).
        lo = hi = delta = tail = 0
        for rows, end in sequences:
            n = len(rows)
            i = 0
            while i < n:
                address = rows[i][0]
                j = i + 1
                while j < n and rows[j][0] == address:
                    j += 1
                following = rows[j][0] if j < n else end
                if following <= address:
                    pass  # rows at the sequence's end address: they describe no byte
                elif lo <= address and following <= hi:
                    start = address + delta
                    append((start, tail if following == hi else following + delta, rows[i:j]))
                else:
                    (ranges, missing), entry = place_from(address, following)
                    if missing and not ranges:
                        dropped += j - i
                    for start, stop in ranges:
                        group = rows[i:j] if start == entry else [_elsewhere(rows[j - 1])]
                        append((start, stop, group))
                    r = bisect_right(los, address) - 1
                    if r >= 0 and address < his[r] and (r + 1 == runs or los[r + 1] >= his[r]):
                        lo, hi, tail = los[r], his[r], tails[r]
                        delta = outs[r] - lo
                    else:
                        lo = hi = 0
                i = j
        self.mover.dropped["line rows"] += dropped
        out.sort(key=itemgetter(0))
        return out


def _elsewhere(row: Row) -> Row:
    """A row carried to a second output range: a prologue does not end there again."""
    address, file, line, column, flags, isa, disc = row
    return (address, file, line, column, flags & ~PROGRAM_FLAGS_ONCE, isa, disc)
