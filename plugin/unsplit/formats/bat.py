"""BOLT Address Translation: the ``.note.bolt_bat`` note of ``llvm-bolt --enable-bat``.
Specification: ``shared/specs/bolt-bat.md`` (§1 container, §2 payload, §3.2 translation), from
LLVM's ``bolt/lib/Profile/BoltAddressTranslation.cpp``. Two unversioned wire formats (§2.7):
LLVM 19-22's LEB128 tables (§2.2, §2.4), tried first and required to consume the descriptor
exactly, else LLVM 14-18's fixed-width maps (§2.9)."""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping, Sequence
from typing import Literal, NamedTuple

from unsplit.errors import DecodeError, UnsupportedVersion
from unsplit.formats.leb128 import encode_sleb128, encode_uleb128, leb128

SECTION = ".note.bolt_bat"
NOTE_OWNER = b"BOLT"
NT_BOLT_BAT = 1  # BinarySection::NT_BOLT_BAT
BRANCHENTRY = 1  # current format: low bit of (InputOffset << 1) | flag (spec §2.1)
LEGACY_BRANCHENTRY = 0x80000000  # LLVM 14-18 (spec §2.9)
NOTE_HEADER = 12

CURRENT = "llvm19+"
LEGACY = "llvm14-18"
WRITERS = {CURRENT: "LLVM 19-22", LEGACY: "LLVM 14-18"}

_M64 = (1 << 64) - 1
_M32 = (1 << 32) - 1

Kind = Literal["hot", "cold"]


class BatEntry(NamedTuple):
    """One pair of a map: output bytes from ``output_offset`` on came from ``input_offset``.

    Both offsets follow spec §2.3: the output offset is relative to the fragment's own start, the
    input offset to the start of the whole *input* function (also for cold fragments).
    """

    output_offset: int
    input_offset: int
    is_branch: bool  # branch/call source entry (BRANCHENTRY set); else a basic-block entry
    bb_hash: int | None = None  # BlendedBlockHash, BB entries of the current format only
    bb_index: int | None = None  # input basic-block index, BB entries of the current format only


class BatMap:
    """The map of one fragment (spec §3.1), keyed by its output start address.

    ``output_offsets`` is sorted (ascending, duplicates kept in file order: deleted-block
    entries share the key "end of the main fragment", §2.3). ``input_values`` holds
    ``(input_offset << 1) | is_branch`` for both formats. ``bb_hashes``/``bb_indices`` are 0 for
    branch entries and for the legacy format.
    """

    __slots__ = ("address", "bb_hashes", "bb_indices", "equal_elems", "func_hash",
                 "hot_index", "input_skew", "input_values", "kind", "num_blocks",
                 "output_offsets", "parent", "secondary_entry_points")

    def __init__(self, address: int, kind: Kind, output_offsets: array[int],
                 input_values: array[int], bb_hashes: array[int], bb_indices: array[int],
                 equal_elems: int = 0, func_hash: int | None = None,
                 num_blocks: int | None = None, secondary_entry_points: tuple[int, ...] = (),
                 parent: int | None = None, hot_index: int | None = None,
                 input_skew: int = 0) -> None:
        self.address, self.kind = address, kind
        self.output_offsets, self.input_values = output_offsets, input_values
        self.bb_hashes, self.bb_indices = bb_hashes, bb_indices
        self.equal_elems = equal_elems
        # Main fragments (hot table) only:
        self.func_hash, self.num_blocks = func_hash, num_blocks
        self.secondary_entry_points = secondary_entry_points
        # Split fragments (cold table) only:
        self.parent = parent  # output address of the main fragment
        self.hot_index = hot_index
        self.input_skew = input_skew  # ColdInputSkew: input offset of the first entry

    def __len__(self) -> int:
        return len(self.output_offsets)

    def entry(self, i: int) -> BatEntry:
        value = self.input_values[i]
        branch = bool(value & BRANCHENTRY)
        has_bb = not branch and self.bb_present
        return BatEntry(
            self.output_offsets[i],
            value >> 1,
            branch,
            self.bb_hashes[i] if has_bb else None,
            self.bb_indices[i] if has_bb else None,
        )

    def entries(self) -> Iterator[BatEntry]:
        for i in range(len(self.output_offsets)):
            yield self.entry(i)

    @property
    def bb_present(self) -> bool:
        """Whether BB hashes/indices were encoded (current format only)."""
        return len(self.bb_hashes) > 0

    def anchor(self, offset: int) -> int | None:
        """Index of the entry BOLT anchors ``offset`` to: the last one whose output offset is <=
        ``offset`` (``upper_bound - 1``, so the *last* of duplicates), or None (spec §3.2)."""
        i = bisect_right(self.output_offsets, offset) - 1
        return None if i < 0 else i

    def translate(self, offset: int, is_branch_src: bool = False) -> int:
        """BOLT's ``translate(FragAddr, Offset, IsBranchSrc)`` (spec §3.2): output offset in this
        fragment -> input offset in the parent input function. No anchor: ``offset`` unchanged."""
        i = self.anchor(offset)
        if i is None:
            return offset
        value = self.input_values[i] >> 1
        if is_branch_src:
            return int(value)
        return int(offset - self.output_offsets[i] + value)

    def max_input_offset(self) -> int:
        return max((v >> 1 for v in self.input_values), default=0)


