"""One meaning of "offset" in every command: the offset of an address in its procedure, which
for BOLTed code is the input offset BAT gives (`unsplit where`, `bb break PROC+OFF`). `unsplit
ranges` and `bb blocks` used to print the fragments' place with the fragments laid end to end
under that name (`verify_record+0x10` in `where` was `+0x19` in `ranges`); that quantity is
still shown by `ranges`, under its own name.

Oracle: perf2bolt-22's translation of each range's and block's first byte (tests/bolt_truth.py),
nm's fragment sizes for the end-to-end positions; never unsplit.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from unsplit import cli
from unsplit.tools import annotate

from ... import bolt_truth
from ...conftest import ROOT, facts

pytestmark = pytest.mark.skipif(shutil.which("perf2bolt-22") is None,
                                reason="perf2bolt-22 is the oracle")

# cold.N fragments; warm and cold; blocks in reverse order (input offsets go down)
VARIANTS = ["bolt-all", "bolt-cdsplit", "bolt-reverse"]


def _cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert cli.main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("variant", VARIANTS)
def test_ranges_and_blocks_give_bats_input_offsets(zoo: dict[str, Any], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str],
                                                   variant: str) -> None:
    f = facts(zoo, variant, "crash")
    binary = ROOT / f["binary"]
    ranges = annotate.ranges_json(str(binary))
    assert ranges, "no split procedure"
    blocks = {p["linkage_name"]: _cli_json(capsys, "blocks", "--exe", str(binary), "--json",
                                        "--no-demangle", p["linkage_name"]) for p in ranges}
    starts = sorted({int(r["start"], 16) for p in ranges for r in p["ranges"]}
                    | {int(b["start"], 16) for rows in blocks.values() for b in rows})
    truth = bolt_truth.perf2bolt_targets(binary, starts, tmp_path)
    where = {int(loc["address"], 16): loc for loc in map(json.loads, _cli_text(
        capsys, "where", "--exe", str(binary), "--json", *map(hex, starts)).splitlines())}
    checked = 0
    for p in ranges:
        position = 0
        for r in p["ranges"]:
            start = int(r["start"], 16)
            assert r["offset"] == truth[start][2] == where[start]["offset"], (p, r)
            assert r["position"] == position, (p, r)  # the ranges laid end to end
            position += int(r["end"], 16) - start
            checked += 1
        for b in blocks[p["linkage_name"]]:
            start = int(b["start"], 16)
            assert b["offset"] == truth[start][2] == where[start]["offset"], b
            checked += 1
    # BOLT moves blocks: somewhere the two quantities differ, or the test shows nothing.
    assert any(r["offset"] != r["position"] for p in ranges for r in p["ranges"]), ranges
    assert checked >= 6


def _cli_text(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert cli.main(list(argv)) == 0
    return capsys.readouterr().out


def test_ranges_text_names_both_quantities(zoo: dict[str, Any],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    f = facts(zoo, "bolt-all", "crash")
    text = _cli_text(capsys, "ranges", str(ROOT / f["binary"]), "transfer")
    data = annotate.ranges_json(str(ROOT / f["binary"]), "transfer")[0]
    lines = text.splitlines()
    assert "laid end to end" in lines[0] and "logical size" not in text, text
    for r, line in zip(data["ranges"], lines[2:], strict=True):
        cells = line.split()
        assert cells[0] == f"+{r['offset']:#x}" and cells[-1] == f"{r['position']:#x}", line
