"""Unit tests of the BAT decoder (shared/specs/bolt-bat.md §1-§3) on bytes from the spec."""

from __future__ import annotations

import re
import struct
from array import array
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unsplit.errors import DecodeError, UnsupportedVersion
from unsplit.formats import bat
from unsplit.formats.leb128 import encode_sleb128, encode_uleb128, sleb128, uleb128

# §2.5: the record of foo in t.bolt, byte for byte.
FOO_RECORD = bytes.fromhex(
    "80808004"  # address delta 0x800000
    "947ae9ca0e3dc6e0"  # FuncHash
    "0800"  # NumBlocks 8, NumSecEntryPoints 0
    "040202"  # NumEntries 4, EqualElems 2, BranchEntries 0b10
    "00"
    "0000059742ae00f0"
    "00"  # e0: 0 -> 0 (BB), hash, BBIndex +0
    "09"  # e1: 0x9 -> 0x9 (branch)
    "06ff01"
    "89000263b8233fe5"
    "04"  # e2: 0xf -> 0x89 (BB), hash, BBIndex +4
    "0205"  # e3: 0x11 -> 0x8b (branch)
)

# §5.1: llvm-bat-dump --dump-all of t.bolt (LLVM 22.1.8), after the first line.
T_BOLT_DUMP = """\
BAT tables for 6 functions:
Function Address: 0x800000, hash: 0xe0c63d0ecae97a94
BB mappings:
0x0 -> 0x0 hash: 0xf000ae4297050000
0x9 -> 0x9 (branch)
0xf -> 0x89 hash: 0xe53f23b863020089
0x11 -> 0x8b (branch)
NumBlocks: 8

Function Address: 0x800018, hash: 0x74993f763dc5d933
BB mappings:
0x0 -> 0x0 hash: 0x99001431ea2d0000
0x2 -> 0x2 (branch)
NumBlocks: 3

Function Address: 0x800040, hash: 0x80f3f8351544cd88
BB mappings:
0x0 -> 0x0 hash: 0xd600ec42cddb0000
0x7 -> 0x7 (branch)
0x9 -> 0x10 hash: 0xdde25c70366f0010
0xc -> 0x13 (branch)
0x16 -> 0x1d (branch)
0x2c -> 0x33 (branch)
NumBlocks: 3

Function Address: 0x800080
BB mappings:
0x0 -> 0xb hash: 0x543f2420193f000b
0x9 -> 0x14 (branch)
0x37 -> 0x42 (branch)
0x39 -> 0x44 hash: 0x9aecad0bff1d0044
0x5e -> 0x69 (branch)
0x60 -> 0x6b hash: 0xc80e8b0c952e006b
0x7e -> 0x8d hash: 0x999dbde72d008d
0x7f -> 0x8e (branch)
0x80 -> 0x8f hash: 0xc80e85b7395f008f
0x88 -> 0x97 hash: 0x14dedde6ec0097
0xbf -> 0xce (branch)

Function Address: 0x800140
BB mappings:
0x0 -> 0x4 hash: 0x4c318344c20004
0x4 -> 0x8 (branch)
0x5 -> 0x9 hash: 0x4c0568889c0009
0x1c -> 0x20 (branch)
0x21 -> 0x25 (branch)

Function Address: 0x800166
BB mappings:
0x0 -> 0x35 hash: 0xd64ef37e800035
0xa -> 0x3f (branch)
0x15 -> 0x4a (branch)

3 cold mappings:
0x800080 -> 800000
0x800140 -> 800018
0x800166 -> 800040

"""


def table_from_dump(text: str, bb_indices: dict[int, list[int]] | None = None) -> bat.BatTable:
    """Rebuild a table from llvm-bat-dump text (BB indices are not dumped: 0, 1, 2, ...)."""
    parents = {
        int(c, 16): int(h, 16) for c, h in re.findall(r"^(0x[0-9a-f]+) -> ([0-9a-f]+)$", text, re.M)
    }
    maps: dict[int, bat.BatMap] = {}
    hot: list[int] = []
    for block in text.split("Function Address: ")[1:]:
        head, _, body = block.partition("\n")
        addr = int(head.split(",")[0], 16)
        fhash = re.search(r"hash: (0x[0-9a-f]+)", head)
        nblocks = re.search(r"NumBlocks: (\d+)", body)
        outs, values, hashes, indices = array("I"), array("I"), array("Q"), array("I")
        wanted = list((bb_indices or {}).get(addr, []))
        next_index = 0
        for o, i, rest in re.findall(r"^(0x[0-9a-f]+) -> (0x[0-9a-f]+)(.*)$", body, re.M):
            branch = "(branch)" in rest
            outs.append(int(o, 16))
            values.append(int(i, 16) << 1 | branch)
            h = re.search(r"hash: (0x[0-9a-f]+)", rest)
            hashes.append(int(h.group(1), 16) if h else 0)
            if branch:
                indices.append(0)
            else:
                indices.append(wanted.pop(0) if wanted else next_index)
                next_index += 1
        parent = parents.get(addr)
        maps[addr] = bat.BatMap(
            address=addr,
            kind="hot" if parent is None else "cold",
            output_offsets=outs,
            input_values=values,
            bb_hashes=hashes,
            bb_indices=indices,
            func_hash=int(fhash.group(1), 16) if fhash else None,
            num_blocks=int(nblocks.group(1)) if nblocks else None,
            parent=parent,
            input_skew=values[0] >> 1 if parent is not None and values else 0,
        )
        if parent is None:
            hot.append(addr)
    return bat.build_table(bat.CURRENT, maps, tuple(hot))


