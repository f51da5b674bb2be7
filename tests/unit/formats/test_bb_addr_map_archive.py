"""Committed objects from the compilers of every map version (fixtures/bbmap, see its README).

Two oracles, neither of them unsplit:

- llvm-readobj-22: ``unsplit bbmap --json`` must print exactly its ``BBAddrMap`` list and our
  strict mode must warn exactly as it does (it rejects version 1 and skips V0 silently, §9.2);
- for the archival decoder, which also reads V0 and version 1: llvm-readobj-14 for V0 (the
  reader of its era), the bytes of the spec's worked examples (§14.2–14.4, made by the same
  compilers from the same t.c), and the object itself: every range's blocks must tile the symbol
  the range's relocation points at, each block starting on an instruction boundary of
  llvm-objdump-22's disassembly.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from unsplit.elf.binary import Binary
from unsplit.formats import bb_addr_map as fmt
from unsplit.index.sources.bb_addr_map import decode_section, map_sections
from unsplit.tools.bbmap import readobj, text

from ..formats.test_bb_addr_map_oracle import reference

ROOT = Path(__file__).resolve().parents[3]
BBMAP = ROOT / "fixtures" / "bbmap"
OBJECTS = sorted(p.name for p in BBMAP.glob("*.o"))  # compiler output
EDGES = "edges.elf"  # yaml2obj-22 of edges.yaml: hand-made sections LLVM 22 reads or rejects
READOBJ = "llvm-readobj-22"
needs_llvm22 = pytest.mark.skipif(
    not (shutil.which(READOBJ) and shutil.which("llvm-objdump-22")),
    reason="needs llvm-readobj-22 and llvm-objdump-22")

# What each compiler wrote (spec §9.1): version (None = V0) and feature field per record.
EMITTED: dict[str, tuple[int | None, set[int]]] = {
    "llc14-labels.o": (None, {0}),
    "clang15-labels.o": (1, {0}),
    "clang17-labels.o": (2, {0}),
    "clang19-clusters-pgo.o": (2, {0x07, 0x0F}),  # PGO bits; foo has two ranges
    "clang21-addrmap.o": (3, {0x20}),  # callsite (begin) offsets
    "clang21-omit.o": (3, {0x31}),  # entry count, entries omitted, callsites
    "clang22-addrmap.o": (5, {0x20}),  # callsite end offsets, u16 feature field
    "clang22-clusters-pgo.o": (5, {0x27, 0x2F}),
    "clang22-hash.o": (5, {0x60}),
    "clang22-omit.o": (5, {0x31}),
    "clang22-i386.o": (5, {0x20}),  # 4-byte addresses, SHT_REL: LLVM 22 cannot read it
}


def test_every_committed_object_is_described() -> None:
    assert sorted(EMITTED) == OBJECTS
    readme = (BBMAP / "README.md").read_text()
    assert all(name in readme for name in [*OBJECTS, EDGES])
    assert all((BBMAP / n).stat().st_size < 8192 for n in [*OBJECTS, EDGES])


# --- llvm-readobj-22 ---------------------------------------------------------------------------


def readobj22_warnings(path: Path) -> list[str]:
    proc = subprocess.run([READOBJ, "--bb-addr-map", "--elf-output-style=JSON", str(path)],
                          capture_output=True, text=True, check=True)
    prefix = f"{READOBJ}: warning: '{path}': "
    return [line[len(prefix):] for line in proc.stderr.splitlines() if line.startswith(prefix)]


@needs_llvm22
@pytest.mark.parametrize("name", [*OBJECTS, EDGES])
def test_json_and_warnings_equal_llvm_readobj_22(name: str) -> None:
    path = BBMAP / name
    ours, warnings = readobj(str(path))
    assert ours == reference(path)
    assert warnings == readobj22_warnings(path)


@needs_llvm22
def test_llvm_22_semantics_of_old_versions() -> None:
    # version 1 (clang 15/16) is rejected with a warning, V0 (LLVM 12–14) skipped silently
    assert readobj(str(BBMAP / "clang15-labels.o")) == (
        [], ["unable to dump SHT_LLVM_BB_ADDR_MAP section with index 2: "
             "unsupported SHT_LLVM_BB_ADDR_MAP version: 1"])
    assert readobj(str(BBMAP / "llc14-labels.o")) == ([], [])
    # versions 2 and 3 are read, every function
    for name in ("clang17-labels.o", "clang19-clusters-pgo.o", "clang21-addrmap.o",
                 "clang21-omit.o"):
        assert sorted(f["Function"]["Name"] for f in reference(BBMAP / name)) == [
            "bar", "foo", "sw"]


# --- the archival decoder ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Decoded:
    section: int  # index of the text section the range lies in (names repeat: clusters)
    base: int
    entries: tuple[fmt.BBEntry, ...]
    function: fmt.FunctionMap


def archival(name: str) -> list[Decoded]:
    """Every range of every record, decoded as LLVM of the object's era did (strict=False)."""
    binary = Binary(str(BBMAP / name))
    try:
        out = []
        for ms in map_sections(binary):
            sm = decode_section(binary, ms, strict=False)
            assert sm.ok, (sm.error, sm.rejected)
            for fm in sm.functions:
                for rng in fm.ranges:
                    target = ms.target_sections.get(rng.address_offset, ms.link)
                    out.append(Decoded(target, rng.base_address, rng.entries, fm))
        return out
    finally:
        binary.close()


