"""Line tables moved through the input map, row by row: each input row stands for the bytes
up to the next row's address; those bytes' output ranges each begin with it (the rows of one
address all where the first byte went, the last of them, the one in effect, at the others),
and the rows, sorted by output address, make one sequence per run of touching ranges. The
header (file and directory tables: DW_AT_decl_file and DW_AT_call_file numbers) is the
input's, byte for byte."""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from itertools import islice
from operator import itemgetter, le

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
        marks: list[list[int]] = []
        try:
            sequences = line_program.sequences(self.data, header, marks)
        except DecodeError as e:
            self.mover.warnings.append(f"{where}: line table at .debug_line+{offset:#x}: "
                                       f"{e.message}: its rows are left out")
            sequences = []
        self.rows[offset] = sequences
        segments = self._segments(sequences)
        writer = ProgramWriter(header)
        last = -1
        imap = self.mover.imap
        for start, end, rows, copied in segments:
            if start < last:
                if end <= last:
                    continue  # code placed twice: the first place's rows stand
                if copied is not None:  # the rest of it by its groups
                    for group_start, group_end, group in _groups(rows, end):
                        if group_end > last:
                            for row in group:
                                writer.row_at(max(group_start, last), row)
                            last = group_end
                    continue
                start = last
            elif start > last >= 0:
                writer.end_sequence(last)
            elif start == last and copied is None and (jump := imap.rebuilt_jump(start)):
                # The row before goes on over the jump (BOLT's own table does the same); the
                # input code placed after it has these rows.
                if start + jump >= end:
                    last = end
                    continue
                start += jump
            if copied is not None:
                sequence, first, after = copied
                writer.copy(rows[0], self.data[marks[sequence][first]:
                                               marks[sequence][after - 1]], rows[-1])
            else:
                for row in rows:
                    writer.row_at(start, row)
            last = end
        if last >= 0:
            writer.end_sequence(last)
        new = self._done[offset] = len(self.out)
        self.out += writer.program(self.data)
        return new

    def _segments(self, sequences: list[tuple[list[Row], int]]) -> list[Segment]:
        """(output start, output end, rows, copied) of every placed run of input rows, by
        start. Rows of code BOLT left where it was come as one segment per stretch of them
        (copied: the sequence, its first row and the row after its last): the program's
        opcodes between them are copied, not its rows written again."""
        imap = self.mover.imap
        out: list[Segment] = []
        append, place_from = out.append, imap.place_from
        los, his, outs, tails = imap.lo, imap.hi, imap.out, imap.tail
        runs = len(los)
        dropped = 0
        # The run the last group fell in, [lo, hi) -> out: the next groups most often fall in
        # it too, and are placed here without place_from (what it would answer, for rows of
        # one run that no duplicated run overlaps). `kept`: the run is code BOLT left in place.
        lo = hi = delta = tail = 0
        kept = False
        for k, (rows, end) in enumerate(sequences):
            n = len(rows)
            i = 0
            stretch = stop = -1  # the first row of the stretch being made (or -1), its end
            addresses: array[int] | None = None  # the rows', when in order (_in_order)
            while i < n:
                address = rows[i][0]
                j = i + 1
                while j < n and rows[j][0] == address:
                    j += 1
                following = rows[j][0] if j < n else end
                if kept and lo <= address < following <= hi:
                    if stretch < 0:
                        stretch = i
                    if addresses is None:
                        addresses = _in_order(rows)
                    if len(addresses):  # the groups after it that the run holds, at once
                        after = bisect_left(addresses, hi, j)  # the first row at or past hi
                        last = addresses[after - 1]
                        if after > j and last < (addresses[after] if after < n else end) <= hi:
                            stop = addresses[after] if after < n else end
                            i = after
                            continue
                        final = bisect_left(addresses, last, j, after)  # its last group
                        if final > j:  # all groups but that one
                            stop = last
                            i = final
                            continue
                    stop = following
                    i = j
                    continue
                if stretch >= 0:
                    append(_stretch(k, rows, stretch, i, stop))
                    stretch = -1
                if following <= address:
                    pass  # rows at the sequence's end address: they describe no byte
                elif lo <= address and following <= hi:
                    start = address + delta
                    append((start, tail if following == hi else following + delta, rows[i:j],
                            None))
                else:
                    (ranges, missing), entry = place_from(address, following)
                    if missing and not ranges:
                        dropped += j - i
                    for start, stop in ranges:
                        group = rows[i:j] if start == entry else [_elsewhere(rows[j - 1])]
                        append((start, stop, group, None))
                    r = bisect_right(los, address) - 1
                    if r >= 0 and address < his[r] and (r + 1 == runs or los[r + 1] >= his[r]):
                        lo, hi, tail = los[r], his[r], tails[r]
                        delta = outs[r] - lo
                        kept = not delta and tail == hi and imap.kept(lo, hi)
                        if kept and lo <= address < following <= hi and ranges:
                            stretch, stop = i, following  # this group begins a stretch
                            del out[-1]
                    else:
                        lo = hi = 0
                        kept = False
                i = j
            if stretch >= 0:
                append(_stretch(k, rows, stretch, n, stop))
        self.mover.dropped["line rows"] += dropped
        out.sort(key=itemgetter(0))
        return out


# A placed run of rows: output start, end, the rows, and for a stretch of rows copied as the
# input program's opcodes, (sequence, first row, the row after the last), else None.
Segment = tuple[int, int, list[Row], tuple[int, int, int] | None]


def _in_order(rows: list[Row]) -> array[int]:
    """The rows' addresses when they never go down (every program clang and GCC write), so
    that the rows a run of code holds are found by bisection; else empty."""
    addresses = array("Q", map(itemgetter(0), rows))
    return addresses if all(map(le, addresses, islice(addresses, 1, None))) else array("Q")


def _stretch(sequence: int, rows: list[Row], first: int, after: int, end: int) -> Segment:
    """The segment of rows[first:after], code BOLT left in place up to `end`."""
    return (rows[first][0], end, rows[first:after], (sequence, first, after))


def _groups(rows: list[Row], end: int) -> list[tuple[int, int, list[Row]]]:
    """A copied stretch's rows (up to `end`) as (start, end, rows) of each address: where it
    overlaps code placed before it."""
    out: list[tuple[int, int, list[Row]]] = []
    i = 0
    while i < len(rows):
        j = i + 1
        while j < len(rows) and rows[j][0] == rows[i][0]:
            j += 1
        out.append((rows[i][0], rows[j][0] if j < len(rows) else end, rows[i:j]))
        i = j
    return out


def _elsewhere(row: Row) -> Row:
    """A row carried to a second output range: a prologue does not end there again."""
    address, file, line, column, flags, isa, disc = row
    return (address, file, line, column, flags & ~PROGRAM_FLAGS_ONCE, isa, disc)
