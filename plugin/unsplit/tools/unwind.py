"""`unsplit bt CORE --exe BINARY [--json]`: backtrace every thread of a core through the CFI.

No debugger: registers from the core's NT_PRSTATUS notes, memory from its PT_LOAD segments (and
the mapped files), modules from NT_FILE, each frame unwound by the `.eh_frame`/`.debug_frame`
of its module (unsplit.cfi) and named by the module's index, cold fragments included.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
from typing import Any

from ..corefile import Core
from ..session import Session
from ..unwind import backtrace, backtrace_text


def _signal_name(number: int) -> str:
    try:
        return f"{number} ({signal.Signals(number).name})"
    except ValueError:
        return str(number)


def run(core_path: str, exe: str, as_json: bool = False) -> str:
    """The text (or JSON) `unsplit bt` prints."""
    if not os.path.isfile(exe):
        from ..errors import BinaryError

        raise BinaryError(f"{exe}: no such file")
    session = Session()
    core = Core(core_path)
    modules = core.modules(exe)
    threads: list[dict[str, Any]] = []
    texts: list[str] = []
    for n, thread in enumerate(core.threads, 1):
        frames = backtrace(modules, thread.registers, core.read_memory, session.index)
        threads.append({"thread": n, "pid": thread.pid, "signal": thread.signal,
                        "frames": [f.to_json() for f in frames]})
        head = f"thread {n} (LWP {thread.pid})"
        if thread.signal:
            head += f", signal {_signal_name(thread.signal)}"
        texts.append(f"{head}:\n{backtrace_text(frames)}")
    if as_json:
        return json.dumps({"core": core_path, "exe": exe,
                           "modules": [{"path": m.path, "bias": hex(m.bias)} for m in modules],
                           "threads": threads}, indent=2)
    return "\n\n".join(texts)


def _run(args: argparse.Namespace) -> str:
    return run(args.core, args.exe, args.json)


def add_cli(subparsers: Any) -> None:
    """Register `bt` on the `unsplit` argparse subparsers."""
    p = subparsers.add_parser(
        "bt", help="backtrace a core through the CFI (.eh_frame), no debugger",
        description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("core", metavar="CORE", help="the core file")
    p.add_argument("--exe", required=True, metavar="BINARY",
                   help="the executable that dumped it")
    p.add_argument("--json", action="store_true",
                   help="frames with pc, cfa, registers and location, as JSON")
    p.set_defaults(handler=_run)
