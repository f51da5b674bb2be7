"""Post-mortem fixtures built in the test session (not in fixtures/): a multi-threaded GCC PGO
program and a PIE with a GCC PGO shared library, each crashed under gdb into a core.

Expectations come from tools other than unsplit: the marker comments of the sources (lines),
``nm`` (fragment symbols), and gdb's own unwinding while the process was live (each thread's
frame pcs, from its ``.eh_frame``), with each module's load address from ``info proc mappings``.

    mt     main's cold path joins the worker; the waiter spins in await_work's cold fragment;
           the worker dies in apply's cold fragment (3 threads).
    pie    check [cold] (pie) <- visit [cold] (libvisit.so) <- main [cold] (pie).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fixtures.toolbox import markers

from .builders import BuildFailed, gcc_pgo_build, run

MT_SOURCE = r"""/* mt.c - three threads; with "crash", one dies in a cold fragment while the others
 * wait in cold fragments of other split functions. train (default): hot paths, exits 0. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct job {
    long value;
    long sum;
    long *log; /* NULL: nothing ever allocates it */
};

static volatile long sink;
static volatile int ready;
static volatile int stop;

__attribute__((noinline)) static void note(const char *why, long v)
{
    fprintf(stderr, "mt: %s %ld\n", why, v);
}

__attribute__((noinline)) long apply(struct job *j, int mode)
{
    if (__builtin_expect(mode == 0, 1)) {
        j->sum += j->value; /* BB: apply hot path */
        return j->sum;
    }
    note("apply slow path", j->value); /* BB: apply cold path */
    while (!ready)
        usleep(1000);
    usleep(100000); /* BB: apply cold settle */
    *j->log = j->value; /* BB: mt crash site */
    j->sum -= j->value;
    return j->sum;
}

__attribute__((noinline)) long await_work(int mode)
{
    long n = 0;
    if (__builtin_expect(mode == 0, 1)) {
        for (int i = 0; i < 1000; i++)
            n += i ^ mode; /* BB: await hot path */
        return n;
    }
    note("await slow path", mode); /* BB: await cold path */
    ready = 1;
    while (!stop) /* BB: await cold spin */
        sink++;
    return sink;
}

static void *worker(void *arg)
{
    int mode = *(int *)arg;
    struct job j = {7, 0, NULL};
    long total = 0;
    for (int i = 0; i < 2000; i++)
        total += apply(&j, mode); /* BB: worker call */
    sink = total;
    return NULL;
}

static void *waiter(void *arg)
{
    int mode = *(int *)arg;
    long total = 0;
    for (int i = 0; i < 200; i++)
        total += await_work(mode); /* BB: waiter call */
    sink = total;
    return NULL;
}

int main(int argc, char **argv)
{
    static int mode;
    pthread_t w, c;
    mode = argc > 1 && strcmp(argv[1], "crash") == 0;
    pthread_create(&w, NULL, waiter, &mode);
    pthread_create(&c, NULL, worker, &mode);
    if (__builtin_expect(mode, 0)) {
        note("main crash mode", 1); /* BB: main cold path */
        pthread_join(c, NULL); /* BB: main cold join */
        printf("unreachable\n");
        return 2;
    }
    pthread_join(c, NULL); /* BB: main hot join */
    pthread_join(w, NULL);
    printf("sum %ld\n", sink);
    return 0;
}
"""

LIB_SOURCE = r"""/* libvisit.c - a shared library with a split function: on its cold path
 * (rare items) visit() calls back into the program, so at the crash visit's cold part is
 * on the stack. */
#include <stdio.h>

typedef long (*check_fn)(long item, int rare);

static volatile long lib_sink;

__attribute__((noinline)) static void lib_note(const char *why, long v)
{
    fprintf(stderr, "libvisit: %s %ld\n", why, v);
}

