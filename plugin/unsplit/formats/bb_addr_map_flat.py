"""A fast reader of whole ``SHT_LLVM_BB_ADDR_MAP`` sections as LLVM 22 reads them (the strict mode
of :mod:`unsplit.formats.bb_addr_map`), for dumps of every block (``unsplit bbmap --json``):
columns of plain ints (:class:`FlatFunction`); whatever it does not take for certain goes to the
strict reader from the record's start, so errors are that reader's own
(tests/unit/formats/test_bb_addr_map_flat.py; bench/bbmap.py measures the gain)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import add, sub

from unsplit.errors import DecodeError
from unsplit.formats import bb_addr_map as fmt
from unsplit.formats.bb_addr_map import (
    BBFREQ_BIT,
    BRPROB_BIT,
    CALLSITES_BIT,
    FEC_BIT,
    HASH_BIT,
    KNOWN_METADATA,
    MIN_VERSION,
    MULTI_BIT,
    OMIT_BIT,
    PGO_BITS,
    POSTLINK_BIT,
    SHT_LLVM_BB_ADDR_MAP,
    SHT_LLVM_BB_ADDR_MAP_V0,
    U32,
    U64,
    ByteOrder,
)


@dataclass(frozen=True, slots=True)
class FlatRange:
    """One range; the columns hold one value per block (empty with OmitBBEntries): lists, or
    for the usual range the section's own bytes (one-byte numbers are their own value)."""

    base_address: int
    num_blocks: int
    ids: Sequence[int]
    offsets: list[int]  # absolute, from the base address
    sizes: Sequence[int]
    metadata: Sequence[int]
    callsites: list[list[int]] | None = None  # with CallsiteOffsets: absolute, per block
    hashes: list[int] | None = None  # with BBHash


@dataclass(frozen=True, slots=True)
class FlatPGO:
    """PGO data in block order (all ranges): None where the feature bit is off."""

    func_entry_count: int | None
    frequencies: list[int] | None
    post_link_frequencies: list[int] | None
    # per block: flat (id, probability[, post-link]) triples/pairs; with BrProb only
    successors: list[Sequence[int]] | None


@dataclass(frozen=True, slots=True)
class FlatFunction:
    version: int
    features: int
    ranges: tuple[FlatRange, ...]
    pgo: FlatPGO | None
    offset: int  # of the record in the section

    @property
    def address(self) -> int:
        return self.ranges[0].base_address if self.ranges else 0


_NO_SUCCESSORS: tuple[int, ...] = ()
_NEWER = 0x20 | 0x40 | 0x80  # the feature bits that need a version above 2 (MIN_VERSION)


class _Slow(Exception):
    """Internal: the fast path leaves this record to the strict reader."""


def iter_functions(
    data: bytes,
    section: str = fmt.SECTION,
    *,
    sh_type: int = SHT_LLVM_BB_ADDR_MAP,
    address_size: int = 8,
    little_endian: bool = True,
    relocations: Mapping[int, int] | None = None,
) -> Iterator[FlatFunction]:
    """fmt.iter_records(strict=True), as columns: the same records, values and DecodeErrors."""
    if sh_type not in (SHT_LLVM_BB_ADDR_MAP, SHT_LLVM_BB_ADDR_MAP_V0) or \
            address_size not in (4, 8):
        next(fmt.iter_records(data, section, sh_type=sh_type, address_size=address_size,
                              strict=True), None)  # raises the strict reader's error
        return
    if sh_type == SHT_LLVM_BB_ADDR_MAP_V0:
        return  # LLVM 22 skips V0 sections (strict mode, §9.2)
    data = bytes(data)
    reader = _Fast(data, address_size, "little" if little_endian else "big", relocations)
    pos = 0
    while pos < len(data):
        try:
            function, end = reader.function(pos)
        except _Slow:
            function, end = _strict(data, section, pos, address_size, little_endian,
                                    relocations)
        yield function
        pos = end


def _strict(data: bytes, section: str, pos: int, address_size: int, little_endian: bool,
            relocations: Mapping[int, int] | None) -> tuple[FlatFunction, int]:
    """One record through the strict reader (raises its DecodeError), as columns."""
    reader = fmt._Reader(data, section, address_size, little_endian, relocations, True)
    reader.pos = pos
    fm = reader.function(True)
    return flatten(fm), reader.pos


