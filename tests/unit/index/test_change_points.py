"""LineTable.change_points: between two of its points every byte has the line of the first, so
`unsplit debuginfo` may ask once per run of bytes. On the zoo's BOLTed statics program, whose
`report` functions lite mode left in place (the input's own addresses, which BAT does not
describe), and on code BOLT moved, where it cannot say (None: asked byte by byte)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from unsplit.index.module_index import ModuleIndex

from ...conftest import ROOT, facts


@pytest.mark.parametrize("variant", ["bolt-statics"])
def test_points_bound_runs_of_one_line(zoo: dict[str, Any], variant: str) -> None:
    f = facts(zoo, variant, "statics")
    index = ModuleIndex.open(str(ROOT / f["binary"]))
    table = index.line_table
    unmoved = moved = 0
    for proc in index.all_procedures():
        for frag in proc.fragments:
            points = table.change_points(frag.start, frag.end)
            if points is None:
                moved += 1
                continue
            unmoved += 1
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
    # the premise: lite mode left functions in place, and BOLT moved others
    assert unmoved >= 4 and moved >= 4, (unmoved, moved)