__attribute__((noinline)) long visit(const long *items, int n, int rare, check_fn check)
{
    long total = 0;
    for (int i = 0; i < n; i++) {
        if (__builtin_expect(rare != 0, 0)) {
            lib_note("rare item", items[i]); /* BB: visit cold path */
            total += check(items[i], rare); /* BB: visit cold call */
            lib_sink = total; /* BB: visit cold after call */
        } else {
            total += check(items[i], 0); /* BB: visit hot call */
        }
    }
    return total;
}
"""

PIE_SOURCE = r"""/* pie.c - a PIE calling visit() in libvisit.so; with "crash", visit's cold path
 * calls check(), whose cold path writes through NULL. */
#include <stdio.h>
#include <string.h>

typedef long (*check_fn)(long item, int rare);
long visit(const long *items, int n, int rare, check_fn check);

static volatile long sink;
static long *audit; /* NULL: nothing ever allocates it */

__attribute__((noinline)) static void pie_note(const char *why, long v)
{
    fprintf(stderr, "pie: %s %ld\n", why, v);
}

__attribute__((noinline)) long check(long item, int rare)
{
    if (__builtin_expect(rare == 0, 1))
        return item * 2; /* BB: check hot path */
    pie_note("rare check", item); /* BB: check cold path */
    *audit = item; /* BB: pie crash site */
    return item;
}

int main(int argc, char **argv)
{
    long items[4] = {1, 2, 3, 4};
    long total = 0;
    if (__builtin_expect(argc > 1 && strcmp(argv[1], "crash") == 0, 0)) {
        pie_note("main crash mode", 1); /* BB: pie main cold path */
        total = visit(items, 4, 1, check); /* BB: pie main cold call */
        printf("unreachable %ld\n", total);
        return 2;
    }
    for (int r = 0; r < 2000; r++)
        total += visit(items, 4, 0, check); /* BB: pie main hot call */
    sink = total;
    printf("total %ld\n", total);
    return 0;
}
"""

# Runs in gdb after the crash: every thread's concrete frames (gdb's own unwinder) and where
# each file is mapped. Uses nothing of unsplit.
PROBE = r"""
import json
import gdb
out = {"selected": gdb.selected_thread().num, "threads": [], "maps": {}}
for t in sorted(gdb.selected_inferior().threads(), key=lambda t: t.num):
    t.switch()
    frames, f = [], gdb.newest_frame()
    while f is not None:
        if f.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
            frames.append([f.pc(), f.find_sal().line or None])
        try:
            f = f.older()
        except gdb.error:
            break
    out["threads"].append({"num": t.num, "lwp": t.ptid[1], "pcs": frames})
for line in gdb.execute("info proc mappings", to_string=True).splitlines():
    parts = line.split()
    if len(parts) >= 6 and parts[0].startswith("0x") and parts[-1].startswith("/"):
        start = int(parts[0], 16)
        out["maps"][parts[-1]] = min(start, out["maps"].get(parts[-1], start))
