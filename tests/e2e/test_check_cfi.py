"""`unsplit check-cfi` on zoo binaries: a clean BOLT output finds nothing; BOLT's in-place
rewrite (bolt-nonreloc) leaves stale FDEs at the starts of the functions it rewrote; and copies
whose `.eh_frame` is damaged on purpose (tests/cfi_damage.py): an FDE duplicated with another
length and wrong rules, a cold fragment's CFA offset off by 16, a cold fragment's FDE gone.

Expectations come from llvm-dwarfdump-22 --eh-frame (the FDEs and their rows) and
llvm-readobj-22 --unwind (the `.eh_frame_hdr` search table), never from unsplit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .. import cfi_damage
from ..cfi_oracle import dwarfdump_fdes, first_difference, hdr_table
from ..conftest import ROOT, facts

pytestmark = pytest.mark.e2e

EXIT_FOUND = 3


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "unsplit", "check-cfi", *args],
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT / "plugin"), "PATH": "/usr/bin:/bin"})


def _json(*args: str) -> tuple[int, dict[str, Any]]:
    r = _cli(*args, "--json")
    assert r.returncode in (0, EXIT_FOUND), r.stderr
    record: dict[str, Any] = json.loads(r.stdout)
    return r.returncode, record


@pytest.fixture(scope="module")
def crash(zoo: dict[str, Any]) -> dict[str, Any]:
    f = facts(zoo, "bolt-random2", "crash")
    cold = next(x for x in f["split_functions"]["run"]["fragments"] if x["fragment"] != "hot")
    return {"binary": ROOT / f["binary"], "input": ROOT / "fixtures/build/_bolt-input/crash",
            "cold": int(cold["start"], 16), "cold_end": int(cold["end"], 16)}


@pytest.fixture(scope="module")
def damaged(crash: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("check-cfi")
    dup, cfa, bare = work / "crash-dup", work / "crash-cfa", work / "crash-bare"
    # The true copy goes to a slot of BOLT's stale FDEs of the original code (below 0x800000).
    cfi_damage.duplicate_fde(crash["binary"], dup, crash["cold"], spare_below=0x800000)
    cfi_damage.wrong_cfa_offset(crash["binary"], cfa, crash["cold"])
    cfi_damage.drop_fde(crash["binary"], bare, crash["cold"])
    return {"dup": dup, "cfa": cfa, "bare": bare}


def test_a_clean_binary_finds_nothing(crash: dict[str, Any]) -> None:
    r = _cli(str(crash["binary"]), "--input", str(crash["input"]))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        "crash: nothing found (16 FDEs in .eh_frame; 3 moved fragments and the input's rules "
        "checked)"]
    assert len(dwarfdump_fdes(crash["binary"])) == 16
    code, record = _json(str(crash["binary"]), "--input", str(crash["input"]))
    assert code == 0 and record["found"] is False
    assert record["shared_start"] == record["overlaps"] == record["moved_without_fde"] == \
        record["rules_unlike_input"] == []


def test_a_duplicated_fde_with_another_length(crash: dict[str, Any],
                                              damaged: dict[str, Path]) -> None:
    binary = damaged["dup"]
    fdes = [f for f in dwarfdump_fdes(binary) if f["start"] == crash["cold"]]
    assert len(fdes) == 2 and fdes[0]["end"] != fdes[1]["end"]  # the damage, as dwarfdump sees it
    r = _cli(str(binary))
    assert r.returncode == EXIT_FOUND, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == ("crash-dup: 1 starts shared by several FDEs (1 with different rules) "
                        "(16 FDEs in .eh_frame)")
    assert f"{crash['cold']:#x} (run [cold.0])" in lines[2]
    code, record = _json(str(binary))
    assert code == EXIT_FOUND and record["found"] is True
    [shared] = record["shared_start"]
    assert int(shared["address"], 16) == crash["cold"]
    assert sorted((f["offset"], int(f["start"], 16), int(f["end"], 16)) for f in shared["fdes"]) \
        == sorted((f["offset"], f["start"], f["end"]) for f in fdes)
    # Trusted: the one .eh_frame_hdr lists (what libgcc's unwinder finds), and why.
    assert shared["trusted"]["offset"] == hdr_table(binary)[crash["cold"]]
    assert ".eh_frame_hdr lists it" in shared["why"]
    assert int(shared["rules_differ_at"], 16) == first_difference(fdes[0], fdes[1])
    assert record["overlaps"] == [] and record["moved_without_fde"] == []


def test_a_wrong_cfa_offset_in_a_cold_fragment(crash: dict[str, Any],
                                               damaged: dict[str, Path]) -> None:
    binary = damaged["cfa"]
    # Without the input nothing is ambiguous: one FDE per start, every moved fragment covered.
    assert _cli(str(binary)).returncode == 0
    code, record = _json(str(binary), "--input", str(crash["input"]))
    assert code == EXIT_FOUND
    bad = next(f for f in dwarfdump_fdes(binary) if f["start"] == crash["cold"])
    good = next(f for f in dwarfdump_fdes(crash["binary"]) if f["start"] == crash["cold"])
    differing = [a for a in bad["rows"] if bad["rows"][a] != good["rows"][a]]
    got = record["rules_unlike_input"]
    assert [int(m["address"], 16) for m in got] == differing
    for m in got:
        assert m["rule"] == "CFA" and (m["procedure"], m["fragment"]) == ("run", "cold.0")
        assert f"CFA={m['output']}:" in bad["rows"][int(m["address"], 16)]
        assert f"CFA={m['input']}:" in good["rows"][int(m["address"], 16)]
    assert record["shared_start"] == [] and record["moved_without_fde"] == []


def test_a_moved_fragment_without_an_fde(crash: dict[str, Any], damaged: dict[str, Path]
                                         ) -> None:
    binary = damaged["bare"]
    # The damage, as the oracles see it: no FDE covers run.cold.0, none is listed for it.
    fdes = dwarfdump_fdes(binary)
    assert not any(f["start"] <= crash["cold"] < f["end"] for f in fdes)
    assert crash["cold"] not in hdr_table(binary)
    r = _cli(str(binary))
    assert r.returncode == EXIT_FOUND, r.stderr
    covering = sum(f["end"] > f["start"] for f in fdes)  # the emptied one covers nothing
    assert r.stdout.splitlines()[0] == \
        f"crash-bare: 1 of 3 moved fragments without an FDE ({covering} FDEs in .eh_frame)"
    code, record = _json(str(binary))
    assert code == EXIT_FOUND
    assert record["moved_without_fde"] == [
        {"fragment_start": f"{crash['cold']:#x}", "fragment_end": f"{crash['cold_end']:#x}",
         "procedure": "run", "fragment": "cold.0", "from": f"{crash['cold']:#x}"}]
    assert record["shared_start"] == record["overlaps"] == []


def test_bolt_rewriting_in_place_leaves_stale_fdes(zoo: dict[str, Any]) -> None:
    """bolt-nonreloc rewrites functions at their own addresses: its new FDE (the hot part)
    and the input's (the whole function) share a start, the pattern of a BOLTed libLLVM."""
    binary = ROOT / facts(zoo, "bolt-nonreloc", "crash")["binary"]
    fdes = dwarfdump_fdes(binary)
    starts = sorted({f["start"] for f in fdes if sum(g["start"] == f["start"] for g in fdes) > 1})
    code, record = _json(str(binary))
    assert code == EXIT_FOUND
    assert [int(s["address"], 16) for s in record["shared_start"]] == starts
    table = hdr_table(binary)
    for s in record["shared_start"]:
        start = int(s["address"], 16)
        group = [f for f in fdes if f["start"] == start]
        assert sorted(f["offset"] for f in s["fdes"]) == sorted(f["offset"] for f in group)
        assert s["trusted"]["offset"] == table[start]
        want = first_difference(group[0], group[1])
        assert s["rules_differ_at"] == (None if want is None else f"{want:#x}")


def test_exit_statuses(crash: dict[str, Any], tmp_path: Path) -> None:
    missing = _cli(str(tmp_path / "nothing-here"))
    assert missing.returncode == 1 and missing.stdout == ""
    assert len(missing.stderr.splitlines()) == 1 and "nothing-here" in missing.stderr
    # Another binary named as the input: refused in one line, not compared.
    other = ROOT / "fixtures/build/_bolt-input/loop"
    wrong = _cli(str(crash["binary"]), "--input", str(other))
    assert wrong.returncode == 1 and len(wrong.stderr.splitlines()) == 1, wrong.stderr
    assert _cli().returncode == 2  # usage
