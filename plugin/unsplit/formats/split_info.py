"""`.split_info`: where the moved pieces of split procedures went
(shared/specs/split-info-and-esl.md §1), mirroring the OM proposal's consumer API:
:func:`sp_init`, :func:`sp_size`, :func:`sp_ranges`, :meth:`SplitProcedure.address_of` /
:meth:`SplitProcedure.logical_offset`. Pure: bytes in, frozen records out; :func:`encode` is
the inverse."""

from __future__ import annotations

import bisect
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from unsplit.errors import DecodeError, UnsupportedVersion
from unsplit.formats import section_ids

SECTION = section_ids.SPLIT_INFO_SECTION
MAGIC = 0x54494C53  # "SLIT" read as a little-endian u32
VERSION = 1

_HEADER = struct.Struct("<IHHII")  # magic, version, reserved, count, reserved (§1)
_RECORD = struct.Struct("<QQII")  # branch_addr, vaddr, size, branch_size
HEADER_SIZE = _HEADER.size
RECORD_SIZE = _RECORD.size


@dataclass(frozen=True, slots=True)
class SplitRecord:
    """One moved piece: the branch left behind, where the code went and how much moved."""

    branch_addr: int
    vaddr: int
    size: int
    branch_size: int
    # Where the record sits in the section, so later checks can name the offending bytes.
    offset: int = field(default=0, compare=False)

    @property
    def branch_end(self) -> int:
        return self.branch_addr + self.branch_size

    @property
    def moved_end(self) -> int:
        return self.vaddr + self.size


@dataclass(frozen=True, slots=True)
class Range:
    """[start, end) of code, beginning at `logical_start` in the unsplit procedure."""

    start: int
    end: int
    logical_start: int

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def logical_end(self) -> int:
        return self.logical_start + self.size


@dataclass(frozen=True, slots=True)
class SplitProcedure:
    """A split procedure: its symbol, its records and its logical layout (§1)."""

    name: str
    start: int
    end: int
    records: tuple[SplitRecord, ...]
    ranges: tuple[Range, ...]
    # (branch_addr, branch_end, logical offset of the moved code), sorted: an address inside
    # a branch stands for the moved code it jumps to.
    branches: tuple[tuple[int, int, int], ...] = ()

    @property
    def size(self) -> int:
        return sum(r.size for r in self.ranges)

    def address_of(self, logical_offset: int) -> int | None:
        """The one address holding `logical_offset`, or None outside [0, size)."""
        starts = [r.logical_start for r in self.ranges]
        i = bisect.bisect_right(starts, logical_offset) - 1
        if i < 0 or logical_offset < 0:
            return None
        r = self.ranges[i]
        if logical_offset >= r.logical_end:
            return None
        return r.start + logical_offset - r.logical_start

    def logical_offset(self, address: int) -> int | None:
        """Logical offset of `address`; a branch's bytes map to the moved code's first byte."""
        for r in self.ranges:
            if r.start <= address < r.end:
                return r.logical_start + address - r.start
        for lo, hi, logical in self.branches:
            if lo <= address < hi:
                return logical
        return None

    def contains(self, address: int) -> bool:
        return self.logical_offset(address) is not None


# --- the section ------------------------------------------------------------------------------


def decode(data: bytes, section: str = SECTION) -> tuple[SplitRecord, ...]:
    """Records of a `.split_info` section, sorted by (branch_addr, vaddr)."""
    if len(data) < HEADER_SIZE:
        raise DecodeError(section, 0, f"truncated header: {len(data)} bytes, expected 16")
    magic, version, _res0, count, _res1 = _HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise DecodeError(section, 0, f"bad magic {magic:#010x}, expected {MAGIC:#010x} (SLIT)")
    if version != VERSION:
        raise UnsupportedVersion(section, 4, f"version {version}, this reader knows {VERSION}")
    room = (len(data) - HEADER_SIZE) // RECORD_SIZE
    if count > room:
        raise DecodeError(
            section, 8, f"count {count} larger than the section holds ({room} records)"
        )
    records = []
    for i in range(count):
        offset = HEADER_SIZE + i * RECORD_SIZE
        branch_addr, vaddr, size, branch_size = _RECORD.unpack_from(data, offset)
        records.append(SplitRecord(branch_addr, vaddr, size, branch_size, offset))
    # Producers must sort; sorting again costs nothing and spares every consumer the check.
    records.sort(key=lambda r: (r.branch_addr, r.vaddr))
    return tuple(records)


def encode(records: Iterable[SplitRecord]) -> bytes:
    """The `.split_info` section holding `records` (sorted as §1 requires)."""
    ordered = sorted(records, key=lambda r: (r.branch_addr, r.vaddr))
    out = bytearray(_HEADER.pack(MAGIC, VERSION, 0, len(ordered), 0))
    for r in ordered:
        out += _RECORD.pack(r.branch_addr, r.vaddr, r.size, r.branch_size)
    return bytes(out)


# --- the logical layout -----------------------------------------------------------------------


