"""Benchmark: building procedures from a big `.llvm_bb_addr_map` (the index's bb_addr_map source).

    .venv/bin/python bench/bbmap.py [--functions N] [--seed S]

A clang-size binary carries ~10 MB of maps. This makes a synthetic one (formats.bb_addr_map's
encoder; --functions records, version 3, a mix of plain, multi-range, PGO and multi-range+PGO
records with 1-8 blocks per range), puts it into a copy of the zoo's clang-mfs crash binary
(llvm-objcopy-22: --add-section, --set-section-type SHT_LLVM_BB_ADDR_MAP), and times, best of
--repeats:

    decode       formats.bb_addr_map.decode of the whole section (every block, every PGO entry)
    procedures   sources.bb_addr_map.procedures(binary): what the index build pays
    blocks       then reading .blocks of every procedure (what `bb blocks` on all would pay)
    index        ModuleIndex of the binary (every source, symbols, merging), once

and the same `procedures` on every zoo binary that has a map. Results go to
bench/results/bbmap.json.
"""

from __future__ import annotations

import argparse
import gc
import json
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
from unsplit.binary import Binary  # noqa: E402
from unsplit.formats import bb_addr_map as fmt  # noqa: E402
from unsplit.index import ModuleIndex  # noqa: E402
from unsplit.sources import bb_addr_map as source  # noqa: E402

HOST = ROOT / "fixtures" / "build" / "clang-mfs" / "crash"


def synthesize(n: int, seed: int) -> list[fmt.FunctionMap]:
    rng = random.Random(seed)
    out = []
    hot, cold = 0x400000, 0x4000000
    for _ in range(n):
        kind = rng.randrange(4)  # 0 plain, 1 multi-range, 2 PGO, 3 both
        feature = (fmt._MULTI if kind in (1, 3) else 0) | (fmt._PGO if kind >= 2 else 0)
        ranges = []
        for r in range(rng.randint(2, 3) if feature & fmt._MULTI else 1):
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
        if feature & fmt._PGO:
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
        procs = source.procedures(binary)
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
    args = parser.parse_args()
    data = fmt.encode(synthesize(args.functions, args.seed))
    decode_s = best(args.repeats, lambda: fmt.decode(data))
    with tempfile.TemporaryDirectory(prefix="unsplit-bbmap-") as tmp:
        path = with_map(data, Path(tmp))
        synthetic = time_source(path, args.repeats)
        synthetic["index_s"] = best(1, lambda: ModuleIndex(Binary(str(path))))
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
