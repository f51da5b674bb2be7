"""Basic blocks in both debuggers: `bb where --json` inside blocks of the cold ranges and
`bb blocks PROC --json`, on the zoo's clang-mfs-pgomap crash (its core and a live run).

The expected block IDs, ranges, fragments, frequencies (relative to the entry block) and
successors come from the variant's facts, which the recipe took from llvm-readobj-22's dump of
the PGO analysis map (fixtures/README.md), not from unsplit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ..conftest import facts
from ..unit.index.test_bb_addr_map_zoo import expected_blocks, expected_where, got_blocks, got_where
from .conftest import json_lines, start_crash

pytestmark = pytest.mark.e2e
VARIANT = "clang-mfs-pgomap"


def _json_lines(text: str) -> list[Any]:
    return json_lines(text, ("{", "["))  # `bb where --json A B` prints a list


def _bias(loc: dict[str, Any]) -> int:
    """Load bias of the PIE, from what `bb where` says of one address."""
    return int(loc["address"], 16) - int(loc.get("file_address", loc["address"]), 16)


def _block_at(info: dict[str, Any], link_pc: int) -> dict[str, Any]:
    return next(b for b in info["blocks"] if int(b["start"], 16) <= link_pc < int(b["end"], 16))


@pytest.fixture(params=["core", "live"])
def session(request: pytest.FixtureRequest, debugger: Callable[..., Any],
            zoo: dict[str, Any]) -> tuple[Any, dict[str, Any], int]:
    """(a session stopped at the crash, the facts, the load bias)."""
    f = facts(zoo, VARIANT, "crash")
    s = start_crash(debugger, f, request.param)
    (loc,) = _json_lines(s.command("bb where --json"))
    return s, f, _bias(loc)


def test_where_at_the_crash_names_the_block(session: tuple[Any, dict[str, Any], int]) -> None:
    s, f, bias = session
    link_pc = int(f["crash"]["link_pc"], 16)
    block = _block_at(f["split_functions"]["transfer"], link_pc)
    assert block["fragment"] != "hot"
    (loc,) = _json_lines(s.command("bb where --json"))
    assert int(loc["address"], 16) - bias == link_pc
    assert got_where(loc) == expected_where("transfer", block, link_pc)


def test_where_in_the_caller_names_its_block(session: tuple[Any, dict[str, Any], int]) -> None:
    """Frame 1 is in run's cold range; its block is that of the call (return address - 1)."""
    s, f, _ = session
    caller = f["crash"]["frames"][1]
    assert (caller["procedure"], caller["fragment"]) == ("run", "cold")
    link_pc = int(caller["link_pc"], 16)
    block = _block_at(f["split_functions"]["run"], link_pc - 1)
    s.command("up")
    (loc,) = _json_lines(s.command("bb where --json"))
    expected = expected_where("run", block, link_pc - 1)
    expected["block_offset"] += 1  # reported at the return address
    assert got_where(loc) == expected


def test_where_in_every_cold_block(session: tuple[Any, dict[str, Any], int]) -> None:
    s, f, bias = session
    expected, addresses = [], []
    for proc, info in f["split_functions"].items():
        for block in info["blocks"]:
            if block["fragment"] == "hot":
                continue
            for link in (int(block["start"], 16), int(block["end"], 16) - 1):
                addresses.append(hex(link + bias))
                expected.append(expected_where(proc, block, link))
    assert len(addresses) >= 6
    got = _json_lines(s.command("bb where --json " + " ".join(addresses)))
    assert [got_where(loc) for loc in got] == expected


@pytest.mark.parametrize("proc", ["transfer", "run", "main"])
def test_blocks_lists_the_facts(session: tuple[Any, dict[str, Any], int], proc: str) -> None:
    s, f, bias = session
    (blocks,) = _json_lines(s.command(f"bb blocks {proc} --json"))
    assert got_blocks(blocks) == expected_blocks(f["split_functions"][proc], bias)
