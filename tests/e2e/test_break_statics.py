"""`bb break NAME` where several units have a static function of that name (the zoo's BOLTed
`statics` program: each of its four units has its own local `helper`, split by BOLT): like GDB's
own `break helper`, one location in each, and the program stops in each. Where they are comes
from the facts (nm's symbols of each unit), never from unsplit."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from ..conftest import ROOT, facts
from ..variants import STATICS

pytestmark = pytest.mark.e2e


def _entries(f: dict[str, Any], linkage: str) -> dict[str, int]:
    """Unit source file -> the entry (hot fragment's start) of its `linkage` function."""
    out = {}
    for key, proc in f["split_functions"].items():
        name, _, unit = key.partition("@")
        if name == linkage:
            hot = next(fr for fr in proc["fragments"] if fr["fragment"] == "hot")
            out[unit] = int(hot["start"], 16)
    return out


def _stopped_at(session: Any) -> int:
    (loc,) = [json.loads(line) for line in session.command("bb where --json").splitlines()
              if line.startswith("{")]
    return int(loc["address"], 16)


@pytest.mark.parametrize("variant", STATICS)
def test_a_location_in_every_units_static(debugger: Callable[..., Any], zoo: dict[str, Any],
                                          variant: str) -> None:
    f = facts(zoo, variant, "statics")
    entries = _entries(f, "_ZL6helperii")
    assert len(entries) == 4, entries  # the fixture's premise: four units, four helpers
    session = debugger(ROOT / f["binary"], args=["rare"])
    said = session.command("bb break helper")
    assert re.search(r"\b4 locations", said), said
    listed = session.command("bb break --list")
    assert {int(a, 16) for a in re.findall(r"0x[0-9a-f]+", listed)} >= set(entries.values()), \
        listed
    # main calls unit_a .. unit_d in turn, each calling its helper 16 times: the first stop is
    # in unit a's, and continuing leaves it for unit b's.
    assert _stopped_at_after(session, session.run()) == entries["statics_a.cpp"]
    for _ in range(20):
        pc = _stopped_at_after(session, session.cont())
        if pc != entries["statics_a.cpp"]:
            break
    assert pc == entries["statics_b.cpp"], (hex(pc), {u: hex(a) for u, a in entries.items()})


def _stopped_at_after(session: Any, out: str) -> int:
    assert "exited" not in out, out
    return _stopped_at(session)


@pytest.mark.parametrize("variant", STATICS)
def test_blocks_lists_every_units_static(debugger: Callable[..., Any], zoo: dict[str, Any],
                                         variant: str) -> None:
    """`bb blocks helper`: a table for each unit's helper, headed by its entry and its unit's
    file; every block inside that unit's own fragments (nm's symbols, in the facts)."""
    f = facts(zoo, variant, "statics")
    assert not f["pie"]  # file addresses are runtime addresses before `run`
    entries = _entries(f, "_ZL6helperii")
    fragments = {unit: [(int(fr["start"], 16), int(fr["end"], 16)) for fr in proc["fragments"]]
                 for key, proc in f["split_functions"].items()
                 if (unit := key.partition("@")[2]) and key.startswith("_ZL6helperii@")}
    session = debugger(ROOT / f["binary"])
    (rows,) = [json.loads(line) for line in session.command("bb blocks helper --json")
               .splitlines() if line.startswith("[")]
    by_entry: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_entry.setdefault(int(row["entry"], 16), []).append(row)
    assert set(by_entry) == set(entries.values()), (sorted(map(hex, by_entry)), entries)
    for unit, entry in entries.items():
        assert {r["procedure"] for r in by_entry[entry]} == {"_ZL6helperii"}
        assert any(int(r["start"], 16) == entry and r["offset"] == 0 for r in by_entry[entry])
        for r in by_entry[entry]:
            start, end = int(r["start"], 16), int(r["end"], 16)
            assert any(lo <= start < end <= hi for lo, hi in fragments[unit]), (unit, r)
    text = session.command("bb blocks helper")
    heads = re.findall(r"^helper\(int, int\) at (0x[0-9a-f]+) \((\S+?):\d+\): \d+ blocks$", text,
                       re.M)
    assert {int(a, 16): unit for a, unit in heads} == {e: u for u, e in entries.items()}, text
