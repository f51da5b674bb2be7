"""Copies of a binary whose `.eh_frame` is damaged on purpose, as BOLT's own output can be: an
FDE duplicated at the same start with another length and wrong rules, or a cold fragment's
FDE with a wrong CFA offset. Written from the bytes and the LSB's layout alone (LSB Core 5.0
§10.6), never with unsplit: the tests check unsplit against these and llvm-dwarfdump-22.

Only the usual layout is handled (a "zR" CIE with pcrel|sdata4 pointers, an FDE whose first
instruction is DW_CFA_def_cfa_offset with a one-byte operand); anything else fails loudly.
"""

from __future__ import annotations

import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.elffile import ELFFile

DW_CFA_def_cfa_offset = 0x0E


@dataclass
class _Section:
    offset: int  # in the file
    address: int
    size: int


@dataclass
class _Fde:
    offset: int  # in .eh_frame
    length: int  # of the whole entry, its length field included
    cie: int  # the CIE's offset
    start: int
    size: int


def _sections(path: Path) -> tuple[_Section, _Section]:
    with open(path, "rb") as f:
        elf = ELFFile(f)
        out = []
        for name in (".eh_frame", ".eh_frame_hdr"):
            sec = elf.get_section_by_name(name)
            assert sec is not None, f"{path}: no {name}"
            out.append(_Section(sec["sh_offset"], sec["sh_addr"], sec["sh_size"]))
    return out[0], out[1]


def _fdes(data: bytes, address: int) -> list[_Fde]:
    out = []
    at = 0
    while at + 4 <= len(data):
        length = struct.unpack_from("<I", data, at)[0]
        if length == 0:
            break
        assert length != 0xFFFFFFFF, "64-bit entries are not handled"
        cie_id = struct.unpack_from("<I", data, at + 4)[0]
        if cie_id:
            rel, size = struct.unpack_from("<iI", data, at + 8)
            out.append(_Fde(at, length + 4, at + 4 - cie_id, address + at + 8 + rel, size))
        at += length + 4
    return out


def _instructions_at(data: bytes, fde: _Fde) -> int:
    """Where the FDE's instructions begin: after pc_begin, pc_range and an empty
    augmentation (a "zR" CIE without 'L' or 'P')."""
    assert data[fde.offset + 16] == 0, "an FDE with augmentation data is not handled"
    return fde.offset + 17


def _encode(data: bytearray, address: int, slot: int, fde: _Fde, start: int, size: int,
            body: bytes, length: int) -> None:
    """Write an FDE of `length` bytes at `slot`: pointing at `fde`'s CIE, covering
    [start, start + size), instructions `body` padded with DW_CFA_nop."""
    pad = length - 17 - len(body)
    assert pad >= 0, "the slot is too small"
    struct.pack_into("<IIiI", data, slot, length - 4, slot + 4 - fde.cie,
                     start - (address + slot + 8), size)
    data[slot + 16] = 0
    data[slot + 17:slot + length] = body + bytes(pad)


def _hdr_entries(data: bytes) -> list[tuple[int, int]]:
    assert data[:4] == b"\x01\x1b\x03\x3b", "an unusual .eh_frame_hdr"
    count = struct.unpack_from("<I", data, 8)[0]
    return [struct.unpack_from("<ii", data, 12 + 8 * k) for k in range(count)]


def _write_hdr(data: bytearray, entries: list[tuple[int, int]]) -> None:
    struct.pack_into("<I", data, 8, len(entries))
    for k, (loc, fde) in enumerate(entries):
        struct.pack_into("<ii", data, 12 + 8 * k, loc, fde)


def _with_wrong_cfa(body: bytes, delta: int) -> bytes:
    assert body[0] == DW_CFA_def_cfa_offset and body[1] < 0x80 and body[1] + delta < 0x80, \
        "the FDE does not begin with a one-byte DW_CFA_def_cfa_offset"
    return bytes([body[0], body[1] + delta]) + body[2:]