def mk(
    address: int,
    outs: list[int],
    values: list[int],
    hashes: list[int],
    indices: list[int],
    **kw: Any,
) -> bat.BatMap:
    kind = "cold" if kw.get("parent") is not None else "hot"
    columns = array("I", outs), array("I", values), array("Q", hashes), array("I", indices)
    return bat.BatMap(address, kind, *columns, **kw)


def t_bolt() -> bat.BatTable:
    return table_from_dump(T_BOLT_DUMP, {0x800000: [0, 4]})


def payload(hot: list[bytes], cold: list[bytes]) -> bytes:
    return bytes([len(hot)]) + b"".join(hot) + bytes([len(cold)]) + b"".join(cold)


# -- the worked example -----------------------------------------------------------------------


def test_worked_example_foo_record() -> None:
    table = bat.decode_payload(payload([FOO_RECORD], []))
    assert table.format == bat.CURRENT and table.hot == (0x800000,)
    foo = table.maps[0x800000]
    assert foo.func_hash == 0xE0C63D0ECAE97A94 and foo.num_blocks == 8
    assert foo.equal_elems == 2 and foo.kind == "hot" and foo.parent is None
    assert list(foo.entries()) == [
        bat.BatEntry(0x0, 0x0, False, 0xF000AE4297050000, 0),
        bat.BatEntry(0x9, 0x9, True),
        bat.BatEntry(0xF, 0x89, False, 0xE53F23B863020089, 4),
        bat.BatEntry(0x11, 0x8B, True),
    ]


def test_encoder_reproduces_the_spec_bytes_and_size() -> None:
    """BOLT reported "BAT section size (bytes): 256" for t.bolt: 20 bytes of note header and
    name, 236 of payload (descsz 0xec in §1)."""
    enc = bat.encode_payload(t_bolt())
    assert enc.startswith(b"\x03" + FOO_RECORD)
    assert len(enc) == 0xEC
    note = bat.encode_note(enc)
    assert len(note) == 256
    assert note[:20] == bytes.fromhex("05000000ec00000001000000424f4c5400000000")


def test_dump_matches_llvm_bat_dump_text() -> None:
    table = bat.decode_note(bat.encode_note(bat.encode_payload(t_bolt())))
    assert bat.dump(table) == T_BOLT_DUMP


def test_cold_fragment_skew_and_parent() -> None:
    table = bat.decode_payload(bat.encode_payload(t_bolt()))
    cold = table.maps[0x800080]
    assert cold.kind == "cold" and cold.parent == 0x800000 and cold.hot_index == 0
    assert cold.input_skew == 0xB and cold.equal_elems == 6  # §2.5: six "equal" entries
    assert table.split_fragments(0x800000) == (0x800080,)
    assert table.parent_of(0x800166) == 0x800040 and table.parent_of(0x800040) == 0x800040


def test_translate_rule() -> None:
    """§3.2: foo.cold.0+0x10 -> 0x1b through the branch anchor 0x9 -> 0x14; branch-source
    mode snaps to the anchor; before the first entry the offset is returned unchanged."""
    table = t_bolt()
    cold = table.maps[0x800080]
    assert cold.translate(0x10) == 0x1B
    assert cold.translate(0x10, is_branch_src=True) == 0x14
    assert cold.translate(0x7E) == 0x8D and cold.translate(0x200) == 0x200 - 0xBF + 0xCE
    assert table.maps[0x800140].translate(0x0) == 0x4
    empty = bat.BatMap(0, "hot", array("I"), array("I"), array("Q"), array("I"))
    assert empty.translate(0x33) == 0x33


