"""`unsplit frames CORE --exe BINARY` (alias `unsplit bt`): a core file's backtrace, every frame
named truly, without a debugger: each thread unwound from the core through its fragments' CFI
(unsplit.debug.unwind), or by ``--debugger gdb|lldb`` in batch mode; modules from the core's
``NT_FILE`` note, names from :class:`unsplit.tools.symbolize.Symbolizer`. Bad input (a core of
another binary, a truncated core) gives one line each after whatever can be shown."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Any

from unsplit.debug import cfi
from unsplit.debug.unwind import backtrace
from unsplit.elf.binary import Binary
from unsplit.elf.core import Core, Mapping, image_build_id
from unsplit.errors import BinaryError, UnsplitError, UsageError
from unsplit.host import LoadedModule
from unsplit.index.model.frame import Frame, at_return_address, lookup_pc
from unsplit.index.names.demangle import LLVM
from unsplit.render.frames import core_frame_json, core_table
from unsplit.session import Session
from unsplit.tools.symbolize import Symbolizer

MARK = "UNSPLIT-FRAMES "
_MAX_FRAMES = 512
TIMEOUT = 60


# --- the modules of the process --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Module:
    path: str
    bias: int
    start: int
    end: int
    named: bool  # False: a binary we cannot trust (another build), frames shown raw


def modules(core: Core, exe: Binary | None, problems: list[str]) -> list[Module]:
    """Every file-backed module of the core with its load bias; the executable first.

    The executable is the mapping that holds AT_ENTRY; `exe` stands for it when its name
    matches (it may be a copy elsewhere). A file whose build-id differs from the one the core
    holds in its copy of that file's first page is listed but not trusted for names.
    """
    by_path: dict[str, list[Mapping]] = {}
    for m in core.mappings:
        by_path.setdefault(m.path, []).append(m)
    main = next((path for path, maps in by_path.items()
                 if core.entry is not None and any(m.start <= core.entry < m.end for m in maps)),
                None)
    if exe is not None and main is not None and not _same_file(exe.path, main):
        problems.append(f"{core.path} is not a core of {exe.path}: the crashed program was "
                        f"{main}")
        exe = None
    other_code = exe is not None and main is not None and _other_code(core, exe)
    out: list[Module] = []
    for path, maps in by_path.items():
        start, end = min(m.start for m in maps), max(m.end for m in maps)
        header = min((m for m in maps if m.offset == 0), key=lambda m: m.start, default=None)
        binary = exe if path == main and exe is not None else _open(path)
        if binary is None or header is None:
            out.append(Module(path, 0, start, end, False))
            continue
        seen, want = image_build_id(core.dumped, header.start), binary.build_id
        named = seen is None or want is None or seen == want
        if not named and path == main:
            assert seen is not None and want is not None
            problems.append(f"{core.path} is not a core of {binary.path}: a core of another "
                            f"build of {os.path.basename(binary.path)} (build-id {seen.hex()} "
                            f"in the core, {want.hex()} in the file)")
        elif path == main and other_code:
            named = False
            problems.append(f"{core.path} is not a core of {binary.path}: it ran {main}, "
                            "whose code differs")
        module = Module(binary.path, header.start - _lowest_page(binary), start, end, named)
        out.insert(0, module) if path == main else out.append(module)
    if not by_path and exe is not None and core.entry is not None and exe.elf["e_entry"]:
        # No NT_FILE note: the executable alone, placed by its entry point.
        out.append(Module(exe.path, core.entry - exe.elf["e_entry"], 0, 1 << 64, True))
    return out


def _other_code(core: Core, exe: Binary) -> bool:
    """The file the core ran is still on disk under another name, and its code is not `exe`'s
    (Core.check_same_code: BOLT outputs of one input share a build-id)."""
    try:
        core.check_same_code(exe, os.path.realpath(exe.path))
    except BinaryError:
        return True
    return False


def _same_file(given: str, mapped: str) -> bool:
    return (os.path.realpath(given) == os.path.realpath(mapped)
            or os.path.basename(given) == os.path.basename(mapped))


def _open(path: str) -> Binary | None:
    try:
        return Binary(path) if os.path.isfile(path) else None
    except BinaryError:
        return None


def _lowest_page(binary: Binary) -> int:
    vaddrs = [s["p_vaddr"] for s in binary.elf.iter_segments() if s["p_type"] == "PT_LOAD"]
    return min(vaddrs) & ~0xFFF if vaddrs else 0


# --- the debuggers ---------------------------------------------------------------------------

_GDB_SCRIPT = r'''
import json
import gdb
out = {"threads": []}
try:
    threads = sorted(gdb.selected_inferior().threads(), key=lambda t: t.num)
except gdb.error as e:
    threads, out["error"] = [], str(e)
for t in threads:
    t.switch()
    frames, error = [], None
    try:
        f = gdb.newest_frame()
        while f is not None and len(frames) < LIMIT:
            if f.type() != gdb.INLINE_FRAME:
                frames.append([f.pc(), f.type() == gdb.SIGTRAMP_FRAME])
            f = f.older()
    except gdb.error as e:
        error = str(e)
    out["threads"].append({"num": t.num, "lwp": t.ptid[1], "frames": frames, "error": error})
print("MARK" + json.dumps(out))
'''

_LLDB_SCRIPT = r'''
import json, sys
import lldb
dbg = lldb.SBDebugger.Create()
dbg.SetAsync(False)
exe, core = sys.argv[1], sys.argv[2]
target = dbg.CreateTarget(exe) if exe else dbg.CreateTarget("")
process = target.LoadCore(core)
out = {"threads": []}
if not process.IsValid():
    out["error"] = "lldb cannot load the core"
for t in (process.threads if process.IsValid() else []):
    frames = [[f.GetPC(), False] for f in t.frames if not f.IsInlined()][:LIMIT]
    out["threads"].append({"num": t.GetIndexID(), "lwp": t.GetThreadID(), "frames": frames,
                           "error": None})
print("MARK" + json.dumps(out))
'''


@dataclass(slots=True)
class Unwound:
    threads: list[dict[str, Any]]
    warnings: list[str]


def unwind(core: str, exe: str | None, debugger: str) -> Unwound:
    """Each thread's physical frame PCs, from gdb or lldb in batch mode."""
    if debugger == "gdb":
        tool = shutil.which("gdb")
        if tool is None:
            raise UsageError("gdb not found on PATH (try --debugger lldb)")
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(_GDB_SCRIPT.replace("MARK", MARK).replace("LIMIT", str(_MAX_FRAMES)))
        try:
            cmd = [tool, "-nx", "-batch", "-iex", "set debuginfod enabled off",
                   "-iex", "set auto-load no", "-ex", f"source {f.name}"]
            cmd += [exe, core] if exe else ["-c", core]
            proc = _run(cmd)
        finally:
            os.unlink(f.name)
    else:
        python = shutil.which("python3", path="/usr/bin") or "python3"
        script = _LLDB_SCRIPT.replace("MARK", MARK).replace("LIMIT", str(_MAX_FRAMES))
        proc = _run([python, "-c", script, exe or "", core])
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            data = json.loads(line[len(MARK):])
            warnings = [w.strip() for w in proc.stderr.splitlines()
                        if "may not match" in w or "not a core dump" in w]
            if data.get("error"):
                warnings.append(f"{debugger}: {data['error']}")
            return Unwound(data["threads"], warnings)
    last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    raise UnsplitError(f"{debugger} could not read {core}: {last}")


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT,
                              stdin=subprocess.DEVNULL, errors="replace")
    except subprocess.TimeoutExpired:
        raise UnsplitError(f"{cmd[0]} took more than {TIMEOUT} s") from None
    except OSError as e:
        raise UnsplitError(f"cannot run {cmd[0]}: {e.strerror}") from None