def _readobj22_json(*args: str) -> Any:
    out = subprocess.run([READOBJ, "--elf-output-style=JSON", *args], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)[0]


def _symbols(path: Path) -> dict[tuple[int, int], tuple[str, int]]:
    """(section index, value) -> (name, size) of function and part symbols, by llvm-readobj-22."""
    out = {}
    for s in _readobj22_json("--symbols", str(path))["Symbols"]:
        s = s["Symbol"]
        if s["Type"]["Name"] in ("Function", "None") and s["Name"]["Name"] and s["Size"]:
            out[(s["Section"]["Value"], s["Value"])] = (s["Name"]["Name"], s["Size"])
    return out


def _instruction_starts(path: Path) -> set[tuple[int, int]]:
    """(section index, offset) of every instruction llvm-objdump-22 disassembles.

    objdump names sections only, and clang 22 gives a cluster a second `.text.hot.foo`: the
    k-th section of a name that objdump shows is the k-th non-empty code section of that name."""
    indexes: dict[str, list[int]] = {}
    for sec in _readobj22_json("--sections", str(path))["Sections"]:
        sec = sec["Section"]
        flags = {f["Name"] for f in sec["Flags"]["Flags"]}
        if "SHF_EXECINSTR" in flags and sec["Size"]:
            indexes.setdefault(sec["Name"]["Name"], []).append(sec["Index"])
    dis = subprocess.run(["llvm-objdump-22", "-d", "--no-show-raw-insn", str(path)],
                         capture_output=True, text=True, check=True).stdout
    section, starts = -1, set()
    for line in dis.splitlines():
        if line.startswith("Disassembly of section "):
            section = indexes[line.removeprefix("Disassembly of section ").rstrip(":")].pop(0)
        elif m := re.match(r"^\s+([0-9a-f]+):", line):
            starts.add((section, int(m.group(1), 16)))
    return starts


@needs_llvm22
@pytest.mark.parametrize("name", OBJECTS)
def test_archival_blocks_tile_their_symbols(name: str) -> None:
    version, features = EMITTED[name]
    decoded = archival(name)
    assert {d.function.version for d in decoded} == {version}
    assert {d.function.features for d in decoded} == features
    symbols = _symbols(BBMAP / name)
    insns = _instruction_starts(BBMAP / name)
    covered = set()
    for d in decoded:
        assert (d.section, d.base) in symbols, f"no symbol at [{d.section}]+{d.base:#x}"
        covered.add((d.section, d.base))
        if d.function.features & fmt.Feature.OMIT_BB_ENTRIES:
            assert d.entries == ()
            continue
        _, size = symbols[(d.section, d.base)]
        end = 0
        for e in d.entries:
            assert e.offset >= end and e.size > 0, e  # in order, no overlap
            assert (d.section, d.base + e.offset) in insns, e
            end = e.offset + e.size
        assert d.entries[0].offset == 0 and end == size, (d, size)
    assert covered == set(symbols)  # and every function of the object has its record


