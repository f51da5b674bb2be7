"""Check: GDB's frames of the BOLTed libLLVM's `opt -O3` core, frame by frame, against LLDB 22's
own unwind of the same core.

    .venv/bin/python bench/libllvm_frames.py [--gdb GDB] [--depth N]

Reads the core bench/libllvm.py builds (bench/libllvm/cache, built there; this script builds
nothing). For each frame N of GDB's stack, with the plugin (its defaults: the frame filter,
the unwinder `bb exact-frames`, the debug file), the plugin without the debug file (its
unwinder alone, UNSPLIT_DEBUGINFO=0), and for comparison the plugin with `bb exact-frames off`
and GDB alone: `frame N`, `info frame` (the frame's pc, its CFA "frame at", the
caller's pc "saved rip", the caller's CFA "called by frame at"), then `up` (the pc of the frame
it selects). The oracle, never unsplit: LLDB 22 without the plugin through its SB API
(/usr/bin/python3's `lldb`), each frame's pc and CFA (SBFrame.GetCFA), and for every caller
frame whether its pc is a return address: LLDB's disassembler, from the start of the frame's
symbol (for the stripped library, the FDE LLDB made it from) to the pc, ends on a call
instruction that ends exactly at the pc.

With `--dap GDB` (GDB 16+), also the first `stackTrace` of `gdb -i dap` attached to the core
(`coreFile`), with the plugin and without: each frame's pc against LLDB's.

Exit status 0 when the plugin's GDB (every session) agrees with LLDB in every frame and every
caller pc is a return address, 1 otherwise. Results: bench/results/libllvm_frames.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from saving import save  # noqa: E402

from tests.e2e import driver_gdb  # noqa: E402
from tests.e2e.driver_dap import DapSession  # noqa: E402
from tests.e2e.driver_gdb import GdbDriver  # noqa: E402
from tests.e2e.driver_mi import MiSession  # noqa: E402

CORE = ROOT / "bench" / "libllvm" / "cache" / "opt.core"
OPT = "/usr/lib/llvm-22/bin/opt"

# Run by /usr/bin/python3 (python3-lldb-22): one line of JSON per frame.
_LLDB_SCRIPT = r"""
import json, sys
import lldb
debugger = lldb.SBDebugger.Create()
debugger.SetAsync(False)
target = debugger.CreateTarget(sys.argv[1])
process = target.LoadCore(sys.argv[2])
thread = process.GetSelectedThread()
for frame in thread:
    pc = frame.GetPC()
    start = frame.GetSymbol().GetStartAddress().GetLoadAddress(target)
    call = None
    if frame.GetFrameID() > 0 and 0 < start < pc and pc - start < 1 << 20:
        # From the files mapped (a core holds no unmodified text): the target, not the process.
        code = target.ReadMemory(lldb.SBAddress(start, target), pc - start, lldb.SBError())
        if code and len(code) == pc - start:
            insns = target.GetInstructions(lldb.SBAddress(start, target), code)
            last = insns.GetInstructionAtIndex(insns.GetSize() - 1)
            end = last.GetAddress().GetLoadAddress(target) + last.GetByteSize()
            call = end == pc and last.GetMnemonic(target).startswith("call")
    print(json.dumps({"pc": pc, "cfa": frame.GetCFA(), "sp": frame.GetSP(),
                      "module": frame.GetModule().GetFileSpec().basename,
                      "function": frame.GetFunctionName(), "inlined": frame.IsInlined(),
                      "return_address": call}))
