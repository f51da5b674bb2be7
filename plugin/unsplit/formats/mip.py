"""`__llvm_mipmap`: the function map of LLVM's Machine IR Profile (MIP).

Specification: shared/seeds/machine-ir-profile-mip.txt (D104060, "Section Layout") and, where
that text is silent, the upstream tests of the same patch series: the 24-byte header is

```
magic u32 = 0x50494dfb, version u16, file type u16 (2 = map), profile type u32,
module hash u32, reserved u32, offset to data u32 (= 24)
```

and each function record (``foo$MAP``, aligned to 8 in its own comdat section) is

```
.Lref: raw section start PC offset   i32   __start___llvm_mipraw - .Lref
       raw profile symbol PC offset  i32   foo$RAW - .Lref
       function PC offset            i32   foo - .Lref
       function size                 u32
       CFG signature                 u32
       non-entry block count         u32   n
       block offsets                 n × u32, from the function start
       name length                   u32
       name                          bytes (the mangled name, no NUL)
```

The PC-relative fields are resolved as the seed explains: the map section is extracted (not
loaded), so only differences of fields of one record mean anything —
``raw offset = raw symbol - raw start`` and ``function address = address of __llvm_mipraw +
function - raw start``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..errors import DecodeError, UnsupportedVersion
from ..model import HOT, Block, Fragment, Procedure

SECTION = "__llvm_mipmap"
RAW_SECTION = "__llvm_mipraw"
MAGIC = 0x50494DFB  # "\xfbMIP" as bytes
VERSION = 8  # what the map header of the seed's patch series says; any version is read
FILE_TYPE_MAP = 2
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

    def blocks(self) -> list[Block]:
        """Blocks as model Blocks: the entry block is 0, the non-entry ones 1..n in order."""
        starts = [0, *sorted(o for o in self.block_offsets if 0 < o < self.size)]
        ends = [*starts[1:], self.size]
        return [
            Block(i, self.address + s, self.address + e)
            for i, (s, e) in enumerate(zip(starts, ends, strict=True))
            if e > s
        ]


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


def procedures(mip: MipMap) -> list[Procedure]:
    """Model procedures: MIP knows one fragment per function, with its blocks."""
    return [
        Procedure(
            f.name,
            [Fragment(f.name, HOT, f.address, f.address + f.size, f.name, 0, "mip")],
            f.blocks(),
        )
        for f in mip.functions
    ]
