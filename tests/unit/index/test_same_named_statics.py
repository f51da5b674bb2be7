"""Same-named local functions in a BOLTed C++ program (issue 13 item 7): every unit of the zoo's
multi-TU `statics` program has its own local ``__cxx_global_array_dtor``, ``helper`` and
``summarize``, and BOLT's cdsplit splits them into ``.warm`` and ``.cold`` fragments.

`unsplit where` on every instruction of those functions must name the right input function,
never by name alone. The truth comes from LLVM's tools (tests/bolt_truth.py): perf2bolt-22's
translation through BAT, the input's symbols and llvm-symbolizer-22 on the input (for the
--update-debug-sections twin: BOLT's own line table). Compiler splits (GCC's ``helper.cold``
in several units) pair through the STT_FILE groups.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ... import bolt_truth
from ...conftest import ROOT, facts
from ...variants import STATICS

VARIANTS = STATICS
_FRAGMENT = re.compile(r"^(?P<base>.+)\.(?P<kind>cold|warm)(?:\.\d+)?$")


def where(path: Path, addresses: list[int]) -> list[dict[str, Any]]:
    out = bolt_truth.run(sys.executable, "-m", "unsplit", "where", "--json", "--exe", path,
                         *(hex(a) for a in addresses))
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize("variant", VARIANTS)
def test_where_pairs_fragments_with_their_own_unit(zoo: dict[str, Any], variant: str,
                                                   tmp_path: Path) -> None:
    f = facts(zoo, variant, "statics")
    binary, inp = ROOT / f["binary"], ROOT / f["input"]
    ours = [fn for fn in bolt_truth.functions(binary) if fn.unit is not None]
    names = Counter(_FRAGMENT.sub(r"\g<base>", fn.name) for fn in ours)
    pieces = [fn for fn in ours if names[_FRAGMENT.sub(r"\g<base>", fn.name)] > 1]
    # The case of the issue: several units' functions split, warm and cold fragments among them.
    kinds = Counter(m["kind"] for fn in pieces if (m := _FRAGMENT.match(fn.name)))
    assert kinds["warm"] >= 2 and kinds["cold"] >= 4, kinds
    assert "__cxx_global_array_dtor.cold" in {fn.name for fn in pieces}

    code = {a: op for fn in pieces
            for a, op in bolt_truth.instructions(binary, fn.address, fn.address + fn.size).items()}
    addresses = list(code)
    truth = bolt_truth.perf2bolt_targets(binary, addresses, tmp_path)
    inputs, lines = bolt_truth.input_lines(binary, inp, truth, addresses)
    if f["has_debug_info"]:  # the twin: BOLT's own line table, where it has a line
        lines = [None if ln is None else own for ln, own in
                 zip(lines, bolt_truth.symbolize(binary, addresses), strict=True)]

    # Functions lite mode left alone (each unit's report) keep their input address and size:
    # where names no input address for them, their own address is the input's.
    theirs = {(fn.unit, fn.name): fn for fn in bolt_truth.functions(inp)}
    unmoved = {fn.address for fn in pieces
               if (t := theirs.get((fn.unit, fn.name))) and (t.address, t.size) == (
                   fn.address, fn.size)}
    assert len(unmoved) >= 4, "lite mode moved every report"
    start = {a: max(u for u in [*unmoved, 0] if u <= a) for a in addresses}

    got = where(binary, addresses)
    wrong = []
    for a, g, want, line in zip(addresses, got, inputs, lines, strict=True):
        have = (g["linkage_name"], g.get("input_address"))
        expected = (truth[a][0], None if start[a] in unmoved and a == want else hex(want))
        if have != expected:
            wrong.append((hex(a), have, expected))
        row = g["inlined"][0] if g.get("inlined") else g  # the instruction's own line
        if line is not None and line[1] and (row["file"], row["line"]) != line:
            wrong.append((hex(a), (row["file"], row["line"]), line))
    assert not wrong, f"{len(wrong)} of {len(addresses)}: {wrong[:8]}"
    assert sum(ln is not None for ln in lines) > 0.9 * len(lines)


UNIT_C = """#include <stdio.h>
__attribute__((cold, noinline)) static void complain(int i) { fprintf(stderr, "%d\\n", i); }
__attribute__((noinline)) static int helper(int i)
{
    int v = i * N;
    for (int k = 0; k < N; k++)
        v += k ^ i;
    if (i < 0)
        complain(i);
    return v;
}
int unit_N(int i) { return helper(i) + 1; }
"""
MAIN_C = """int unit_1(int), unit_2(int), unit_3(int);
int main(int argc, char **argv) { return unit_1(argc) + unit_2(argc) + unit_3(-argc) > 9; }
"""


def test_compiler_split_locals_pair_within_their_unit(tmp_path: Path) -> None:
    """GCC's own splits: each unit's static ``helper`` has its ``helper.cold`` (a call to a
    cold function), all three named alike. A fragment's logical offset is its parent's size
    plus the distance into it, so pairing it with another unit's helper (another size) shows;
    the parent is the one in the same STT_FILE group of llvm-readelf-22's table."""
    for n in (1, 2, 3):
        (tmp_path / f"u{n}.c").write_text(UNIT_C.replace("N", str(n)))
    (tmp_path / "main.c").write_text(MAIN_C)
    exe = tmp_path / "m"
    bolt_truth.run("gcc", "-O2", "-g", *(tmp_path / f"u{n}.c" for n in (1, 2, 3)),
                   tmp_path / "main.c", "-o", exe)
    helpers = [fn for fn in bolt_truth.functions(exe) if fn.name.startswith("helper")]
    hot = {fn.unit: fn for fn in helpers if fn.name == "helper"}
    cold = [fn for fn in helpers if fn.name == "helper.cold"]
    assert len(hot) == 3 and len(cold) == 3, f"gcc made no helper.cold in every unit: {helpers}"
    assert len({fn.size for fn in hot.values()}) == 3  # the sizes tell the parents apart
    addresses = [fn.address + 1 for fn in cold] + [fn.address + 1 for fn in hot.values()]
    want = [(fn.unit, hot[fn.unit].size + 1) for fn in cold] + [(u, 1) for u in hot]
    got = where(exe, addresses)
    assert [(g["linkage_name"], g["file"], g["offset"]) for g in got] == \
        [("helper", unit, offset) for unit, offset in want]


