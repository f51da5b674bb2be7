"""A copy GCC made of a function (`scale.constprop.0`, ipa-cp's) with a cold part of its own
(`scale.constprop.0.cold`, PGO) is named as plain GDB and LLDB name it: its DWARF calls it
`scale`. Found on lz4 1.9.4 built as Debian builds it, with GCC PGO
(`LZ4IO_decompressSrcFile.constprop.0.cold`, bench/realprog.py lz4): the plugin named the
frame by its symbol, and LLDB lost its arguments (its name no longer matched LLDB's own
function's) or, in C++, showed the parameter types (`scale(int*, int, int) (.constprop.0)`).
Oracle: the same debugger without the plugin, on the same binary (GCC's DWARF covers `.cold`);
the clone's symbols by nm.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ..builders import gcc_pgo_build
from .driver_gdb import GdbDriver
from .driver_lldb import LldbDriver

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("gdb") is None or shutil.which("gcc") is None
                       or shutil.which("lldb-22") is None, reason="needs gdb, lldb-22 and gcc"),
]

# `scale` is called with a constant factor (GCC clones it as scale.constprop.0); the training
# run never sees a negative value, so that branch is the clone's cold part, where it crashes.
SOURCE = """\
#include <stdio.h>
#include <string.h>
volatile int sink;
__attribute__((noinline)) static int scale(int *v, int n, int factor)
{
    int s = 0;
    for (int i = 0; i < n; i++) {
        if (v[i] < 0) {
            fprintf(stderr, "negative %d at %d\\n", v[i], i);
            sink = v[i] * factor;
            if (sink < -100) *(volatile int *)0 = sink; /* BB: clone crash */
            s -= sink;
            continue;
        }
        s += v[i] * factor;
    }
    return s;
}
int main(int argc, char **argv)
{
    int rare = argc > 1 && strcmp(argv[1], "rare") == 0;
    int v[4] = {1, 2, 3, rare ? -40 : 4};
    long total = 0;
    for (int i = 0; i < (rare ? 1 : 2000); i++)
        total += scale(v, 4, 3);
    return (int)(total & 1);
}
"""
_TAG = re.compile(r" \[cold\]")


@pytest.fixture(scope="module", params=["c", "cpp"])
def clone(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp(f"clone-{request.param}")
    cc = "gcc" if request.param == "c" else "g++"
    source = f"clone.{request.param}"
    gcc_pgo_build(work, {source: SOURCE}, [[cc, "-O2", "-g", source, "-o", "clone"]],
                  train=["./clone", "train"])
    symbols = subprocess.run(["nm", str(work / "clone")], capture_output=True, text=True,
                             check=True).stdout
    # The case this test is about: the crash is in a clone's cold part.
    assert re.search(r" t \S*scale\S*\.constprop\.0\.cold$", symbols, re.M), symbols
    return work / "clone"


def _frames(bt: str) -> list[str]:
    """Each frame's function and arguments, without the address and the fragment tag."""
    return [_TAG.sub("", m[1]) for m in re.finditer(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(.*)$", bt,
                                                    re.M)]


def test_gdb_names_a_clones_cold_part_as_plain_gdb(clone: Path) -> None:
    seen = {}
    for plugin in (False, True):
        with GdbDriver(str(clone), args=["rare"], plugin=plugin) as gdb:
            stop = gdb.run()
            bt = gdb.backtrace()
        assert "SIGSEGV" in stop, stop
        seen[plugin] = (_frames(bt), stop.count(" in scale"))
    assert seen[False][0][0].startswith("scale (v="), seen[False]
    assert seen[True] == seen[False]


def test_lldb_names_a_clones_cold_part_as_plain_lldb(clone: Path) -> None:
    seen = {}
    for plugin in (False, True):
        with LldbDriver(str(clone), args=["rare"], plugin=plugin) as lldb:
            stop = lldb.run()
            bt = lldb.backtrace()
        frames = [_TAG.sub("", m[1]) for m in re.finditer(r"frame #\d+: 0x[0-9a-f]+ (.*)$", bt,
                                                           re.M)]
        seen[plugin] = (frames[:2], _TAG.sub("", stop.split("frame #0: ")[-1].split("\n")[0]))
    assert seen[False][0][0].startswith("clone`scale(v="), seen[False]
    assert seen[True] == seen[False]