@pytest.mark.parametrize("name", OBJECTS)
def test_archival_text_dump_reads_every_version(name: str) -> None:
    dump = text(str(BBMAP / name))
    assert "stopped" not in dump and "skipped" not in dump
    assert all(f in dump for f in ("foo", "bar", "sw"))


def test_worked_examples_of_the_spec() -> None:
    # §14.2 (clang 15, version 1: delta offsets, implicit IDs)
    v1 = [(e.id, d.base + e.offset, e.size, e.metadata)
          for d in archival("clang15-labels.o")[:1] for e in d.entries]
    assert v1 == [(0, 0x0, 0x4, 0x08), (1, 0x4, 0x14, 0x01), (2, 0x18, 0x6, 0x01)]
    # §14.3 (clang 17, version 2): the same code, IDs 0, 1, 3; sw's jump-table block 6
    v2 = archival("clang17-labels.o")
    assert [(e.id, e.offset, e.size, e.metadata) for e in v2[0].entries] == [
        (0, 0x0, 0x4, 0x08), (1, 0x4, 0x14, 0x01), (3, 0x18, 0x6, 0x01)]
    assert (6, fmt.Metadata.HAS_INDIRECT_BRANCH) in [(e.id, e.metadata) for e in v2[2].entries]
    # §14.4 (clang 21, version 3): callsite *begin* offsets 8 and 15, block 1 of 0x1E bytes
    v3 = archival("clang21-addrmap.o")[0].entries
    assert [(e.id, e.offset, e.size, e.callsite_offsets) for e in v3] == [
        (0, 0x0, 0x4, ()), (1, 0x4, 0x1E, (8, 15)), (3, 0x22, 0x6, ())]


def test_version_1_and_2_agree_on_the_same_code() -> None:
    """clang 15 and 17 made the same machine code for foo and bar (not sw): the delta decoding
    of version 1 (no IDs) and that of version 2 must give the same blocks there."""
    def text_bytes(name: str) -> bytes:
        binary = Binary(str(BBMAP / name))
        try:
            return bytes(binary.elf.get_section_by_name(".text").data())[:0x30]  # foo, bar
        finally:
            binary.close()

    assert text_bytes("clang15-labels.o") == text_bytes("clang17-labels.o")
    old, new = archival("clang15-labels.o"), archival("clang17-labels.o")
    assert [(d.base, [(e.offset, e.size) for e in d.entries]) for d in old[:2]] == \
        [(d.base, [(e.offset, e.size) for e in d.entries]) for d in new[:2]]
    assert [d.base for d in old] == [d.base for d in new] == [0x0, 0x20, 0x30]
    assert [d.base for d in old] == [0x0, 0x20, 0x30]


def test_clang19_multi_range_and_pgo() -> None:
    decoded = archival("clang19-clusters-pgo.o")
    first, second = (d for d in decoded if d.function.features & fmt.Feature.MULTI_BB_RANGE)
    foo = first.function
    assert foo.feature == fmt.Feature.MULTI_BB_RANGE | fmt.PGO_FEATURES
    assert [[e.id for e in r.entries] for r in foo.ranges] == [[0, 3], [1]]
    assert foo.pgo is not None and len(foo.pgo.blocks) == 3
    assert [s.id for s in foo.pgo.blocks[0].successors or ()] == [1, 3]
    assert sum(s.probability for s in foo.pgo.blocks[0].successors or ()) == fmt.PROBABILITY_ONE
    assert second.function is foo and (first.base, second.base) == (0, 0xE)  # foo.__part.1


