"""What LLVM's own tools say about a BOLTed binary, for tests to compare unsplit with.

perf2bolt-22 fed pre-aggregated ``B 0 X count 0`` records translates X through BAT exactly
(shared/NOTES.md, shared/specs/bolt-bat.md §5.2) and names the input function ``name`` or, for a
local one, ``name/unit/1``; llvm-readelf-22 gives that function's address in the pre-BOLT input
(a local one under its unit's STT_FILE); llvm-symbolizer-22 the line there. Nothing here
imports unsplit.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SYMBOL = re.compile(r"^\s*\d+:\s+([0-9a-f]+)\s+(\d+)\s+(\w+)\s+(\w+)\s+\w+\s+\S+\s+(\S+)$")


def run(*cmd: str | Path, stdin: str | None = None) -> str:
    proc = subprocess.run([str(c) for c in cmd], input=stdin, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"{cmd}: {proc.stderr[-2000:]}"
    return proc.stdout


@dataclass(frozen=True, slots=True)
class Function:
    unit: str | None  # the STT_FILE of a local function, None for a global one
    name: str
    address: int
    size: int


def functions(path: Path) -> list[Function]:
    """Every defined STT_FUNC in llvm-readelf-22's symbol table order (assembly ones may have
    no size)."""
    out, unit = [], ""
    for line in run("llvm-readelf-22", "-sW", path).splitlines():
        m = _SYMBOL.match(line)
        if m is None:
            continue
        value, size, kind, bind, name = m.groups()
        if kind == "FILE":
            unit = name
        elif kind == "FUNC" and int(value, 16):
            out.append(Function(unit if bind == "LOCAL" else None, name, int(value, 16),
                                int(size)))
    return out


def input_address(functions: list[Function], name: str, unit: str | None, offset: int) -> int:
    """The address of input function ``name`` (of ``unit`` if local) plus ``offset``."""
    found = [f for f in functions if f.name == name and f.unit == unit]
    assert len(found) == 1, (name, unit, found)
    return found[0].address + offset


def instructions(path: Path, start: int = 0, end: int = (1 << 64) - 1) -> dict[int, str]:
    """Address -> mnemonic of each instruction llvm-objdump-22 disassembles in [start, end)."""
    text = run("llvm-objdump-22", "-d", "--no-show-raw-insn", f"--start-address={start:#x}",
               f"--stop-address={end:#x}", path)
    return {int(m[1], 16): m[2] for m in re.finditer(r"^\s+([0-9a-f]+):\s+(\S+)", text, re.M)}


def perf2bolt_targets(path: Path, addresses: list[int], tmp: Path
                      ) -> dict[int, tuple[str, str | None, int]]:
    """Address -> (input function, its unit if local, input offset) as perf2bolt-22 translates
    each as a branch target. perf2bolt adds up records that translate alike, so the k-th
    address of a batch counts 2**k: the bits of a count say which addresses went there."""
    got: dict[int, tuple[str, str | None, int]] = {}
    agg, fdata = tmp / "truth.agg", tmp / "truth.fdata"
    for at in range(0, len(addresses), 63):
        batch = addresses[at : at + 63]
        agg.write_text("".join(f"B 0 {a:x} {1 << k} 0\n" for k, a in enumerate(batch)))
        run("perf2bolt-22", path, "--pa", "-p", agg, "-o", fdata)
        for line in fdata.read_text().splitlines()[1:]:  # first line: boltedcollection
            f = line.split()
            name, _, rest = f[4].partition("/")  # a local function is written name/unit/1
            unit = rest.rpartition("/")[0] or None
            count = int(f[7])
            for k, a in enumerate(batch):
                if count >> k & 1:
                    got[a] = (name, unit, int(f[5], 16))
    return got


def symbolize(path: Path, addresses: list[int]) -> list[tuple[str, int]]:
    """(file base name, line) of each address by llvm-symbolizer-22; line 0 when unknown."""
    text = run("llvm-symbolizer-22", "--obj", path, "--no-inlines", "--basenames",
               "--functions=none", stdin="".join(f"{a:#x}\n" for a in addresses))
    out = []
    for line in filter(None, text.splitlines()):  # file:line:column
        file, number, _ = line.rsplit(":", 2)
        out.append((file, int(number) if number.isdigit() else 0))
    return out


def fragments_symbolized(file: Path, binary: Path, split_functions: dict[str, Any],
                         exported: set[str] | None = None
                         ) -> tuple[list[list[str]], list[str]]:
    """(llvm-symbolizer-22's lines for each instruction of each split function's fragments,
    function first, by `file` alone; what the facts say it is: the function, or its entry's
    address where `exported` leaves it out). `binary`: where the fragments' code is."""
    addresses, expected = [], []
    for name, info in split_functions.items():
        hot = int(info["fragments"][0]["start"], 16)
        for frag in info["fragments"]:
            code = instructions(binary, int(frag["start"], 16), int(frag["end"], 16))
            addresses += sorted(code)
            known = exported is None or name in exported
            expected += [name if known else f"{hot:#x}"] * len(code)
    assert len(split_functions) > 1 and addresses
    text = run("llvm-symbolizer-22", "--obj", file, "--no-inlines", "--no-demangle",
               stdin="".join(f"{a:#x}\n" for a in addresses))
    return [b.split("\n") for b in text.strip("\n").split("\n\n")], expected


def folded_counts(folded: str) -> Counter[str]:
    """Samples per stack of a folded profile (`STACK COUNT` lines, flamegraph.pl's input)."""
    out: Counter[str] = Counter()
    for line in folded.splitlines():
        stack, _, count = line.rpartition(" ")
        out[stack] += int(count)
    return out


def input_lines(binary: Path, inp: Path, truth: dict[int, tuple[str, str | None, int]],
                addresses: list[int]) -> tuple[list[int], list[tuple[str, int] | None]]:
    """For each BOLTed address (translated by :func:`perf2bolt_targets`): its input address,
    and its line in the input, or None where the output instruction is not the input's (a jump
    BOLT made between blocks it laid out anew has no input line of its own)."""
    assert set(truth) >= set(addresses), sorted(set(addresses) - set(truth))[:5]
    funcs = functions(inp)
    inputs = [input_address(funcs, *truth[a]) for a in addresses]
    ours, theirs = instructions(binary), instructions(inp)
    lines = symbolize(inp, inputs)
    return inputs, [ln if ours.get(a) == theirs.get(i) else None
                    for a, i, ln in zip(addresses, inputs, lines, strict=True)]
