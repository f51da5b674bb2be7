"""`__llvm_mipmap` and `__llvm_mipraw`: the function map and raw profile of LLVM's Machine IR
Profile (shared/seeds/machine-ir-profile-mip.txt, D104060, completed by the patch series' tests;
the layouts are written out above ``HEADER_SIZE``). Call counts and timestamps (profile type
bits 2, 3) are not read."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from unsplit.errors import DecodeError, UnsupportedVersion
from unsplit.formats import section_ids

SECTION = section_ids.MIP_SECTION
RAW_SECTION = section_ids.MIP_RAW_SECTION
MAGIC = 0x50494DFB  # "\xfbMIP" as bytes
VERSION = 8  # what the map header of the seed's patch series says; any version is read
FILE_TYPE_MAP = 2
FILE_TYPE_RAW = 1
FUNCTION_COVERAGE = 0x1  # profile type bits
BLOCK_COVERAGE = 0x2
COVERED, NOT_COVERED = 0x00, 0xFF  # a raw byte after / before its code ran
_COVERAGE_BYTES = bytes([COVERED, NOT_COVERED])
_ran = COVERED.__eq__  # per byte, at C speed
# The layouts, from the seed and, where it is silent, the patch series' tests and its
# MIPBinaryFormat document. Both sections start with a 24-byte header:
#   magic u32 = 0x50494dfb, version u16, file type u16 (1 = raw, 2 = map), profile type u32,
#   module hash u32, reserved u32, offset to data u32 (= 24)
# A map record (``foo$MAP``, aligned to 8 in its own comdat section):
#   .Lref: raw section start PC offset  i32  __start___llvm_mipraw - .Lref
#          raw profile symbol PC offset i32  foo$RAW - .Lref
#          function PC offset           i32  foo - .Lref
#          function size u32, CFG signature u32, non-entry block count u32 n,
#          block offsets n x u32 (from the function start), name length u32, name (mangled)
# The map is extracted, not loaded, so only differences of one record's fields mean anything:
# raw offset = raw symbol - raw start; function address = address of __llvm_mipraw +
# function - raw start. At each function's raw offset in __llvm_mipraw: function coverage u8
# (profile type bit 0; 0 once it ran), then block coverage n x u8 (bit 1), in map order.
HEADER_SIZE = 24
RECORD_ALIGN = 8  # each $MAP is `.p2align 3` in its own section: the linker pads between

_HEADER = struct.Struct("<IHHIIII")
_FIXED = struct.Struct("<iiiIII")  # the record up to the block offsets


@dataclass(frozen=True, slots=True)
class MipHeader:
    version: int = VERSION
    file_type: int = FILE_TYPE_MAP
    profile_type: int = 1
    module_hash: int = 0


class MipBlock(NamedTuple):
    """One basic block of a map function (file addresses), flagged by its coverage."""

    id: int  # 0: the entry block; i: the i-th non-entry block of the map
    start: int
    end: int
    flags: tuple[str, ...] = ()  # ("covered",) or ("not-covered",) when a profile says


@dataclass(frozen=True, slots=True)
class MipFunction:
    """One function of the map, its PC-relative fields resolved."""

    name: str
    # File address (raw section address + function - raw start); relative to the raw section,
    # and possibly negative, when the caller does not know that section's address.
    address: int
    size: int
    cfg_signature: int
    block_offsets: tuple[int, ...]  # non-entry blocks, from the function start
    raw_offset: int  # of its profile data within __llvm_mipraw
    offset: int = field(default=0, compare=False)  # of the record in the section

    def blocks(self, coverage: Coverage | None = None) -> list[MipBlock]:
        """Its blocks, by address: the entry block is %0 and the non-entry ones
        %1..%n in map order (the order of their coverage bytes). Each runs to the next start;
        an offset outside the function (or a second block at one start) gives no block.

        With `coverage`, each block is flagged ``covered`` or ``not-covered``; a function
        that never ran has no block that ran, so without block coverage only the entry block
        (or, for a function not covered, every block) gets a flag.
        """
        ids = {0: 0}
        for i, off in enumerate(self.block_offsets, 1):
            if 0 < off < self.size:
                ids[off] = i  # the later of two equal offsets: the block that holds code
        starts = sorted(ids)
        ends = [*starts[1:], self.size]
        out = []
        for s, e in zip(starts, ends, strict=True):
            if e > s:
                flags = () if coverage is None else coverage.flags(ids[s])
                out.append(MipBlock(ids[s], self.address + s, self.address + e, flags))
        return out


@dataclass(frozen=True, slots=True)
class Coverage:
    """What one function's raw profile says ran: the function, and its non-entry blocks."""

    function: bool
    blocks: tuple[bool, ...] | None = None  # map order; None without block coverage

    def ran(self, block_id: int) -> bool | None:
        """Whether block `block_id` (0 = entry) ran; None when the profile does not say."""
        if block_id == 0 or not self.function:
            return self.function
        if self.blocks is None or block_id > len(self.blocks):
            return None
        return self.blocks[block_id - 1]

    def flags(self, block_id: int) -> tuple[str, ...]:
        ran = self.ran(block_id)
        return () if ran is None else ("covered",) if ran else ("not-covered",)


