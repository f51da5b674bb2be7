"""Small binaries compiled on the spot for unit tests (cached for the session)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ..builders import gcc_pgo_build, run

SAMPLE = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) static int helper(int x) {
    if (x == 4242) {            /* BB: helper cold */
        fprintf(stderr, "rare %d\n", x);
        exit(3);
    }
    return x + 1;
}
__attribute__((noinline)) int work(int x) {
    if (x == 12345) {           /* BB: work cold */
        printf("rare path\n");
        abort();
    }
    return helper(x) * 2;
}
int main(int argc, char **argv) {
    int s = 0;
    for (int i = 0; i < 2000; i++)
        s += work(i + argc);
    printf("%d\n", s);
    if (argc > 2)
        work(12345);
    return 0;
}
"""


@pytest.fixture(scope="session")
def gcc_pgo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A GCC -O2 -g PGO build with `work.cold` and `helper.cold` fragments."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    d = tmp_path_factory.mktemp("gccpgo")
    gcc_pgo_build(d, {"sample.c": SAMPLE}, [["gcc", "-O2", "-g", "sample.c", "-o", "sample"]],
                  train=["./sample"])
    return d / "sample"


@pytest.fixture(scope="session")
def clang_mfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clang-22 PGO build with machine-function splitting (DWARF 5)."""
    if shutil.which("clang-22") is None:
        pytest.skip("clang-22 not installed")
    d = tmp_path_factory.mktemp("clangmfs")
    (d / "sample.c").write_text(SAMPLE)
    run(["clang-22", "-O2", "-g", "-fprofile-instr-generate", "sample.c", "-o", "gen"], d)
    run(["./gen"], d, env={"LLVM_PROFILE_FILE": str(d / "s.profraw")})
    run(["llvm-profdata-22", "merge", "-o", "s.profdata", "s.profraw"], d)
    run(["clang-22", "-O2", "-g", "-fprofile-instr-use=s.profdata", "-fsplit-machine-functions",
         "sample.c", "-o", "sample"], d)
    return d / "sample"