class BatTable:
    """A decoded ``.note.bolt_bat``: every fragment's map, hot (main) fragments in table order.

    ``maps`` may decode a map only when it is first asked for (formats.bat_scan); everything
    else here is flat arrays, so a 200k-map table costs no Python object per map until used.
    """

    __slots__ = ("_addresses", "_child_addresses", "_child_parents", "_parents", "format",
                 "hot", "maps")

    def __init__(self, format: str, maps: Mapping[int, BatMap], hot: Sequence[int],
                 addresses: array[int] | None = None, parents: array[int] | None = None,
                 child_parents: array[int] | None = None,
                 child_addresses: array[int] | None = None) -> None:
        self.format = format  # CURRENT or LEGACY
        self.maps = maps  # by output address, ascending
        self.hot = hot  # main-fragment addresses in hot-table order (HotFuncs)
        self._addresses = array("Q") if addresses is None else addresses  # ascending
        self._parents = array("Q") if parents is None else parents  # main fragment of each
        self._child_parents = array("Q") if child_parents is None else child_parents
        self._child_addresses = array("Q") if child_addresses is None else child_addresses
        # (split fragments, by (parent, address))

    @property
    def writer(self) -> str:
        return WRITERS[self.format]

    def position(self, address: int) -> int | None:
        """Index of the map starting at ``address`` in address order, or None."""
        i = bisect_left(self._addresses, address)
        return i if i < len(self._addresses) and self._addresses[i] == address else None

    def parent_of(self, address: int) -> int | None:
        """Main-fragment address of the fragment starting at ``address`` (itself when hot)."""
        i = self.position(address)
        return None if i is None else self._parents[i]

    def split_fragments(self, hot_address: int) -> tuple[int, ...]:
        """Addresses of the split (cold/warm) fragments of a main fragment, ascending."""
        i = bisect_left(self._child_parents, hot_address)
        j = bisect_right(self._child_parents, hot_address)
        return tuple(self._child_addresses[i:j])

    def starts(self) -> array[int]:
        """Every map's start, ascending."""
        return self._addresses

    def parents(self) -> array[int]:
        """The main fragment of each map of :meth:`starts` (itself when hot)."""
        return self._parents

    def split_parents(self) -> array[int]:
        """The main fragment of every split fragment, ascending (repeated per fragment)."""
        return self._child_parents

    def map_before(self, address: int) -> BatMap | None:
        """The map with the greatest start <= ``address``; the caller bounds it by a size."""
        i = bisect_right(self._addresses, address) - 1
        return None if i < 0 else self.maps[self._addresses[i]]

    def start_before(self, address: int) -> int | None:
        """The greatest map start <= ``address`` (no map decoded)."""
        i = bisect_right(self._addresses, address) - 1
        return None if i < 0 else self._addresses[i]

    def next_start(self, address: int) -> int | None:
        """The least map start > ``address``."""
        i = bisect_right(self._addresses, address)
        return self._addresses[i] if i < len(self._addresses) else None

    def maps_between(self, lo: int, hi: int) -> list[BatMap]:
        i = bisect_left(self._addresses, lo)
        j = bisect_left(self._addresses, hi)
        return [self.maps[a] for a in self._addresses[i:j]]


def table_from_columns(fmt: str, maps: Mapping[int, BatMap], hot: Sequence[int],
                       addresses: array[int], parents: array[int]) -> BatTable:
    """A BatTable from the sorted map starts and each one's main fragment (itself when hot)."""
    children = sorted((p, a) for a, p in zip(addresses, parents, strict=True) if p != a)
    return BatTable(fmt, maps, hot, addresses, parents,
                    array("Q", (p for p, _ in children)), array("Q", (a for _, a in children)))


