"""LineTable.change_points: between two of its points every byte has the line of the first, so
`unsplit debuginfo` may ask once per run of bytes. Every byte of every fragment is checked, on
the zoo's BOLTed programs: code BOLT moved (BAT's anchors, inserted jumps, the input's rows
carried along) and, in statics, the `report` functions lite mode left in place (the input's own
addresses, which BAT does not describe)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from unsplit.index.module_index import ModuleIndex

from ...conftest import ROOT, facts


@pytest.mark.parametrize(("variant", "program"), [("bolt-statics", "statics"),
                                                  ("bolt-all", "crash"), ("bolt-cdsplit", "loop"),
                                                  ("bolt-nonreloc", "switch")])
def test_points_bound_runs_of_one_line(zoo: dict[str, Any], variant: str, program: str) -> None:
    f = facts(zoo, variant, program)
    index = ModuleIndex.open(str(ROOT / f["binary"]))
    table = index.line_table
    bat = next(s for s in index.sources.all if s.name == "bat")
    kinds = {"moved": 0, "in place": 0}
    for proc in index.all_procedures():
        for frag in proc.fragments:
            points = table.change_points(frag.start, frag.end)
            if points is None:  # it cannot say: debuginfo asks byte by byte
                continue
            kinds["moved" if bat.input_location(frag.start) else "in place"] += 1
            assert points[0] == frag.start and points == sorted(set(points))
            assert all(frag.start <= p < frag.end for p in points), (proc.name, points)
            bounds = [*points, frag.end]
            for lo, hi in pairwise(bounds):
                first = table.line_at(lo)
                want = None if first is None else (first.path, first.line, first.column)
                for address in range(lo + 1, hi):
                    row = table.line_at(address)
                    assert (None if row is None else (row.path, row.line, row.column)) == want, \
                        (proc.name, hex(address))
    assert kinds["moved"] >= 4, kinds
    if variant == "bolt-statics":  # the premise: lite mode left functions in place
        assert kinds["in place"] >= 4, kinds
