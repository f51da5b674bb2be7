"""A hidden-visibility function keeps its cold fragment (found by bench/realworld.py on Lua,
whose internal functions are all ``visibility("internal")``: `luaV_execute`'s hot part was
"outside every known procedure").

The linker makes hidden functions local and lists them after every file's own locals, under an
unnamed STT_FILE, while ``work.cold`` stays under ``a.c``: the fragment must still find its
parent, the only function of that name.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from unsplit.index.module_index import ModuleIndex

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

A_C = """\
#include <stdio.h>
#include <stdlib.h>
__attribute__((cold, noinline)) void die(const char *m) { puts(m); abort(); }
__attribute__((visibility("hidden"))) int work(int x) { if (x > 100) die("big"); return x * 2; }
static int helper(int x) { if (x > 200) die("huge"); return x + 1; }
int twice(int x) { return helper(x) + helper(x + 1); }
"""
B_C = """\
#include <stdlib.h>
extern void die(const char *);
static int helper(int x) { if (x > 300) die("vast"); return x - 1; }
int work(int); int twice(int);
int main(int argc, char **argv) { (void)argv; return work(argc) + twice(argc) + helper(argc); }
"""


def _files_of(path: Path) -> dict[str, str]:
    """Function symbol -> the STT_FILE it is listed under."""
    out, current = {}, ""
    with path.open("rb") as f:
        for sym in ELFFile(f).get_section_by_name(".symtab").iter_symbols():
            if sym["st_info"]["type"] == "STT_FILE":
                current = sym.name
            elif sym["st_info"]["type"] == "STT_FUNC":
                out[sym.name] = current
    return out


def test_a_hidden_function_and_its_cold_part_are_one_procedure(tmp_path: Path) -> None:
    (tmp_path / "a.c").write_text(A_C)
    (tmp_path / "b.c").write_text(B_C)
    subprocess.run(["gcc", "-O2", "-fno-inline", "a.c", "b.c", "-o", "t"], cwd=tmp_path,
                   check=True, capture_output=True)
    exe = tmp_path / "t"
    files = _files_of(exe)
    assert files["work.cold"] == "a.c" and files["work"] != "a.c"  # the case at hand

    index = ModuleIndex.open(str(exe))
    work = index.procedures["work"]
    assert [f.name for f in work.fragments] == ["hot", "cold"]
    syms = {f.name: f for f in index.binary.functions}
    assert work.entry == syms["work"].value
    loc = index.locate(syms["work"].value + 1)
    assert (loc.procedure, loc.fragment) == ("work", "hot")
    # Two static `helper`s: each fragment still goes to its own file's function.
    for fragment in (n for n in syms if n.startswith("helper") and n.endswith(".cold")):
        loc = index.locate(syms[fragment].value)
        assert loc.procedure == "helper" and loc.fragment == "cold"