def build_table(fmt: str, maps: dict[int, BatMap], hot: Sequence[int]) -> BatTable:
    """A BatTable from maps (any order) and the hot-table order; derives the lookup columns."""
    ordered = dict(sorted(maps.items()))
    parents = array("Q", (a if m.parent is None else m.parent for a, m in ordered.items()))
    return table_from_columns(fmt, ordered, tuple(hot), array("Q", ordered), parents)


# --------------------------------------------------------------------------------------------
# Container (spec §1)


def note_descriptor(section_data: bytes, section: str = SECTION) -> tuple[bytes, int]:
    """The BAT descriptor inside the note section, and its offset in the section.

    Notes of other owners or types are skipped by their lengths, as readers of SHT_NOTE do.
    """
    data = bytes(section_data)
    pos = 0
    while pos < len(data):
        if len(data) - pos < NOTE_HEADER:
            raise DecodeError(section, pos, f"truncated note header ({len(data) - pos} bytes)")
        namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
        name_at = pos + NOTE_HEADER
        desc_at = name_at + _align4(namesz)
        if desc_at + descsz > len(data):
            raise DecodeError(
                section, pos + 4, f"note descriptor of {descsz} bytes runs past the section end"
            )
        name = data[name_at : name_at + namesz].rstrip(b"\0")
        if name == NOTE_OWNER and ntype == NT_BOLT_BAT:
            return data[desc_at : desc_at + descsz], desc_at
        pos = desc_at + _align4(descsz)
    raise DecodeError(section, 0, 'no note with owner "BOLT" and type 1 (NT_BOLT_BAT)')


def _align4(n: int) -> int:
    return (n + 3) & ~3


def decode_note(section_data: bytes, section: str = SECTION) -> BatTable:
    """Decode a whole ``.note.bolt_bat`` section (note header and payload)."""
    desc, base = note_descriptor(section_data, section)
    return decode_payload(desc, base, section)


def decode_payload(desc: bytes, base: int = 0, section: str = SECTION) -> BatTable:
    """Decode a BAT descriptor of either format (spec §2.7 "Detecting the format").

    ``base`` is the descriptor's offset in the section, so errors name section offsets.
    """
    try:
        return decode_current(desc, base, section)
    except DecodeError as current_error:
        if legacy_size_matches(desc):
            return decode_legacy(desc, base, section)
        raise current_error from None


# --------------------------------------------------------------------------------------------
# Current format, LLVM 19-22 (spec §2.2, §2.4)


class _Reader:
    """A cursor over the descriptor; every read raises DecodeError with a section offset."""

    __slots__ = ("base", "data", "end", "pos", "section")

    def __init__(self, data: bytes, base: int, section: str) -> None:
        self.data = data
        self.pos = 0
        self.end = len(data)
        self.base = base
        self.section = section

    def fail(self, at: int, message: str) -> DecodeError:
        return DecodeError(self.section, self.base + at, message)

    def uleb(self, what: str) -> int:
        value, self.pos = leb128(self.data, self.pos, self.section, False, 64, what, self.base)
        return value

    def sleb(self, what: str) -> int:
        value, self.pos = leb128(self.data, self.pos, self.section, True, 64, what, self.base)
        return value

    def u64(self, what: str) -> int:
        pos = self.pos
        if pos + 8 > self.end:
            raise self.fail(pos, f"truncated u64 ({what})")
        self.pos = pos + 8
        return int.from_bytes(self.data[pos : pos + 8], "little")

    def raw(self, n: int, what: str) -> bytes:
        pos = self.pos
        if pos + n > self.end:
            raise self.fail(pos, f"{what}: {n} bytes past the end")
        self.pos = pos + n
        return self.data[pos : pos + n]


