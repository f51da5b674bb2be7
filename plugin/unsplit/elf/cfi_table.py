"""Which FDE of a binary's CFI covers an address, decided once for every reader (the unwinder,
LLDB's Breakpad CFI, the debug file's `.debug_frame`): of several FDEs starting at one address
(BOLT's `.eh_frame`), the last one the sorted table lists that covers it wins. Lazy: starts from
`.eh_frame_hdr` (LSB Core 5.0 §10.6.2) or one pass; only a queried FDE is decoded (DWARF 5 §6.4)."""

from __future__ import annotations

import struct
import sys
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from itertools import repeat
from operator import add, gt, sub
from typing import TYPE_CHECKING, NamedTuple

from unsplit.elf.binary import Binary
from unsplit.elf.derived import PerFile
from unsplit.errors import DecodeError

if TYPE_CHECKING:  # the decoder's records: made when a section is first read, not at import
    from unsplit.formats.eh_frame import Cie, EntryReader, FrameDescription

_MASK = (1 << 64) - 1
_SHT_NOBITS = 8


# Which FDE the plugin trusts where several cover an address (bb bt, unsplit bt, the GDB
# unwinder, the debug file's CFI and check-cfi all ask `CfiTable.fde_at`/`head_at`), and why.
TRUSTED_BY_HDR = (".eh_frame_hdr lists it: its search table is what the program's own unwinder "
                  "(libgcc, C++ exceptions) finds, and the tool that wrote .eh_frame (BOLT) lists "
                  "the FDE it rewrote there, not the stale one it left in the section")
TRUSTED_WITHOUT_HDR = ("no usable .eh_frame_hdr: the entry latest in the section among those "
                       "that cover the address")


class EveryFde(NamedTuple):
    """Every non-empty FDE of one section, sorted by (start, offset), in compact arrays."""

    section: str
    starts: array[int]
    ends: array[int]
    offsets: array[int]
    reach: array[int]  # the furthest end of the FDEs up to each one: where a walk back stops

    def covering(self, address: int) -> list[int]:
        """The positions of the FDEs that cover `address`."""
        i = bisect_right(self.starts, address) - 1
        out = []
        while i >= 0 and self.reach[i] > address:
            if self.ends[i] > address:
                out.append(i)
            i -= 1
        return out


def _scan(name: str, reader: EntryReader, data: bytes) -> EveryFde:
    """Every FDE's header, in one pass. The usual `.eh_frame` FDE (pcrel|sdata4 pointers, as
    every linker and BOLT write them) is read with one struct call: 347,360 FDEs of a BOLTed
    libLLVM in well under a second; any other entry through the reader, fully checked."""
    e = reader.e
    u32 = struct.Struct(e + "I").unpack_from
    start_size = struct.Struct(e + "iI").unpack_from
    encodings: dict[int, int] = {}
    found: list[tuple[int, int, int]] = []
    offset, n, eh = 0, len(data), reader.eh
    while offset + 4 <= n:
        length = u32(data, offset)[0]
        id_at = offset + 4
        end = id_at + length
        if eh and 0 < length < 0xFFFFFFFF and id_at + 12 <= end <= n:
            cie_id = u32(data, id_at)[0]
            if cie_id == 0:
                offset = end
                continue
            cie_at = id_at - cie_id
            encoding = encodings.get(cie_at)
            if encoding is None:
                encoding = encodings[cie_at] = reader.cie(cie_at).fde_encoding
            if encoding == 0x1B:
                rel, size = start_size(data, id_at + 4)
                if size:
                    found.append(((reader.address + id_at + 4 + rel) & _MASK, size, offset))
                offset = end
                continue
        end, id_at, _, _ = reader.header(offset)
        if end == id_at and eh:  # a zero length ends .eh_frame
            break
        head = reader.fde_head(offset)
        if head is not None and head[3]:
            found.append((head[2], head[3], offset))
        offset = end
    found.sort(key=lambda f: (f[0], f[2]))
    ends = array("Q", ((f[0] + f[1]) & _MASK for f in found))
    return EveryFde(name, array("Q", (f[0] for f in found)), ends,
                    array("Q", (f[2] for f in found)), reaches(ends))


def reaches(ends: array[int]) -> array[int]:
    """The running maximum of `ends` (EveryFde.reach)."""
    reach = array("Q", ends)
    for k in range(1, len(reach)):
        if reach[k - 1] > reach[k]:
            reach[k] = reach[k - 1]
    return reach