print("POSTMORTEM-PROBE " + json.dumps(out))
"""

_FRAGMENT = re.compile(r"^(?P<proc>.+?)\.(?P<frag>cold(?:\.\d+)?|warm|__part\.\d+)$")


@dataclass(frozen=True, slots=True)
class Symbol:
    name: str
    start: int
    end: int


def nm_symbols(binary: Path) -> list[Symbol]:
    out = run(["nm", "--defined-only", "-S", str(binary)], binary.parent)
    syms = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            start = int(parts[0], 16)
            syms.append(Symbol(parts[3], start, start + int(parts[1], 16)))
    return syms


def fragment_of(symbol: str) -> tuple[str, str]:
    m = _FRAGMENT.match(symbol)
    return (m.group("proc"), m.group("frag").removeprefix("__")) if m else (symbol, "hot")


def _crash(work: Path, argv: list[str], core: Path) -> dict[str, Any]:
    probe = work / "probe.py"
    probe.write_text(PROBE)
    out = run(["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off",
               "-iex", "set startup-with-shell off", "-ex", "run",
               "-ex", f"generate-core-file {core}", "-ex", f"source {probe}",
               "--args", *argv], work)
    for line in out.splitlines():
        if line.startswith("POSTMORTEM-PROBE "):
            data: dict[str, Any] = json.loads(line.removeprefix("POSTMORTEM-PROBE "))
            if core.is_file():
                return data
    raise BuildFailed(f"gdb did not crash {argv} into {core}")


def _name_frames(probe: dict[str, Any], binaries: list[Path]) -> list[dict[str, Any]]:
    """Each thread's frames named by nm: module, symbol, procedure, fragment (a caller at
    pc - 1, its call), and the line gdb gave the frame."""
    symbols = {str(b): nm_symbols(b) for b in binaries}
    threads = []
    for t in probe["threads"]:
        frames = []
        for i, (pc, line) in enumerate(t["pcs"]):
            frame: dict[str, Any] = {"pc": pc, "module": None, "symbol": None,
                                     "procedure": None, "fragment": None, "gdb_line": line}
            for b in binaries:
                base = probe["maps"].get(str(b))
                if base is None:
                    continue
                look = pc - base - (1 if i else 0)  # PIE and .so: the lowest page is 0
                sym = next((s for s in symbols[str(b)] if s.start <= look < s.end), None)
                if sym is not None:
                    frame.update(module=str(b), symbol=sym.name)
                    frame["procedure"], frame["fragment"] = fragment_of(sym.name)
            frames.append(frame)
        threads.append({"num": t["num"], "lwp": t["lwp"], "frames": frames})
    return threads


# A build that finds no profile (the training run wrote none) fails, rather than come out unsplit.
_USE = ("-fprofile-use", "-Werror=missing-profile")


def build_mt(work: Path) -> dict[str, Any]:
    src = work / "mt.c"
    gcc_pgo_build(work, {"mt.c": MT_SOURCE},
                  [["gcc", "-O2", "-g", "-pthread", str(src), "-o", "mt"]],
                  train=[str(work / "mt")], use=_USE)
    exe, core = work / "mt", work / "mt.core"
    probe = _crash(work, [str(exe), "crash"], core)
    return {"binary": str(exe), "core": str(core), "source": str(src),
            "markers": markers(src), "selected": probe["selected"],
            "threads": _name_frames(probe, [exe]),
            "fragments": sorted(s.name for s in nm_symbols(exe) if fragment_of(s.name)[1] != "hot")}


def build_pie(work: Path) -> dict[str, Any]:
    lib_src, pie_src = work / "libvisit.c", work / "pie.c"
    lib = ["gcc", "-O2", "-g", "-fPIC", "-shared", str(lib_src), "-o", "libvisit.so"]
    pie = ["gcc", "-O2", "-g", "-fPIE", "-pie", str(pie_src), "-o", "pie", "-L.", "-lvisit",
           "-Wl,-rpath,$ORIGIN"]
    gcc_pgo_build(work, {"libvisit.c": LIB_SOURCE, "pie.c": PIE_SOURCE}, [lib, pie],
                  train=[str(work / "pie")], use=_USE)
    exe, so, core = work / "pie", work / "libvisit.so", work / "pie.core"
    probe = _crash(work, [str(exe), "crash"], core)
    return {"binary": str(exe), "library": str(so), "core": str(core),
            "source": str(pie_src), "library_source": str(lib_src),
            "markers": {**markers(pie_src), **markers(lib_src)},
            "selected": probe["selected"], "threads": _name_frames(probe, [exe, so]),
            "fragments": sorted(s.name for b in (exe, so) for s in nm_symbols(b)
                                if fragment_of(s.name)[1] != "hot")}


_BUILT: dict[str, dict[str, Any]] = {}


def postmortem(kind: str, tmp_path_factory: Any) -> dict[str, Any]:
    """The facts of fixture `kind` ("mt" or "pie"), built once per test session."""
    import pytest

    if kind not in _BUILT:
        if shutil.which("gcc") is None or shutil.which("gdb") is None:
            pytest.skip("gcc and gdb are needed to build the post-mortem fixtures")
        work = tmp_path_factory.mktemp(f"postmortem-{kind}")
        try:
            _BUILT[kind] = build_mt(work) if kind == "mt" else build_pie(work)
        except (BuildFailed, subprocess.TimeoutExpired, OSError) as e:
            pytest.fail(f"building the {kind} post-mortem fixture: {e}")
        assert os.path.isfile(_BUILT[kind]["core"])
    return _BUILT[kind]
