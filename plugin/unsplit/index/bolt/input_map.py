"""Where a BOLTed binary's input code went: runs of input bytes and the output addresses they were
placed at, from BAT (``shared/specs/bolt-bat.md`` §2.3, §3.1-§3.5), block by block as BOLT's own
``BinaryFunction::translateInputToOutputRange`` maps a range. Output bytes BOLT added after a run
(an inserted jump) belong to it; code BOLT folded or deleted is placed nowhere."""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from typing import NamedTuple

from unsplit.elf.binary import Binary
from unsplit.formats.nops import EM_X86_64, layout_only
from unsplit.index.bolt import bat_translate, prebolt

_JUMP_SIZES = {0xE9: 5, 0xEB: 2}  # jmp rel32, jmp rel8


class Placed(NamedTuple):
    """What became of one input range (a tuple: the translator makes one per line row and
    list entry)."""

    ranges: list[tuple[int, int]]  # output [start, end), by address, touching ones merged
    missing: int  # input bytes of it that have no output place


class InputMap:
    """Runs sorted by input address, as four columns: input [lo, hi), output start, and the
    output end the run stands for when a range covers its input end (`tail`)."""

    def __init__(self, runs: list[tuple[int, int, int, int]],
                 input_code: list[tuple[int, int]], moved: list[tuple[int, int]],
                 kept: list[tuple[int, int]], padding: list[tuple[int, int]]) -> None:
        runs.sort()
        self._entry_set = frozenset(r[2] for r in runs)  # output addresses of BAT's entries
        runs = _joined(runs)
        self.lo = array("Q", (r[0] for r in runs))
        self.hi = array("Q", (r[1] for r in runs))
        self.out = array("Q", (r[2] for r in runs))
        self.tail = array("Q", (r[3] for r in runs))
        self._pages: dict[int, bytes] = {}  # the output's code, read where rebuilt_jump asks
        self.input_code = input_code
        self.functions = len(moved)  # input functions BAT places
        # Code that has a place (what a range may lose), and the nops BOLT dropped from it
        # (gaps between runs that lose nothing).
        kept = merge(kept)  # functions BOLT left in place: their jumps are the input's
        self._kept_lo = array("Q", (lo for lo, _ in kept))
        self._kept_hi = array("Q", (hi for _, hi in kept))
        placed = merge(moved + kept)
        self._placed_lo = array("Q", (lo for lo, _ in placed))
        self._placed_hi = array("Q", (hi for _, hi in placed))
        padding.sort()
        self._pad_lo = array("Q", (lo for lo, _ in padding))
        self._pad_hi = array("Q", (hi for _, hi in padding))
        self.unplaced: list[str] = []  # BAT's functions the input's symbols do not have

    @classmethod
    def of(cls, output: Binary, input_binary: Binary) -> InputMap | None:
        """The map of a BOLTed `output` whose input is `input_binary`; None without BAT."""
        index = bat_translate.load(output)
        if index is None:
            return None
        runs: list[tuple[int, int, int, int]] = []
        bolted: dict[int, int] = {}
        kept: list[tuple[int, int]] = []
        unplaced: list[str] = []
        for hot in index.table.hot:
            name = index.name_of(hot)
            extent = prebolt.function_extent(input_binary, name,
                                             prebolt.output_unit(output, name, hot))
            if extent is None:
                unplaced.append(name)
                continue
            bolted[extent[0]] = extent[0] + extent[1]
            _function_runs(index, hot, extent[0], extent[1], runs)
        for f in input_binary.functions:
            if f.value in bolted or not f.size:
                continue
            ours = output.function_at(f.name, f.value)
            if ours is not None and ours.size == f.size:
                runs.append((f.value, f.value + f.size, f.value, f.value + f.size))
                kept.append((f.value, f.value + f.size))
        padding = _padding(runs, bolted, input_binary)
        found = cls(runs, input_binary.text_address_ranges(), list(bolted.items()), kept,
                    padding)
        found.unplaced = unplaced
        found.output = output
        found.x86 = output.machine == EM_X86_64
        return found

    output: Binary | None = None
    x86 = False  # the output is x86-64 code: rebuilt_jump reads its bytes

    def rebuilt_jump(self, address: int) -> int:
        """The size of the x86-64 jump BOLT made when it laid blocks out (`jmp` with no BAT
        entry of its own, spec §2.3) at `address` of the output, 0 where there is none: no
        input instruction stands behind it, and BOLT's own line table gives it the row of the
        code before. Never in a function BOLT left where it was (lite mode): its code is the
        input's, jumps too."""
        output = self.output
        if output is None or not self.x86 or address in self._entry_set:
            return 0
        i = bisect_right(self._kept_lo, address) - 1
        if i >= 0 and address < self._kept_hi[i]:
            return 0
        # Asked at nearly every line row: the output's code is read a page at a time (a page
        # that does not start in code is asked a byte at a time).
        page = address >> 12
        code = self._pages.get(page)
        if code is None:
            code = self._pages[page] = output.code_bytes(page << 12, 4096)
        offset = address & 0xFFF
        byte = code[offset] if offset < len(code) else output.code_byte(address)
        return 0 if byte is None else _JUMP_SIZES.get(byte, 0)

    def kept(self, lo: int, hi: int) -> bool:
        """Whether input [lo, hi) lies in functions BOLT left where they were (lite mode)."""
        i = bisect_right(self._kept_lo, lo) - 1
        return i >= 0 and hi <= self._kept_hi[i]

    def is_code(self, address: int) -> bool:
        """Whether `address` is in an executable section of the input."""
        i = bisect_right(self.input_code, (address, 1 << 64)) - 1
        return i >= 0 and address < self.input_code[i][1]

    def start(self, address: int) -> int | None:
        """Where the input byte at `address` is (an entry, a block start, a DW_OP_addr):
        None for input code with no place; an address outside the input's code (data) is
        its own. A nop BOLT dropped is where the code after it went."""
        i = bisect_right(self.lo, address) - 1
        if i >= 0 and address < self.hi[i]:
            return int(self.out[i] + address - self.lo[i])
        pad = self._padding_at(address, address + 1)
        if pad is not None:
            i = bisect_left(self.lo, pad[1])
            return int(self.out[i]) if i < len(self.lo) and self.lo[i] == pad[1] else None
        return None if self.is_code(address) else address

    def end(self, address: int) -> int | None:
        """Where the input byte before `address` ends (a call's return address): the output
        address right after that byte's place."""
        i = bisect_left(self.lo, address) - 1
        if i >= 0 and address <= self.hi[i]:
            return int(self.out[i] + address - self.lo[i])
        pad = self._padding_at(address - 1, address)
        if pad is not None:
            i = bisect_left(self.lo, pad[0]) - 1
            return int(self.out[i] + pad[0] - self.lo[i]) if i >= 0 and \
                self.hi[i] == pad[0] else None
        return None if self.is_code(address - 1) else address

    def _padding_at(self, lo: int, hi: int) -> tuple[int, int] | None:
        i = bisect_right(self._pad_lo, lo) - 1
        if i >= 0 and hi <= self._pad_hi[i]:
            return int(self._pad_lo[i]), int(self._pad_hi[i])
        return None

    def place_from(self, lo: int, hi: int) -> tuple[Placed, int | None]:
        """place(lo, hi) and start(lo) in one look-up (a line row asks both)."""
        los = self.lo
        i = bisect_right(los, lo) - 1
        if i >= 0 and lo < hi:
            run_hi = self.hi[i]
            if hi <= run_hi and (i + 1 == len(los) or los[i + 1] >= hi):
                out = self.out[i] + lo - los[i]
                return Placed([(out, self.tail[i] if hi == run_hi else out + hi - lo)],
                              0), out
        return self.place(lo, hi), self.start(lo)

    def shift(self, lo: int, hi: int) -> int | None:
        """How far input code [lo, hi) moved when one run holds it whole and every byte of it
        (its end too) moved that far: place(b, e) of any [b, e) within it is then
        [(b + shift, e + shift)]. None otherwise."""
        los = self.lo
        i = bisect_right(los, lo) - 1
        if i < 0 or lo >= hi or hi > self.hi[i] or (i + 1 < len(los) and los[i + 1] < hi):
            return None
        delta = int(self.out[i]) - int(los[i])
        if hi == self.hi[i] and self.tail[i] != hi + delta:
            return None
        return delta

    def holding(self, lo: int, hi: int) -> tuple[int, int, int] | None:
        """(run_lo, limit, delta): shift(b, e) is delta for every [b, e) with run_lo <= b <
        e <= limit, and [lo, hi) is one of them; None when shift(lo, hi) is None. A caller
        asking about many ranges in a row asks here only when one falls outside the last."""
        los = self.lo
        i = bisect_right(los, lo) - 1
        if i < 0 or lo >= hi:
            return None
        run_lo, limit = int(los[i]), int(self.hi[i])
        delta = int(self.out[i]) - run_lo
        if i + 1 < len(los) and los[i + 1] < limit:
            limit = int(los[i + 1])  # a run of duplicated code starts there
        elif self.tail[i] != limit + delta:
            limit -= 1  # the run's end does not move with it
        return (run_lo, limit, delta) if hi <= limit else None

    def place(self, lo: int, hi: int) -> Placed:
        """The output ranges input [lo, hi) of code became."""
        if hi <= lo:
            return Placed([], 0)
        los = self.lo
        i = bisect_right(los, lo) - 1
        if i >= 0:
            run_hi = self.hi[i]
            # Within one run, and no run of duplicated code after it: most line rows and
            # list entries.
            if hi <= run_hi and (i + 1 == len(los) or los[i + 1] >= hi):
                out = self.out[i] + lo - los[i]
                return Placed([(out, self.tail[i] if hi == run_hi else out + hi - lo)], 0)
            if run_hi <= lo:
                i += 1
        else:
            i = 0
        found: list[tuple[int, int]] = []
        covered = 0
        reached = lo  # input bytes below it are counted (runs of duplicated code overlap)
        his, outs, tails = self.hi, self.out, self.tail
        n = len(los)
        while i < n and los[i] < hi:
            run_lo, run_hi, out = los[i], his[i], outs[i]
            if run_hi > lo:
                start = out + lo - run_lo if lo > run_lo else out
                end = tails[i] if hi >= run_hi else out + hi - run_lo
                top = hi if hi < run_hi else run_hi
                if top > reached:
                    covered += top - (reached if reached > run_lo else run_lo)
                    reached = top
                found.append((start, end))
            i += 1
        if covered == hi - lo:  # all of it placed: nothing to count
            return Placed(merge(found), 0)
        return Placed(merge(found), self._function_bytes(lo, hi) - covered)

    def _function_bytes(self, lo: int, hi: int) -> int:
        """How many bytes of [lo, hi) lie in functions BAT moved or BOLT kept, less the nops
        BOLT dropped (padding between functions belongs to none, and is nobody's loss)."""
        return _overlap(self._placed_lo, self._placed_hi, lo, hi) - \
            _overlap(self._pad_lo, self._pad_hi, lo, hi)


