"""The fixture zoo (fixtures/build.py) is sane: every variant has crash with a cold fragment and a
core whose crash PC is in one, and every facts file has the documented shape.

The zoo is built on first use (a few seconds cold, well under a second when cached).
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "fixtures" / "build"
VARIANTS = [
    "gcc-pgo", "gcc-pgo-nodebug", "gcc-pgo-stripped", "clang-mfs", "clang-mfs-nodebug",
    "clang-mfs-pgomap", "clang-mip", "clang-bbsections", "bolt-all", "bolt-all-dbg", "bolt-random2",
    "bolt-random2-dbg", "bolt-profile2", "bolt-profile2-dbg", "bolt-cdsplit", "bolt-cdsplit-dbg",
    "bolt-randomN", "bolt-randomN-dbg", "bolt-reverse", "bolt-reverse-dbg",
    "bolt-nonreloc", "bolt-nonreloc-dbg", "bolt-nolite", "bolt-nolite-dbg", "bolt-patched",
    "bolt-gcc", "bolt-gcc-dwarf4", "bolt-clang-dwarf4",
]
PROGRAMS = ["loop", "recurse", "switch", "except", "crash"]
# The multi-TU program with same-named local functions has variants of its own.
STATICS = ["bolt-statics", "bolt-statics-dbg"]
# A program that dlopen()s a BOLTed library and dies in it, five threads in it.
DLOPEN = "bolt-dlopen"
# Always-inlined calls in code BOLT moved.
INLINED = "bolt-inlined"
HEX = re.compile(r"^0x[0-9a-f]+$")
FRAGMENT = re.compile(r"^(hot|cold|cold\.\d+|warm|part\.\d+)$")


def _builder() -> ModuleType:
    path = REPO / "fixtures" / "build.py"
    spec = importlib.util.spec_from_file_location("fixtures_build", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fixtures_build", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def index() -> dict[str, Any]:
    _builder().build()
    data: dict[str, Any] = json.loads((BUILD / "index.json").read_text())
    return data


def _facts(index: dict[str, Any], variant: str, prog: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (REPO / index["variants"][variant]["programs"][prog]["facts"]).read_text())
    return data


def test_every_variant_and_program_is_indexed(index: dict[str, Any]) -> None:
    assert sorted(index["variants"]) == sorted([*VARIANTS, *STATICS, DLOPEN, INLINED])
    assert list(index["variants"][DLOPEN]["programs"]) == ["libwork"]
    assert list(index["variants"][INLINED]["programs"]) == ["inlined"]
    for v in VARIANTS + STATICS:
        programs = index["variants"][v]["programs"]
        assert sorted(programs) == (["statics"] if v in STATICS else sorted(PROGRAMS))
        for entry in programs.values():
            assert (REPO / entry["binary"]).is_file()
            assert (REPO / entry["facts"]).is_file()


@pytest.mark.parametrize("variant", VARIANTS)
def test_crash_is_split_and_crashes_in_cold_code(index: dict[str, Any], variant: str) -> None:
    f = _facts(index, variant, "crash")
    frags = f["split_functions"]["transfer"]["fragments"]
    assert frags[0]["fragment"] == "hot" and len(frags) >= 2
    crash = f["crash"]
    assert (REPO / crash["core"]).stat().st_size > 0
    assert crash["signal"] == 11
    assert crash["procedure"] == "transfer" and crash["fragment"] != "hot"
    link_pc = int(crash["link_pc"], 16)
    holder = [x for x in frags if x["symbol"] == crash["symbol"]]
    assert holder and int(holder[0]["start"], 16) <= link_pc < int(holder[0]["end"], 16)
    assert crash["expected_chain"] == ["transfer", "run", "main"]
    assert crash["chain_matches"], crash["observed_chain"]
    assert crash["split_frames"] >= 2
    if f["has_debug_info"] or f["lines_from"]:
        assert crash["line"] == f["markers"]["crash.c"]["crash site"]


@pytest.mark.parametrize(("variant", "prog"), [(v, p) for v in VARIANTS for p in PROGRAMS]
                         + [(v, "statics") for v in STATICS] + [(DLOPEN, "libwork")]
                         + [(INLINED, "inlined")])
def test_facts_are_well_formed(index: dict[str, Any], variant: str, prog: str) -> None:
    f = _facts(index, variant, prog)
    assert f["facts_version"] == 1 and f["variant"] == variant and f["program"] == prog
    for key in ("has_debug_info", "has_symtab", "has_bat", "has_bb_addr_map", "pie"):
        assert isinstance(f[key], bool)
    assert all((REPO / s).is_file() for s in f["sources"])
    assert f["split_functions"], "no split function at all"
    for proc, info in f["split_functions"].items():
        frags = info["fragments"]
        assert sum(x["fragment"] == "hot" for x in frags) <= 1, proc
        for x in frags:
            assert FRAGMENT.match(x["fragment"]), x
            assert HEX.match(x["start"]) and HEX.match(x["end"])
            assert int(x["start"], 16) < int(x["end"], 16)
            if x["fragment"] != "hot":
                s = x["sample"]
                assert int(x["start"], 16) <= int(s["address"], 16) < int(x["end"], 16)
                assert s["line"] is None or s["line"] > 0
    for source, marks in f["markers"].items():
        assert marks and all(isinstance(n, int) and n > 0 for n in marks.values()), source


def test_variant_properties(index: dict[str, Any]) -> None:
    for v in VARIANTS:
        f = _facts(index, v, "crash")
        assert f["has_debug_info"] == (
            v in ("gcc-pgo", "clang-mfs", "clang-mfs-pgomap", "clang-mip", "clang-bbsections")
            or v.endswith("-dbg")), v
        assert f["has_bb_addr_map"] == (v.startswith("clang-") and v != "clang-mip"), v
        assert f["has_symtab"] == (v != "gcc-pgo-stripped"), v
        assert f["has_bat"] == v.startswith("bolt-"), v
        if v.startswith("bolt-"):
            assert (REPO / f["input"]).is_file()
            # BOLT flips the last bit of the build-id.
            assert int(f["build_id"], 16) ^ int(f["input_build_id"], 16) == 1


@pytest.mark.parametrize("variant", STATICS)
def test_same_named_locals_keep_their_units(index: dict[str, Any], variant: str) -> None:
    """Each unit's helper, summarize and __cxx_global_array_dtor is its own procedure, keyed
    name@unit, with the fragments of its own STT_FILE group."""
    f = _facts(index, variant, "statics")
    units = {f"statics_{u}.cpp" for u in "abcd"}
    split = f["split_functions"]
    for name in ("_ZL6helperii", "__cxx_global_array_dtor"):
        assert {k for k in split if k.startswith(name + "@")} == {f"{name}@{u}" for u in units}
    assert sum(k.startswith("_ZL9summarizeii@") for k in split) >= 2
    starts = [x["start"] for info in split.values() for x in info["fragments"]]
    assert len(starts) == len(set(starts))
    assert all(len(info["fragments"]) >= 2 for info in split.values())


@pytest.mark.parametrize("prog", PROGRAMS)
def test_patched_originals(index: dict[str, Any], prog: str) -> None:
    """bolt-patched: every function BOLT moved has its original entry, `foo.org.0`, at the
    address nm gives `foo` in the pre-BOLT input; the other BOLT variants have none."""
    f = _facts(index, "bolt-patched", prog)
    originals = f["bolt_originals"]
    out = subprocess.run(["nm", "--defined-only", str(REPO / f["input"])], capture_output=True,
                         text=True, check=True).stdout
    inputs = {p[2]: int(p[0], 16) for p in map(str.split, out.splitlines()) if len(p) == 3}
    for proc in f["split_functions"]:
        assert int(originals[f"{proc}.org.0"], 16) == inputs[proc], proc
    assert "bolt_originals" not in _facts(index, "bolt-profile2", prog)


def test_dlopen_library_crashes_in_a_cold_fragment_with_five_threads(
        index: dict[str, Any]) -> None:
    """bolt-dlopen: the BOLTed library's verify_record is split, the crash is in its cold
    fragment (the inlined quarantine_record, as the pre-BOLT library says), and the four other
    workers wait in the library's park, called from work's cold fragment."""
    f = _facts(index, DLOPEN, "libwork")
    assert f["has_bat"] and not f["has_debug_info"] and (REPO / f["executable"]).is_file()
    assert int(f["build_id"], 16) ^ int(f["input_build_id"], 16) == 1
    assert Path(f["input"]).parent.name == "input" and (REPO / f["input"]).is_file()
    assert {"verify_record", "work"} <= set(f["split_functions"])
    crash = f["crash"]
    assert crash["symbol"] == "verify_record.cold" and (REPO / crash["core"]).is_file()
    marks = f["markers"]["libwork.c"]
    assert [(c["function"], c["line"]) for c in crash["input_crash"]["chain"]] == [
        ("quarantine_record", marks["quarantine crash site"]),
        ("verify_record", marks["verify cold calls quarantine"])]
    workers = [t for t in crash["threads"] if any(x["module"] == "libwork.so"
                                                  for x in t["frames"])]
    assert len(workers) == 5
    parked = [t for t in workers if t["num"] != crash["thread"]]
    assert all([x["symbol"] for x in t["frames"] if x["module"] == "libwork.so"]
               == ["park", "work.cold"] for t in parked), parked


def test_bbsections_has_a_three_way_split(index: dict[str, Any]) -> None:
    f = _facts(index, "clang-bbsections", "crash")
    assert [x["fragment"] for x in f["split_functions"]["run"]["fragments"]] == [
        "hot", "part.1", "cold"]


@pytest.mark.parametrize("prog", PROGRAMS)
def test_pgomap_block_facts(index: dict[str, Any], prog: str) -> None:
    """clang-mfs-pgomap: every split function lists its blocks, which tile its fragments."""
    f = _facts(index, "clang-mfs-pgomap", prog)
    assert "-pgo-analysis-map=func-entry-count,bb-freq,br-prob" in f["compile"]
    for proc, info in f["split_functions"].items():
        assert isinstance(info["entry_count"], int), proc
        blocks = info["blocks"]
        assert blocks and blocks[0]["block_id"] == 0 and blocks[0]["frequency"] == 1.0, proc
        assert len({b["block_id"] for b in blocks}) == len(blocks), proc
        starts = [int(b["start"], 16) for b in blocks]
        assert starts == sorted(starts), proc
        for frag in info["fragments"]:
            inside = [b for b in blocks if b["fragment"] == frag["fragment"]]
            assert inside and inside[0]["start"] == frag["start"], (proc, frag)
            assert max(int(b["end"], 16) for b in inside) <= int(frag["end"], 16)
        for b in blocks:
            assert HEX.match(b["start"]) and int(b["start"], 16) < int(b["end"], 16)
            assert b["frequency"] >= 0
            probs = [s["probability"] for s in b["successors"]]
            assert not probs or abs(sum(probs) - 1) < 1e-6, (proc, b)
    if prog == "crash":
        cold = [b for b in f["split_functions"]["transfer"]["blocks"] if b["fragment"] != "hot"]
        link_pc = int(f["crash"]["link_pc"], 16)
        assert [b for b in cold if int(b["start"], 16) <= link_pc < int(b["end"], 16)]
        assert all(b["frequency"] < 0.01 for b in cold)


@pytest.mark.parametrize("prog", PROGRAMS)
def test_mip_facts(index: dict[str, Any], prog: str) -> None:
    """clang-mip: each function's blocks start at its entry and lie inside its symbol, in
    map order; the training run reached some of them (and the crash program not all)."""
    f = _facts(index, "clang-mip", prog)
    functions = f["mip"]["functions"]
    assert f["training_args"] == ["train"] and {"main"} <= set(functions)
    for name, fn in functions.items():
        start, end = int(fn["address"], 16), int(fn["address"], 16) + fn["size"]
        blocks = fn["blocks"]
        assert [b["block_id"] for b in blocks] == list(range(len(blocks))), name
        assert int(blocks[0]["start"], 16) == start and fn["covered"] == blocks[0]["covered"]
        for b in blocks:
            assert start <= int(b["start"], 16) < end and isinstance(b["covered"], bool), name
    ran = {b["covered"] for fn in functions.values() for b in fn["blocks"]}
    assert True in ran and (prog != "crash" or False in ran)


def test_training_run_exits_zero(index: dict[str, Any]) -> None:
    for v in ("gcc-pgo", "bolt-all"):
        binary = REPO / index["variants"][v]["programs"]["crash"]["binary"]
        assert subprocess.run([binary, "train"], capture_output=True, timeout=60).returncode == 0


def test_cached_rebuild_does_nothing(index: dict[str, Any]) -> None:
    assert _builder().build() == []


def test_inlined_calls_lie_in_moved_code(index: dict[str, Any]) -> None:
    """bolt-inlined: settle has a cold fragment, and its input's DWARF has the inlined calls
    of scale and clamp (llvm-dwarfdump-22), whose code the profile moves there."""
    f = _facts(index, INLINED, "inlined")
    fragments = f["split_functions"]["settle"]["fragments"]
    assert fragments[0]["fragment"] == "hot" and len(fragments) >= 2
    dump = subprocess.run(["llvm-dwarfdump-22", "--debug-info", str(REPO / f["input"])],
                          capture_output=True, text=True, check=True).stdout
    inlined = re.findall(r'DW_TAG_inlined_subroutine\s+DW_AT_abstract_origin\s+\(0x[0-9a-f]+ '
                         r'"(\w+)"\)', dump)
    assert {"scale", "clamp"} <= set(inlined), inlined
