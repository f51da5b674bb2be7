"""The bb address maps of the fixture zoo.

`unsplit where --json` and `unsplit blocks --json` on the clang-mfs-pgomap variant: the block, its
frequency relative to the entry and its successors, against the facts the recipe took from
llvm-readobj-22 (fixtures/README.md), for every block of every split function; and
`unsplit bbmap --json` against llvm-readobj-22 on every zoo binary."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from unsplit.tools.bbmap import readobj

from ...conftest import ROOT, facts
from ..formats.test_bb_addr_map_archive import readobj22_warnings
from ..formats.test_bb_addr_map_oracle import reference

VARIANT = "clang-mfs-pgomap"
PROGRAMS = ["loop", "recurse", "switch", "except", "crash"]


def _cli(*args: str) -> str:
    return subprocess.run([sys.executable, "-m", "unsplit", *args], capture_output=True,
                          text=True, check=True, env={"PYTHONPATH": str(ROOT / "plugin")}).stdout


def _successors(items: list[dict[str, Any]], key: str) -> list[tuple[int, Any]]:
    return [(s[key], pytest.approx(s["probability"], rel=1e-12)) for s in items]


def expected_where(proc: str, block: dict[str, Any], address: int) -> dict[str, Any]:
    return {
        "procedure": proc, "fragment": block["fragment"], "block": block["block_id"],
        "block_offset": address - int(block["start"], 16),
        "block_frequency": pytest.approx(block["frequency"], rel=1e-12),
        "successors": _successors(block["successors"], "block_id"),
    }


def got_where(loc: dict[str, Any]) -> dict[str, Any]:
    return {
        "procedure": loc["linkage_name"], "fragment": loc["fragment"], "block": loc.get("block"),
        "block_offset": loc.get("block_offset"), "block_frequency": loc.get("block_frequency"),
        "successors": _successors(loc.get("successors", []), "block"),
    }


@pytest.mark.parametrize("program", PROGRAMS)
def test_where_names_every_block(zoo: dict[str, Any], program: str) -> None:
    f = facts(zoo, VARIANT, program)
    expected, addresses = [], []
    for proc, info in f["split_functions"].items():
        for block in info["blocks"]:
            for address in (int(block["start"], 16), int(block["end"], 16) - 1):
                addresses.append(hex(address))
                expected.append(expected_where(proc, block, address))
    assert addresses
    out = _cli("where", "--json", "--exe", str(ROOT / f["binary"]), *addresses)
    got = [got_where(json.loads(line)) for line in out.splitlines()]
    assert got == expected


def test_where_at_the_crash(zoo: dict[str, Any]) -> None:
    """The crash PC is in a block of transfer's cold range that the profile says is rare."""
    f = facts(zoo, VARIANT, "crash")
    link_pc = int(f["crash"]["link_pc"], 16)
    block = next(b for b in f["split_functions"]["transfer"]["blocks"]
                 if int(b["start"], 16) <= link_pc < int(b["end"], 16))
    assert block["fragment"] != "hot" and block["frequency"] < 0.01
    loc = json.loads(_cli("where", "--json", "--exe", str(ROOT / f["binary"]), hex(link_pc)))
    assert got_where(loc) == expected_where("transfer", block, link_pc)


def expected_blocks(info: dict[str, Any], bias: int = 0) -> list[dict[str, Any]]:
    return [{"block": b["block_id"], "fragment": b["fragment"],
             "start": int(b["start"], 16) + bias, "end": int(b["end"], 16) + bias,
             "frequency": pytest.approx(b["frequency"], rel=1e-12),
             "successors": _successors(b["successors"], "block_id")}
            for b in info["blocks"]]


def got_blocks(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"block": b["block"], "fragment": b["fragment"], "start": int(b["start"], 16),
             "end": int(b["end"], 16), "frequency": b["frequency"],
             "successors": _successors(b["successors"], "block")} for b in blocks]


@pytest.mark.parametrize("program", PROGRAMS)
def test_blocks_lists_the_facts(zoo: dict[str, Any], program: str) -> None:
    f = facts(zoo, VARIANT, program)
    for proc, info in f["split_functions"].items():
        out = _cli("blocks", "--json", "--exe", str(ROOT / f["binary"]), proc)
        assert got_blocks(json.loads(out)) == expected_blocks(info), proc


ZOO_VARIANTS = [
    "gcc-pgo", "gcc-pgo-nodebug", "gcc-pgo-stripped", "clang-mfs", "clang-mfs-nodebug",
    "clang-mfs-pgomap", "clang-bbsections", "bolt-all", "bolt-all-dbg", "bolt-random2",
    "bolt-random2-dbg", "bolt-profile2", "bolt-profile2-dbg", "bolt-cdsplit", "bolt-cdsplit-dbg",
]


@pytest.mark.parametrize("variant", ZOO_VARIANTS)
def test_bbmap_json_equals_llvm_readobj_on_the_zoo(zoo: dict[str, Any], variant: str) -> None:
    """The differential test of `unsplit bbmap --json` on every zoo binary (most have no map:
    both then print nothing)."""
    for program in PROGRAMS:
        f = facts(zoo, variant, program)
        binary = ROOT / f["binary"]
        ours, warnings = readobj(str(binary))
        assert ours == reference(binary), program
        assert warnings == readobj22_warnings(binary), program
        assert bool(ours) == f["has_bb_addr_map"], program