def flatten(fm: fmt.FunctionMap) -> FlatFunction:
    """A strict reader's FunctionMap as columns."""
    ranges = tuple(FlatRange(
        r.base_address, r.num_blocks, [e.id for e in r.entries], [e.offset for e in r.entries],
        [e.size for e in r.entries], [e.metadata for e in r.entries],
        [list(e.callsite_offsets) for e in r.entries] if fm.features & CALLSITES_BIT else None,
        [e.hash or 0 for e in r.entries] if fm.features & HASH_BIT else None)
        for r in fm.ranges)
    pgo = None
    if fm.pgo is not None:
        blocks = fm.pgo.blocks
        freq_on = bool(fm.features & BBFREQ_BIT)
        post_link = bool(fm.features & POSTLINK_BIT)
        succs: list[Sequence[int]] | None = None
        if fm.features & BRPROB_BIT:
            succs = []
            for b in blocks:
                flat: list[int] = []
                for s in b.successors or ():
                    flat += [s.id, s.probability] + ([s.post_link_frequency or 0]
                                                     if post_link else [])
                succs.append(flat)
        tables = fm.features & (BBFREQ_BIT | BRPROB_BIT)
        pgo = FlatPGO(fm.pgo.func_entry_count,
                      [b.frequency or 0 for b in blocks] if freq_on else None,
                      [b.post_link_frequency or 0 for b in blocks]
                      if post_link and tables else None,
                      succs)
    assert fm.version is not None
    return FlatFunction(fm.version, fm.features, ranges, pgo, fm.offset)


