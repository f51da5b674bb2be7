"""`bb break` says what the debugger's own `break` says, and `bb break --list` lists the rest.

A program compiled here (GCC PGO) inlines `bump` into `other` and into both the hot path and
the cold fragment (`work.cold`) of `work`, so its line has locations in three places. The
debugger's own `break` on that line (GDB: `Breakpoint N at 0x…: m.c:L. (K locations)`, LLDB:
`Breakpoint N: K locations.`) is the oracle for the shape of `bb break`'s message; the count is
the number of locations the debugger itself then lists, and the cold one is placed by `nm`.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fixtures.toolbox import markers_in

from .. import builders

pytestmark = pytest.mark.e2e

SOURCE = """\
#include <stdio.h>
#include <string.h>

static volatile long sink;

static inline __attribute__((always_inline)) long bump(long *p, long v)
{
    *p += v * 3; /* BB: bump */
    return *p;
}

__attribute__((noinline)) long other(long *p, int i)
{
    return bump(p, i * 2) + 1; /* BB: other bump */
}

__attribute__((noinline)) long work(long *p, int i, int mode)
{
    if (mode) {
        fprintf(stderr, "rare %d\\n", i); /* BB: rare print */
        sink = bump(p, i + 100); /* BB: rare bump */
        return sink;
    }
    return bump(p, i); /* BB: hot bump */
}

int main(int argc, char **argv)
{
    long acc = 0;
    int rare = argc > 1 && strcmp(argv[1], "rare") == 0;
    for (int i = 0; i < 1000; i++)
        acc += work(&acc, i, rare && i == 3) + other(&acc, i);
    printf("%ld\\n", acc);
    return 0;
}
"""

_GDB_MANY = re.compile(r"Breakpoint (\d+) at (0x[0-9a-f]+): (\S+)\. \((\d+) locations\)")
_GDB_ONE = re.compile(r"Breakpoint (\d+) at (0x[0-9a-f]+): file (\S+), line (\d+)\.")
_LLDB_MANY = re.compile(r"Breakpoint (\d+): (\d+) locations\.")
_LLDB_ONE = re.compile(r"Breakpoint (\d+): where = (\S+)`(.+?) at (\S+):(\d+):(\d+), "
                       r"address = (0x[0-9a-f]{16})")


@pytest.fixture(scope="module")
def inlined(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("inlined")
    builders.gcc_pgo_build(work, {"m.c": SOURCE}, [["gcc", "-O2", "-g", "-o", "m", "m.c"]],
                           train=["./m"])
    return work


def _marker(name: str) -> int:
    return markers_in(SOURCE)[name]


def _symbol_range(binary: Path, name: str) -> tuple[int, int]:
    out = subprocess.run(["nm", "-S", str(binary)], check=True, capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] == name:
            return int(parts[0], 16), int(parts[0], 16) + int(parts[1], 16)
    raise AssertionError(f"nm: no {name} in {binary}")


def _listed(out: str) -> list[tuple[str, int, str, str]]:
    """`bb break --list` location lines: (name, address, procedure+offset, fragment)."""
    return [(m[1], int(m[2], 16), m[3], m[4]) for m in re.finditer(
        r"^  (\S+)\s+[yn]  (0x[0-9a-f]+) in (\S+)  (\S+)", out, re.M)]


def test_many_locations_read_as_the_debuggers_own(debugger: Callable[..., Any],
                                                  inlined: Path) -> None:
    binary = inlined / "m"
    line = _marker("bump")
    s = debugger(binary)
    gdb = s.name == "gdb"
    native = s.break_line("m.c", line)
    mine = s.command(f"bb break m.c:{line}")
    assert len(mine.splitlines()) == 1, mine
    shape = _GDB_MANY if gdb else _LLDB_MANY
    n, b = shape.fullmatch(native.strip()), shape.fullmatch(mine.strip())
    assert n is not None, native
    assert b is not None, mine
    if gdb:
        assert b[3] == n[3] == f"m.c:{line}"  # the location as written, as GDB echoes it
    count = int(b[4] if gdb else b[2])
    assert count >= int(n[4] if gdb else n[2])

    listing = s.command("bb break --list")
    rows = _listed(listing)
    assert listing.splitlines()[0] == \
        f"Breakpoint {b[1]} (bb break m.c:{line}): {count} locations", listing
    assert len(rows) == count, listing
    cold = _symbol_range(binary, "work.cold")
    in_cold = [r for r in rows if cold[0] <= r[1] < cold[1]]
    assert in_cold and all(r[2].startswith("work+") and r[3] == "cold" for r in in_cold), rows
    # The debugger lists the same places (GDB: one native breakpoint each, named in the list).
    if gdb:
        info = s.command("info breakpoints")
        for name, address, _, _ in rows:
            assert re.search(rf"^{name}\s+breakpoint\s+keep\s+y\s+{address:#018x}\b", info,
                             re.M), (name, info)
    else:
        info = s.command(f"breakpoint list {b[1]}")
        assert f"locations = {count}" in info, info
        for name, address, _, _ in rows:
            assert re.search(rf"^\s+{re.escape(name)}: .*address = m\[{address:#018x}\]",
                             info, re.M), (name, info)


def test_one_location_reads_as_the_debuggers_own(debugger: Callable[..., Any],
                                                 inlined: Path) -> None:
    """A line only the cold fragment has: the debugger's own message for a breakpoint at that
    address, with the procedure as written where LLDB names the fragment."""
    binary = inlined / "m"
    line = _marker("rare print")
    cold = _symbol_range(binary, "work.cold")
    s = debugger(binary)
    gdb = s.name == "gdb"
    mine = s.command(f"bb break m.c:{line} --pending")
    shape = _GDB_ONE if gdb else _LLDB_ONE
    b = shape.fullmatch(mine.strip())
    assert b is not None, mine
    address = int(b[2] if gdb else b[7], 16)
    assert cold[0] <= address < cold[1], (hex(address), cold)
    native = s.break_address(address, module="m")
    n = shape.fullmatch(native.strip().splitlines()[-1])  # after GDB's "Note: … also set"
    assert n is not None, native
    if gdb:
        assert (b[2], Path(b[3]).name, b[4]) == (n[2], Path(n[3]).name, n[4]) \
            == (n[2], "m.c", str(line))
    else:
        assert (b[2], b[4], b[5], b[7]) == (n[2], n[4], n[5], n[7])
        assert b[5] == str(line)
        assert re.fullmatch(r"work \[cold\] \+ \d+", b[3]), mine  # LLDB: `work - 370`