class ListedHeads(NamedTuple):
    """Reader.fde_head of each FDE a CfiSection lists, position for position, as columns of
    32-bit numbers; size 0 where the entry is no FDE, starts elsewhere than listed, is empty,
    does not decode or does not fit (ask the reader then)."""

    sizes: array[int]
    cies: array[int]  # its CIE's offset
    bodies: array[int]  # where its instructions begin
    ends: array[int]  # where its entry ends


_USUAL = {e: struct.Struct(e + "IIii") for e in "<>"}  # length, CIE pointer, start, size
_MANY = 4096  # fde_ends_at asked this many reads every head at once
_CHUNK = 16384  # entries read at once by _listed_heads: a few MB of tuples at a time


def _listed_heads(reader: EntryReader, starts: array[int], offsets: array[int]) -> ListedHeads:
    """The heads of the FDEs at `offsets`, listed as starting at `starts`. The usual
    `.eh_frame` FDE (as _scan) is read by C loops over all offsets at once and checked in
    bulk: a BOLTed libLLVM's debug file asks for 178k heads and its index for 175k, too
    many to read one by one (docs/benchmarks.md); any other entry (checks failed) through
    the reader."""
    data, n = reader.data, len(offsets)
    wide = "I" if len(data) <= 0xFFFFFFFF else "Q"
    cols = ListedHeads(array("I"), array(wide), array(wide), array(wide))
    if not reader.eh or not n or max(offsets) + 17 > len(data):
        return _heads_one_by_one(reader, starts, offsets, cols, range(n))
    unpack = partial(_USUAL[reader.e].unpack_from, data)
    base, usual, bad = reader.address + 8, _usual_cies(reader), []
    for lo in range(0, n, _CHUNK):
        chunk = offsets[lo:lo + _CHUNK]
        lengths, ids, rels, sizes = zip(*map(unpack, chunk), strict=True)
        ends = list(map(add, chunk, map((4).__add__, lengths)))
        cies = list(map(sub, map((4).__add__, chunk), ids))
        augs = bytes(map(data.__getitem__, map((16).__add__, chunk)))
        bodies = list(map(add, map((17).__add__, chunk), augs))
        begins = list(map(_MASK.__and__, map(add, map(base.__add__, chunk), rels)))
        # what does not fit the columns is made to (those entries are read again below)
        cols.sizes.extend(map(max, sizes, repeat(0)))
        cols.cies.extend(map(max, cies, repeat(0)))
        cols.bodies.extend(map(min, bodies, repeat(len(data))))
        cols.ends.extend(map(min, ends, repeat(len(data))))
        if (max(lengths) == 0xFFFFFFFF or 0 in ids or max(ends) > len(data)
                or max(augs) >= 0x80 or any(map(gt, bodies, ends)) or min(sizes) < 0
                or begins != starts[lo:lo + _CHUNK].tolist() or not usual(set(cies))):
            bad += [lo + k for k in range(len(chunk)) if not (
                lengths[k] != 0xFFFFFFFF and ids[k] and ends[k] <= len(data) and augs[k] < 0x80
                and bodies[k] <= ends[k] and sizes[k] >= 0 and begins[k] == starts[lo + k]
                and usual({cies[k]}))]
    return _heads_one_by_one(reader, starts, offsets, cols, bad) if bad else cols


def _usual_cies(reader: EntryReader) -> Callable[[set[int]], bool]:
    """Whether all the CIEs at these offsets are usual: they decode, with pointers
    pcrel|sdata4 and a `z` augmentation (a one-byte augmentation length in each FDE then)."""
    known: dict[int, bool] = {}

    def usual(offsets: set[int]) -> bool:
        for offset in offsets:
            if offset not in known:
                try:
                    cie = reader.cie(offset)
                    known[offset] = cie.fde_encoding == 0x1B and cie.augmentation[:1] == b"z"
                except DecodeError:
                    known[offset] = False
            if not known[offset]:
                return False
        return True

    return usual


def _heads_one_by_one(reader: EntryReader, starts: array[int], offsets: array[int],
                      cols: ListedHeads, positions: Iterable[int]) -> ListedHeads:
    """`cols` with the heads at these positions read by the reader (appended when the
    columns are shorter)."""
    for k in positions:
        try:
            head = reader.fde_head(offsets[k])
        except DecodeError:
            head = None
        row = (0, 0, 0, 0) if head is None or head[2] != starts[k] or head[3] > 0xFFFFFFFF \
            else (head[3], head[0], head[4], head[5])
        for column, value in zip(cols, row, strict=True):
            if k < len(column):
                column[k] = value
            else:
                column.append(value)
    return cols


