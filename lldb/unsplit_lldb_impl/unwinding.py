"""What `bb bt` needs from LLDB: a thread's frame 0 registers, process memory, and the
pcs of the frames LLDB unwinds itself, each through the SB API only.

LLDB 22 unwinds a frame whose pc is in a cold fragment with its assembly profiler when the
fragment's FDE does not begin like a function (first row CFA=rsp+8; see debug/breakpad.py), and
invents a frame unless cfi_symbols.py gave the module its CFI; the core's CFI backtrace
(unsplit.debug.unwind) is the reference `bb bt` shows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from unsplit.errors import UsageError
from unsplit.formats.dwarf_expr import REGISTER_NAMES

if TYPE_CHECKING:
    import lldb

_USABLE = ("stopped", "crashed", "suspended")


def _process(target: lldb.SBTarget) -> Any:
    import lldb

    process = target.GetProcess() if target.IsValid() else None
    if process is None or not process.IsValid():
        raise UsageError("no process: run the program or load a core")
    state = process.GetState()
    if state not in (lldb.eStateStopped, lldb.eStateCrashed, lldb.eStateSuspended):
        raise UsageError("the process is not stopped")
    return process


def thread(target: lldb.SBTarget, frame: lldb.SBFrame | None, number: int | None) -> Any:
    """The thread of the selected frame (`number` None), or the thread LLDB numbers `number`."""
    process = _process(target)
    if number is None:
        found = frame.GetThread() if frame is not None else process.GetSelectedThread()
    else:
        found = process.GetThreadByIndexID(number)
    if found is None or not found.IsValid() or found.GetNumFrames() == 0:
        raise UsageError(f"no thread {number}" if number is not None else "no thread selected")
    return found


def thread_numbers(target: lldb.SBTarget) -> list[int]:
    return [int(t.GetIndexID()) for t in _process(target)]


def frame0_registers(target: lldb.SBTarget, frame: lldb.SBFrame | None,
                     number: int | None) -> dict[str, int]:
    frame0 = thread(target, frame, number).GetFrameAtIndex(0)
    values: dict[str, int] = {}
    for name in REGISTER_NAMES:
        value = frame0.FindRegister(name.lower())
        if value.IsValid() and value.GetValue() is not None:
            values[name] = int(value.GetValueAsUnsigned())
    return values


def read_memory(target: lldb.SBTarget, address: int, size: int) -> bytes:
    import lldb

    process = target.GetProcess()
    error = lldb.SBError()
    data = process.ReadMemory(address, size, error)
    return bytes(data) if error.Success() and data else b""


def _innermost_of_each_frame(target: lldb.SBTarget, frame: lldb.SBFrame | None,
                             number: int | None) -> list[Any]:
    """For each frame an unwinder makes, the innermost of LLDB's frames that share its
    registers (its inlined calls come first in `bt`)."""
    out: list[Any] = []
    first = None
    for f in thread(target, frame, number):
        first = f if first is None else first
        if not f.IsInlined():
            out.append(first)
            first = None
    return out


def native_frame_numbers(target: lldb.SBTarget, frame: lldb.SBFrame | None, number: int | None
                         ) -> list[tuple[int, int]]:
    """The number `bt` gives each frame an unwinder makes (its innermost inlined call's),
    and how many of `bt`'s frames it is (its inlined calls and itself)."""
    out: list[tuple[int, int]] = []
    first = None
    for f in thread(target, frame, number):
        first = f if first is None else first
        if not f.IsInlined():
            out.append((int(first.GetFrameID()), int(f.GetFrameID()) - int(first.GetFrameID())
                        + 1))
            first = None
    return out


def native_frame_pcs(target: lldb.SBTarget, frame: lldb.SBFrame | None,
                     number: int | None) -> list[int]:
    """The pc of each frame an unwinder makes. LLDB gives a concrete frame with inlined calls
    the pc of the inlined block's start, not its register's: the real pc is the innermost
    frame's of the group."""
    return [int(f.GetPC()) for f in _innermost_of_each_frame(target, frame, number)]
