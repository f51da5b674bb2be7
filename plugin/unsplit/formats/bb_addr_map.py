"""LLVM basic-block address maps, ``SHT_LLVM_BB_ADDR_MAP_V0`` and ``SHT_LLVM_BB_ADDR_MAP`` v0-v5
(shared/specs/llvm-bb-addr-map.md, after ``llvm/lib/Object/ELF.cpp`` ``decodeBBAddrMapImpl``):
section bytes in, frozen records out. ``strict=True`` reads as LLVM 22 does (the first error
fails the section, in LLVM's words); the default archival mode also reads V0 and versions 0/1
and rejects one bad record where its end can be found. :func:`encode` is the inverse."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import IntFlag
from typing import Literal

from unsplit.errors import DecodeError, UnsupportedVersion
from unsplit.formats import section_ids
from unsplit.formats.leb128 import encode_uleb128

SHT_LLVM_BB_ADDR_MAP_V0 = section_ids.SHT_LLVM_BB_ADDR_MAP_V0
SHT_LLVM_BB_ADDR_MAP = section_ids.SHT_LLVM_BB_ADDR_MAP
SECTION = section_ids.BB_ADDR_MAP_SECTION

U32 = 0xFFFFFFFF
ByteOrder = Literal["little", "big"]
U64 = 0xFFFFFFFFFFFFFFFF
PROBABILITY_ONE = 1 << 31  # BranchProbability's denominator (§7)


class Feature(IntFlag):
    """The feature field (§4): u8 in versions 1–4, u16 from version 5."""

    FUNC_ENTRY_COUNT = 0x01
    BB_FREQ = 0x02
    BR_PROB = 0x04
    MULTI_BB_RANGE = 0x08
    OMIT_BB_ENTRIES = 0x10
    CALLSITE_OFFSETS = 0x20  # "CallsiteEndOffsets" in LLVM 22; begin offsets in LLVM 21
    BB_HASH = 0x40
    POST_LINK_CFG = 0x80


PGO_FEATURES = Feature.FUNC_ENTRY_COUNT | Feature.BB_FREQ | Feature.BR_PROB
_KNOWN_FEATURES = 0xFF

# Plain-int copies of the bits for the decoding loops (this reader's and the fast one's,
# bb_addr_map_flat): IntFlag arithmetic costs an enum construction per operation, which was
# most of the time on a 2 MB map.
FEC_BIT, BBFREQ_BIT, BRPROB_BIT, MULTI_BIT, OMIT_BIT, CALLSITES_BIT, HASH_BIT, POSTLINK_BIT = (
    0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80)
PGO_BITS = FEC_BIT | BBFREQ_BIT | BRPROB_BIT
# Minimum version per feature bit, with the words LLVM uses in its message (§4).
MIN_VERSION = (
    (0x20, 3, "callsite offsets"),
    (0x40, 4, "basic block hash"),
    (0x80, 5, "post link cfg"),
)


class Metadata(IntFlag):
    """Block metadata bits (§5)."""

    HAS_RETURN = 0x01
    HAS_TAIL_CALL = 0x02
    IS_EH_PAD = 0x04
    CAN_FALL_THROUGH = 0x08
    HAS_INDIRECT_BRANCH = 0x10


KNOWN_METADATA = 0x1F
FLAG_NAMES = (
    (Metadata.HAS_RETURN, "return"),
    (Metadata.HAS_TAIL_CALL, "tail_call"),
    (Metadata.IS_EH_PAD, "eh_pad"),
    (Metadata.CAN_FALL_THROUGH, "can_fall_through"),
    (Metadata.HAS_INDIRECT_BRANCH, "has_indirect_branch"),
)


@dataclass(frozen=True, slots=True)
class BBEntry:
    """One basic block; `offset` and `size` are absolute (delta encoding already undone)."""

    id: int
    offset: int  # from the range's base address
    size: int
    metadata: int
    callsite_offsets: tuple[int, ...] = ()  # from the block start (ends in 22, begins in 21)
    hash: int | None = None

    def has(self, bit: Metadata) -> bool:
        return bool(self.metadata & bit)

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple(name for bit, name in FLAG_NAMES if self.metadata & bit)


@dataclass(frozen=True, slots=True)
class BBRange:
    """One contiguous range of a function (one per fragment with MultiBBRange)."""

    base_address: int
    num_blocks: int  # as declared; `entries` is empty when OmitBBEntries is set
    entries: tuple[BBEntry, ...] = ()
    # Where the base address field lies in the section (ET_REL: the relocation's r_offset).
    address_offset: int = field(default=0, compare=False)

    @property
    def end_offset(self) -> int:
        return max((e.offset + e.size for e in self.entries), default=0)


@dataclass(frozen=True, slots=True)
class Successor:
    id: int
    probability: int  # numerator over PROBABILITY_ONE
    post_link_frequency: int | None = None


@dataclass(frozen=True, slots=True)
class PGOBlock:
    """PGO data of one block, in the order of the entries of all ranges (§7)."""

    frequency: int | None = None  # raw MBFI value; only with BBFreq
    post_link_frequency: int | None = None  # only with PostLinkCfg
    successors: tuple[Successor, ...] | None = None  # only with BrProb


@dataclass(frozen=True, slots=True)
class PGOAnalysis:
    func_entry_count: int | None = None  # only with FuncEntryCount
    blocks: tuple[PGOBlock, ...] = ()


@dataclass(frozen=True, slots=True)
class FunctionMap:
    """One function record."""

    version: int | None  # None: the un-versioned SHT_LLVM_BB_ADDR_MAP_V0 format
    features: int
    ranges: tuple[BBRange, ...]
    pgo: PGOAnalysis | None = None  # present iff a PGO feature bit is set
    offset: int = field(default=0, compare=False)  # of the record in the section

    @property
    def address(self) -> int:
        """The function's entry: range 0's base address (readobj's ``At``)."""
        return self.ranges[0].base_address if self.ranges else 0

    @property
    def feature(self) -> Feature:
        return Feature(self.features & _KNOWN_FEATURES)

    def entries(self) -> Iterator[tuple[BBRange, BBEntry]]:
        for rng in self.ranges:
            for entry in rng.entries:
                yield rng, entry


@dataclass(frozen=True, slots=True)
class RangeExtent:
    """A range as :func:`scan` reads it: where it is, without its blocks."""

    base_address: int
    num_blocks: int
    end_offset: int  # BBRange.end_offset: the end of its last block (0 with OmitBBEntries)
    address_offset: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class FunctionExtent:
    """A function record as :func:`scan` reads it; :func:`decode_record` at `offset` gives
    the whole FunctionMap."""

    version: int | None
    features: int
    ranges: tuple[RangeExtent, ...]
    offset: int

    @property
    def address(self) -> int:
        return self.ranges[0].base_address if self.ranges else 0


@dataclass(frozen=True, slots=True)
class SectionMap:
    """What one section decoded to.

    `rejected` are function records skipped on their own (decoding went on after them);
    `error`, when set, stopped decoding: records after it are lost.
    """

    section: str
    functions: tuple[FunctionMap, ...]
    rejected: tuple[DecodeError, ...] = ()
    error: DecodeError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and not self.rejected


@dataclass(frozen=True, slots=True)
class Rejected:
    """A function record that was read to its end but is invalid (archival mode only)."""

    error: DecodeError
    offset: int


class _Stop(Exception):
    """Internal: the first error of a record whose end we can still find."""


def decode(
    data: bytes,
    section: str = SECTION,
    *,
    sh_type: int = SHT_LLVM_BB_ADDR_MAP,
    address_size: int = 8,
    little_endian: bool = True,
    relocations: Mapping[int, int] | None = None,
    strict: bool = False,
) -> SectionMap:
    """Decode a whole section. Never raises for malformed data: see SectionMap.error."""
    records = iter_records(data, section, sh_type=sh_type, address_size=address_size,
                           little_endian=little_endian, relocations=relocations, strict=strict)
    functions, rejected, error = _collect(records, strict)
    maps = tuple(f for f in functions if isinstance(f, FunctionMap))
    assert len(maps) == len(functions)
    return SectionMap(section, maps, rejected, error)


def _collect(
    records: Iterator[FunctionMap | FunctionExtent | Rejected], strict: bool,
) -> tuple[list[FunctionMap | FunctionExtent], tuple[DecodeError, ...], DecodeError | None]:
    """(records, rejected records' errors, the error that stopped the section) — nothing but
    the error in strict mode, where LLVM returns no partial result."""
    functions: list[FunctionMap | FunctionExtent] = []
    rejected: list[DecodeError] = []
    try:
        for item in records:
            if isinstance(item, Rejected):
                rejected.append(item.error)
            else:
                functions.append(item)
    except DecodeError as e:
        return ([], (), e) if strict else (functions, tuple(rejected), e)
    return functions, tuple(rejected), None


@dataclass(frozen=True, slots=True)
class SectionExtents:
    """What :func:`scan` made of one section: as SectionMap, with FunctionExtents."""

    section: str
    functions: tuple[FunctionExtent, ...]
    rejected: tuple[DecodeError, ...] = ()
    error: DecodeError | None = None


def scan(
    data: bytes,
    section: str = SECTION,
    *,
    sh_type: int = SHT_LLVM_BB_ADDR_MAP,
    address_size: int = 8,
    little_endian: bool = True,
    relocations: Mapping[int, int] | None = None,
    strict: bool = False,
) -> SectionExtents:
    """:func:`decode` without the blocks and PGO data: every field is still read and checked
    as decode checks it (the same records are accepted, rejected or stop the section), but
    only each record's ranges are kept. A fifth of decode's cost on big maps (bench/bbmap.py)."""
    records = iter_records(data, section, sh_type=sh_type, address_size=address_size,
                           little_endian=little_endian, relocations=relocations, strict=strict,
                           light=True)
    functions, rejected, error = _collect(records, strict)
    extents = tuple(f for f in functions if isinstance(f, FunctionExtent))
    assert len(extents) == len(functions)
    return SectionExtents(section, extents, rejected, error)


def decode_record(
    data: bytes,
    offset: int,
    section: str = SECTION,
    *,
    sh_type: int = SHT_LLVM_BB_ADDR_MAP,
    address_size: int = 8,
    little_endian: bool = True,
    relocations: Mapping[int, int] | None = None,
    strict: bool = False,
) -> FunctionMap | Rejected:
    """The one record at `offset` (a FunctionExtent's), decoded whole."""
    reader = _Reader(bytes(data), section, address_size, little_endian, relocations, strict)
    reader.pos = offset
    fmap = reader.function(sh_type == SHT_LLVM_BB_ADDR_MAP)
    if reader.problem is not None:
        return Rejected(reader.problem, offset)
    assert isinstance(fmap, FunctionMap)
    return fmap


def iter_records(
    data: bytes,
    section: str = SECTION,
    *,
    sh_type: int = SHT_LLVM_BB_ADDR_MAP,
    address_size: int = 8,
    little_endian: bool = True,
    relocations: Mapping[int, int] | None = None,
    strict: bool = False,
    light: bool = False,
) -> Iterator[FunctionMap | FunctionExtent | Rejected]:
    """Yield records lazily, in section order; raise DecodeError where decoding must stop.
    `light`: FunctionExtents (see :func:`scan`) instead of FunctionMaps."""
    if sh_type not in (SHT_LLVM_BB_ADDR_MAP, SHT_LLVM_BB_ADDR_MAP_V0):
        raise DecodeError(section, 0, f"section type {sh_type:#x} is not a BB address map")
    if address_size not in (4, 8):
        raise DecodeError(section, 0, f"address size {address_size} is neither 4 nor 8")
    if strict and sh_type == SHT_LLVM_BB_ADDR_MAP_V0:
        return  # LLVM 21+ match only SHT_LLVM_BB_ADDR_MAP and skip V0 without a word (§9.2)
    reader = _Reader(bytes(data), section, address_size, little_endian, relocations, strict)
    versioned = sh_type == SHT_LLVM_BB_ADDR_MAP
    read = reader.extent if light else reader.function
    while reader.pos < len(reader.data):
        start = reader.pos
        reader.problem = None
        fmap = read(versioned)
        if reader.problem is not None:
            yield Rejected(reader.problem, start)
        else:
            yield fmap


class _Reader:
    """Cursor over one section; `problem` collects the first per-record error (archival)."""

    __slots__ = ("addr_size", "data", "order", "pos", "problem", "relocs", "section", "strict")

    def __init__(
        self, data: bytes, section: str, address_size: int, little_endian: bool,
        relocations: Mapping[int, int] | None, strict: bool,
    ) -> None:
        self.data = data
        self.section = section
        self.addr_size = address_size
        self.order: ByteOrder = "little" if little_endian else "big"
        self.relocs = relocations
        self.strict = strict
        self.pos = 0
        self.problem: DecodeError | None = None

    # --- primitives -----------------------------------------------------------------------

    def fail(self, offset: int, message: str) -> None:
        """A record-level error: fatal in strict mode, else remembered and decoding goes on."""
        err = DecodeError(self.section, offset, message)
        if self.strict:
            raise err
        if self.problem is None:
            self.problem = err

    def fixed(self, size: int) -> int:
        start = self.pos
        end = start + size
        if end > len(self.data):
            # DataExtractor's wording (§12): offset = data size, range = the attempted read.
            raise DecodeError(
                self.section, start,
                f"unexpected end of data at offset {len(self.data):#x} "
                f"while reading [{start:#x}, {end:#x})",
            )
        self.pos = end
        return int.from_bytes(self.data[start:end], self.order)

    def uleb(self, limit: int, count: bool = False) -> int:
        """ULEB128 of at most `limit`; a count out of range stops decoding (layout unknown)."""
        data = self.data
        pos = self.pos
        if pos < len(data):
            b = data[pos]
            if b < 0x80:  # the common one-byte case, kept out of the loop for speed
                self.pos = pos + 1
                return b
        value, end = _uleb_slow(data, pos, self.section)
        self.pos = end
        if value < 0 or value > limit:
            if value < 0:
                msg = f"unable to decode LEB128 at offset 0x{pos:08x}: uleb128 too big for uint64"
            else:
                bits = 32 if limit == U32 else 64
                msg = f"ULEB128 value at offset {pos:#x} exceeds UINT{bits}_MAX ({value:#x})"
            if count:
                raise DecodeError(self.section, pos, msg)
            self.fail(pos, msg)
            return 0
        return value

    def skip_uleb(self, limit: int) -> None:
        """uleb(limit) when the value is not wanted: a number short enough to be within
        `limit` whatever its bits (4 bytes for UINT32, 9 for UINT64) is only walked over."""
        data = self.data
        pos = self.pos
        safe = 4 if limit == U32 else 9
        stop = min(pos + safe, len(data))
        p = pos
        while p < stop:
            if data[p] < 0x80:
                self.pos = p + 1
                return
            p += 1
        self.uleb(limit)  # long, or at the end of the data: the careful reading

    def address(self) -> int:
        at = self.pos
        value = self.fixed(self.addr_size)
        if self.relocs is None:
            return value
        addend = self.relocs.get(at)
        if addend is None:
            self.fail(at, f"failed to get relocation data for offset: {at:x} in section "
                          f"{self.section}")
            return 0
        return addend & ((1 << (8 * self.addr_size)) - 1)

    # --- grammar (§3.2, §7) ---------------------------------------------------------------

    def header(self, versioned: bool) -> tuple[int | None, int]:
        if not versioned:
            return None, 0
        at = self.pos
        version = self.fixed(1)
        allowed = range(2, 6) if self.strict else range(0, 6)
        if version not in allowed:
            raise UnsupportedVersion(
                self.section, at, f"unsupported SHT_LLVM_BB_ADDR_MAP version: {version}")
        feat_at = self.pos
        feature = self.fixed(2 if version >= 5 else 1)
        if feature & ~_KNOWN_FEATURES:
            raise DecodeError(self.section, feat_at,
                              f"invalid encoding for BBAddrMap::Features: {feature:#x}")
        if version < 2 and feature:  # LLVM 18–20's rule; 0/1 had a reserved byte
            raise DecodeError(
                self.section, feat_at,
                "version should be >= 2 for SHT_LLVM_BB_ADDR_MAP when PGO features are "
                f"enabled: version = {version} feature = {feature}")
        for bit, minimum, words in MIN_VERSION:
            if feature & bit and version < minimum:
                raise DecodeError(
                    self.section, feat_at,
                    f"version should be >= {minimum} for SHT_LLVM_BB_ADDR_MAP when {words} "
                    f"feature is enabled: version = {version} feature = {feature}")
        return version, feature

    def num_ranges(self, feature: int) -> int:
        """The range count: read with MultiBBRange (never 0), else 1."""
        if not feature & MULTI_BIT:
            return 1
        num_ranges = self.uleb(U32, count=True)
        if num_ranges == 0:
            self.fail(self.pos, f"invalid zero number of BB ranges at offset {self.pos:x} "
                                f"in {self.section}")
        return num_ranges

    def function(self, versioned: bool) -> FunctionMap:
        start = self.pos
        version, feature = self.header(versioned)
        num_ranges = self.num_ranges(feature)
        ranges = tuple(self.bb_range(version, feature) for _ in range(num_ranges))
        pgo = None
        if feature & PGO_BITS:
            pgo = self.pgo(feature, sum(len(r.entries) for r in ranges))
        return FunctionMap(version, feature, ranges, pgo, start)

    def extent(self, versioned: bool) -> FunctionExtent:
        """function() without the blocks: the same fields read and checked, in the same order."""
        start = self.pos
        version, feature = self.header(versioned)
        num_ranges = self.num_ranges(feature)
        ranges = tuple(self.range_extent(version, feature) for _ in range(num_ranges))
        if feature & PGO_BITS:
            omitted = feature & OMIT_BIT
            self.skip_pgo(feature, 0 if omitted else sum(r.num_blocks for r in ranges))
        return FunctionExtent(version, feature, ranges, start)

    def range_extent(self, version: int | None, feature: int) -> RangeExtent:
        """bb_range() keeping only the range's end (the loop mirrors bb_range's reads)."""
        address_offset = self.pos
        base = self.address()
        num_blocks = self.uleb(U32, count=True)
        if feature & OMIT_BIT:
            return RangeExtent(base, num_blocks, 0, address_offset)
        has_ids = version is not None and version >= 2
        delta = version is not None and version >= 1
        callsites = bool(feature & CALLSITES_BIT)
        hashed = bool(feature & HASH_BIT)
        validate = has_ids or self.strict
        uleb = self.uleb
        prev_end = 0
        end = 0
        data = self.data
        # Most entries are one-byte ULEBs (ID, offset from the previous block, size, metadata):
        # read those inline, four bytes at a time, and anything else the careful way below.
        quick = not callsites and not hashed and delta
        width = 4 if has_ids else 3
        last_quick = len(data) - width
        for _ in range(num_blocks):
            pos = self.pos
            if quick and pos <= last_quick:
                if has_ids:
                    b0, b1, b2, b3 = data[pos], data[pos + 1], data[pos + 2], data[pos + 3]
                    fast = (b0 | b1 | b2 | b3) < 0x80
                    offset_field, size, md = b1, b2, b3
                else:
                    b1, b2, b3 = data[pos], data[pos + 1], data[pos + 2]
                    fast = (b1 | b2 | b3) < 0x80
                    offset_field, size, md = b1, b2, b3
                if fast and not (validate and md & ~KNOWN_METADATA):
                    self.pos = pos + width
                    offset = offset_field + prev_end
                    prev_end = offset + size
                    if prev_end > end:
                        end = prev_end
                    continue
            if has_ids:
                uleb(U32)
            offset_field = uleb(U32)
            last = 0
            if callsites:
                for _ in range(uleb(U32, count=True)):
                    last = (last + uleb(U32)) & U32
            size = (uleb(U32) + last) & U32
            md_at = self.pos
            md = uleb(U32)
            if hashed:
                self.fixed(8)
            if validate and md & ~KNOWN_METADATA:
                self.fail(md_at, f"invalid encoding for BBEntry::Metadata: {md:#x}")
            if delta:
                offset = (offset_field + prev_end) & U32
                prev_end = (offset + size) & U32
            else:
                offset = offset_field
            if offset + size > end:
                end = offset + size
        return RangeExtent(base, num_blocks, end, address_offset)

    def skip_pgo(self, feature: int, total_blocks: int) -> None:
        """pgo()'s reads and checks, nothing kept."""
        uleb = self.uleb
        skip = self.skip_uleb
        if feature & FEC_BIT:
            skip(U64)
        if not feature & (BBFREQ_BIT | BRPROB_BIT):
            return
        freq_on = bool(feature & BBFREQ_BIT)
        prob_on = bool(feature & BRPROB_BIT)
        post_link = bool(feature & POSTLINK_BIT)
        for _ in range(total_blocks):
            if freq_on:
                skip(U64)
            if post_link:
                skip(U32)
            if prob_on:
                for _ in range(uleb(U64, count=True)):
                    skip(U32)
                    skip(U32)
                    if post_link:
                        skip(U32)

    def bb_range(self, version: int | None, feature: int) -> BBRange:
        address_offset = self.pos
        base = self.address()
        num_blocks = self.uleb(U32, count=True)
        if feature & OMIT_BIT:
            return BBRange(base, num_blocks, (), address_offset)
        has_ids = version is not None and version >= 2
        delta = version is not None and version >= 1  # V0 and version 0: absolute offsets
        callsites = bool(feature & CALLSITES_BIT)
        hashed = bool(feature & HASH_BIT)
        # LLVM ≤16 did not validate metadata; version ≥2 data comes from LLVM 17+, which does.
        validate = has_ids or self.strict
        uleb = self.uleb
        prev_end = 0
        entries = []
        for index in range(num_blocks):
            bb_id = uleb(U32) if has_ids else index
            offset_field = uleb(U32)
            last = 0
            offsets: tuple[int, ...] = ()
            if callsites:
                n = uleb(U32, count=True)
                cs = []
                for _ in range(n):
                    last = (last + uleb(U32)) & U32
                    cs.append(last)
                offsets = tuple(cs)
            size = (uleb(U32) + last) & U32
            md_at = self.pos
            md = uleb(U32)
            bb_hash = self.fixed(8) if hashed else None
            if validate and md & ~KNOWN_METADATA:
                self.fail(md_at, f"invalid encoding for BBEntry::Metadata: {md:#x}")
            if delta:  # uint32 arithmetic, as in LLVM (§3.3)
                offset = (offset_field + prev_end) & U32
                prev_end = (offset + size) & U32
            else:
                offset = offset_field
            entries.append(BBEntry(bb_id, offset, size, md, offsets, bb_hash))
        return BBRange(base, num_blocks, tuple(entries), address_offset)

    def pgo(self, feature: int, total_blocks: int) -> PGOAnalysis:
        uleb = self.uleb
        entry_count = uleb(U64) if feature & FEC_BIT else None
        blocks: list[PGOBlock] = []
        if feature & (BBFREQ_BIT | BRPROB_BIT):
            freq_on = bool(feature & BBFREQ_BIT)
            prob_on = bool(feature & BRPROB_BIT)
            post_link = bool(feature & POSTLINK_BIT)
            for _ in range(total_blocks):
                freq = uleb(U64) if freq_on else None
                # LLVM 22 reads this whenever PostLinkCfg is set, even without BBFreq (§7 quirk).
                pl_freq = uleb(U32) if post_link else None
                succs: tuple[Successor, ...] | None = None
                if prob_on:
                    n = uleb(U64, count=True)
                    out = []
                    for _ in range(n):
                        sid = uleb(U32)
                        prob = uleb(U32)
                        pl = uleb(U32) if post_link else None
                        out.append(Successor(sid, prob, pl))
                    succs = tuple(out)
                blocks.append(PGOBlock(freq, pl_freq, succs))
        return PGOAnalysis(entry_count, tuple(blocks))


def _uleb_slow(data: bytes, pos: int, section: str) -> tuple[int, int]:
    """(value, end) of a ULEB128 as LLVM's decodeULEB128 reads it; value -1 if > UINT64_MAX.

    Like LLVM, non-minimal encodings are fine and the first non-zero bit past bit 63 is an
    overflow; we then skip to the end of the number so that the caller can go on after it.
    """
    end = len(data)
    value = 0
    shift = 0
    p = pos
    while True:
        if p >= end:
            raise DecodeError(section, pos, f"unable to decode LEB128 at offset 0x{pos:08x}: "
                                            "malformed uleb128, extends past end")
        byte = data[p]
        p += 1
        chunk = byte & 0x7F
        if shift >= 63 and chunk >> (64 - shift if shift < 64 else 0):
            while byte & 0x80:  # overflow: find the end of the number, or report truncation
                if p >= end:
                    raise DecodeError(section, pos, f"unable to decode LEB128 at offset "
                                                    f"0x{pos:08x}: uleb128 too big for uint64")
                byte = data[p]
                p += 1
            return -1, p
        if shift < 64:
            value |= chunk << shift
        shift += 7
        if byte < 0x80:
            return value, p


# --- encoder --------------------------------------------------------------------------------


def encode(
    functions: Iterable[FunctionMap], *, address_size: int = 8, little_endian: bool = True
) -> bytes:
    """Bytes of `functions` in the format each one's `version` says (None: V0 section).

    Absolute offsets and sizes are turned back into the deltas of §3.3 (mod 2**32, so that
    decode(encode(x)) == x for every uint32 value). Addresses are written in place.
    """
    order: ByteOrder = "little" if little_endian else "big"
    out = bytearray()
    u = encode_uleb128
    for fm in functions:
        version, feature = fm.version, fm.features
        if version is not None:
            out.append(version)
            out += feature.to_bytes(2 if version >= 5 else 1, order)
        if feature & MULTI_BIT:
            out += u(len(fm.ranges))
        for rng in fm.ranges:
            out += rng.base_address.to_bytes(address_size, order)
            out += u(rng.num_blocks if feature & OMIT_BIT else len(rng.entries))
            if feature & OMIT_BIT:
                continue
            prev_end = 0
            for e in rng.entries:
                if version is not None and version >= 2:
                    out += u(e.id)
                delta = version is not None and version >= 1
                out += u((e.offset - prev_end) & U32 if delta else e.offset)
                last = 0
                if feature & CALLSITES_BIT:
                    out += u(len(e.callsite_offsets))
                    for cs in e.callsite_offsets:
                        out += u((cs - last) & U32)
                        last = cs
                out += u((e.size - last) & U32)
                out += u(e.metadata)
                if feature & HASH_BIT:
                    out += (e.hash or 0).to_bytes(8, order)
                prev_end = (e.offset + e.size) & U32
        if feature & PGO_BITS:
            pgo = fm.pgo or PGOAnalysis()
            if feature & FEC_BIT:
                out += u(pgo.func_entry_count or 0)
            if feature & (BBFREQ_BIT | BRPROB_BIT):
                for blk in pgo.blocks:
                    if feature & BBFREQ_BIT:
                        out += u(blk.frequency or 0)
                    if feature & POSTLINK_BIT:
                        out += u(blk.post_link_frequency or 0)
                    if feature & BRPROB_BIT:
                        succs = blk.successors or ()
                        out += u(len(succs))
                        for s in succs:
                            out += u(s.id) + u(s.probability)
                            if feature & POSTLINK_BIT:
                                out += u(s.post_link_frequency or 0)
    return bytes(out)