# --- the CFI, no debugger ------------------------------------------------------------------


def unwind_cfi(core: Core, mods: list[Module]) -> Unwound:
    """Each thread's frames from the core alone: registers from NT_PRSTATUS, memory from the
    core and the mapped files, each frame unwound by its fragment's CFI (unsplit.debug.unwind)."""
    loaded = [LoadedModule(m.path, m.bias) for m in mods if m.named]
    session = Session()
    out = []
    for number, thread in enumerate(core.threads, 1):
        walk = backtrace(loaded, thread.registers, core.read_memory, session.index)
        frames = [[f.pc, _signal_frame(session, f), f] for f in walk]
        out.append({"num": number, "lwp": thread.pid, "signal": thread.signal,
                    "frames": frames, "error": walk[-1].stop_reason if walk else None})
    return Unwound(out, [])


def _signal_frame(session: Session, frame: Frame) -> bool:
    """Whether the frame's FDE is a signal trampoline's: its caller's pc is exact."""
    if frame.module is None:
        return False
    try:
        binary = session.index(frame.module).binary
    except UnsplitError:
        return False
    return cfi.is_signal_frame(binary, frame.file_address)


# --- naming ----------------------------------------------------------------------------------


class Namer:
    """Names runtime PCs through the modules of one core (one Symbolizer per module)."""

    def __init__(self, mods: list[Module], input_path: str | None,
                 demangle: bool = True) -> None:
        self.mods = mods
        self.input_path = input_path
        self.demangle = demangle
        self._symbolizers: dict[str, Symbolizer | None] = {}

    def name(self, number: int, pc: int, caller: bool) -> Frame:
        """Frame `number` at `pc`, named at :func:`lookup_pc` (`caller`: pc is a return
        address)."""
        mod = next((m for m in self.mods if m.start <= pc < m.end), None)
        if mod is None:
            return Frame(number, pc)
        sym = self._symbolizer(mod) if mod.named else None
        if sym is None:
            return Frame(number, pc, mod.path, mod.bias)
        answer = sym.answer(lookup_pc(pc, caller) - mod.bias, inlines=True)
        loc = answer.location
        if loc is not None and caller:
            loc = at_return_address(loc, pc)
        return Frame(number, pc, mod.path, mod.bias, loc, lines=tuple(answer.frames))

    def _symbolizer(self, mod: Module) -> Symbolizer | None:
        if mod.path not in self._symbolizers:
            try:
                first = mod is self.mods[0]
                self._symbolizers[mod.path] = Symbolizer(
                    mod.path, self.input_path if first else None, demangle=self.demangle)
            except UnsplitError:
                self._symbolizers[mod.path] = None
        return self._symbolizers[mod.path]


