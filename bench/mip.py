"""Benchmark: the MIP source on a clang-size `__llvm_mipmap` + `__llvm_mipraw`.

    .venv/bin/python bench/mip.py [--functions N] [--seed S] [--repeats R]

Makes a synthetic map (formats.mip's encoder; --functions records of 0-20 non-entry blocks,
names as long as mangled C++ ones) and its raw profile with function and block coverage, puts
both into a copy of the zoo's clang-mip crash binary in place of its own (llvm-objcopy-22
--update-section), and times, best of --repeats:

    decode       formats.mip.decode of the whole map
    raw          formats.mip.decode_raw of the whole raw profile against it
    procedures   sources.mip.MipSource(binary).procedures(): what the index build pays (lazy blocks)
    blocks       then reading .blocks of every procedure (what `bb blocks` on all would pay)
    index        ModuleIndex of the binary (every source, symbols, merging), once

Results go to bench/results/mip.json.
"""

from __future__ import annotations

import argparse
import gc
import random
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
from unsplit.formats import mip as fmt  # noqa: E402
from unsplit.index.module_index import ModuleIndex  # noqa: E402
from unsplit.index.sources import mip as source  # noqa: E402

HOST = ROOT / "fixtures" / "build" / "clang-mip" / "crash"
PROFILE = fmt.FUNCTION_COVERAGE | fmt.BLOCK_COVERAGE


def synthesize(n: int, seed: int) -> tuple[bytes, bytes]:
    """(map, raw profile) of `n` functions laid end to end past the host's own code."""
    rng = random.Random(seed)
    funcs, address = [], 0x10_0000
    for i in range(n):
        blocks = rng.randint(0, 20)
        size = 16 * (blocks + 1) + rng.randint(0, 15)
        funcs.append(fmt.MipFunction(f"_ZN4llvm9function{i}ERKNS_5ValueEj", address, size,
                                     rng.getrandbits(32), tuple(16 * (k + 1)
                                                                for k in range(blocks)), 0))
        address += size
    funcs = fmt.lay_out_raw(funcs, PROFILE)
    coverage = {f.raw_offset: fmt.Coverage(rng.random() < 0.7, tuple(
        rng.random() < 0.5 for _ in f.block_offsets)) for f in funcs}
    header = fmt.MipHeader(profile_type=PROFILE, module_hash=seed)
    raw_header = fmt.MipHeader(file_type=fmt.FILE_TYPE_RAW, profile_type=PROFILE,
                               module_hash=seed)
    return fmt.encode(funcs, 0, header), fmt.encode_raw(funcs, coverage, raw_header)


def best(repeats: int, fn: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def with_sections(map_bytes: bytes, raw_bytes: bytes, work: Path) -> Path:
    (work / "map").write_bytes(map_bytes)
    (work / "raw").write_bytes(raw_bytes)
    out = work / "crash"
    subprocess.run(["llvm-objcopy-22", "--update-section", f"{fmt.SECTION}={work / 'map'}",
                    "--update-section", f"{fmt.RAW_SECTION}={work / 'raw'}", str(HOST),
                    str(out)], check=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--functions", type=int, default=150_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    map_bytes, raw_bytes = synthesize(args.functions, args.seed)
    decoded = fmt.decode(map_bytes, 0)
    row: dict[str, Any] = {
        "functions": args.functions, "map_bytes": len(map_bytes), "raw_bytes": len(raw_bytes),
        "blocks": sum(len(f.block_offsets) + 1 for f in decoded.functions),
        "decode_s": best(args.repeats, lambda: fmt.decode(map_bytes, 0)),
        "raw_s": best(args.repeats, lambda: fmt.decode_raw(raw_bytes, decoded)),
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = with_sections(map_bytes, raw_bytes, Path(tmp))
        row["procedures_s"] = best(args.repeats,
                                   lambda: source.MipSource(Binary(str(path))).procedures())
        procs = source.MipSource(Binary(str(path))).procedures()
        row["blocks_s"] = best(1, lambda: [p.blocks for p in procs])
        row["index_s"] = best(1, lambda: ModuleIndex(Binary(str(path))))
    print(f"MIP: {row['functions']} functions, {row['blocks']} blocks, map "
          f"{row['map_bytes'] / 1e6:.1f} MB, raw {row['raw_bytes'] / 1e6:.1f} MB; "
          f"best of {args.repeats}")
    for key in ("decode_s", "raw_s", "procedures_s", "blocks_s", "index_s"):
        print(f"  {key[:-2]:<11} {row[key]:7.2f} s")
    print(f"results: {save('mip', row)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
