"""A BOLTed multi-threaded program built in the test session (not in fixtures/): five workers
verify records; with ``crash`` the last worker's bad record takes verify_record's cold path,
whose inlined static quarantine_record writes through NULL. So a stop there is in moved code,
in a line of an inlined callee (quarantine_record, its own line) whose call site is another
line of the outer procedure (verify_record); and several threads stop at once on attach
(``wait``: the workers sleep) and in the core.

Built with clang-22 (``-O2 -g``, relocations kept) and ``llvm-bolt-22 --split-functions
--split-strategy=all --enable-bat``, DWARF stripped as BOLT does by default; the pre-BOLT input
is kept beside it in ``input/`` (where unsplit finds it by build-id) and BOLT's
``--update-debug-sections`` twin in ``dbg/``, whose DWARF is what the debuggers alone say
(the oracle of the plugin's lines and inlined frames).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from fixtures.toolbox import markers

from .builders import BuildFailed, run

SOURCE = r"""/* verify.c - worker threads verify records; with "crash", the last worker's last
 * record is bad: verify_record's cold path quarantines it (an inlined static), which writes
 * through NULL. "wait": the workers sleep a minute before they start. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct record {
    long key;
    long sum;
    long *quarantine; /* NULL: nothing ever allocates it */
};

static volatile long sink;
static volatile int go;

__attribute__((noinline)) static void note(const char *why, long v)
{
    fprintf(stderr, "verify: %s %ld\n", why, v);
}

static inline __attribute__((always_inline)) void quarantine_record(struct record *r)
{
    sink = r->key; /* BB: inlined first line */
    *r->quarantine = r->sum; /* BB: inlined crash site */
    r->sum = 0;
}

__attribute__((noinline)) long verify_record(struct record *r, int bad)
{
    if (__builtin_expect(!bad, 1)) {
        r->sum += r->key; /* BB: verify hot */
        return r->sum;
    }
    note("bad record", r->key); /* BB: verify cold */
    quarantine_record(r); /* BB: verify inlined call */
    return -1;
}

static void *worker(void *arg)
{
    int bad = *(int *)arg;
    struct record r = {7, 0, NULL};
    long total = 0;
    while (!go)
        usleep(1000); /* BB: worker waits */
    for (int i = 0; i < 2000; i++)
        total += verify_record(&r, bad && i == 1999); /* BB: worker call */
    sink = total;
    return NULL;
}

int main(int argc, char **argv)
{
    static int modes[5];
    pthread_t t[5];
    int crash = argc > 1 && strcmp(argv[1], "crash") == 0;
    int wait = argc > 1 && strcmp(argv[1], "wait") == 0;
    modes[4] = crash;
    for (int i = 0; i < 5; i++)
        pthread_create(&t[i], NULL, worker, &modes[i]);
    if (wait)
        sleep(60); /* BB: main waits */
    go = 1;
    for (int i = 0; i < 5; i++)
        pthread_join(t[i], NULL); /* BB: main joins */
    printf("sum %ld\n", sink);
    return 0;
}
"""

BOLT = ["llvm-bolt-22", "--split-functions", "--split-strategy=all", "--enable-bat"]
TOOLS = ("clang-22", "llvm-bolt-22", "gdb")


def build(work: Path) -> dict[str, Any]:
    """The program, its pre-BOLT input, its ``-dbg`` twin and a core of the crash."""
    src = work / "verify.c"
    src.write_text(SOURCE)
    (work / "input").mkdir()
    (work / "dbg").mkdir()
    inp, out, twin = work / "input" / "verify", work / "verify", work / "dbg" / "verify"
    run(["clang-22", "-O2", "-g", "-fno-pie", "-no-pie", "-Wl,--emit-relocs", "-pthread",
         str(src), "-o", str(inp)], work)
    run([BOLT[0], str(inp), "-o", str(out), *BOLT[1:]], work)
    run([BOLT[0], str(inp), "-o", str(twin), *BOLT[1:], "--update-debug-sections"], work)
    core = work / "verify.core"
    run(["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off",
         "-iex", "set startup-with-shell off", "-ex", "run",
         "-ex", f"generate-core-file {core}", "--args", str(out), "crash"], work)
    if not core.is_file():
        raise BuildFailed(f"gdb did not crash {out} into {core}")
    return {"binary": out, "input": inp, "dbg": twin, "core": core, "source": src,
            "markers": markers(src)}


_BUILT: dict[str, dict[str, Any]] = {}


def bolted_threads(tmp_path_factory: Any) -> dict[str, Any]:
    """The program's facts (built once per test session)."""
    import pytest

    if "verify" not in _BUILT:
        missing = [t for t in TOOLS if shutil.which(t) is None]
        if missing:
            pytest.skip(f"{', '.join(missing)} needed to build the BOLTed threads program")
        try:
            _BUILT["verify"] = build(tmp_path_factory.mktemp("bolted-threads"))
        except (BuildFailed, subprocess.TimeoutExpired, OSError) as e:
            pytest.fail(f"building the BOLTed threads program: {e}")
    return _BUILT["verify"]
