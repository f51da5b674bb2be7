"""Benchmark: building procedures from a big `.llvm_bb_addr_map` (the index's bb_addr_map source).

    .venv/bin/python bench/bbmap.py [--functions N] [--seed S]

A clang-size binary carries ~10 MB of maps. This makes a synthetic one (formats.bb_addr_map's
encoder; --functions records, version 3, a mix of plain, multi-range, PGO and multi-range+PGO
records with 1-8 blocks per range), puts it into a copy of the zoo's clang-mfs crash binary
(llvm-objcopy-22: --add-section, --set-section-type SHT_LLVM_BB_ADDR_MAP), and times, best of
--repeats:

    decode       formats.bb_addr_map.decode of the whole section (every block, every PGO entry)
    procedures   sources.bb_addr_map.BbAddrMapSource(binary).procedures(): what the index build pays
    blocks       then reading .blocks of every procedure (what `bb blocks` on all would pay)
    index        ModuleIndex of the binary (every source, symbols, merging), once

and the same `procedures` on every zoo binary that has a map; then `unsplit bbmap --json`
against `llvm-readobj-22 --bb-addr-map --elf-output-style=JSON` on a copy of the synthetic
binary that has a function symbol at every record's address (as a real binary has: readobj
then names every function instead of warning about each): wall time and peak RSS of each, in
one run, and their ratios (the goal: <= 5x the time, <= 2x the memory; --check also compares
the two outputs). Results go to bench/results/bbmap.json.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugin"))

from saving import save  # noqa: E402
from unsplit.elf.binary import Binary  # noqa: E402
from unsplit.formats import bb_addr_map as fmt  # noqa: E402
from unsplit.index.module_index import ModuleIndex  # noqa: E402
from unsplit.index.sources import bb_addr_map as source  # noqa: E402

HOST = ROOT / "fixtures" / "build" / "clang-mfs" / "crash"


def synthesize(n: int, seed: int) -> list[fmt.FunctionMap]:
    rng = random.Random(seed)
    out = []
    hot, cold = 0x400000, 0x4000000
    for _ in range(n):
        kind = rng.randrange(4)  # 0 plain, 1 multi-range, 2 PGO, 3 both
        feature = (fmt.MULTI_BIT if kind in (1, 3) else 0) | (fmt.PGO_BITS if kind >= 2 else 0)
        ranges = []
        for r in range(rng.randint(2, 3) if feature & fmt.MULTI_BIT else 1):
            entries, offset = [], 0
            for _ in range(rng.randint(1, 8)):
                size = rng.randint(1, 64)
                offset += rng.randint(0, 4)
                entries.append(fmt.BBEntry(len(entries) + 100 * r, offset, size,
                                           rng.choice((0, 1, 8, 9))))
                offset += size
            base = hot if r == 0 else cold
            if r == 0:
                hot += offset + 16
            else:
                cold += offset + 16
            ranges.append(fmt.BBRange(base, len(entries), tuple(entries)))
        pgo = None
        if feature & fmt.PGO_BITS:
            total = sum(len(r.entries) for r in ranges)
            pgo = fmt.PGOAnalysis(rng.randint(1, 10**6), tuple(
                fmt.PGOBlock(rng.randint(1, 10**9), None,
                             tuple(fmt.Successor(rng.randrange(total), rng.randrange(1 << 31))
                                   for _ in range(rng.randint(0, 2))))
                for _ in range(total)))
        out.append(fmt.FunctionMap(3, feature, tuple(ranges), pgo))
    return out


def best(repeats: int, fn: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def with_map(data: bytes, work: Path) -> Path:
    blob, out = work / "map.bin", work / "synthetic"
    blob.write_bytes(data)
    shutil.copy(HOST, out)
    section = fmt.SECTION
    subprocess.run(["llvm-objcopy-22", "--remove-section", section,
                    f"--add-section={section}={blob}",
                    f"--set-section-type={section}={fmt.SHT_LLVM_BB_ADDR_MAP}", str(out)],
                   check=True, capture_output=True)
    return out


def with_symbols(path: Path, maps: list[fmt.FunctionMap], work: Path) -> Path:
    """A copy of `path` with a global STT_FUNC `fN` at each record's address (an llvm-objcopy
    response file: 150,000 options do not fit a command line)."""
    out = work / "synthetic-named"
    options = work / "symbols.rsp"
    options.write_text("".join(f"--add-symbol=f{i}=0x{m.ranges[0].base_address:x},"
                               "function,global\n" for i, m in enumerate(maps)))
    subprocess.run(["llvm-objcopy-22", f"@{options}", str(path), str(out)], check=True,
                   capture_output=True)
    return out


def measured(argv: list[str], stdout: Path) -> tuple[float, int]:
    """(wall seconds, peak RSS in bytes) of one command, its stdout to a file. The RSS comes
    from GNU time, a small parent: a child forked from this process starts with its pages, and
    its ru_maxrss counts them."""
    report = stdout.with_suffix(".rss")
    with stdout.open("wb") as out:
        t0 = time.perf_counter()
        subprocess.run(["/usr/bin/time", "-o", str(report), "-f", "%M", *argv], stdout=out,
                       stderr=subprocess.DEVNULL, check=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "plugin")})
        elapsed = time.perf_counter() - t0
    return elapsed, int(report.read_text().split()[-1]) * 1024


def json_against_readobj(path: Path, work: Path, repeats: int, check: bool) -> dict[str, Any]:
    ours_out, theirs_out = work / "ours.json", work / "readobj.json"
    ours = [measured([sys.executable, "-m", "unsplit", "bbmap", "--json", str(path)], ours_out)
            for _ in range(repeats)]
    theirs = [measured(["llvm-readobj-22", "--bb-addr-map", "--elf-output-style=JSON",
                        str(path)], theirs_out) for _ in range(repeats)]
    row = {"ours_s": min(t for t, _ in ours), "ours_rss": max(m for _, m in ours),
           "readobj_s": min(t for t, _ in theirs), "readobj_rss": max(m for _, m in theirs),
           "output_bytes": ours_out.stat().st_size}
    row["time_ratio"] = row["ours_s"] / row["readobj_s"]
    row["rss_ratio"] = row["ours_rss"] / row["readobj_rss"]
    if check:
        with ours_out.open() as a, theirs_out.open() as b:
            row["same_output"] = json.load(a) == [m for doc in json.load(b)
                                                  for m in doc["BBAddrMap"]]
    return row


def zoo_binaries() -> list[Path]:
    index = ROOT / "fixtures" / "build" / "index.json"
    if not index.exists():
        return []
    out = []
    for v in json.loads(index.read_text())["variants"].values():
        for prog in v.get("programs", {}).values():
            facts = json.loads((ROOT / prog["facts"]).read_text())
            if facts.get("has_bb_addr_map"):
                out.append(ROOT / prog["binary"])
    return out


def time_source(path: Path, repeats: int) -> dict[str, float]:
    """procedures() and then every .blocks, each on a fresh Binary (no cached sections)."""
    procs_s, blocks_s, count = [], [], 0
    for _ in range(repeats):
        binary = Binary(str(path))
        gc.collect()  # the previous round's garbage is not this round's cost
        t0 = time.perf_counter()
        procs = source.BbAddrMapSource(binary).procedures()
        t1 = time.perf_counter()
        count = sum(len(p.blocks) for p in procs)
        t2 = time.perf_counter()
        procs_s.append(t1 - t0)
        blocks_s.append(t2 - t1)
    return {"procedures_s": min(procs_s), "blocks_s": min(blocks_s), "procedures":
            len(procs), "blocks": count}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--functions", type=int, default=150_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--check", action="store_true",
                        help="also compare the --json output with readobj's (parses both)")
    args = parser.parse_args()
    maps = synthesize(args.functions, args.seed)
    data = fmt.encode(maps)
    decode_s = best(args.repeats, lambda: fmt.decode(data))
    with tempfile.TemporaryDirectory(prefix="unsplit-bbmap-") as tmp:
        path = with_map(data, Path(tmp))
        synthetic = time_source(path, args.repeats)
        synthetic["index_s"] = best(1, lambda: ModuleIndex(Binary(str(path))))
        dump = json_against_readobj(with_symbols(path, maps, Path(tmp)), Path(tmp),
                                    args.repeats, args.check)
    mb = len(data) / 1e6
    rows: list[dict[str, Any]] = [{"binary": "synthetic", "map_bytes": len(data),
                                   "decode_s": decode_s, **synthetic}]
    print(f"synthetic map: {args.functions} functions, {mb:.1f} MB; best of {args.repeats}")
    print(f"  decode (every record)   {decode_s:7.3f} s  ({decode_s / mb:.3f} s/MB)")
    print(f"  procedures (index)      {synthetic['procedures_s']:7.3f} s  "
          f"({synthetic['procedures_s'] / mb:.3f} s/MB)")
    print(f"  then every .blocks      {synthetic['blocks_s']:7.3f} s  "
          f"({synthetic['blocks']} blocks)")
    print(f"  ModuleIndex             {synthetic['index_s']:7.3f} s")
    print(f"  bbmap --json            {dump['ours_s']:7.3f} s  {dump['ours_rss'] / 1e6:6.0f} MB"
          f"   readobj-22 {dump['readobj_s']:.3f} s  {dump['readobj_rss'] / 1e6:.0f} MB"
          f"   ratio {dump['time_ratio']:.1f}x time, {dump['rss_ratio']:.2f}x memory"
          + (f"   same output: {dump['same_output']}" if "same_output" in dump else ""))
    rows.append({"binary": "synthetic-named", "json": dump})
    zoo = [(p, time_source(p, args.repeats)) for p in zoo_binaries()]
    if zoo:
        total = sum(z["procedures_s"] for _, z in zoo)
        total_blocks = sum(z["blocks_s"] for _, z in zoo)
        print(f"zoo: {len(zoo)} binaries with maps: procedures {total * 1e3:.1f} ms in all, "
              f"then every .blocks {total_blocks * 1e3:.1f} ms")
        rows += [{"binary": str(p.relative_to(ROOT)), **z} for p, z in zoo]
    save("bbmap", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
