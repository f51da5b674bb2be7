"""A fast first pass over a current-format (LLVM 19-22) BAT descriptor (``shared/specs/bolt-bat.md``
§2.2, §2.4): where each map is, its entries decoded by :func:`unsplit.formats.bat.decode_current`
only when asked (:class:`LazyMaps`). Kept beside the full decoder because bench/libllvm.py says
so; anything unusual sends the whole descriptor to the full decoder, so the two never disagree
on what is malformed (tests/unit/formats/test_bat_scan.py)."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping
from operator import itemgetter
from typing import Any, NamedTuple

from unsplit.errors import DecodeError
from unsplit.formats import bat
from unsplit.formats.leb128 import leb128

_M64 = (1 << 64) - 1
_M32 = (1 << 32) - 1


class BatScan:
    """Every map of a descriptor in table order (the hot table's records, then the cold one's).

    ``offsets`` has one more item than the maps: the descriptor's end. ``cursors[k]`` is the
    output-address cursor and ``hot_indices[k]`` the HotIndex before record ``k`` (the
    decoder's state, spec §2.2); ``parents[k]`` the main fragment's address (itself when hot).
    """

    __slots__ = ("_lookup", "addresses", "cursors", "hot_count", "hot_indices", "offsets",
                 "parents")

    def __init__(self, addresses: array[int], offsets: array[int], cursors: array[int],
                 hot_indices: array[int], parents: array[int], hot_count: int) -> None:
        self.addresses, self.offsets, self.cursors = addresses, offsets, cursors
        self.hot_indices, self.parents, self.hot_count = hot_indices, parents, hot_count
        # The lookup columns (by address; split fragments by parent), derived once and kept
        # with the scan in the persistent index: sorting 200k maps is a third of a first build.
        self._lookup: list[Lookup] = []

    def __len__(self) -> int:
        return len(self.addresses)

    def lookup(self) -> Lookup:
        if not self._lookup:
            self._lookup.append(Lookup.of(self))
        return self._lookup[0]

    def with_lookup(self, lookup: Lookup) -> BatScan:
        self._lookup[:] = [lookup]
        return self


class Lookup(NamedTuple):
    """A scan's maps by address (``order``: their table positions; ``addresses``, ``parents``)
    and its split fragments by (parent, address): the columns of a BatTable."""

    order: array[int]
    addresses: array[int]
    parents: array[int]
    child_parents: array[int]
    child_addresses: array[int]

    @classmethod
    def of(cls, scan: BatScan) -> Lookup:
        addresses = scan.addresses
        order = array("Q", sorted(range(len(addresses)), key=addresses.__getitem__))
        parents = scan.parents
        children = sorted((parents[k], addresses[k]) for k in range(scan.hot_count, len(scan)))
        return cls(order, array("Q", (addresses[k] for k in order)),
                   array("Q", (parents[k] for k in order)),
                   array("Q", (p for p, _ in children)), array("Q", (a for _, a in children)))


class _Unusual(Exception):
    """Not for the fast pass: the full decoder decides."""


def scan(desc: bytes, base: int = 0, section: str = bat.SECTION,
         scanned: BatScan | None = None) -> BatScan | bat.BatTable:
    """A BatScan of ``desc``; a BatTable when the full decoder had to read it (see module doc).
    ``scanned``: what :func:`scan_only` gave for ``desc`` elsewhere (another process).

    Raises DecodeError exactly where :func:`unsplit.formats.bat.decode_current` would.
    """
    found = scan_only(desc) if scanned is None else scanned
    if found is None or len(set(found.addresses)) != len(found.addresses):
        return bat.decode_current(desc, base, section)  # its error names the record
    return found


def scan_only(desc: bytes) -> BatScan | None:
    """The fast pass alone: None where the full decoder must read ``desc``."""
    try:
        return _scan(desc)
    except _Unusual:
        return None


def _uleb(d: bytes, pos: int) -> tuple[int, int]:
    if pos >= len(d):
        raise _Unusual
    c = d[pos]
    if c < 0x80:
        return c, pos + 1
    value, pos = leb128(d, pos, "", False, 64)
    return value, pos


def _long_uleb(d: bytes, pos: int, first: int) -> tuple[int, int]:
    """The rest of a ULEB128 whose first byte ``first`` (>= 0x80) ended at ``pos``."""
    value, shift = first & 0x7F, 7
    while True:
        if pos >= len(d):
            raise _Unusual
        c = d[pos]
        pos += 1
        value |= (c & 0x7F) << shift
        if c < 0x80:
            break
        shift += 7
    if shift > 56:  # ten bytes or more: whether it fits in 64 bits is the full decoder's call
        raise _Unusual
    return value, pos


def _skip_leb(d: bytes, pos: int, signed: bool) -> int:
    """Past the rest of a LEB128 whose first byte was >= 0x80 (at ``pos - 1``). Ten-byte
    ones are common (a block-index delta that goes back wraps around 2**64) and are checked
    as the full decoder checks them."""
    start, end = pos, len(d)
    while pos < end and d[pos] >= 0x80:
        pos += 1
    if pos >= end:
        raise _Unusual
    if pos - start >= 8:
        _, end = leb128(d, start - 1, "", signed, 64)
        return end
    return pos + 1


def _scan(d: bytes) -> BatScan:
    end = len(d)
    addresses, offsets, cursors, hot_indices = array("Q"), array("Q"), array("Q"), array("Q")
    parents = array("Q")
    prev = 0
    pos = 0
    hot_count = 0
    try:
        for kind in (0, 1):
            count, pos = _uleb(d, pos)
            if count > end - pos:
                raise _Unusual
            hot_index = 0
            for _ in range(count):
                offsets.append(pos)
                cursors.append(prev)
                hot_indices.append(hot_index)
                # one-byte LEB128s read in place (most of the header's), others by _uleb
                c = d[pos] if pos < end else 0x80
                if c < 0x80:
                    delta = c
                    pos += 1
                else:
                    delta, pos = _uleb(d, pos)
                address = (prev + delta) & _M64
                addresses.append(address)
                n_sec = 0
                if kind == 0:
                    pos += 8  # function hash
                    if pos + 1 < end and d[pos] < 0x80 and d[pos + 1] < 0x80:
                        n_sec = d[pos + 1]
                        pos += 2
                    else:
                        _, pos = _uleb(d, pos)  # block count
                        n_sec, pos = _uleb(d, pos)
                    if n_sec > end - pos:
                        raise _Unusual
                    parents.append(address)
                else:
                    delta, pos = _uleb(d, pos)
                    hot_index = (hot_index + delta) & _M64
                    if hot_index >= hot_count:
                        raise _Unusual
                    parents.append(addresses[hot_index])
                    if pos < end and d[pos] < 0x80:
                        pos += 1
                    else:
                        _, pos = _uleb(d, pos)  # cold input skew
                if pos + 1 < end and d[pos] < 0x80 and d[pos + 1] < 0x80:
                    n, eq = d[pos], d[pos + 1]
                    pos += 2
                else:
                    n, pos = _uleb(d, pos)
                    eq, pos = _uleb(d, pos)
                if n > end - pos or eq > n:
                    raise _Unusual
                mask_bytes = (eq + 7) // 8
                if pos + mask_bytes + _MOST_PER_ENTRY * n <= end:
                    total, pos = _entries(d, pos, n, eq, mask_bytes)
                else:  # near the end: every read checked
                    total, pos = _entries_checked(d, pos, n, eq, mask_bytes)
                if total > _M32:
                    raise _Unusual
                prev = (address + total) & _M64
                for _ in range(n_sec):
                    _, pos = _uleb(d, pos)
                if pos > end:
                    raise _Unusual
            if kind == 0:
                hot_count = count
    except DecodeError:
        raise _Unusual from None
    if pos != end:
        raise _Unusual
    offsets.append(pos)
    return BatScan(addresses, offsets, cursors, hot_indices, parents, hot_count)


# An entry's most bytes: an output delta, an input delta and a block index of ten bytes each
# (_long_uleb and _skip_leb refuse longer ones) and a hash. A map whose entries, this long,
# would still end inside the descriptor is walked without a bound check per read.
_MOST_PER_ENTRY = 10 + 10 + 8 + 10

_BITS = [bytes((m >> j) & 1 for j in range(8)) for m in range(256)]  # a mask byte's bits


def _group(mask: int) -> tuple[int, itemgetter[Any], itemgetter[Any]]:
    """Eight deduplicated entries whose BRANCHENTRY bits are ``mask``'s, every LEB128 of one
    byte: their size, and the places of their output deltas and of all their LEB128s."""
    outs, lebs, size = [], [], 0
    for j in range(8):
        outs.append(size)
        lebs.append(size)
        if (mask >> j) & 1:
            size += 1
        else:  # a block entry: its hash, then its block-index delta
            lebs.append(size + 9)
            size += 10
    return size, itemgetter(*outs), itemgetter(*lebs)


_GROUPS = [_group(m) for m in range(256)]


def _entries(d: bytes, pos: int, n: int, eq: int, mask_bytes: int) -> tuple[int, int]:
    """(the sum of the output deltas, the end) of a map's ``n`` entries whose BranchEntries
    mask (``eq`` deduplicated entries) is at ``pos``; the descriptor holds
    ``_MOST_PER_ENTRY * n`` bytes after the mask (so no read needs a bound check).

    Eight deduplicated entries at a time when their LEB128s are all one byte (their places
    follow from the mask byte alone: one C call gathers them); the rest one at a time, where
    an entry's bytecode costs the same however little it does (docs/benchmarks.md)."""
    total = 0
    acc = 0  # only its low bit matters: BRANCHENTRY
    mask_at = pos
    pos += mask_bytes
    if eq:
        full = eq >> 3
        for m in d[mask_at: mask_at + full]:
            size, outs, lebs = _GROUPS[m]
            chunk = d[pos: pos + size]
            if max(lebs(chunk)) < 0x80:
                total += sum(outs(chunk))
                pos += size
            else:
                total, pos = _deduplicated(d, pos, _BITS[m], total)
        if eq & 7:
            total, pos = _deduplicated(d, pos, _BITS[d[mask_at + full]][: eq & 7], total)
        acc = (d[mask_at + (eq - 1) // 8] >> ((eq - 1) & 7)) & 1
    for _ in range(n - eq):
        c = d[pos]
        if c < 0x80:
            total += c
            pos += 1
        else:
            value, pos = _long_uleb(d, pos + 1, c)
            total += value
        # an SLEB128 whose low bit is its first byte's, whatever its length
        c = d[pos]
        pos += 1
        acc ^= c
        if c >= 0x80:
            pos = _skip_leb(d, pos, True)
        if not acc & 1:  # a block entry: its hash and block-index delta
            pos += 9
            if d[pos - 1] >= 0x80:
                pos = _skip_leb(d, pos, False)
    return total, pos


def _deduplicated(d: bytes, pos: int, bits: bytes, total: int) -> tuple[int, int]:
    """:func:`_entries` of deduplicated entries one at a time (``bits``: their BRANCHENTRY
    bits): (``total`` and their output deltas, their end)."""
    for bit in bits:
        c = d[pos]
        if c < 0x80:
            total += c
            pos += 1
        else:
            value, pos = _long_uleb(d, pos + 1, c)
            total += value
        if not bit:
            pos += 9
            if d[pos - 1] >= 0x80:
                pos = _skip_leb(d, pos, False)
    return total, pos


def _entries_checked(d: bytes, pos: int, n: int, eq: int, mask_bytes: int) -> tuple[int, int]:
    """:func:`_entries` with every read checked against the descriptor's end (the full
    decoder says what is wrong)."""
    end = len(d)
    mask = int.from_bytes(d[pos: pos + mask_bytes], "little") if eq else 0
    pos += mask_bytes
    total = 0  # the output offsets' unwrapped sum: past 2**32 they could wrap
    acc = 0
    for j in range(n):
        if pos >= end:
            raise _Unusual
        c = d[pos]
        pos += 1
        if c < 0x80:
            total += c
        else:
            value, pos = _long_uleb(d, pos, c)
            total += value
        if j < eq:
            acc = (mask >> j) & 1
        else:
            if pos >= end:
                raise _Unusual
            c = d[pos]
            pos += 1
            acc ^= c & 1
            if c >= 0x80:
                pos = _skip_leb(d, pos, True)
        if not acc:
            pos += 9
            if pos > end:
                raise _Unusual
            if d[pos - 1] >= 0x80:
                pos = _skip_leb(d, pos, False)
    return total, pos


class LazyMaps(Mapping[int, bat.BatMap]):
    """The maps of a scanned descriptor by output address, each decoded on first use and kept.

    ``read(offset, size)`` returns descriptor bytes (from memory, or from the file when the
    scan came from the persistent index); ``base`` is the descriptor's offset in the section.
    """

    def __init__(self, scan: BatScan, order: array[int], read: Callable[[int, int], bytes],
                 base: int = 0, section: str = bat.SECTION) -> None:
        self._scan = scan
        self._order = order  # table positions, by ascending address
        self._sorted = scan.lookup().addresses
        self._read = read
        self._base = base
        self._section = section
        self._decoded: dict[int, bat.BatMap] = {}
        self._hot: memoryview | None = None

    @property
    def scan(self) -> BatScan:
        return self._scan

    def __getitem__(self, address: int) -> bat.BatMap:
        m = self._decoded.get(address)
        if m is None:
            i = bisect_left(self._sorted, address)
            if i == len(self._sorted) or self._sorted[i] != address:
                raise KeyError(address)
            m = self._decoded[address] = self._decode(self._order[i])
        return m

    def _decode(self, k: int) -> bat.BatMap:
        s = self._scan
        start, stop = s.offsets[k], s.offsets[k + 1]
        data = self._read(start, stop - start)
        r = bat._Reader(data, self._base + start, self._section)
        kind: bat.Kind = "hot" if k < s.hot_count else "cold"
        if self._hot is None:  # a view, not a copy: 1 MB per decode on libLLVM
            self._hot = memoryview(s.addresses)[: s.hot_count]
        hot = self._hot if kind == "cold" else []
        m, _, _ = bat._decode_function(r, kind, s.cursors[k], s.hot_indices[k], hot)
        # The last hot record is followed by the cold table's count, not by a record.
        exact = r.pos == len(data) or (k + 1 == s.hot_count and r.pos < len(data))
        if not exact or m.address != s.addresses[k]:
            raise DecodeError(self._section, self._base + start,
                              "BAT record changed since it was indexed")
        return m

    def __iter__(self) -> Iterator[int]:
        return iter(self._sorted)

    def __len__(self) -> int:
        return len(self._sorted)

    def __contains__(self, address: object) -> bool:
        if not isinstance(address, int):
            return False
        i = bisect_left(self._sorted, address)
        return i < len(self._sorted) and self._sorted[i] == address


def table(scan: BatScan, read: Callable[[int, int], bytes], base: int = 0,
          section: str = bat.SECTION) -> bat.BatTable:
    """A BatTable over a scan: lookups by arrays, maps decoded on first use."""
    order = scan.lookup().order
    maps = LazyMaps(scan, order, read, base, section)
    return bat.BatTable(bat.CURRENT, maps, scan.addresses[: scan.hot_count], *scan.lookup()[1:])