class CfiSection:
    """One CFI section: sorted FDE starts and section offsets, and a parser for single entries."""

    def __init__(self, binary: Binary, name: str) -> None:
        from unsplit.formats.eh_frame import EntryReader

        self.name = name
        header, data = binary.section_header(name), binary.section_data(name)
        assert header is not None and data is not None
        self.address: int = header.addr
        self.data = data
        self.reader = EntryReader(name, self.data, self.address, binary.little_endian,
                                  binary.address_size)
        self.starts = array("Q")
        self.offsets = array("Q")
        self.cache: dict[int, FrameDescription | None] = {}
        self.heads: dict[int, tuple[int, Cie, int, int, int, int] | None] = {}
        self.trusted_by = TRUSTED_BY_HDR
        self._every: EveryFde | None = None
        self._listed: ListedHeads | None = None

    def listed_heads(self) -> ListedHeads:
        """The head of each FDE `starts`/`offsets` list, position for position. Made once."""
        if self._listed is None:
            self._listed = _listed_heads(self.reader, self.starts, self.offsets)
        return self._listed

    def index_all(self) -> None:
        """Every FDE by a pass over the section (no .eh_frame_hdr, or one we cannot trust)."""
        every = self.every_fde()
        self.starts = array("Q", every.starts)
        self.offsets = array("Q", every.offsets)
        self.trusted_by = TRUSTED_WITHOUT_HDR
        self._listed = None

    def every_fde(self) -> EveryFde:
        """Every non-empty FDE of the section, by (start, offset), from their headers alone:
        what a debugger that reads the whole section (GDB) chooses from. Made once."""
        if self._every is None:
            self._every = _scan(self.name, self.reader, self.data)
        return self._every

    def lookup(self, address: int) -> FrameDescription | None:
        i = bisect_right(self.starts, address) - 1
        while i >= 0:
            offset = self.offsets[i]
            if offset not in self.cache:
                self.cache[offset] = self.decode(offset)
            fd = self.cache[offset]
            if fd is not None and fd.start <= address < fd.end:
                return fd
            # an empty or shorter FDE at the same start can hide the one that covers `address`
            if i == 0 or self.starts[i - 1] != self.starts[i]:
                return None
            i -= 1
        return None

    def head(self, offset: int) -> tuple[int, Cie, int, int, int, int] | None:
        """Reader.fde_head of the entry at `offset`, kept."""
        if offset in self.heads:
            return self.heads[offset]
        head = self.heads[offset] = self.reader.fde_head(offset)
        return head

    def head_at(self, address: int) -> tuple[int, int, int] | None:
        """(offset, start, end) of the FDE that covers `address`, from its header alone (no
        rows decoded): what lookup finds, for callers that decode rows their own way."""
        i = bisect_right(self.starts, address) - 1
        while i >= 0:
            offset = self.offsets[i]
            head = self.head(offset)
            start, end = (head[2], head[2] + head[3]) if head else (0, 0)
            if start <= address < end:
                return offset, start, end
            if i == 0 or self.starts[i - 1] != self.starts[i]:
                return None
            i -= 1
        return None

    def decode(self, offset: int) -> FrameDescription | None:
        from unsplit.formats.eh_frame import FrameDescription, decode_rows

        fde = self.reader.fde(offset)
        if fde is None:
            return None
        cie = fde.cie
        rows = decode_rows(cie, fde, fde.start)
        return FrameDescription(self.name, offset, fde.start, fde.start + fde.size,
                                cie.return_address_register, b"S" in cie.augmentation,
                                tuple(rows))


def _eh_frame_hdr(binary: Binary, eh: CfiSection) -> bool:
    """Fill `eh` from .eh_frame_hdr's binary search table; False when it cannot be used."""
    hdr, data = binary.section_header(".eh_frame_hdr"), binary.section_data(".eh_frame_hdr")
    if hdr is None or data is None:
        return False
    base = hdr.addr
    # version 1; eh_frame_ptr pcrel|sdata4; fde_count udata4; table datarel|sdata4: what every
    # linker writes. Anything else: parse the section instead.
    if len(data) < 12 or data[:4] != b"\x01\x1b\x03\x3b":
        return False
    eh_ptr, count = struct.unpack_from("<iI", data, 4)
    if base + 4 + eh_ptr != eh.address or len(data) < 12 + 8 * count:
        return False
    # With arrays and map, not a loop in Python: GDB's unwinder reads a BOLTed libLLVM's
    # 218,487 entries in every session.
    table = array("i")
    table.frombytes(data[12:12 + 8 * count])
    if sys.byteorder != "little":
        table.byteswap()
    starts = list(map((base & _MASK).__add__, table[0::2]))
    offsets = list(map((base - eh.address).__add__, table[1::2]))
    if count and (min(starts) < 0 or max(starts) > _MASK or min(offsets) < 0
                  or max(offsets) >= len(eh.data) or starts != sorted(starts)):
        return False
    eh.starts = array("Q", starts)
    eh.offsets = array("Q", offsets)
    return True