def sp_init(
    records: Sequence[SplitRecord],
    functions: Iterable[tuple[str, int, int]],
    section: str = SECTION,
) -> list[SplitProcedure]:
    """Every split procedure, ordered by entry address (the proposal's sp_init).

    `functions` are (name, start, size) of the STT_FUNC symbols. A record belongs to the
    procedure whose symbol contains its branch, unless the branch lies in code another record
    moved: then it is a nested move and belongs to that record's procedure.
    """
    _check_overlaps(records, section)
    funcs = sorted({(s, s + n, name) for name, s, n in functions if n > 0})
    # Largest last among equal starts, so an empty record never hides a real one.
    moved = sorted(records, key=lambda r: (r.vaddr, r.size))
    moved_starts = [r.vaddr for r in moved]

    def container(r: SplitRecord) -> SplitRecord | None:
        i = bisect.bisect_right(moved_starts, r.branch_addr) - 1
        if i >= 0 and moved[i].vaddr <= r.branch_addr < moved[i].moved_end:
            return moved[i]
        return None

    owner: dict[SplitRecord, tuple[int, int, str]] = {}
    for r in records:
        # Walk up through the moved ranges holding each branch; every record on the way gets
        # the same owner, so the whole walk is linear in the number of records.
        path = [r]
        on_path = {r}
        top = r
        func = None
        while (parent := container(top)) is not None:
            if parent in owner:
                func = owner[parent]
                break
            if parent in on_path:
                raise DecodeError(
                    section, r.offset, f"moved ranges form a cycle through {r.branch_addr:#x}"
                )
            path.append(parent)
            on_path.add(parent)
            top = parent
        if func is None:
            func = _function_at(funcs, top.branch_addr)
        if func is None:
            raise DecodeError(
                section, top.offset, f"branch_addr {top.branch_addr:#x} is in no procedure"
            )
        for q in path:
            owner[q] = func

    by_func: dict[tuple[int, int, str], list[SplitRecord]] = {}
    for r in records:
        by_func.setdefault(owner[r], []).append(r)
    out = []
    for (start, end, name), recs in sorted(by_func.items()):
        for r in recs:
            if start < r.moved_end and r.vaddr < end:
                raise DecodeError(
                    section,
                    r.offset,
                    f"moved range [{r.vaddr:#x}, {r.moved_end:#x}) overlaps its own "
                    f"procedure {name} [{start:#x}, {end:#x})",
                )
        out.append(_layout(name, start, end, recs))
    return out


def sp_size(proc: SplitProcedure) -> int:
    """Logical size: the sum of the sizes of the procedure's ranges."""
    return proc.size


def sp_ranges(proc: SplitProcedure) -> tuple[Range, ...]:
    """Code ranges in original order (nested moves expanded, empty ranges dropped)."""
    return proc.ranges


def layout(name: str, start: int, end: int, records: Sequence[SplitRecord]) -> SplitProcedure:
    """The SplitProcedure of [start, end) with `records` (all owned by it, already checked)."""
    return _layout(name, start, end, list(records))


def _function_at(
    funcs: Sequence[tuple[int, int, str]], address: int
) -> tuple[int, int, str] | None:
    # Symbols may nest or alias; the innermost (latest start) one that contains it wins.
    i = bisect.bisect_right(funcs, (address, 1 << 65, "")) - 1
    while i >= 0:
        if funcs[i][0] <= address < funcs[i][1]:
            return funcs[i]
        if address - funcs[i][0] > 1 << 32:  # no symbol is that big: stop scanning back
            break
        i -= 1
    return None


def _check_overlaps(records: Sequence[SplitRecord], section: str) -> None:
    """Moved ranges must be disjoint, and so must branches (§1 malformed input)."""
    moved = [(r.vaddr, r.moved_end, r) for r in records]
    branches = [(r.branch_addr, r.branch_end, r) for r in records]
    for what, spans in (("moved range", moved), ("branch", branches)):
        spans.sort(key=lambda t: (t[0], t[1]))
        prev_end, prev = -1, None
        for lo, hi, r in spans:
            if hi == lo:
                continue
            if prev is not None and lo < prev_end:
                raise DecodeError(
                    section,
                    r.offset,
                    f"{what} [{lo:#x}, {hi:#x}) overlaps the one of the record at "
                    f"offset {prev.offset:#x}",
                )
            if hi > prev_end:
                prev_end, prev = hi, r


def _layout(name: str, start: int, end: int, records: list[SplitRecord]) -> SplitProcedure:
    ranges: list[Range] = []
    branches: list[tuple[int, int, int]] = []
    logical = 0

    def emit(lo: int, hi: int) -> None:
        nonlocal logical
        if hi > lo:  # empty ranges are dropped (§1)
            ranges.append(Range(lo, hi, logical))
            logical += hi - lo

    by_branch = sorted(records, key=lambda r: r.branch_addr)
    keys = [r.branch_addr for r in by_branch]

    def inside(lo: int, hi: int) -> list[SplitRecord]:
        return by_branch[bisect.bisect_left(keys, lo) : bisect.bisect_left(keys, hi)]

    # Depth-first expansion with an explicit stack: the nesting depth comes from the file, and
    # a crafted one must not exhaust Python's recursion limit. Frame: [records, next, cur, hi].
    stack: list[list[Any]] = [[inside(start, end), 0, start, end]]
    while stack:
        frame = stack[-1]
        kids, i, cur, hi = frame
        if i == len(kids):
            emit(cur, hi)
            stack.pop()
            continue
        r = kids[i]
        emit(cur, r.branch_addr)
        branches.append((r.branch_addr, r.branch_end, logical))
        frame[1], frame[2] = i + 1, max(cur, r.branch_end)
        stack.append([inside(r.vaddr, r.moved_end), 0, r.vaddr, r.moved_end])
    branches.sort()
    return SplitProcedure(
        name,
        start,
        end,
        tuple(sorted(records, key=lambda r: (r.branch_addr, r.vaddr))),
        tuple(ranges),
        tuple(b for b in branches if b[1] > b[0]),
    )