def test_duplicate_keys_last_one_anchors() -> None:
    """Deleted-block entries share the key "end of main fragment" (§2.3): keep file order,
    and translate with the last of them (upper_bound - 1)."""
    m = bat.BatMap(
        0x1000,
        "hot",
        array("I", [0, 0xE, 0xE]),
        array("I", [0 << 1, 0x20 << 1, 0x30 << 1]),
        array("Q", [1, 2, 3]),
        array("I", [0, 3, 4]),
    )
    table = bat.build_table(bat.CURRENT, {0x1000: m}, (0x1000,))
    again = bat.decode_payload(bat.encode_payload(table)).maps[0x1000]
    assert [e.input_offset for e in again.entries()] == [0, 0x20, 0x30]
    assert again.translate(0xE) == 0x30 and again.translate(0xD) == 0xD


# -- wrapping arithmetic (§2.1) ---------------------------------------------------------------


def test_wrapped_deltas_hot_index_bb_index_and_address() -> None:
    """A cold fragment below the previous record, a HotIndex going back, a reversed BB index:
    all three are 10-byte ULEBs of 2^64 - k that the reader must wrap."""
    maps = {
        0x2000: mk(0x2000, [0], [0], [7], [0], func_hash=1, num_blocks=1),
        0x3000: mk(0x3000, [0, 4], [0, 0x10 << 1], [8, 9], [0, 5], func_hash=2, num_blocks=6),
        0x1000: mk(0x1000, [0, 2], [0x20 << 1, 0x8 << 1], [1, 2], [7, 2], parent=0x3000,
                   input_skew=0x20),
        0x1800: mk(0x1800, [0], [0x30 << 1], [3], [1], parent=0x2000, input_skew=0x30),
    }  # fmt: skip
    table = bat.build_table(bat.CURRENT, maps, (0x2000, 0x3000))
    enc = bat.encode_payload(table)
    assert b"\xff\xff\xff\xff\xff\xff\xff\xff\x01" in enc
    back = bat.decode_payload(enc)
    assert bat.dump(back) == bat.dump(table)
    assert back.maps[0x1800].parent == 0x2000 and back.maps[0x1800].hot_index == 0
    assert [e.bb_index for e in back.maps[0x1000].entries()] == [7, 2]


# -- errors -----------------------------------------------------------------------------------


def test_every_truncation_is_a_decode_error() -> None:
    full = bat.encode_payload(t_bolt())
    for n in range(len(full)):
        with pytest.raises(DecodeError) as info:
            bat.decode_current(full[:n], base=20)
        assert info.value.section == ".note.bolt_bat" and 20 <= info.value.offset <= 20 + n
        try:
            bat.decode_payload(full[:n])
        except DecodeError:
            pass


def test_trailing_bytes_refused() -> None:
    with pytest.raises(DecodeError, match="left after the cold table"):
        bat.decode_current(bat.encode_payload(t_bolt()) + b"\0")


def test_hot_index_out_of_range_names_its_offset() -> None:
    cold = encode_uleb128(0x100) + encode_uleb128(5) + b"\0" + b"\0\0"  # delta, HotIndex 5
    data = payload([FOO_RECORD], [cold])
    at = 1 + len(FOO_RECORD) + 1 + 2
    with pytest.raises(DecodeError) as info:
        bat.decode_current(data, base=20)
    assert info.value.offset == 20 + at and "hot index 5 out of range" in str(info.value)


def test_huge_counts_and_ulebs() -> None:
    with pytest.raises(DecodeError, match="exceeds the note size"):
        bat.decode_current(encode_uleb128(10**9) + b"\0" * 10)
    with pytest.raises(DecodeError, match="does not fit in 64 bits"):
        bat.decode_current(b"\x01" + b"\xff" * 10 + b"\x7f")
    with pytest.raises(DecodeError, match="entry count"):
        bat.decode_current(b"\x01\x00" + b"\0" * 8 + b"\x00\x00" + encode_uleb128(2**40))


def test_note_container_checks() -> None:
    note = bat.encode_note(bat.encode_payload(t_bolt()))
    assert bat.note_descriptor(note)[1] == 20
    with pytest.raises(DecodeError, match="truncated note header"):
        bat.decode_note(note[:8])
    with pytest.raises(DecodeError, match="runs past the section end"):
        bat.decode_note(note[:100])
    wrong_type = note[:8] + struct.pack("<I", 2) + note[12:]
    with pytest.raises(DecodeError, match="no note with owner"):
        bat.decode_note(wrong_type)
    # Another note before ours is skipped by its lengths.
    other = struct.pack("<III", 4, 4, 3) + b"GNU\0" + b"abcd"
    assert bat.dump(bat.decode_note(other + note)) == T_BOLT_DUMP


# -- the legacy LLVM 14-18 format (§2.9) ------------------------------------------------------


def legacy_bytes() -> bytes:
    out = struct.pack("<I", 2)
    out += struct.pack("<QI", 0x400000, 2) + struct.pack("<IIII", 0, 0, 9, 9 | 0x80000000)
    out += struct.pack("<QI", 0x500000, 1) + struct.pack("<II", 0, 0x20)
    return out + struct.pack("<I", 1) + struct.pack("<QQ", 0x500000, 0x400000)


