"""Programs compiled on the spot by tests (not in fixtures/): GCC's PGO recipe, written once, and
the split shared library several e2e files debug.

The recipe is fixtures/build.py's gcc-pgo one (``fixtures.build.gcc_pgo``): build instrumented
(``-fprofile-generate``), run the program once to train it, build again with ``-fprofile-use``,
under the same ``-o`` names. GCC then moves the code the training run never reached into
``foo.cold``.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from fixtures.build import gcc_pgo


class BuildFailed(Exception):
    pass


def run(cmd: Sequence[str], cwd: Path, *, timeout: float = 120, check: bool = True,
        env: Mapping[str, str] | None = None) -> str:
    """Run one build step; its stdout. A failure (``check``) raises BuildFailed with the
    command and the tail of its stderr."""
    proc = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, errors="replace", env=env)
    if check and proc.returncode != 0:
        raise BuildFailed(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr[-500:]}")
    return proc.stdout


def gcc_pgo_build(work: Path, sources: Mapping[str, str], profiled: Sequence[Sequence[str]],
                  *, train: Sequence[str], use: Sequence[str] = ("-fprofile-use",),
                  plain: Sequence[Sequence[str]] = (), plain_instrumented: bool = False,
                  train_must_succeed: bool = True) -> None:
    """Write ``sources`` (file name -> text) into ``work`` and build there, with GCC PGO, each
    command of ``profiled`` (a full gcc command line without profile flags).

    ``plain`` commands are built before the training run, instrumented if
    ``plain_instrumented`` (and then again after it, without profile flags), never with the
    profile. ``train`` is the training run's command line (its exit status is checked if
    ``train_must_succeed``); ``use`` the flags of the profiled commands' final build."""
    for name, text in sources.items():
        (work / name).write_text(text)

    def training() -> None:
        for cmd in plain:
            run([*cmd, "-fprofile-generate"] if plain_instrumented else cmd, work)
        run(train, work, check=train_must_succeed)

    gcc_pgo(profiled, training, work, use=use, step=run)
    if plain_instrumented:
        for cmd in plain:
            run(cmd, work)


# -- a program whose library's `work` has a cold fragment ---------------------------------

SPLIT_LIB_C = """\
#include <stdio.h>
static volatile long sink;
__attribute__((noinline)) static void note(long x) { fprintf(stderr, "note %ld\\n", x); }
__attribute__((noinline)) long work(long *p, int mode)
{
    if (mode == 0)
        return *p + 1;
    note(mode); /* BB: lib cold */
    sink = mode;
    *(volatile long *)0 = mode; /* BB: lib crash */
    return sink;
}
"""

# main.c: linked with libw.so, or loading it with dlopen (LIBW: its path).
SPLIT_MAIN_C = {
    "linked": """\
#include <string.h>
long work(long *p, int mode);
int main(int argc, char **argv)
{
    long v = 1, t = 0;
    for (int i = 0; i < 100000; i++)
        t += work(&v, 0);
    if (argc > 1 && strcmp(argv[1], "crash") == 0)
        t += work(&v, 1); /* BB: main crash call */
    return (int)(t & 1);
}
""",
    "dlopen": """\
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
    void *lib = dlopen(LIBW, RTLD_NOW);
    if (!lib) { fprintf(stderr, "%s\\n", dlerror()); return 3; }
    long (*work)(long *, int) = (long (*)(long *, int))dlsym(lib, "work");
    long v = 1, t = 0;
    if (argc > 1 && strcmp(argv[1], "crash") == 0)
        return (int)work(&v, 1);
    for (int i = 0; i < 100000; i++)
        t += work(&v, 0);
    return (int)(t & 1);
}
""",
}


def split_library(work: Path, *, load: str = "linked", pie: bool = True) -> Path:
    """``work`` with lib.c and main.c built into libw.so, whose ``work`` GCC split (PGO) into
    ``work`` and ``work.cold``, and ``m``, which runs it (``m crash``: dies in ``work.cold``).

    ``load`` is how ``m`` gets the library: "linked" (``-lw``, rpath ``work``) or "dlopen";
    ``pie`` adds ``-fPIE -pie``. Skips the test when gcc is missing; fails it when gcc no
    longer splits work() (the toolchain stopped producing the case under test)."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    lib = ["gcc", "-O2", "-g", "-fPIC", "-shared", "lib.c", "-o", "libw.so"]
    exe = ["gcc", "-O2", "-g", *(["-fPIE", "-pie"] if pie else [])]
    if load == "dlopen":
        exe += [f'-DLIBW="{work}/libw.so"', "main.c", "-o", "m"]
    else:
        exe += ["main.c", "-L.", "-lw", f"-Wl,-rpath,{work}", "-o", "m"]
    gcc_pgo_build(work, {"lib.c": SPLIT_LIB_C, "main.c": SPLIT_MAIN_C[load]}, [lib],
                  use=("-fprofile-use", "-Wno-missing-profile"), plain=[exe],
                  plain_instrumented=load == "linked", train=[str(work / "m")],
                  train_must_succeed=False)
    if "work.cold" not in run(["nm", "libw.so"], work):
        pytest.fail("gcc did not split work() in the library (PGO made no work.cold)")
    return work
