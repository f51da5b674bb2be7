"""index/inlines: the inline chain at an address of a function with hundreds of inlined calls
walks only the children whose ranges hold the address (sqlite3's big functions made `unsplit
breakpad` test every child's ranges at every address), and finds what llvm-symbolizer-22
--inlining finds there; the bisection that picks them agrees with testing every range."""

from __future__ import annotations

import shutil
import subprocess
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from unsplit.elf.binary import Binary
from unsplit.elf.dwarf_lines import DwarfLines
from unsplit.index import inlines
from unsplit.index.inlines import InlineChains

CALLS = 300
SOURCE = ("volatile int sink;\n"
          "static inline __attribute__((always_inline)) void put(int v) { sink = v * 3; }\n"
          "__attribute__((noinline)) void many(int n)\n{\n"
          + "".join(f"    if (n > {i}) put(n + {i});\n" for i in range(CALLS))
          + "}\nint main(int c, char **v) { (void)v; many(c); return 0; }\n")


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("inline-spans")
    (work / "m.c").write_text(SOURCE)
    subprocess.run(["gcc", "-O2", "-g", "-o", "m", "m.c"], cwd=work, check=True, timeout=120)
    return work / "m"


def _symbolizer_depths(path: Path, addresses: list[int]) -> list[int]:
    """How many frames llvm-symbolizer-22 --inlining gives each address."""
    out = subprocess.run(["llvm-symbolizer-22", "--inlining", "--obj", str(path)],
                         input="".join(f"{a:#x}\n" for a in addresses), capture_output=True,
                         text=True, check=True, timeout=120).stdout
    return [len(block.strip().splitlines()) // 2 for block in out.strip().split("\n\n")]


@pytest.mark.skipif(shutil.which("llvm-symbolizer-22") is None, reason="needs llvm-symbolizer-22")
def test_a_chain_walks_only_the_children_holding_the_address(
        many: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nm = subprocess.run(["nm", "-S", str(many)], capture_output=True, text=True,
                        check=True).stdout
    start, size = next((int(a, 16), int(s, 16)) for a, s, _, name in
                       (ln.split() for ln in nm.splitlines() if len(ln.split()) == 4)
                       if name == "many")
    addresses = list(range(start, start + size, 7))
    seen: list[int] = []
    walk = inlines._child_at

    def counted(die: Any, address: int, base: int, children: Any, blocks: bool = False) -> Any:
        return walk(die, address, base, lambda d, b: _seen(children(d, b), seen), blocks)

    monkeypatch.setattr(inlines, "_child_at", counted)
    with closing(Binary(str(many))) as b:
        chains = InlineChains(DwarfLines(b))
        depths = [len(chains.chain(a)[0]) for a in addresses]
    assert depths == _symbolizer_depths(many, addresses)
    assert max(depths) == 2  # `put` inlined into `many` (the premise)
    assert seen and max(seen) <= 2, max(seen)  # of the CALLS inlined calls


def _seen(kids: list[Any], seen: list[int]) -> list[Any]:
    seen.append(len(kids))
    return kids


_RANGE = st.tuples(st.integers(0, 200), st.integers(0, 60))


@given(st.lists(st.lists(_RANGE, max_size=3), max_size=12), st.lists(st.booleans()),
       st.integers(-5, 270))
def test_spans_agree_with_testing_every_range(items: list[list[tuple[int, int]]],
                                              always: list[bool], address: int) -> None:
    flags = (always + [False] * len(items))[:len(items)]
    spans = inlines._Spans([(lo, lo + n, i) for i, ranges in enumerate(items) for lo, n in ranges],
                   [i for i, flag in enumerate(flags) if flag])
    brute = [i for i, ranges in enumerate(items)
             if flags[i] or any(lo <= address < lo + n for lo, n in ranges)]
    assert spans.covering(address) == brute

