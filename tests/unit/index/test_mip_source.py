"""The MIP fragment source on the zoo's clang-mip variant (clang-mfs with `__llvm_mipmap` and
`__llvm_mipraw` in place of its bb address map) and on copies of zoo binaries given sections
of our own.

Expected functions, blocks and coverage come from the variant's facts: nm (function symbols
and sizes), llvm-readobj-22 (the blocks of each function's entry range) and a gdb run of the
training argument with a breakpoint at every block start (fixtures/README.md), never from
unsplit.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from unsplit.elf.binary import Binary
from unsplit.formats import mip as fmt
from unsplit.index.model.records import HOT
from unsplit.index.module_index import ModuleIndex
from unsplit.index.sources import mip as source

from ...conftest import ROOT, facts

VARIANT = "clang-mip"
PROGRAMS = ["crash", "loop", "recurse", "switch", "except"]
OBJCOPY = "llvm-objcopy-22"


def _expected_blocks(fn: dict[str, Any]) -> list[tuple[int, int, int, tuple[str, ...]]]:
    """(id, start, end, flags) by address: each block runs to the next start, the last to the
    function's end (nm size); the entry is %0, the others %1..%n in readobj's order."""
    start = int(fn["address"], 16)
    blocks = sorted(fn["blocks"], key=lambda b: int(b["start"], 16))
    ends = [int(b["start"], 16) for b in blocks[1:]] + [start + fn["size"]]
    return [(b["block_id"], int(b["start"], 16), end,
             ("covered",) if b["covered"] else ("not-covered",))
            for b, end in zip(blocks, ends, strict=True) if end > int(b["start"], 16)]


@pytest.mark.parametrize("program", PROGRAMS)
def test_procedures_are_the_facts(zoo: dict[str, Any], program: str) -> None:
    f = facts(zoo, VARIANT, program)
    functions = f["mip"]["functions"]
    procs = {p.name: p for p in source.MipSource(Binary(str(ROOT / f["binary"]))).procedures()}
    assert set(procs) == set(functions)
    for name, fn in functions.items():
        proc = procs[name]
        hot = proc.fragments[0]
        assert (hot.name, hot.symbol, hot.source) == (HOT, name, "mip")
        assert (hot.start, hot.size) == (int(fn["address"], 16), fn["size"])
        got = [(b.id, b.start, b.end, b.flags) for b in proc.blocks]
        assert got == _expected_blocks(fn)
    # The training run leaves something run and something not: the flags are a profile.
    flags = {b.flags for p in procs.values() for b in p.blocks}
    assert flags == {("covered",), ("not-covered",)} or program != "crash"


def test_split_functions_keep_their_moved_pieces(zoo: dict[str, Any]) -> None:
    """clang names moved pieces with STT_NOTYPE symbols: the source takes them (nm's facts)."""
    f = facts(zoo, VARIANT, "crash")
    index = ModuleIndex.open(str(ROOT / f["binary"]))
    assert "mip" in index.sources_used and not index.warnings
    split = f["split_functions"]
    assert {"transfer", "run", "main"} <= set(split)
    for name, info in split.items():
        proc = index.procedure(name)
        got = [(fr.symbol, fr.name, fr.start, fr.end) for fr in proc.fragments]
        assert got == [(x["symbol"], x["fragment"], int(x["start"], 16), int(x["end"], 16))
                       for x in info["fragments"]]
        assert proc.logical_size == sum(fr.size for fr in proc.fragments)


def test_where_names_block_and_coverage(zoo: dict[str, Any]) -> None:
    f = facts(zoo, VARIANT, "crash")
    index = ModuleIndex.open(str(ROOT / f["binary"]))
    for name, fn in f["mip"]["functions"].items():
        for block_id, start, end, flags in _expected_blocks(fn):
            for address in (start, end - 1):
                loc = index.locate(address)
                assert loc.procedure == name and loc.fragment == HOT
                assert loc.block is not None
                assert (loc.block.id, loc.block.flags) == (block_id, flags)
    crash = index.locate(int(f["crash"]["link_pc"], 16))  # moved code: no MIP block there
    assert (crash.procedure, crash.fragment, crash.block) == ("transfer", "cold", None)


def _copy(src: Path, dst: Path, *args: str) -> Path:
    if shutil.which(OBJCOPY) is None:
        pytest.skip(f"{OBJCOPY} not installed")
    subprocess.run([OBJCOPY, *args, str(src), str(dst)], check=True, capture_output=True)
    return dst


def test_stripped_binary_is_named_by_the_map(zoo: dict[str, Any], tmp_path: Path) -> None:
    f = facts(zoo, VARIANT, "crash")
    # llvm-objcopy drops unloaded sections it does not know unless told to keep them.
    stripped = _copy(ROOT / f["binary"], tmp_path / "crash", "--strip-all",
                     "--keep-section=__llvm_mip*")
    index = ModuleIndex.open(str(stripped))
    for name, fn in f["mip"]["functions"].items():
        loc = index.locate(int(fn["address"], 16) + fn["size"] - 1)
        assert (loc.procedure, loc.fragment_symbol, loc.sources[0]) == (name, None, "mip")


def test_a_map_without_its_raw_section_is_one_warning(zoo: dict[str, Any],
                                                      tmp_path: Path) -> None:
    f = facts(zoo, VARIANT, "crash")
    copy = _copy(ROOT / f["binary"], tmp_path / "crash", f"--remove-section={fmt.RAW_SECTION}")
    index = ModuleIndex.open(str(copy))
    assert index.warnings == ["mip: __llvm_mipmap: at offset 0x0: no __llvm_mipraw section: "
                              "its address places the functions"]
    assert "mip" not in index.sources_used
    assert index.locate(int(f["mip"]["functions"]["audit"]["address"], 16)).procedure == "audit"


def test_a_damaged_raw_profile_is_one_warning(zoo: dict[str, Any], tmp_path: Path) -> None:
    f = facts(zoo, VARIANT, "crash")
    raw = bytearray(Binary(str(ROOT / f["binary"])).section_data(fmt.RAW_SECTION) or b"")
    raw[24] = 0x17  # the first function's coverage byte
    (tmp_path / "raw").write_bytes(bytes(raw))
    copy = _copy(ROOT / f["binary"], tmp_path / "crash",
                 "--update-section", f"{fmt.RAW_SECTION}={tmp_path / 'raw'}")
    (warning,) = ModuleIndex.open(str(copy)).warnings
    assert warning.startswith("mip: __llvm_mipraw: at offset 0x18: ")
    assert "coverage byte 0x17" in warning


def _with_map(src: Path, dst: Path, records: list[fmt.MipFunction], tmp: Path) -> Path:
    header = fmt.MipHeader(profile_type=fmt.FUNCTION_COVERAGE | fmt.BLOCK_COVERAGE)
    records = fmt.lay_out_raw(records, header.profile_type)
    coverage = {r.raw_offset: fmt.Coverage(True, tuple(True for _ in r.block_offsets))
                for r in records}
    (tmp / "map").write_bytes(fmt.encode(records, 0, header))
    raw_header = fmt.MipHeader(file_type=fmt.FILE_TYPE_RAW, profile_type=header.profile_type)
    (tmp / "raw").write_bytes(fmt.encode_raw(records, coverage, raw_header))
    return _copy(src, dst, "--add-section", f"{fmt.SECTION}={tmp / 'map'}",
                 "--add-section", f"{fmt.RAW_SECTION}={tmp / 'raw'}")


def test_blocks_join_the_symbols_procedure_only_at_its_entry(zoo: dict[str, Any],
                                                             tmp_path: Path) -> None:
    """GCC's `checksum.cold` is an STT_FUNC: the symbols source has checksum. A map record of
    that name gives it blocks at its own entry; at another function's (a same-named static
    elsewhere) it must not."""
    f = facts(zoo, "gcc-pgo", "loop")
    frags = f["split_functions"]["checksum"]["fragments"]
    entry, end = int(frags[0]["start"], 16), int(frags[0]["end"], 16)
    main = int(f["split_functions"]["main"]["fragments"][0]["start"], 16)
    here = fmt.MipFunction("checksum", entry, end - entry, 1, (8,), 0)
    elsewhere = fmt.MipFunction("checksum", main, 0x20, 1, (8,), 0)

    right = ModuleIndex.open(str(_with_map(ROOT / f["binary"], tmp_path / "right", [here],
                                           tmp_path)))
    proc = right.procedure("checksum")
    assert [fr.symbol for fr in proc.fragments] == [x["symbol"] for x in frags]
    assert [(b.id, b.start, b.end) for b in proc.blocks] == [(0, entry, entry + 8),
                                                             (1, entry + 8, end)]

    wrong = ModuleIndex.open(str(_with_map(ROOT / f["binary"], tmp_path / "wrong", [elsewhere],
                                           tmp_path)))
    assert wrong.procedure("checksum").blocks == []


def test_a_function_placed_below_zero_is_one_warning(zoo: dict[str, Any],
                                                     tmp_path: Path) -> None:
    """Addresses are relative to the raw section: a record that lands before address 0 (a map
    written for another layout) must not reach the index's unsigned arrays."""
    f = facts(zoo, "gcc-pgo", "loop")
    bad = fmt.MipFunction("checksum", -0x40, 0x20, 1, (), 0)
    copy = _with_map(ROOT / f["binary"], tmp_path / "bad", [bad], tmp_path)
    (warning,) = ModuleIndex.open(str(copy)).warnings
    assert warning == ("mip: __llvm_mipmap: at offset 0x18: checksum: [-0x40, +0x20) is "
                       "outside the address space: map and raw section disagree")