class _Fast:
    """The usual case of one record, or _Slow (which hands the record to the strict reader,
    which words what is wrong). Reads are checked without a test per byte: the data is
    followed by _GUARD zero bytes, which no loop of one block or one successor reads past,
    and each such loop starts by checking that it is still before `end` (the data's)."""

    __slots__ = ("addr_size", "data", "end", "order", "relocs")

    def __init__(self, data: bytes, address_size: int, order: ByteOrder,
                 relocations: Mapping[int, int] | None) -> None:
        self.data = data + bytes(_GUARD)
        self.end = len(data)
        self.addr_size = address_size
        self.order = order
        self.relocs = relocations

    def function(self, start: int) -> tuple[FlatFunction, int]:
        data = self.data
        version = data[start]
        if not 2 <= version <= 5:
            raise _Slow
        pos = start + 1
        if version >= 5:
            feature = int.from_bytes(data[pos:pos + 2], self.order)
            pos += 2
        else:
            feature = data[pos]
            pos += 1
        if feature & ~0xFF or (feature & _NEWER and any(
                feature & bit and version < v for bit, v, _ in MIN_VERSION)):
            raise _Slow
        num_ranges = 1
        if feature & MULTI_BIT:
            num_ranges, pos = _uleb(data, pos, U32)
            if num_ranges == 0:
                raise _Slow
        ranges = []
        for _ in range(num_ranges):
            if pos > self.end:
                raise _Slow
            rng, pos = self.bb_range(pos, feature)
            ranges.append(rng)
        pgo = None
        if feature & PGO_BITS:
            pgo, pos = self.pgo(pos, feature, sum(len(r.ids) for r in ranges))
        if pos > self.end:
            raise _Slow
        return FlatFunction(version, feature, tuple(ranges), pgo, start), pos

    def bb_range(self, pos: int, feature: int) -> tuple[FlatRange, int]:
        data = self.data
        at = pos
        end = pos + self.addr_size
        if end > self.end:
            raise _Slow
        base = int.from_bytes(data[pos:end], self.order)
        if self.relocs is not None:
            addend = self.relocs.get(at)
            if addend is None:
                raise _Slow
            base = addend & ((1 << (8 * self.addr_size)) - 1)
        num_blocks, pos = _uleb(data, end, U32)
        if feature & OMIT_BIT:
            return FlatRange(base, num_blocks, [], [], [], [],
                             [] if feature & CALLSITES_BIT else None,
                             [] if feature & HASH_BIT else None), pos
        if feature & (CALLSITES_BIT | HASH_BIT):
            return self.rich_entries(pos, base, num_blocks, feature)
        # The usual range: four one-byte numbers per block, known metadata bits. Read as
        # byte columns; the offset field is the gap after the previous block (§3.3).
        stop = pos + 4 * num_blocks
        chunk = data[pos:stop]
        if stop <= self.end and (not chunk or max(chunk) < 0x80) and \
                (not chunk or max(chunk[3::4]) <= KNOWN_METADATA):
            block_sizes = chunk[2::4]
            ends = list(accumulate(map(add, chunk[1::4], block_sizes)))
            if ends and ends[-1] > U32:
                raise _Slow  # uint32 wrap-around: the strict reader's arithmetic
            return FlatRange(base, num_blocks, chunk[0::4], list(map(sub, ends, block_sizes)),
                             block_sizes, chunk[3::4]), stop
        ids: list[int] = []
        offsets: list[int] = []
        sizes: list[int] = []
        mds: list[int] = []
        prev_end = 0
        last_quick = self.end - 4
        for _ in range(num_blocks):
            if pos > self.end:
                raise _Slow
            if pos <= last_quick:  # the usual block: four one-byte numbers, known bits
                bid, gap, size, md = data[pos], data[pos + 1], data[pos + 2], data[pos + 3]
                if (bid | gap | size) < 0x80 and md <= KNOWN_METADATA:
                    pos += 4
                    offset = gap + prev_end
                    prev_end = (offset + size) & U32
                    ids.append(bid)
                    offsets.append(offset & U32)
                    sizes.append(size)
                    mds.append(md)
                    continue
            bid = data[pos]
            if bid < 0x80:
                pos += 1
            else:
                bid, pos = _uleb(data, pos, U32)
            gap = data[pos]
            if gap < 0x80:
                pos += 1
            else:
                gap, pos = _uleb(data, pos, U32)
            size = data[pos]
            if size < 0x80:
                pos += 1
            else:
                size, pos = _uleb(data, pos, U32)
            md = data[pos]
            if md > KNOWN_METADATA:  # unknown bits, or a longer number: strict reader
                raise _Slow
            pos += 1
            offset = (gap + prev_end) & U32
            prev_end = (offset + size) & U32
            ids.append(bid)
            offsets.append(offset)
            sizes.append(size)
            mds.append(md)
        return FlatRange(base, num_blocks, ids, offsets, sizes, mds), pos

    def rich_entries(self, pos: int, base: int, num_blocks: int,
                     feature: int) -> tuple[FlatRange, int]:
        """Blocks with call-site offsets and/or hashes."""
        data = self.data
        callsites_on = bool(feature & CALLSITES_BIT)
        hashed = bool(feature & HASH_BIT)
        ids: list[int] = []
        offsets: list[int] = []
        sizes: list[int] = []
        mds: list[int] = []
        callsites: list[list[int]] | None = [] if callsites_on else None
        hashes: list[int] | None = [] if hashed else None
        prev_end = 0
        for _ in range(num_blocks):
            if pos > self.end:
                raise _Slow
            bid, pos = _uleb(data, pos, U32)
            gap, pos = _uleb(data, pos, U32)
            last = 0
            if callsites is not None:
                n, pos = _uleb(data, pos, U32)
                cs = []
                for _ in range(n):
                    if pos > self.end:
                        raise _Slow
                    delta, pos = _uleb(data, pos, U32)
                    last = (last + delta) & U32
                    cs.append(last)
                callsites.append(cs)
            size, pos = _uleb(data, pos, U32)
            size = (size + last) & U32
            md, pos = _uleb(data, pos, U32)
            if md & ~KNOWN_METADATA:
                raise _Slow
            if hashes is not None:
                if pos + 8 > self.end:
                    raise _Slow
                hashes.append(int.from_bytes(data[pos:pos + 8], self.order))
                pos += 8
            offset = (gap + prev_end) & U32
            prev_end = (offset + size) & U32
            ids.append(bid)
            offsets.append(offset)
            sizes.append(size)
            mds.append(md)
        return FlatRange(base, num_blocks, ids, offsets, sizes, mds, callsites, hashes), pos

    def pgo(self, pos: int, feature: int, total_blocks: int) -> tuple[FlatPGO, int]:
        data = self.data
        entry_count = None
        if feature & FEC_BIT:
            entry_count, pos = _uleb(data, pos, U64)
        freqs: list[int] | None = None
        post: list[int] | None = None
        succs: list[Sequence[int]] | None = None
        if feature & (BBFREQ_BIT | BRPROB_BIT | POSTLINK_BIT) == BBFREQ_BIT | BRPROB_BIT:
            freqs, succs, pos = self.frequencies_and_successors(pos, total_blocks)
        elif feature & (BBFREQ_BIT | BRPROB_BIT):
            freq_on = bool(feature & BBFREQ_BIT)
            prob_on = bool(feature & BRPROB_BIT)
            post_link = bool(feature & POSTLINK_BIT)
            freqs = [] if freq_on else None
            post = [] if post_link else None
            succs = [] if prob_on else None
            for _ in range(total_blocks):
                if pos > self.end:
                    raise _Slow
                if freqs is not None:
                    value = data[pos]
                    if value < 0x80:
                        pos += 1
                    else:
                        value, pos = _uleb(data, pos, U64)
                    freqs.append(value)
                if post is not None:
                    value, pos = _uleb(data, pos, U32)
                    post.append(value)
                if succs is not None:
                    n = data[pos]
                    if n < 0x80:
                        pos += 1
                    else:
                        n, pos = _uleb(data, pos, U64)
                    flat = []
                    for _ in range(n):
                        if pos > self.end:
                            raise _Slow
                        b = data[pos]
                        if b < 0x80:
                            flat.append(b)
                            pos += 1
                        else:
                            sid, pos = _uleb(data, pos, U32)
                            flat.append(sid)
                        prob = data[pos]
                        if prob < 0x80:
                            pos += 1
                        else:
                            prob, pos = _uleb(data, pos, U32)
                        flat.append(prob)
                        if post_link:
                            value, pos = _uleb(data, pos, U32)
                            flat.append(value)
                    succs.append(flat)
        return FlatPGO(entry_count, freqs, post, succs), pos

    def frequencies_and_successors(self, pos: int, total_blocks: int
                                   ) -> tuple[list[int], list[Sequence[int]], int]:
        """pgo()'s loop for the usual layout (BBFreq and BrProb, no PostLinkCfg)."""
        data = self.data
        freqs: list[int] = []
        succs: list[Sequence[int]] = []
        add_freq = freqs.append
        add_succs = succs.append
        end = self.end
        for _ in range(total_blocks):
            if pos > end:
                raise _Slow
            value = data[pos]
            if value < 0x80:
                pos += 1
            else:
                value, pos = _uleb(data, pos, U64)
            add_freq(value)
            n = data[pos]
            if n == 0:
                pos += 1
                add_succs(_NO_SUCCESSORS)
                continue
            if n < 0x80:
                pos += 1
            else:
                n, pos = _uleb(data, pos, U64)
            flat: list[int] = []
            for _ in range(n):
                if pos > end:
                    raise _Slow
                sid = data[pos]
                if sid < 0x80:
                    pos += 1
                else:
                    sid, pos = _uleb(data, pos, U32)
                prob = data[pos]
                if prob < 0x80:
                    pos += 1
                else:
                    prob, pos = _uleb(data, pos, U32)
                flat += (sid, prob)
            add_succs(flat)
        return freqs, succs, pos