def name_threads(unwound: Unwound, namer: Namer) -> list[dict[str, Any]]:
    """Each thread's frames named; a frame the CFI unwound keeps its CFA and registers."""
    out = []
    for t in unwound.threads:
        frames = []
        previous_sigtramp = True  # frame 0's PC is where it stopped, not a return address
        for i, (pc, sigtramp, *walked) in enumerate(t["frames"]):
            named = namer.name(i, pc, caller=not previous_sigtramp)
            if walked:
                named = named._replace(cfa=walked[0].cfa, registers=walked[0].registers)
            frames.append(named)
            previous_sigtramp = bool(sigtramp)
        out.append({"thread": t["num"], "lwp": t["lwp"], "signal": t.get("signal"),
                    "frames": frames, "error": t["error"]})
    return out


# --- the command -----------------------------------------------------------------------------


def frames(core_path: str, exe_path: str, input_path: str | None = None,
           debugger: str | None = None,
           demangle: bool = True) -> tuple[list[dict[str, Any]], list[str]]:
    """(threads with named frames, one-line problems); raises only when nothing can be shown.

    `debugger` None: the CFI unwinds (no debugger); "gdb" or "lldb": that one, in batch mode.
    """
    # Without thread state the CFI can show nothing: that is the one line.
    core = Core(core_path, threads_required=debugger is None)
    if debugger is None:
        core.threads  # noqa: B018 - parsed now, so a bad core fails before anything else
    problems: list[str] = list(core.problems)
    exe: Binary | None
    try:
        exe = Binary(exe_path)
    except BinaryError as e:
        problems.append(str(e))
        exe = None
    mods = modules(core, exe, problems)
    if debugger is None:
        unwound = unwind_cfi(core, mods)
    else:
        main = mods[0] if mods and mods[0].named and \
            mods[0].start <= (core.entry or 0) < mods[0].end else None
        unwound = unwind(core_path, main.path if main is not None else None, debugger)
    for w in unwound.warnings:
        if problems and ("may not match" in w or "not a core dump" in w):
            continue  # said already, better
        problems.append(w if "may not match" not in w else
                        f"{core_path}: {debugger}: {w.removeprefix('warning: ')}")
    named = name_threads(unwound, Namer(mods, input_path, demangle))
    gone = {f.module for t in named for f in t["frames"]
            if f.module and not f.lines and not os.path.exists(f.module)}
    problems += [f"{path}: no such file: its frames are not named" for path in sorted(gone)]
    return named, problems


def _run_cli(args: argparse.Namespace) -> str:
    threads, problems = frames(args.core, args.exe, args.input, args.debugger,
                               not args.no_demangle)
    style = None if args.no_demangle else LLVM
    if args.json:
        text = json.dumps({"core": args.core, "exe": args.exe,
                           "unwinder": args.debugger or "cfi",
                           "threads": [{**t, "frames": [core_frame_json(f, style)
                                                        for f in t["frames"]]}
                                       for t in threads]})
    else:
        text = core_table(threads, style)
    if not problems:
        return text
    if text:
        print(text, flush=True)
    for p in problems[:-1]:
        print(f"unsplit: {p}", file=sys.stderr)
    raise UnsplitError(problems[-1])


def add_cli(subparsers: Any, name: str = "frames", summary: str | None = None) -> None:
    """Register `unsplit frames` (or its alias `name`); the handler returns the table or JSON."""
    p = subparsers.add_parser(
        name, help=summary or "the backtrace of every thread of a core, split code named truly",
        description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("core", metavar="CORE", help="the core file")
    p.add_argument("--exe", required=True, metavar="BINARY", help="the crashed executable")
    p.add_argument("--input", metavar="PRE_BOLT", help="the pre-BOLT binary of a BOLTed BINARY")
    p.add_argument("--json", action="store_true",
                   help="{core, exe, unwinder, threads: [{thread, lwp, signal, frames, error}]}")
    p.add_argument("--debugger", choices=("gdb", "lldb"), default=None,
                   help="unwind with this debugger in batch mode (default: the CFI of each "
                        "frame's fragment, no debugger)")
    p.add_argument("--no-demangle", action="store_true",
                   help="print linkage names (`_Z7processPKii`), as llvm-symbolizer's option")
    p.set_defaults(handler=_run_cli)