def _overlap(los: array[int], his: array[int], lo: int, hi: int) -> int:
    """Bytes of [lo, hi) in the sorted disjoint ranges [los[i], his[i])."""
    i = bisect_right(los, lo) - 1
    if i < 0 or his[i] <= lo:
        i += 1
    total = 0
    while i < len(los) and los[i] < hi:
        total += min(hi, his[i]) - max(lo, los[i])
        i += 1
    return total


def _padding(runs: list[tuple[int, int, int, int]], bolted: dict[int, int],
             input_binary: Binary) -> list[tuple[int, int]]:
    """The gaps between the runs of each moved function that only served the input's layout
    (nops, a jump BOLT removed)."""
    runs.sort()
    out: list[tuple[int, int]] = []
    starts = sorted(bolted.items())
    k = 0
    for start, end in starts:
        while k < len(runs) and runs[k][0] < start:
            k += 1
        at = start
        while k < len(runs) and runs[k][0] < end:
            if runs[k][0] > at:
                out.append((at, runs[k][0]))
            at = max(at, runs[k][1])
            k += 1
        if at < end:
            out.append((at, end))
    machine = input_binary.machine
    return [(lo, hi) for lo, hi in out if layout_only(
        input_binary.code_bytes(lo, hi - lo), machine, input_binary.code_bytes(lo - 14, 14))]