"""


def lldb_frames(core: Path) -> list[dict[str, Any]]:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(_LLDB_SCRIPT)
    try:
        out = subprocess.run(["/usr/bin/python3", f.name, OPT, str(core)], capture_output=True,
                             text=True, check=True, timeout=900).stdout
    finally:
        os.unlink(f.name)
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


_LEVEL = re.compile(r"Stack level (\d+), frame at (0x[0-9a-f]+):")
_RIP = re.compile(r"rip = (0x[0-9a-f]+)(?: in [^;]*)?; saved rip = (0x[0-9a-f]+)")
_CALLER = re.compile(r"called by frame at (0x[0-9a-f]+)")
_PREVIOUS_SP = re.compile(r"Previous frame's sp is (0x[0-9a-f]+)")
_UP = re.compile(r"^#(\d+)\s+(0x[0-9a-f]+)?", re.M)


def gdb_frames(gdb: str, mode: str, depth: int, cache: Path) -> list[dict[str, Any]]:
    """`frame N`, `info frame` and `up` for each of the first `depth` frames, in one session:
    mode "plugin", "filter" (`bb exact-frames off`) or "plain"."""
    os.environ["UNSPLIT_CACHE"] = str(cache)
    driver_gdb.GDB = gdb
    frames: list[dict[str, Any]] = []
    env = {"UNSPLIT_DEBUGINFO": "0"} if mode == "unwinder" else {}
    with GdbDriver(OPT, core=str(CORE), plugin=mode != "plain", startup_timeout=900,
                   env=env) as s:
        if mode == "filter":
            s.command("bb exact-frames off")
        count = len([m for m in _UP.finditer(s.command(f"bt {depth}", timeout=900))])
        for n in range(count):
            s.command(f"frame {n}")
            info = s.command("info frame", timeout=300)
            level, rip, caller = _LEVEL.search(info), _RIP.search(info), _CALLER.search(info)
            sp = _PREVIOUS_SP.search(info)
            up = _UP.search(s.command("up", timeout=300))
            frames.append({
                "level": n, "cfa": int(level[2], 16) if level else None,
                "previous_sp": int(sp[1], 16) if sp else None,
                "outermost": "Outermost frame" in info,
                "pc": s.register("pc", n),
                "saved_pc": int(rip[2], 16) if rip else None,
                "caller_cfa": int(caller[1], 16) if caller else None,
                # `up` from the outermost frame stays there and says so (no "#N" line).
                "up_pc": (int(up[2], 16) if up[2] else s.register("pc", n + 1))
                if up and int(up[1]) == n + 1 else None,
                "info": info})
        if mode != "plain":
            frames.append({"status": s.command("bb exact-frames")})
    return frames


def dap_pcs(gdb: str, cache: Path, plugin: bool, levels: int) -> list[int]:
    """GDB's DAP interpreter (`gdb -i dap`, GDB 16+: `attach` with `coreFile`) on the core, as
    an IDE opens it: each frame's instructionPointerReference in the first `stackTrace`."""
    argv = [gdb, "-i", "dap", "-nx", "-iex", "set debuginfod enabled off"]
    if plugin:
        argv += ["-iex", f"source {driver_gdb.PLUGIN}"]
    session = DapSession(argv, env={"UNSPLIT_CACHE": str(cache)})
    try:
        session.request("initialize", adapterID="bench", clientID="bench", linesStartAt1=True,
                        columnsStartAt1=True, pathFormat="path", timeout=900)
        session.send("attach", program=OPT, coreFile=str(CORE))
        session.wait("event", "initialized", timeout=900)
        session.request("configurationDone", timeout=900)
        stopped = session.wait("event", "stopped", timeout=900)
        thread = stopped["body"].get("threadId") or \
            session.request("threads")["threads"][0]["id"]
        frames = session.request("stackTrace", threadId=thread, startFrame=0, levels=levels,
                                 timeout=900)["stackFrames"]
        return [int(f["instructionPointerReference"], 16) for f in frames]
    finally:
        session.close()


def mi_pcs(gdb: str, cache: Path, plugin: bool, levels: int) -> list[int]:
    """GDB/MI (`--interpreter=mi3`, what cpptools and other MI front ends run) on the core: each
    frame's addr in `-stack-list-frames` after `-enable-frame-filters`, as an IDE asks."""
    session = MiSession([OPT], plugin=plugin, env={"UNSPLIT_CACHE": str(cache)}, gdb=gdb)
    try:
        session.command(f'-interpreter-exec console "core-file {CORE}"', timeout=900)
        session.command("-enable-frame-filters")
        stack = session.command(f"-stack-list-frames 0 {levels - 1}", timeout=900)["stack"]
        return [int(next(iter(item.values()))["addr"], 16) for item in stack]
    finally:
        session.close()