class CfiTable:
    """The CFI of one binary: `.eh_frame` first (what runs), then `.debug_frame`."""

    def __init__(self, binary: Binary) -> None:
        self.binary = binary
        self._sections: list[CfiSection] | None = None
        self._fde_ends: dict[int, int | None] = {}  # fde_ends_at's answers worked out ahead

    @property
    def sections(self) -> list[CfiSection]:
        if self._sections is None:
            found = []
            for name in (".eh_frame", ".debug_frame"):
                sec = self.binary.section_header(name)
                if sec is None or sec.type == _SHT_NOBITS or not sec.size:
                    continue
                s = CfiSection(self.binary, name)
                if name != ".eh_frame" or not _eh_frame_hdr(self.binary, s):
                    s.index_all()
                found.append(s)
            self._sections = found
        return self._sections

    def fde_at(self, address: int) -> FrameDescription | None:
        """The decoded FDE covering file address `address`, or None."""
        for s in self.sections:
            fd = s.lookup(address)
            if fd is not None:
                return fd
        return None

    def head_at(self, address: int) -> tuple[str, int, int, int] | None:
        """(section, offset, start, end) of the FDE fde_at would give, without decoding it."""
        for s in self.sections:
            found = s.head_at(address)
            if found is not None:
                return (s.name, *found)
        return None

    def fde_ends_at(self, addresses: Sequence[int]) -> list[int | None]:
        """For each address, the end of the FDE head_at gives there when that FDE starts
        there, else None (and None where that FDE does not decode): where the CFI says the
        code that starts there ends. One FDE listed at an address of the first section, the
        usual case, is read without head_at's walk; from the section's heads read all at
        once when many addresses are asked (a BOLTed libLLVM's index asks 175k)."""
        first = self.sections[0] if self.sections else None
        heads = None if first is None or len(addresses) < _MANY else first.listed_heads()
        out: list[int | None] = []
        known = self._fde_ends
        for address in addresses:
            if address in known:
                out.append(known[address])
                continue
            if heads is not None and first is not None:
                listed = first.starts
                j = bisect_right(listed, address) - 1
                if (j >= 0 and listed[j] == address and (not j or listed[j - 1] != address)
                        and heads.sizes[j]):
                    out.append(address + heads.sizes[j])
                    continue
            try:
                out.append(self._fde_end_at(address, first))
            except DecodeError:
                out.append(None)
        return out

    def work_out_fde_ends(self) -> None:
        """:meth:`fde_ends_at` of every FDE's start, worked out now and kept: a debug file's
        writer asks it of most of them, and does this while another process scans BAT
        (unsplit.index.bolt.scan_ahead)."""
        starts = sorted({start for _, start in self.fde_starts()})
        self._fde_ends = dict(zip(starts, self.fde_ends_at(starts), strict=True))

    def _fde_end_at(self, address: int, first: CfiSection | None) -> int | None:
        if first is not None:
            listed = first.starts
            j = bisect_right(listed, address)
            if j and listed[j - 1] == address and (j < 2 or listed[j - 2] != address):
                head = first.reader.fde_head(first.offsets[j - 1])
                if head is not None and head[2] == address and head[3]:
                    return address + head[3]
        found = self.head_at(address)
        return found[3] if found is not None and found[2] == address else None

    def section_named(self, name: str) -> CfiSection:
        return next(s for s in self.sections if s.name == name)

    def why_trusted(self, section: str) -> str:
        """Why fde_at takes, of several FDEs of `section` that cover an address, the one it
        takes (TRUSTED_BY_HDR or TRUSTED_WITHOUT_HDR)."""
        return self.section_named(section).trusted_by

    def fde_starts(self) -> list[tuple[str, int]]:
        """(section, start) of every FDE, in address order per section."""
        return [(s.name, a) for s in self.sections for a in s.starts]


_TABLES = PerFile(CfiTable)


def table_for(binary: Binary) -> CfiTable:
    """The CfiTable of `binary`, made once and kept as long as the Binary lives (the index
    cache keeps one Binary per file for the session)."""
    return _TABLES(binary)