def _joined(runs: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Sorted runs, each joined to the one before it where the two are one stretch of code:
    the input bytes follow on, their output follows on with nothing BOLT inserted between,
    and no other run starts there too (duplicated code). Every look-up answers the same, and
    a range over many blocks BOLT kept in order meets one run, not one per block: a BOLTed
    sqlite3 has 48,589 runs, 15,535 once joined, and its location lists cross them by the
    thousand (docs/benchmarks.md: bench/debuginfo.py --realworld)."""
    out: list[tuple[int, int, int, int]] = []
    n = len(runs)
    for k, run in enumerate(runs):
        if out:
            lo, hi, start, tail = out[-1]
            if run[0] == hi and run[2] == tail == start + hi - lo and \
                    (k + 1 == n or runs[k + 1][0] != run[0]):
                out[-1] = (lo, run[1], start, run[3])
                continue
        out.append(run)
    return out


def merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Ranges by address, overlapping and touching ones joined."""
    if len(ranges) < 2:
        return ranges
    ranges.sort()
    out: list[tuple[int, int]] = []
    for start, end in ranges:
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def _function_runs(index: bat_translate.BatIndex, hot: int, address: int, size: int,
                   runs: list[tuple[int, int, int, int]]) -> None:
    """The runs of the input function at `address` (`size` bytes) whose main fragment BOLT
    put at `hot`."""
    frags = index.fragments_at(hot, keep=False)
    maps = [index.table.maps[f.start] for f in frags]
    bounds = sorted({int(v) >> 1 for m in maps for v in m.input_values} | ({size} if size
                                                                          else set()))
    for frag, m in zip(frags, maps, strict=True):
        frag_size = frag.end - frag.start
        outs, values, n = m.output_offsets, m.input_values, len(m)
        for i in range(n):
            o = int(outs[i])
            if o >= frag_size or (i + 1 < n and outs[i + 1] == o):
                continue  # a deleted block (keyed at the end), or not the anchor of its key
            following = min(int(outs[i + 1]), frag_size) if i + 1 < n else frag_size
            lo = int(values[i]) >> 1
            k = bisect_right(bounds, lo)
            length = following - o
            if k < len(bounds):
                length = min(length, bounds[k] - lo)
            if length > 0:
                runs.append((address + lo, address + lo + length, frag.start + o,
                             frag.start + following))