def test_legacy_decoded_and_named() -> None:
    table = bat.decode_note(bat.encode_note(legacy_bytes()))
    assert table.format == bat.LEGACY and table.writer == "LLVM 14-18"
    assert table.hot == (0x400000,) and table.parent_of(0x500000) == 0x400000
    assert list(table.maps[0x400000].entries()) == [
        bat.BatEntry(0, 0, False),
        bat.BatEntry(9, 9, True),
    ]
    assert table.maps[0x500000].translate(4) == 0x24
    with pytest.raises(UnsupportedVersion, match="LLVM 14-18"):
        bat.refuse_legacy(table)
    bat.refuse_legacy(t_bolt())  # the current format passes


def test_legacy_truncations() -> None:
    data = legacy_bytes()
    assert bat.legacy_size_matches(data)
    for n in range(len(data)):
        with pytest.raises(DecodeError):
            bat.decode_legacy(data[:n])


# -- LEB128 -----------------------------------------------------------------------------------


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_uleb_roundtrip(v: int) -> None:
    enc = encode_uleb128(v)
    assert uleb128(enc, 0, "s") == (v, len(enc))
    with pytest.raises(DecodeError):
        uleb128(enc[:-1], 0, "s")


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_sleb_roundtrip(v: int) -> None:
    enc = encode_sleb128(v)
    assert sleb128(b"x" + enc, 1, "s") == (v, len(enc) + 1)


# -- properties -------------------------------------------------------------------------------


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_random_bytes_only_raise_decode_error(data: bytes) -> None:
    for decode in (bat.decode_payload, bat.decode_note, bat.decode_legacy):
        try:
            decode(data)
        except DecodeError:
            pass


@settings(max_examples=300)
@given(st.data())
def test_mutated_real_payload_only_raises_decode_error(data: st.DataObject) -> None:
    buf = bytearray(bat.encode_note(bat.encode_payload(t_bolt())))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i] = data.draw(st.integers(0, 255))
    try:
        bat.decode_note(bytes(buf))
    except DecodeError:
        pass


U32 = st.integers(0, 2**32 - 1)


@st.composite
def bat_maps(draw: st.DrawFn, kind: str, address: int, parent: int | None) -> bat.BatMap:
    n = draw(st.integers(0 if kind == "hot" else 1, 12))
    outs = sorted(draw(st.lists(st.integers(0, 0x3000), min_size=n, max_size=n)))
    values = [draw(st.integers(0, 2**31 - 1)) << 1 | draw(st.integers(0, 1)) for _ in range(n)]
    hashes = [0 if v & 1 else draw(st.integers(0, 2**64 - 1)) for v in values]
    indices = [0 if v & 1 else draw(U32) for v in values]
    return bat.BatMap(
        address=address,
        kind=kind,  # type: ignore[arg-type]
        output_offsets=array("I", outs),
        input_values=array("I", values),
        bb_hashes=array("Q", hashes),
        bb_indices=array("I", indices),
        func_hash=draw(st.integers(0, 2**64 - 1)) if kind == "hot" else None,
        num_blocks=draw(st.integers(0, 10**6)) if kind == "hot" else None,
        secondary_entry_points=tuple(sorted(draw(st.lists(U32, max_size=3))))
        if kind == "hot"
        else (),
        parent=parent,
        input_skew=draw(U32) if kind == "cold" else 0,
    )


@st.composite
def bat_tables(draw: st.DrawFn) -> bat.BatTable:
    addresses = draw(st.lists(st.integers(0, 2**64 - 0x10000), min_size=1, max_size=8, unique=True))
    n_hot = draw(st.integers(1, len(addresses)))
    hot = addresses[:n_hot]
    maps = {a: draw(bat_maps("hot", a, None)) for a in hot}
    for a in addresses[n_hot:]:
        maps[a] = draw(bat_maps("cold", a, draw(st.sampled_from(hot))))
    return bat.build_table(bat.CURRENT, maps, tuple(hot))


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(bat_tables())
def test_encode_decode_roundtrip(table: bat.BatTable) -> None:
    back = bat.decode_note(bat.encode_note(bat.encode_payload(table)))
    assert back.hot == table.hot and list(back.maps) == list(table.maps)
    for addr, m in table.maps.items():
        b = back.maps[addr]
        assert list(b.entries()) == list(m.entries())
        assert (b.kind, b.parent, b.func_hash, b.num_blocks) == (
            m.kind,
            m.parent,
            m.func_hash,
            m.num_blocks,
        )
        assert b.secondary_entry_points == m.secondary_entry_points
        if m.kind == "cold":
            assert b.input_skew == m.input_skew
    assert bat.encode_payload(back) == bat.encode_payload(table)
