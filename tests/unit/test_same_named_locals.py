"""Same-named local functions in a BOLTed C++ program (issue 13 item 7): every unit of the zoo's
multi-TU `statics` program has its own local ``__cxx_global_array_dtor``, ``helper`` and
``summarize``, and BOLT's cdsplit splits them into ``.warm`` and ``.cold`` fragments.

`unsplit where` on every instruction of those functions must name the right input function,
never by name alone. The truth comes from LLVM's tools, not from unsplit: perf2bolt-22 fed
``B 0 X`` records translates X through BAT to ``name/file/1 + input offset`` (shared/NOTES.md),
llvm-readelf-22 gives that unit's function address in the pre-BOLT input, and
llvm-symbolizer-22 its line there (for the --update-debug-sections twin: BOLT's own line table).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts

VARIANTS = ["bolt-statics", "bolt-statics-dbg"]
_SYMBOL = re.compile(r"^\s*\d+:\s+([0-9a-f]+)\s+(\d+)\s+(\w+)\s+(\w+)\s+\w+\s+\S+\s+(\S+)$")
_FRAGMENT = re.compile(r"^(?P<base>.+)\.(?:cold|warm)(?:\.\d+)?$")

Function = tuple[str, str]  # (unit file, symbol name)


def _run(*cmd: str | Path, stdin: str | None = None) -> str:
    proc = subprocess.run([str(c) for c in cmd], input=stdin, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"{cmd}: {proc.stderr[-2000:]}"
    return proc.stdout


def local_functions(path: Path) -> list[tuple[str, str, int, int]]:
    """(STT_FILE, name, address, size) of every local STT_FUNC, by llvm-readelf-22's table."""
    out, unit = [], ""
    for line in _run("llvm-readelf-22", "-sW", path).splitlines():
        m = _SYMBOL.match(line)
        if m is None:
            continue
        value, size, kind, bind, name = m.groups()
        if kind == "FILE":
            unit = name
        elif kind == "FUNC" and bind == "LOCAL" and int(size):
            out.append((unit, name, int(value, 16), int(size)))
    return out


def instructions(path: Path, start: int = 0, end: int = (1 << 64) - 1) -> dict[int, str]:
    """Address -> mnemonic of each instruction llvm-objdump-22 disassembles in [start, end)."""
    text = _run("llvm-objdump-22", "-d", "--no-show-raw-insn", f"--start-address={start:#x}",
                f"--stop-address={end:#x}", path)
    return {int(m[1], 16): m[2] for m in re.finditer(r"^\s+([0-9a-f]+):\s+(\S+)", text, re.M)}


def perf2bolt_targets(path: Path, addresses: list[int], tmp: Path) -> dict[int, tuple[Function,
                                                                                     int]]:
    """Address -> ((unit, input function), input offset) as perf2bolt-22 translates each as a
    branch target. perf2bolt adds up records that translate alike, so the k-th address of a
    batch counts 2**k: the bits of a count say which addresses went there."""
    got: dict[int, tuple[Function, int]] = {}
    agg, fdata = tmp / "statics.agg", tmp / "statics.fdata"
    for at in range(0, len(addresses), 63):
        batch = addresses[at : at + 63]
        agg.write_text("".join(f"B 0 {a:x} {1 << k} 0\n" for k, a in enumerate(batch)))
        _run("perf2bolt-22", path, "--pa", "-p", agg, "-o", fdata)
        for line in fdata.read_text().splitlines()[1:]:  # first line: boltedcollection
            f = line.split()
            name, unit, _ = f[4].split("/")  # local functions are written name/file/1
            count = int(f[7])
            for k, a in enumerate(batch):
                if count >> k & 1:
                    got[a] = ((unit, name), int(f[5], 16))
    return got


def symbolize(path: Path, addresses: list[int]) -> list[tuple[str, int]]:
    text = _run("llvm-symbolizer-22", "--obj", path, "--no-inlines", "--basenames",
                "--functions=none", stdin="".join(f"{a:#x}\n" for a in addresses))
    out = []
    for line in filter(None, text.splitlines()):  # file:line:column
        file, number, _ = line.rsplit(":", 2)
        out.append((file, int(number) if number.isdigit() else 0))
    return out


def where(path: Path, addresses: list[int]) -> list[dict[str, Any]]:
    out = _run(sys.executable, "-m", "unsplit", "where", "--json", "--exe", path,
               *(hex(a) for a in addresses))
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize("variant", VARIANTS)
def test_where_pairs_fragments_with_their_own_unit(zoo: dict[str, Any], variant: str,
                                                   tmp_path: Path) -> None:
    f = facts(zoo, variant, "statics")
    binary, inp = ROOT / f["binary"], ROOT / f["input"]
    ours = local_functions(binary)
    names = Counter(_FRAGMENT.sub(r"\g<base>", n) for _, n, _, _ in ours)
    shared = {n for n, k in names.items() if k > 1}
    pieces = [s for s in ours if _FRAGMENT.sub(r"\g<base>", s[1]) in shared]
    # The case of the issue: several units' functions split, warm and cold fragments among them.
    kinds = Counter(s[1].rsplit(".", 1)[-1] for s in pieces if _FRAGMENT.match(s[1]))
    assert kinds["warm"] >= 2 and kinds["cold"] >= 4, kinds
    assert "__cxx_global_array_dtor.cold" in {n for _, n, _, _ in pieces}

    code = {a: op for _, _, lo, size in pieces for a, op in instructions(binary, lo, lo + size)
            .items()}
    addresses = list(code)
    truth = perf2bolt_targets(binary, addresses, tmp_path)
    assert set(truth) == set(addresses)
    by_unit = {(unit, name): value for unit, name, value, _ in local_functions(inp)}
    input_addresses = [by_unit[fn] + off for fn, off in (truth[a] for a in addresses)]
    if f["has_debug_info"]:  # the twin: BOLT's own line table, where it has a line
        lines = symbolize(binary, addresses)
    else:
        lines = symbolize(inp, input_addresses)
    # An instruction BOLT made (a jump between blocks it laid out anew) has no input line:
    # compare lines where the input holds the same instruction.
    theirs = instructions(inp)
    same = [theirs.get(i) == code[a] for a, i in zip(addresses, input_addresses, strict=True)]

    got = where(binary, addresses)
    wrong = []
    for a, g, want_input, line, kept in zip(addresses, got, input_addresses, lines, same,
                                             strict=True):
        (_, name), _ = truth[a]
        have = (g["procedure"], g.get("input_address"))
        if have != (name, hex(want_input)):
            wrong.append((hex(a), have, (name, hex(want_input))))
        if kept and line[1] and (g["file"], g["line"]) != line:
            wrong.append((hex(a), (g["file"], g["line"]), line))
    assert not wrong, f"{len(wrong)} of {len(addresses)}: {wrong[:8]}"
    assert sum(same) > 0.9 * len(same)