def test_clang21_omitted_entries() -> None:
    decoded = archival("clang21-omit.o")
    assert [(len(d.entries), d.function.ranges[0].num_blocks) for d in decoded] == [
        (0, 3), (0, 1), (0, 7)]
    assert len({d.section for d in decoded}) == 3  # .text.foo, .text.bar, .text.sw
    assert all(d.function.pgo == fmt.PGOAnalysis(0, ()) for d in decoded)


def test_archival_decoding_of_the_edge_cases() -> None:
    """What each hand-made section gives outside strict mode: the old versions are read, a
    bad record whose end is known is skipped alone, the others stop decoding (nothing before)."""
    binary = Binary(str(BBMAP / EDGES))
    try:
        got = {}
        for ms in map_sections(binary):
            sm = decode_section(binary, ms, strict=False)
            blocks = [(rng.base_address + e.offset, e.size, e.hash)
                      for fm in sm.functions for rng, e in fm.entries()]
            got[ms.name] = (blocks, len(sm.rejected), sm.error is not None)
    finally:
        binary.close()
    assert got == {
        ".map.v4hash": ([(0x1000, 4, 0x0102030405060708)], 0, False),
        ".map.v0": ([(0x1010, 4, None)], 0, False),  # version 0: absolute offsets
        ".map.v1": ([(0x1020, 2, None), (0x1023, 3, None)], 0, False),  # deltas
        ".map.v6": ([], 0, True),
        ".map.feat": ([], 0, True),
        ".map.v3hash": ([], 0, True),
        ".map.zero": ([], 1, False),
        ".map.trunc": ([], 0, True),
        ".map.big": ([], 0, True),
        ".map.md": ([(0x1060, 2, None)], 1, False),  # fmd2 rejected, fmd1 kept
        ".map.V0": ([(0x1010, 4, None)], 0, False),
    }


# --- V0 against the reader of its era ----------------------------------------------------------


def readobj14(path: Path) -> list[dict[str, Any]]:
    """llvm-readobj-14 --bb-addr-map, parsed: functions with their entries."""
    out = subprocess.run(["llvm-readobj-14", "--bb-addr-map", str(path)], capture_output=True,
                         text=True, check=True).stdout
    functions: list[dict[str, Any]] = []
    for line in out.splitlines():
        key, _, value = line.strip().partition(": ")
        if line.strip() == "Function {":
            functions.append({"entries": []})
        elif key in ("At", "Name"):
            functions[-1][key] = value
        elif key == "Offset":
            functions[-1]["entries"].append({"Offset": int(value, 16)})
        elif key == "Size":
            functions[-1]["entries"][-1]["Size"] = int(value, 16)
        elif value in ("Yes", "No"):
            functions[-1]["entries"][-1][key] = value == "Yes"
    return functions


@pytest.mark.skipif(shutil.which("llvm-readobj-14") is None, reason="needs llvm-readobj-14")
def test_v0_equals_llvm_readobj_14() -> None:
    ref = readobj14(BBMAP / "llc14-labels.o")
    ours = archival("llc14-labels.o")
    assert len(ref) == len(ours) == 3
    for r, d in zip(ref, ours, strict=True):
        # LLVM 14 ignores relocations (every function "At: 0x0", named by the first symbol
        # at 0); we read the addends, which the tiling test checks against the symbols.
        assert (r["At"], r["Name"]) == ("0x0", "foo")
        assert r["entries"] == [
            {"Offset": e.offset, "Size": e.size,
             "HasReturn": e.has(fmt.Metadata.HAS_RETURN),
             "HasTailCall": e.has(fmt.Metadata.HAS_TAIL_CALL),
             "IsEHPad": e.has(fmt.Metadata.IS_EH_PAD),
             "CanFallThrough": e.has(fmt.Metadata.CAN_FALL_THROUGH)}
            for e in d.entries]
