"""formats.bb_addr_map.scan (ranges only, for the index) agrees with decode record for record,
decode_record at a scanned offset gives decode's record, and the bb_addr_map source's lazy
Procedure.blocks are the blocks an eager decode gives (bench/bbmap.py measures the gain)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unsplit.elf.binary import Binary
from unsplit.formats import bb_addr_map as fmt
from unsplit.index.model.records import Block, Fragment, Procedure
from unsplit.index.module_index import ModuleIndex
from unsplit.index.sources import bb_addr_map as source

from ...conftest import ROOT, facts
from ..formats.test_bb_addr_map import damaged_examples, function_maps


def assert_scan_agrees(raw: bytes, **kw: object) -> None:
    full = fmt.decode(raw, **kw)  # type: ignore[arg-type]
    light = fmt.scan(raw, **kw)  # type: ignore[arg-type]
    assert [(str(e), e.offset) for e in light.rejected] == [
        (str(e), e.offset) for e in full.rejected]
    assert (light.error is None) == (full.error is None)
    if full.error is not None:
        assert (str(light.error), light.error.offset) == (str(full.error), full.error.offset)
    assert [
        (fe.version, fe.features, fe.offset, fe.address,
         [(r.base_address, r.num_blocks, r.end_offset, r.address_offset) for r in fe.ranges])
        for fe in light.functions
    ] == [
        (fm.version, fm.features, fm.offset, fm.address,
         [(r.base_address, r.num_blocks, r.end_offset, r.address_offset) for r in fm.ranges])
        for fm in full.functions
    ]
    for fe, fm in zip(light.functions, full.functions, strict=True):
        assert fmt.decode_record(raw, fe.offset, **kw) == fm  # type: ignore[arg-type]


@given(st.lists(function_maps(), min_size=1, max_size=4), st.booleans())
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_scan_agrees_with_decode_on_encoded_maps(maps: list[fmt.FunctionMap],
                                                 v0: bool) -> None:
    maps = [m for m in maps if (m.version is None) == v0]
    sh_type = fmt.SHT_LLVM_BB_ADDR_MAP_V0 if v0 else fmt.SHT_LLVM_BB_ADDR_MAP
    assert_scan_agrees(fmt.encode(maps), sh_type=sh_type)


@given(damaged_examples(), st.booleans())
@settings(max_examples=400)
def test_scan_agrees_with_decode_on_damaged_maps(example: tuple[bytes, bytes],
                                                 strict: bool) -> None:
    base, raw = example
    # Damaged records are rejected or stop the section at the same place in both.
    assert_scan_agrees(raw + base, strict=strict)
    assert_scan_agrees(raw, relocations={8: 0x1234}, strict=strict)


def test_lazy_blocks_load_once_and_can_be_replaced() -> None:
    calls = []
    blocks = [Block(0, 0x10, 0x20)]

    def load() -> list[Block]:
        calls.append(1)
        return blocks

    frag = Fragment("f", "hot", 0x10, 0x20, "f", 0)
    proc = Procedure("f", [frag], load_blocks=load)
    assert calls == []
    assert proc.blocks == blocks and proc.blocks is blocks and calls == [1]
    assert proc == Procedure("f", [frag], list(blocks))
    other = Procedure("f", [frag], load_blocks=load)
    other.blocks = []  # a source with better blocks (index merging): the loader is dropped
    assert other.blocks == [] and calls == [1]
    assert Procedure("g").blocks == [] and Procedure("g").fragments == []


def test_lazy_blocks_of_the_zoo_are_the_eagerly_decoded_ones(zoo: dict[str, Any]) -> None:
    """Every function of every zoo map, through the index (split ones are the source's
    Procedures, one-piece ones the index's, with blocks from their record): the blocks
    decoded on first use are those of the record decode() gives at the same place (PGO
    frequencies and successors included)."""
    checked = split = 0
    for variant in ("clang-mfs", "clang-mfs-pgomap", "clang-bbsections"):
        for program in ("crash", "switch", "except"):
            binary = Binary(str(ROOT / facts(zoo, variant, program)["binary"]))
            index = ModuleIndex(binary)
            eager = [fm for ms in source.map_sections(binary)
                     for fm in source.decode_section(binary, ms, strict=False).functions
                     if fm.ranges]
            assert eager
            for fm in eager:
                frag = index.fragment_at(fm.address)
                assert frag is not None, hex(fm.address)
                proc = index.procedures[frag.procedure]
                assert proc.entry == fm.address
                assert proc.blocks == source._blocks(fm)
                checked += len(proc.blocks)
                split += len(fm.ranges) > 1
    assert checked > 100 and split > 5