@dataclass(frozen=True, slots=True)
class MipMap:
    header: MipHeader
    functions: tuple[MipFunction, ...]


def decode(data: bytes, raw_section_address: int = 0, section: str = SECTION) -> MipMap:
    """The map in `data`; `raw_section_address` is sh_addr of __llvm_mipraw (0: offsets)."""
    if len(data) < HEADER_SIZE:
        raise DecodeError(section, 0, f"truncated header: {len(data)} bytes, expected 24")
    magic, version, ftype, ptype, mhash, _res, data_at = _HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise DecodeError(section, 0, f"bad magic {magic:#010x}, expected {MAGIC:#010x}")
    if ftype != FILE_TYPE_MAP:
        raise DecodeError(section, 6, f"file type {ftype:#x}, expected {FILE_TYPE_MAP} (map)")
    if data_at != HEADER_SIZE:
        # Later revisions grew the header (offset 0x20) and widened the PC offsets to 64 bits.
        raise UnsupportedVersion(
            section, 20, f"offset to data {data_at:#x}: this reader knows the 24-byte header"
        )
    header = MipHeader(version, ftype, ptype, mhash)
    funcs = []
    pos = HEADER_SIZE
    while pos < len(data):
        if not any(data[pos : pos + _FIXED.size]):
            # Padding, or a whole record of zeros: records never start with a zero raw start
            # offset (the raw section is elsewhere), so skip to the next alignment boundary.
            pos = (pos // RECORD_ALIGN + 1) * RECORD_ALIGN
            continue
        func, pos = _record(data, pos, raw_section_address, section)
        funcs.append(func)
        pos = -(-pos // RECORD_ALIGN) * RECORD_ALIGN
    return MipMap(header, tuple(funcs))


def _record(data: bytes, start: int, raw_addr: int, section: str) -> tuple[MipFunction, int]:
    def need(pos: int, n: int, what: str) -> None:
        if pos + n > len(data):
            raise DecodeError(section, pos, f"truncated {what}: record at {start:#x}")

    need(start, _FIXED.size, "record")
    raw_start, raw_sym, func_off, size, cfg, nblocks = _FIXED.unpack_from(data, start)
    pos = start + _FIXED.size
    need(pos, 4 * nblocks, f"block offsets ({nblocks})")
    blocks = struct.unpack_from(f"<{nblocks}I", data, pos)
    pos += 4 * nblocks
    need(pos, 4, "name length")
    (name_len,) = struct.unpack_from("<I", data, pos)
    pos += 4
    need(pos, name_len, "name")
    try:
        name = data[pos : pos + name_len].decode("utf-8")
    except UnicodeDecodeError:
        raise DecodeError(section, pos, "function name is not UTF-8") from None
    pos += name_len
    func = MipFunction(
        name,
        raw_addr + func_off - raw_start,
        size,
        cfg,
        tuple(blocks),
        raw_sym - raw_start,
        start,
    )
    return func, pos


def encode(
    functions: Iterable[MipFunction],
    raw_section_address: int = 0,
    header: MipHeader = MipHeader(),  # frozen, so one shared default is harmless
    map_address: int | None = None,
) -> bytes:
    """A map section as a linker would lay it out (records 8-aligned, zero padding).

    `map_address` is where the map would sit if it were loaded (the PC of each .Lref); only
    differences survive decoding, so any value that keeps the offsets in 32 bits does.
    """
    base = raw_section_address if map_address is None else map_address
    out = bytearray(
        _HEADER.pack(
            MAGIC,
            header.version,
            header.file_type,
            header.profile_type,
            header.module_hash,
            0,
            HEADER_SIZE,
        )
    )
    for f in functions:
        out += bytes(-len(out) % RECORD_ALIGN)
        ref = base + len(out)
        name = f.name.encode("utf-8")
        out += _FIXED.pack(
            raw_section_address - ref,
            raw_section_address + f.raw_offset - ref,
            f.address - ref,
            f.size,
            f.cfg_signature,
            len(f.block_offsets),
        )
        out += struct.pack(f"<{len(f.block_offsets)}I", *f.block_offsets)
        out += struct.pack("<I", len(name)) + name
    return bytes(out)


# --- the raw profile ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RawProfile:
    header: MipHeader
    coverage: dict[int, Coverage]  # by raw offset (that of MipFunction.raw_offset)

    def of(self, func: MipFunction) -> Coverage | None:
        return self.coverage.get(func.raw_offset)

    @property
    def ran_at_all(self) -> bool:
        """False for the compiler's image (every byte still all ones): no profile yet."""
        return any(c.function for c in self.coverage.values())


def raw_size(func: MipFunction, profile_type: int) -> int:
    """Bytes of `func`'s raw profile (function byte, then one per block; no padding)."""
    return 1 + (len(func.block_offsets) if profile_type & BLOCK_COVERAGE else 0)


def decode_raw(data: bytes, mip: MipMap, section: str = RAW_SECTION) -> RawProfile:
    """The coverage of every function of `mip` in the raw profile `data`.

    The raw header must be the map's twin (same profile type and module hash): a raw profile
    of another build would put each function's bytes somewhere else.
    """
    if len(data) < HEADER_SIZE:
        raise DecodeError(section, 0, f"truncated header: {len(data)} bytes, expected 24")
    magic, version, ftype, ptype, mhash, _res, data_at = _HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise DecodeError(section, 0, f"bad magic {magic:#010x}, expected {MAGIC:#010x}")
    if ftype != FILE_TYPE_RAW:
        raise DecodeError(section, 6, f"file type {ftype:#x}, expected {FILE_TYPE_RAW} (raw)")
    if data_at != HEADER_SIZE:
        raise UnsupportedVersion(
            section, 20, f"offset to data {data_at:#x}: this reader knows the 24-byte header"
        )
    if ptype & ~(FUNCTION_COVERAGE | BLOCK_COVERAGE) or not ptype & FUNCTION_COVERAGE:
        raise UnsupportedVersion(
            section, 8, f"profile type {ptype:#x}: this reader knows function (0x1) and block "
            "(0x2) coverage"
        )  # fmt: skip
    if (ptype, mhash) != (mip.header.profile_type, mip.header.module_hash):
        raise DecodeError(
            section, 8, f"profile type {ptype:#x} and module hash {mhash:#x}, the map's are "
            f"{mip.header.profile_type:#x} and {mip.header.module_hash:#x} (another build's)"
        )  # fmt: skip
    coverage: dict[int, Coverage] = {}
    for f in mip.functions:
        at, n = f.raw_offset, raw_size(f, ptype)
        if at < HEADER_SIZE or at + n > len(data):
            raise DecodeError(
                section, max(at, 0), f"{f.name}: raw profile of {n} bytes at {at:#x} outside "
                f"the data (24..{len(data):#x})"
            )  # fmt: skip
        chunk = data[at : at + n]
        if chunk.translate(None, _COVERAGE_BYTES):  # anything but 0x00 and 0xff is left
            i = next(i for i, byte in enumerate(chunk) if byte not in _COVERAGE_BYTES)
            raise DecodeError(
                section, at + i, f"{f.name}: coverage byte {chunk[i]:#04x}, expected 0x00 "
                "(ran) or 0xff (not yet)"
            )  # fmt: skip
        blocks = tuple(map(_ran, chunk[1:])) if ptype & BLOCK_COVERAGE else None
        coverage[at] = Coverage(chunk[0] == COVERED, blocks)
    return RawProfile(MipHeader(version, ftype, ptype, mhash), coverage)


def encode_raw(
    functions: Iterable[MipFunction], coverage: dict[int, Coverage], header: MipHeader
) -> bytes:
    """The raw profile a run with `coverage` (by raw offset) leaves: bytes nobody's code wrote
    stay all ones, as the compiler laid them out."""
    funcs = list(functions)
    block = bool(header.profile_type & BLOCK_COVERAGE)
    end = max((f.raw_offset + raw_size(f, header.profile_type) for f in funcs), default=0)
    out = bytearray([NOT_COVERED]) * max(end, HEADER_SIZE)
    out[:HEADER_SIZE] = _HEADER.pack(
        MAGIC, header.version, FILE_TYPE_RAW, header.profile_type, header.module_hash, 0,
        HEADER_SIZE,
    )  # fmt: skip
    for f in funcs:
        c = coverage.get(f.raw_offset)
        if c is None:
            continue
        ran = [c.function, *(c.blocks or ())] if block else [c.function]
        if block and len(ran) != 1 + len(f.block_offsets):
            raise ValueError(f"{f.name}: {len(ran) - 1} block bits for "
                             f"{len(f.block_offsets)} blocks")
        for i, r in enumerate(ran):
            out[f.raw_offset + i] = COVERED if r else NOT_COVERED
    return bytes(out)


def lay_out_raw(functions: Iterable[MipFunction], profile_type: int) -> list[MipFunction]:
    """`functions` with raw offsets one after the other past the header, as a linker places
    each function's ``$RAW`` (byte-aligned: no padding between them)."""
    out, at = [], HEADER_SIZE
    for f in functions:
        out.append(replace(f, raw_offset=at))
        at += raw_size(f, profile_type)
    return out

