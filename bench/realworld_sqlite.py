"""The BOLTed sqlite3 that bench/debuginfo.py --realworld measures: the SQLite amalgamation
(sqlite3.c, ~260k lines of C) that npm's `better-sqlite3` package bundles (deps/sqlite3;
fetched once with `npm pack better-sqlite3@12.11.1` into bench/realworld/sqlite-cache,
git-ignored; 13.x needs a newer Node than this machine's) with a small driver of ours,
bench/realworld/sqlite_main.c, built as bench/realworld.py builds Lua's `bolt`:

    bolt    clang-22 -O2 -g -fuse-ld=lld -Wl,--emit-relocs (PIE), llvm-bolt-22 -instrument,
            the training run (`sq train`: 20,000 rows inserted, indexed, grouped, joined,
            updated, deleted), llvm-bolt-22 -data= -reorder-blocks=ext-tsp -split-functions
            -split-all-cold -enable-bat; sq-dbg: the same with --update-debug-sections

    .venv/bin/python bench/realworld_sqlite.py [--force]

The build is made again only when its stamp (the recipe's hash) changes.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import shutil
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import realworld as rw  # noqa: E402

HERE = ROOT / "bench" / "realworld"
CACHE = HERE / "sqlite-cache"
BUILD = CACHE / "build"
DRIVER = HERE / "sqlite_main.c"
PACKAGE = "better-sqlite3@12.11.1"
FLAGS = ["-O2", "-g"]
LIBS = ["-lm", "-lpthread", "-ldl"]


def fetch_source() -> Path:
    """sqlite3.c and sqlite3.h, extracted from the cached npm tarball (fetched once)."""
    src = CACHE / "src"
    if (src / "sqlite3.c").is_file() and (src / "sqlite3.h").is_file():
        return src
    CACHE.mkdir(parents=True, exist_ok=True)
    tarballs = sorted(CACHE.glob("better-sqlite3-*.tgz"))
    if not tarballs:
        rw.run(["npm", "pack", PACKAGE, "--pack-destination", str(CACHE)], timeout=600)
        tarballs = sorted(CACHE.glob("better-sqlite3-*.tgz"))
    if not tarballs:
        raise rw.BuildError(f"npm pack {PACKAGE}: no tarball in {CACHE}")
    src.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tarballs[-1]) as tar:
        for name in ("sqlite3.c", "sqlite3.h"):
            data = tar.extractfile(f"package/deps/sqlite3/{name}")
            if data is None:
                raise rw.BuildError(f"{tarballs[-1]}: no deps/sqlite3/{name}")
            (src / name).write_bytes(data.read())
    return src


def train(binary: Path) -> None:
    rw.run([str(binary), "train"], cwd=binary.parent, timeout=300)


def build_bolt(src: Path, out: Path) -> list[str]:
    work = rw._fresh(out / "work")
    inp = out / "sq.input"
    cc = ["clang-22", *FLAGS, *rw.BOLT_LINK, f"-I{src}", str(DRIVER), str(src / "sqlite3.c"),
          "-o", str(inp), *LIBS]
    rw.run(cc, cwd=work, timeout=900)
    inst, fdata = work / "sq.inst", work / "sq.fdata"
    rw.run(["llvm-bolt-22", str(inp), "-instrument", f"-instrumentation-file={fdata}",
            "-instrumentation-file-append-pid=0", "-o", str(inst)], timeout=600)
    train(inst)
    if not fdata.is_file():
        raise rw.BuildError(f"{inst} train: wrote no {fdata}")
    shutil.copy2(fdata, out / "sq.fdata")
    for name, extra in (("sq", []), ("sq-dbg", ["--update-debug-sections"])):
        rw.run(["llvm-bolt-22", str(inp), f"-data={fdata}", *rw.BOLT_OPTS, *extra,
                "-o", str(out / name)], timeout=600)
    return [" ".join(cc), "llvm-bolt-22 -instrument", "sq.inst train",
            f"llvm-bolt-22 -data=sq.fdata {' '.join(rw.BOLT_OPTS)} [--update-debug-sections]"]


RECIPES = {"bolt": build_bolt}


def _stamp(name: str, src: Path) -> str:
    h = hashlib.sha256()
    h.update(name.encode())
    h.update(inspect.getsource(RECIPES[name]).encode())
    h.update(json.dumps([FLAGS, LIBS, rw.BOLT_LINK, rw.BOLT_OPTS]).encode())
    for path in (DRIVER, src / "sqlite3.h", src / "sqlite3.c"):
        h.update(path.read_bytes())
    for tool in ("clang-22", "llvm-bolt-22"):
        h.update(rw.run([tool, "--version"]).encode())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="rebuild")
    args = ap.parse_args(argv)
    src = fetch_source()
    print(f"sqlite3 from {PACKAGE}: {len((src / 'sqlite3.c').read_bytes().splitlines())} lines")
    print(rw.build_all(src, args.force, RECIPES, BUILD, _stamp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
