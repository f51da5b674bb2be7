"""`unsplit where` on every zoo variant: each split function's fragments, against the facts the
build recipe computed with nm and llvm-symbolizer (not with unsplit)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ... import bolt_truth
from ...conftest import ROOT, facts

VARIANTS = [
    "gcc-pgo", "gcc-pgo-nodebug", "clang-mfs", "clang-mfs-nodebug", "clang-mfs-pgomap",
    "clang-bbsections",
    "bolt-all", "bolt-all-dbg", "bolt-random2", "bolt-random2-dbg", "bolt-profile2",
    "bolt-profile2-dbg", "bolt-cdsplit", "bolt-cdsplit-dbg",
    "bolt-randomN", "bolt-randomN-dbg", "bolt-reverse", "bolt-reverse-dbg",
    "bolt-nonreloc", "bolt-nonreloc-dbg", "bolt-nolite", "bolt-nolite-dbg",
]
PROGRAMS = ["loop", "recurse", "switch", "except", "crash"]


def _where(binary: str, addresses: list[str], *flags: str) -> list[dict[str, Any]]:
    out = subprocess.run([sys.executable, "-m", "unsplit", "where", "--json", *flags, "--exe",
                          binary, *addresses], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "plugin")}).stdout
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_fragment_is_named(zoo: dict[str, Any], variant: str, program: str) -> None:
    """`procedure` is demangled (the facts' `demangled`, from c++filt), `linkage_name` the
    symbol's; with --no-demangle `procedure` is the linkage name too."""
    f = facts(zoo, variant, program)
    expected, addresses = [], []
    for proc, info in f["split_functions"].items():
        for frag in info["fragments"]:
            for address in (frag["start"], hex(int(frag["end"], 16) - 1)):
                addresses.append(address)
                expected.append((info["demangled"], proc, frag["fragment"], frag["symbol"]))
            if "sample" in frag:
                addresses.append(frag["sample"]["address"])
                expected.append((info["demangled"], proc, frag["fragment"], frag["symbol"]))
    assert addresses, f"{variant}/{program} has no split function"
    got = _where(str(ROOT / f["binary"]), addresses)
    assert [(g["procedure"], g["linkage_name"], g["fragment"], g["fragment_symbol"])
            for g in got] == expected
    if program == "except":
        raw = _where(str(ROOT / f["binary"]), addresses, "--no-demangle")
        assert [(g["procedure"], g["linkage_name"]) for g in raw] == \
            [(linkage, linkage) for _, linkage, _, _ in expected]


BOLT_NO_DWARF = [v for v in VARIANTS if v[:5] == "bolt-" and "dbg" not in v]
WITH_DWARF = [v for v in VARIANTS if "nodebug" not in v and v not in BOLT_NO_DWARF]


@pytest.mark.parametrize("variant", WITH_DWARF)
def test_sample_lines(zoo: dict[str, Any], variant: str) -> None:
    f = facts(zoo, variant, "crash")
    assert f["has_debug_info"]
    samples = [frag["sample"] for info in f["split_functions"].values()
               for frag in info["fragments"] if frag.get("sample", {}).get("line")]
    assert samples
    got = _where(str(ROOT / f["binary"]), [s["address"] for s in samples])
    assert [(g["file"].rsplit("/", 1)[-1], g["line"]) for g in got] == \
        [(s["file"], s["line"]) for s in samples]


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("variant", BOLT_NO_DWARF)
def test_sample_lines_without_dwarf(zoo: dict[str, Any], variant: str, program: str,
                                    tmp_path: Path) -> None:
    """BOLT dropped the DWARF: each moved fragment's first instructions get the line of their
    input address, as perf2bolt-22 translates them through BAT, by llvm-symbolizer-22 on the
    pre-BOLT input (tests/bolt_truth.py)."""
    f = facts(zoo, variant, program)
    assert not f["has_debug_info"]
    binary, inp = ROOT / f["binary"], ROOT / f["input"]
    addresses = []
    for info in f["split_functions"].values():
        for frag in info["fragments"][1:]:
            start, end = int(frag["start"], 16), int(frag["end"], 16)
            addresses += list(bolt_truth.instructions(binary, start, end))[:4]
    truth = bolt_truth.perf2bolt_targets(binary, addresses, tmp_path)
    # Fragments of functions BAT does not describe (lite mode left them alone) have no truth.
    addresses = [a for a in addresses if a in truth]
    assert addresses
    inputs, lines = bolt_truth.input_lines(binary, inp, truth, addresses)
    got = _where(str(binary), [hex(a) for a in addresses])
    compared = [((g["input_address"], g["file"], g["line"]), (hex(i), *ln))
                for g, i, ln in zip(got, inputs, lines, strict=True) if ln is not None and ln[1]]
    assert compared
    assert [have for have, want in compared] == [want for have, want in compared]


def test_blocks_of_a_multi_range_procedure(zoo: dict[str, Any]) -> None:
    """clang MFS: `unsplit blocks` lists the blocks of both ranges, each inside its fragment."""
    f = facts(zoo, "clang-mfs", "crash")
    out = subprocess.run([sys.executable, "-m", "unsplit", "blocks", "--json", "--exe",
                          str(ROOT / f["binary"]), "run"], capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": str(ROOT / "plugin")}).stdout
    blocks = json.loads(out)
    frags = {fr["fragment"]: fr for fr in f["split_functions"]["run"]["fragments"]}
    assert {b["fragment"] for b in blocks} == set(frags)
    for b in blocks:
        fr = frags[b["fragment"]]
        assert int(fr["start"], 16) <= int(b["start"], 16) < int(b["end"], 16) <= int(fr["end"], 16)
    assert sorted(b["block"] for b in blocks) == list(range(len(blocks)))


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v[:5] == "bolt-" and "dbg" not in v])
def test_bolted_code_without_dwarf_gets_true_lines(zoo: dict[str, Any], variant: str) -> None:
    """BOLT dropped the DWARF: lines come from the pre-BOLT binary (found by build-id) via BAT.

    The truth is the source's markers: the crash site, and the cold call sites of the callers
    (a caller's PC is a return address, so ask for PC - 1).
    """
    f = facts(zoo, variant, "crash")
    assert not f["has_debug_info"]
    markers = f["markers"]["crash.c"]
    frames = f["crash"]["frames"][:3]
    addresses = [frames[0]["link_pc"]] + [hex(int(fr["link_pc"], 16) - 1) for fr in frames[1:]]
    got = _where(str(ROOT / f["binary"]), addresses)
    assert [(g["procedure"], g["line"]) for g in got] == [
        ("transfer", markers["crash site"]), ("run", markers["run cold call"]),
        ("main", markers["main cold call"])]
    assert all(g["input_address"] for g in got)