# Zero bytes after the data: the most one block's or one successor's fields take (four
# ULEB128s of at most ten bytes each, and a hash), so a loop checked before each reads no further.
_GUARD = 64


def _uleb(data: bytes, pos: int, limit: int) -> tuple[int, int]:
    """(value, end) of a ULEB128 within `limit`; anything else (too big, too long) is the
    strict reader's to word. Unrolled to five bytes (every uint32); at most ten read."""
    b0 = data[pos]
    if b0 < 0x80:
        return b0, pos + 1
    b1 = data[pos + 1]
    if b1 < 0x80:
        return (b0 & 0x7F) | b1 << 7, pos + 2
    b2 = data[pos + 2]
    if b2 < 0x80:
        return (b0 & 0x7F) | (b1 & 0x7F) << 7 | b2 << 14, pos + 3
    b3 = data[pos + 3]
    if b3 < 0x80:
        return (b0 & 0x7F) | (b1 & 0x7F) << 7 | (b2 & 0x7F) << 14 | b3 << 21, pos + 4
    value = (b0 & 0x7F) | (b1 & 0x7F) << 7 | (b2 & 0x7F) << 14 | (b3 & 0x7F) << 21
    shift = 28
    p = pos + 4
    while True:
        b = data[p]
        p += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 63:
            raise _Slow
    if value > limit:
        raise _Slow
    return value, p


__all__ = ["DecodeError", "FlatFunction", "FlatPGO", "FlatRange", "flatten", "iter_functions"]
