"""A BOLTed program with a function written in assembly without `.type` (a plain label, as
zstd's Huffman decoding loops are): BOLT splits it like any other and BAT names it by that
STT_NOTYPE label. Its frames are named by the label and lined from the pre-BOLT input, and
the input is still taken as the input (every other function keeps its lines).

Oracles: the label in the program's own source, its `BB:` markers, and llvm-readelf-22's word
that the label is STT_NOTYPE in the input; never unsplit's output."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.toolbox import markers_in, text_symbols

from ..conftest import ROOT
from .driver_gdb import PLUGIN

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("llvm-bolt-22") is None, reason="llvm-bolt-22 is missing"),
]

SUM_S = """\
\t.text
\t.globl\tasm_sum
\t.hidden\tasm_sum
asm_sum:
\txorl\t%eax, %eax
1:\ttestq\t%rsi, %rsi
\tjz\t3f
\tmovq\t(%rdi), %rdx
\ttestq\t%rdx, %rdx
\tjs\t2f
\taddq\t%rdx, %rax
\taddq\t$8, %rdi
\tdecq\t%rsi
\tjmp\t1b
3:\tret
2:\txorl\t%ecx, %ecx /* BB: asm cold */
\tmovq\t%rdx, (%rcx) /* BB: asm crash */
\tret
\t.section\t.note.GNU-stack,"",@progbits
"""

MAIN_C = """\
#include <string.h>
long asm_sum(long *p, long n);
int main(int argc, char **argv)
{
    long v[64], t = 0;
    for (int i = 0; i < 64; i++)
        v[i] = i;
    for (int i = 0; i < 20000; i++)
        t += asm_sum(v, 64);
    if (argc > 1 && strcmp(argv[1], "crash") == 0) {
        v[3] = -1;
        t += asm_sum(v, 64); /* BB: main crash call */
    }
    return (int)(t & 1);
}
"""


def _run(*cmd: str | Path, cwd: Path) -> str:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"{cmd}: {done.stderr[-1500:]}"
    return done.stdout


@pytest.fixture(scope="module")
def bolted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """o/prog, BOLTed (profile from its own instrumented run, cold code split, BAT) from
    o/input/prog, whose `asm_sum` is an STT_NOTYPE label."""
    work = tmp_path_factory.mktemp("asm")
    (work / "sum.S").write_text(SUM_S)
    (work / "main.c").write_text(MAIN_C)
    (work / "o" / "input").mkdir(parents=True)
    given = work / "o" / "input" / "prog"
    _run("clang-22", "-O2", "-g", "-fuse-ld=lld", "-Wl,--emit-relocs", "main.c", "sum.S", "-o",
         given, cwd=work)
    symbols = _run("llvm-readelf-22", "-sW", given, cwd=work)
    assert re.search(r"\bNOTYPE\s+\w+\s+\w+\s+\S+\s+asm_sum$", symbols, re.M), symbols
    _run("llvm-bolt-22", given, "-instrument", f"-instrumentation-file={work}/prog.fdata", "-o",
         work / "prog.inst", cwd=work)
    _run(work / "prog.inst", cwd=work)
    _run("llvm-bolt-22", given, f"-data={work}/prog.fdata", "--enable-bat",
         "-reorder-blocks=ext-tsp", "--split-functions", "--split-all-cold", "-o",
         work / "o" / "prog", cwd=work)
    cold = [s for s in text_symbols(work / "o" / "prog") if s.name.startswith("asm_sum.cold")]
    assert cold, "BOLT no longer splits the assembly function"
    return work


def test_where_names_moved_assembly_by_its_label(bolted: Path, tmp_path: Path) -> None:
    cold = next(s for s in text_symbols(bolted / "o" / "prog")
                if s.name.startswith("asm_sum.cold"))
    out = subprocess.run([sys.executable, "-m", "unsplit", "where", "--exe",
                          str(bolted / "o" / "prog"), hex(cold.start)], capture_output=True,
                         text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "plugin"),
                              "UNSPLIT_CACHE": str(tmp_path / "cache")})
    assert out.returncode == 0, out.stderr
    assert re.search(r" is in asm_sum \[cold", out.stdout), out.stdout
    line = markers_in(SUM_S)["asm cold"]
    assert re.search(rf"^\s+line\s+\S*sum\.S:{line}\b", out.stdout, re.M), out.stdout


def test_gdb_backtrace_of_a_crash_in_moved_assembly(bolted: Path, tmp_path: Path) -> None:
    """Frame 0 in the label's cold fragment and frame 1 in main's: both named and lined (the
    input taken for its lines although BAT names a function it has no STT_FUNC of)."""
    out = subprocess.run(["gdb", "-nx", "-q", "-batch", "-iex", "set debuginfod enabled off",
                          "-iex", f"source {PLUGIN}", "-ex", "run", "-ex", "bt", "--args",
                          str(bolted / "o" / "prog"), "crash"],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "UNSPLIT_CACHE": str(tmp_path / "cache")})
    frames = re.findall(r"^#(\d+) +(?:0x[0-9a-f]+ in )?(\S+)(?: \[[\w.]+\])? \(.*\) at (\S+)$",
                        out.stdout, re.M)
    crash, call = markers_in(SUM_S)["asm crash"], markers_in(MAIN_C)["main crash call"]
    assert frames[:2] == [("0", "asm_sum", f"sum.S:{crash}"), ("1", "main", f"main.c:{call}")], \
        out.stdout + out.stderr