def decode_current(desc: bytes, base: int = 0, section: str = SECTION) -> BatTable:
    """Decode the LLVM 19-22 payload; the descriptor must be consumed exactly (spec §2.4)."""
    r = _Reader(bytes(desc), base, section)
    prev = 0  # the continuous output-address cursor, never reset (PR #76904)
    maps: dict[int, BatMap] = {}
    hot: list[int] = []
    kinds: tuple[Kind, Kind] = ("hot", "cold")
    for kind in kinds:
        count_at = r.pos
        count = r.uleb(f"{kind} function count")
        if count > r.end - r.pos:  # each record takes several bytes: cheap sanity bound
            raise r.fail(count_at, f"{kind} function count {count} exceeds the note size")
        hot_index = 0
        for _ in range(count):
            record_at = r.pos
            m, prev, hot_index = _decode_function(r, kind, prev, hot_index, hot)
            if m.address in maps:
                raise r.fail(record_at, f"second map for address {m.address:#x}")
            maps[m.address] = m
            if kind == "hot":
                hot.append(m.address)
    if r.pos != r.end:
        raise r.fail(r.pos, f"{r.end - r.pos} bytes left after the cold table")
    return build_table(CURRENT, maps, tuple(hot))


def _decode_function(
    r: _Reader, kind: Kind, prev: int, hot_index: int, hot: Sequence[int]
) -> tuple[BatMap, int, int]:
    """One HotFunction or ColdFunction record (spec §2.2); returns (map, prev, hot_index)."""
    address = (prev + r.uleb("address delta")) & _M64
    prev = address
    func_hash = num_blocks = parent = index = None
    n_sec = skew = 0
    if kind == "hot":
        func_hash = r.u64("function hash")
        num_blocks = r.uleb("block count")
        n_sec_at = r.pos
        n_sec = r.uleb("secondary entry point count")
        if n_sec > r.end - r.pos:
            raise r.fail(n_sec_at, f"{n_sec} secondary entry points exceed the note size")
    else:
        index_at = r.pos
        # HotIndex deltas may be "negative" (wrapped 10-byte ULEBs): cold records are sorted
        # by address, not by parent (spec §2.2).
        hot_index = (hot_index + r.uleb("hot index delta")) & _M64
        if hot_index >= len(hot):
            raise r.fail(
                index_at,
                f"hot index {hot_index} out of range (hot table has {len(hot)} functions)",
            )
        index = hot_index
        parent = hot[hot_index]
        skew = r.uleb("cold input skew") & _M32
    n_at = r.pos
    n = r.uleb("entry count")
    if n > r.end - r.pos:
        raise r.fail(n_at, f"entry count {n} exceeds the note size")
    eq_at = r.pos
    eq = r.uleb("equal elements count")
    if eq > n:
        raise r.fail(eq_at, f"{eq} deduplicated entries but only {n} entries")
    mask = int.from_bytes(r.raw((eq + 7) // 8, "branch-entry bitmask"), "little") if eq else 0

    outs, values = array("I"), array("I")
    hashes, indices = array("Q"), array("I")
    put_out, put_value, put_hash, put_index = (outs.append, values.append, hashes.append,
                                               indices.append)
    acc = 0  # (input offset << 1) | BRANCHENTRY, as the u32 LLVM inserts in its multimap
    bb_index = 0
    last_out = -1
    data, end, section, base = r.data, r.end, r.section, r.base
    from_bytes = int.from_bytes
    # The common one-byte LEB128s and the u64 hash are read inline, the others with leb128()
    # itself rather than through the reader, and the position is a local: this loop runs once
    # per entry, a million times for a 10 MB table (bench/libllvm.py: symbolize decodes a map
    # per address it is asked about).
    pos = r.pos
    for j in range(n):
        entry_at = pos
        if pos < end and (byte := data[pos]) < 0x80:
            prev = (prev + byte) & _M64
            pos += 1
        else:
            delta, pos = leb128(data, pos, section, False, 64, "output address delta", base)
            prev = (prev + delta) & _M64
        out = (prev - address) & _M32
        if out < last_out:
            raise r.fail(entry_at, f"output offset {out:#x} goes backwards (after {last_out:#x})")
        last_out = out
        if j < eq:
            acc = ((((out + skew) & _M32) << 1) | ((mask >> j) & 1)) & _M32
        elif pos < end and (byte := data[pos]) < 0x40:  # one-byte non-negative SLEB
            acc = (acc + byte) & _M32
            pos += 1
        else:
            delta, pos = leb128(data, pos, section, True, 64, "input offset delta", base)
            acc = (acc + delta) & _M32
        put_out(out)
        put_value(acc)
        if acc & BRANCHENTRY:
            put_hash(0)
            put_index(0)
            continue
        if pos + 9 <= end and data[pos + 8] < 0x80:
            put_hash(from_bytes(data[pos : pos + 8], "little"))
            bb_index = (bb_index + data[pos + 8]) & _M64
            pos += 9
        else:
            r.pos = pos
            put_hash(r.u64("block hash"))
            bb_index = (bb_index + r.uleb("block index delta")) & _M64
            pos = r.pos
        put_index(bb_index & _M32)
    r.pos = pos
    sec: list[int] = []
    off = 0
    for _ in range(n_sec):
        off = (off + r.uleb("secondary entry point delta")) & _M32
        sec.append(off)
    m = BatMap(
        address=address,
        kind=kind,
        output_offsets=outs,
        input_values=values,
        bb_hashes=hashes,
        bb_indices=indices,
        equal_elems=eq,
        func_hash=func_hash,
        num_blocks=num_blocks,
        secondary_entry_points=tuple(sec),
        parent=parent,
        hot_index=index,
        input_skew=skew,
    )
    return m, prev, hot_index


# --------------------------------------------------------------------------------------------
# Legacy format, LLVM 14-18 (spec §2.9)


def legacy_size_matches(desc: bytes) -> bool:
    """Whether the fixed-width layout accounts for every byte: ``4 + Σ(12 + 8·NumEntries) + 4 +
    16·NumCold == descsz`` (spec §2.7). Cheap, and never raises."""
    n = len(desc)
    if n < 8:
        return False
    (count,) = struct.unpack_from("<I", desc, 0)
    pos = 4
    for _ in range(count):
        if pos + 12 > n:
            return False
        (entries,) = struct.unpack_from("<I", desc, pos + 8)
        pos += 12 + 8 * entries
    if pos + 4 > n:
        return False
    (cold,) = struct.unpack_from("<I", desc, pos)
    return bool(pos + 4 + 16 * cold == n)


def decode_legacy(desc: bytes, base: int = 0, section: str = SECTION) -> BatTable:
    """Decode the LLVM 14-18 fixed-width payload into the same records (no hashes, no indices).

    All fragments share one table; the (cold, hot) pairs tell split fragments from main ones.
    """
    data = bytes(desc)
    n = len(data)

    def need(pos: int, size: int, what: str) -> None:
        if pos + size > n:
            raise DecodeError(
                section, base + pos, f"truncated {what} (legacy BAT, {WRITERS[LEGACY]})"
            )

    need(0, 4, "function count")
    (count,) = struct.unpack_from("<I", data, 0)
    pos = 4
    raw: list[tuple[int, array[int], array[int]]] = []
    for _ in range(count):
        need(pos, 12, "function header")
        address, entries = struct.unpack_from("<QI", data, pos)
        pos += 12
        need(pos, 8 * entries, "entries")
        words = array("I")
        words.frombytes(data[pos : pos + 8 * entries])
        if array("I", [1]).tobytes() != b"\1\0\0\0":
            words.byteswap()
        pos += 8 * entries
        outs = words[0::2]
        # Re-encode the bit-31 flag as the current format's low bit so one translator serves both.
        values = array("I", (((v & 0x7FFFFFFF) << 1 | (v >> 31)) & _M32 for v in words[1::2]))
        if any(outs[i] > outs[i + 1] for i in range(len(outs) - 1)):
            raise DecodeError(section, base + pos, "legacy BAT map keys are not ascending")
        raw.append((address, outs, values))
    need(pos, 4, "cold pair count")
    (cold_count,) = struct.unpack_from("<I", data, pos)
    pos += 4
    parents: dict[int, int] = {}
    for _ in range(cold_count):
        need(pos, 16, "cold pair")
        cold, hot_addr = struct.unpack_from("<QQ", data, pos)
        parents[cold] = hot_addr
        pos += 16
    if pos != n:
        raise DecodeError(section, base + pos, f"{n - pos} bytes left after the legacy BAT")
    maps: dict[int, BatMap] = {}
    for address, outs, values in raw:
        parent = parents.get(address)
        maps[address] = BatMap(
            address=address,
            kind="hot" if parent is None else "cold",
            output_offsets=outs,
            input_values=values,
            bb_hashes=array("Q"),
            bb_indices=array("I"),
            parent=parent,
        )
    for cold, hot_addr in parents.items():
        if cold in maps and hot_addr not in maps:
            raise DecodeError(
                section, base, f"cold fragment {cold:#x} names unknown parent {hot_addr:#x}"
            )
    hot = tuple(a for a, m in sorted(maps.items()) if m.kind == "hot")
    return build_table(LEGACY, maps, hot)


def refuse_legacy(table: BatTable) -> None:
    """For callers that only trust the current format: raise UnsupportedVersion on legacy."""
    if table.format == LEGACY:
        raise UnsupportedVersion(
            SECTION, 0, f"BAT in the fixed-width format written by {WRITERS[LEGACY]}"
        )


# --------------------------------------------------------------------------------------------
# Text dump and encoder (tests, fixtures, and `bb` diagnostics)


def dump(table: BatTable) -> str:
    """The text ``llvm-bat-dump --dump-all`` prints after its first line (spec §5.1)."""
    lines = [f"BAT tables for {len(table.maps)} functions:"]
    for addr, m in table.maps.items():
        head = f"Function Address: {addr:#x}"
        if m.kind == "hot" and m.func_hash is not None:
            head += f", hash: {m.func_hash:#x}"
        lines += [head, "BB mappings:"]
        for e in m.entries():
            text = f"{e.output_offset:#x} -> {e.input_offset:#x}"
            if e.is_branch:
                text += " (branch)"
            elif e.bb_hash is not None:
                text += f" hash: {e.bb_hash:#x}"
            lines.append(text)
        if m.num_blocks is not None:
            lines.append(f"NumBlocks: {m.num_blocks}")
        if m.secondary_entry_points:
            lines.append(f"{len(m.secondary_entry_points)} secondary entry points:")
            lines += [f"{off:x}" for off in m.secondary_entry_points]
        lines.append("")
    cold = [(a, m.parent) for a, m in table.maps.items() if m.parent is not None]
    if cold:
        lines.append(f"{len(cold)} cold mappings:")
        lines += [f"{a:#x} -> {p:x}" for a, p in cold]
        lines.append("")
    return "\n".join(lines) + "\n"


def encode_payload(table: BatTable) -> bytes:
    """Encode ``table`` in the LLVM 19-22 format as BOLT's ``writeMaps`` does (spec §2.2).

    Hot records in ``table.hot`` order, cold records by address; EqualElems is recomputed as
    the longest prefix with ``output == input - skew``.
    """
    out = bytearray()
    prev = 0
    hot_pos = {a: i for i, a in enumerate(table.hot)}
    for kind in ("hot", "cold"):
        if kind == "hot":
            records = [table.maps[a] for a in table.hot]
        else:
            records = [m for m in table.maps.values() if m.kind == "cold"]
        out += encode_uleb128(len(records))
        hot_index = 0
        for m in records:
            out += encode_uleb128((m.address - prev) & _M64)
            prev = m.address
            skew = 0
            if kind == "hot":
                out += (m.func_hash or 0).to_bytes(8, "little")
                out += encode_uleb128(m.num_blocks or 0)
                out += encode_uleb128(len(m.secondary_entry_points))
            else:
                index = hot_pos[m.parent] if m.parent is not None else 0
                out += encode_uleb128((index - hot_index) & _M64)
                hot_index = index
                skew = m.input_skew
                out += encode_uleb128(skew)
            n = len(m)
            eq = 0
            while eq < n and m.output_offsets[eq] == (m.input_values[eq] >> 1) - skew:
                eq += 1
            out += encode_uleb128(n) + encode_uleb128(eq)
            if eq:
                mask = sum((m.input_values[j] & 1) << j for j in range(eq))
                out += mask.to_bytes((eq + 7) // 8, "little")
            acc = 0
            bb_index = 0
            for j in range(n):
                address = (m.address + m.output_offsets[j]) & _M64
                out += encode_uleb128((address - prev) & _M64)
                prev = address
                value = m.input_values[j]
                if j >= eq:
                    delta = value - acc
                    out += encode_sleb128(delta)
                acc = value
                if not value & BRANCHENTRY:
                    out += (m.bb_hashes[j] if m.bb_present else 0).to_bytes(8, "little")
                    index_j = m.bb_indices[j] if m.bb_present else 0
                    out += encode_uleb128((index_j - bb_index) & _M64)
                    bb_index = index_j
            off = 0
            for sec in m.secondary_entry_points:
                out += encode_uleb128((sec - off) & _M64)
                off = sec
    return bytes(out)


def encode_note(payload: bytes) -> bytes:
    """Wrap a payload in the note container (spec §1): owner "BOLT", type 1, 4-byte padding."""
    header = struct.pack("<III", len(NOTE_OWNER) + 1, len(payload), NT_BOLT_BAT)
    pad = b"\0" * (_align4(len(payload)) - len(payload))
    return header + NOTE_OWNER + b"\0\0\0\0" + payload + pad