def compare(gdb: list[dict[str, Any]], lldb: list[dict[str, Any]]) -> list[str]:
    """Where GDB's frames differ from LLDB's: one line each."""
    rows = [f for f in gdb if "level" in f]
    out = []
    if len(rows) != len(lldb):
        out.append(f"GDB has {len(rows)} frames, LLDB {len(lldb)}")
    for g, ref in zip(rows, lldb, strict=False):
        n = g["level"]
        caller = lldb[n + 1] if n + 1 < len(lldb) else None
        # GDB gives the outermost frame (undefined return address) the frame id "frame at
        # 0x0" (outer_frame_id); its CFA is then in "Previous frame's sp" alone.
        checks = [("pc", g["pc"], ref["pc"]), ("previous frame's sp", g["previous_sp"],
                                               ref["cfa"])]
        if not g["outermost"]:
            checks.append(("CFA", g["cfa"], ref["cfa"]))
        if caller is not None:
            checks += [("saved rip", g["saved_pc"], caller["pc"]),
                       ("up", g["up_pc"], caller["pc"])]
            if not (n + 1 < len(rows) and rows[n + 1]["outermost"]):
                checks.append(("caller's CFA", g["caller_cfa"], caller["cfa"]))
        for what, mine, theirs in checks:
            if mine != theirs:
                out.append(f"frame {n}: {what} {_hex(mine)}, LLDB {_hex(theirs)}")
    return out


def _hex(value: int | None) -> str:
    return "none" if value is None else f"{value:#x}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gdb", default=os.environ.get("UNSPLIT_GDB", "gdb"))
    parser.add_argument("--depth", type=int, default=40)
    parser.add_argument("--dap", metavar="GDB",
                        help="also the first stackTrace of this GDB's DAP interpreter (GDB 16+) "
                        "on the core, with the plugin and without")
    parser.add_argument("--mi", action="store_true",
                        help="also GDB/MI's -stack-list-frames on the core, with the plugin and "
                        "without")
    parser.add_argument("--modes", default="plugin,unwinder,filter,plain",
                        help="GDB sessions to compare, of plugin, unwinder (the plugin without "
                        "its debug file), filter (`bb exact-frames off`), plain")
    args = parser.parse_args()
    if not CORE.exists():
        print(f"{CORE}: missing; build it with bench/libllvm.py --build-only", file=sys.stderr)
        return 2
    reference = lldb_frames(CORE)
    bad_returns = [i for i, f in enumerate(reference) if i > 0 and not f["return_address"]
                   and not f["inlined"]]
    result: dict[str, Any] = {"core": str(CORE), "gdb": args.gdb, "lldb": reference,
                              "lldb_not_return_addresses": bad_returns, "sessions": {}}
    print(f"LLDB 22: {len(reference)} frames; caller pcs that are not return addresses: "
          f"{bad_returns or 'none'}")
    ok = not bad_returns
    with tempfile.TemporaryDirectory(prefix="libllvm-frames-") as cache:
        for mode in args.modes.split(","):
            frames = gdb_frames(args.gdb, mode, args.depth, Path(cache))
            diffs = compare(frames, reference)
            result["sessions"][mode] = {"frames": frames, "differences": diffs}
            print(f"gdb {mode}: {len([f for f in frames if 'level' in f])} frames, "
                  f"{len(diffs)} differences from LLDB")
            for line in diffs[:20]:
                print("  " + line)
            if frames and "status" in frames[-1]:
                print("  " + frames[-1]["status"].strip().replace("\n", "\n  "))
            if mode in ("plugin", "unwinder"):
                ok = ok and not diffs
        want = [f["pc"] for f in reference]
        front_ends = [("mi", "gdb -i mi3", mi_pcs, args.gdb)] if args.mi else []
        front_ends += [("dap", "gdb -i dap", dap_pcs, args.dap)] if args.dap else []
        for key, shown, pcs, gdb in front_ends:
            for plugin in (True, False):
                got = pcs(gdb, Path(cache), plugin, args.depth)
                differ = [n for n, (a, b) in enumerate(zip(got, want, strict=False)) if a != b]
                result["sessions"][f"{key}{'' if plugin else ' plain'}"] = {
                    "pcs": got, "frames_unlike_lldb": differ}
                print(f"{shown}{'' if plugin else ' plain'}: {len(got)} frames, pcs unlike "
                      f"LLDB's: {differ or 'none'}")
                if plugin:
                    ok = ok and not differ and len(got) == len(want)
    print(f"results: {save('libllvm_frames', result)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