def _read(path: Path) -> tuple[bytearray, _Section, _Section, list[_Fde]]:
    eh, hdr = _sections(path)
    blob = bytearray(path.read_bytes())
    return blob, eh, hdr, _fdes(bytes(blob[eh.offset:eh.offset + eh.size]), eh.address)


def wrong_cfa_offset(src: Path, dst: Path, start: int, delta: int = 16) -> None:
    """`dst`: `src` with the first CFA offset of the FDE starting at `start` off by `delta`."""
    blob, eh, _, fdes = _read(src)
    fde = next(f for f in fdes if f.start == start)
    at = eh.offset + _instructions_at(bytes(blob[eh.offset:]), fde)
    assert blob[at] == DW_CFA_def_cfa_offset and blob[at + 1] + delta < 0x80
    blob[at + 1] += delta
    dst.write_bytes(blob)
    shutil.copymode(src, dst)


def duplicate_fde(src: Path, dst: Path, start: int, spare_below: int, delta: int = 16,
                  longer_by: int = 1) -> tuple[int, int]:
    """`dst`: `src` where the FDE starting at `start` is duplicated: its true copy moves to the
    slot of an unused FDE (one covering code below `spare_below`, BOLT's original code), which
    `.eh_frame_hdr` lists for `start`; its old slot, earlier in the section (the entry a
    debugger that reads the section in order meets first), keeps the start with `longer_by`
    more bytes and a CFA offset `delta` off. Returns (the damaged copy's offset, the true
    copy's offset) in `.eh_frame`."""
    blob, eh, hdr, fdes = _read(src)
    data = bytearray(blob[eh.offset:eh.offset + eh.size])
    true = next(f for f in fdes if f.start == start)
    spare = next(f for f in fdes if f.start < spare_below and f.offset > true.offset
                 and f.length >= true.length)
    first = _instructions_at(bytes(data), true)
    body = bytes(data[first:true.offset + true.length])
    _encode(data, eh.address, spare.offset, true, start, true.size, body, spare.length)
    _encode(data, eh.address, true.offset, true, start, true.size + longer_by,
            _with_wrong_cfa(body, delta), true.length)
    blob[eh.offset:eh.offset + eh.size] = data
    # The search table: `start` -> the true copy; the spare's own start is no longer listed.
    table = bytearray(blob[hdr.offset:hdr.offset + hdr.size])
    entries = []
    for loc, fde in _hdr_entries(bytes(table)):
        if hdr.address + loc == spare.start:
            continue
        if hdr.address + loc == start:
            fde = eh.address + spare.offset - hdr.address
        entries.append((loc, fde))
    _write_hdr(table, entries)
    blob[hdr.offset:hdr.offset + hdr.size] = table
    dst.write_bytes(blob)
    shutil.copymode(src, dst)
    return true.offset, spare.offset


def drop_fde(src: Path, dst: Path, start: int) -> int:
    """`dst`: `src` as if the FDE starting at `start` were not there: its range made empty (0
    bytes: it covers nothing, and every entry after it stays where it was) and its entry
    removed from `.eh_frame_hdr`'s search table. Returns its offset in `.eh_frame`."""
    blob, eh, hdr, fdes = _read(src)
    fde = next(f for f in fdes if f.start == start)
    struct.pack_into("<I", blob, eh.offset + fde.offset + 12, 0)
    table = bytearray(blob[hdr.offset:hdr.offset + hdr.size])
    entries = [(loc, at) for loc, at in _hdr_entries(bytes(table)) if hdr.address + loc != start]
    assert len(entries) == len(_hdr_entries(bytes(table))) - 1, "the start is not listed once"
    _write_hdr(table, entries)
    blob[hdr.offset:hdr.offset + hdr.size] = table
    dst.write_bytes(blob)
    shutil.copymode(src, dst)
    return fde.offset