def test_compiler_split_locals_beside_a_bolted_one(tmp_path: Path) -> None:
    """BOLT rewrites one unit's static ``helper`` (with BAT) and leaves the other units'
    ``helper`` + ``helper.cold`` where GCC put them: BAT knowing a ``helper`` must not hide the
    others (their procedure was null when BAT's procedures were matched by name). Which units
    stayed, and their sizes, come from llvm-readelf-22's STT_FILE groups of input and output."""
    for n in (1, 2, 3):
        (tmp_path / f"u{n}.c").write_text(UNIT_C.replace("N", str(n)))
    (tmp_path / "main.c").write_text(MAIN_C)
    exe, bolted = tmp_path / "m", tmp_path / "m.bolt"
    bolt_truth.run("gcc", "-O2", "-g", *(tmp_path / f"u{n}.c" for n in (1, 2, 3)),
                   tmp_path / "main.c", "-o", exe, "-Wl,--emit-relocs")
    bolt_truth.run("llvm-bolt-22", exe, "-o", bolted, "--enable-bat", "--funcs=helper/1")
    before = {(fn.unit, fn.name): fn for fn in bolt_truth.functions(exe)}
    after = [fn for fn in bolt_truth.functions(bolted) if fn.name.startswith("helper")]
    stayed = {fn.unit for fn in after if fn.name == "helper"
              and (b := before.get((fn.unit, fn.name))) and b.address == fn.address}
    moved = {fn.unit for fn in after if fn.name == "helper"} - stayed
    assert len(stayed) == 2 and len(moved) == 1, f"BOLT did not move one helper alone: {after}"
    hot = {fn.unit: fn for fn in after if fn.name == "helper"}
    cold = [fn for fn in after if fn.name == "helper.cold" and fn.unit in stayed]
    assert len(cold) == 2, after
    addresses = [fn.address + 1 for fn in cold] + [hot[u].address + 1 for u in sorted(stayed)]
    want = [(fn.unit, hot[fn.unit].size + 1) for fn in cold] + [(u, 1) for u in sorted(stayed)]
    for _ in ("built", "from the persistent index"):
        got = where(bolted, addresses)
        assert [(g["linkage_name"], g["file"], g["offset"]) for g in got] == \
            [("helper", unit, offset) for unit, offset in want]
    (unit,) = moved  # and the one BOLT rewrote is BAT's, paired with its own unit's input
    (g,) = where(bolted, [hot[unit].address + 1])
    assert (g["linkage_name"], g["file"], g.get("input_address")) == \
        ("helper", unit, hex(before[(unit, "helper")].address + 1))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", ["_ZL6helperii", "_ZL9summarizeii", "_ZL6reporti",
                                  "__cxx_global_array_dtor"])
def test_break_resolves_every_units_function(zoo: dict[str, Any], variant: str,
                                             name: str) -> None:
    """`bb break NAME` (debug/breakpoints.resolve): an entry in every unit's function of that
    name, BOLTed or left in place by lite mode (`report`), as GDB's own `break` sets them;
    with --all-fragments, the start of every fragment too. Truth: the binary's symbol table."""
    from unsplit.debug import breakpoints
    from unsplit.index.module_index import ModuleIndex

    binary = ROOT / facts(zoo, variant, "statics")["binary"]
    ours = bolt_truth.functions(binary)
    entries = {fn.address for fn in ours if fn.name == name}
    pieces = {fn.address for fn in ours if _FRAGMENT.sub(r"\g<base>", fn.name) == name}
    assert len(entries) == 4, entries  # four units, four functions of that name
    index = ModuleIndex.open(str(binary))
    sites = breakpoints.resolve(index, breakpoints.parse(name))
    assert sorted(s.file_address for s in sites) == sorted(entries)
    assert {s.procedure for s in sites} == {name}
    every = breakpoints.resolve(index, breakpoints.parse(name, all_fragments=True))
    assert sorted(s.file_address for s in every) == sorted(pieces)
