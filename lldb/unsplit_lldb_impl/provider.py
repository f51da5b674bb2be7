"""Exact frames in LLDB (issue 9): a stop hook that finds the frames LLDB invents and a scripted
frame provider (``SBTarget.RegisterScriptedFrameProvider``, LLDB 22) that leaves them out.
Measured with LLDB 22.1.8. Opt-in: ``bb exact-frames on`` (LldbHost.set_exact_frames ->
:func:`set_enabled`) adds the stop hook, ``bb exact-frames off`` and ``bb disable`` remove it
and the provider. Off by default, for the limits below ("What it costs").

**When LLDB invents a frame.** For frame 0, ``FuncUnwinders::GetUnwindPlanAtNonCallSite`` takes
the ``.eh_frame`` plan "augmented" by the assembly profiler, which it builds only when the FDE's
first row is a function entry (CFA=rsp+8, rip=[CFA-8]); otherwise it falls back to "assembly insn
profiling" (``image show-unwind -a $pc``), which assumes the fragment starts a fresh frame. A cold
fragment entered with registers pushed and then split by a ``ret`` in its middle is that case:
the zoo's ``switch rare`` in ``main.cold`` past its ``ret`` (clang-mfs-nodebug, bolt-random2)
shows main's pc twice (frame #1 = frame #0, CFA=rsp+0). Frames above frame 0 use the synchronous
plan (the ``.eh_frame`` itself) and are right. No setting selects the plan.

**What was tried (each run: break at ``step``, continue to its return address in ``main.cold``,
``bt``, ``frame select 1``, ``register read rsp``, continue to the exit; ``lldb-22 -b``).**

1. A provider that calls the SB API (the base class's ``__init__``; frame 0's registers and
   memory): deadlocks in about half the runs (previous measurement).
2. This module as first written: the stop hook (ordinary SB calls at a public stop) computes the
   plan with the core's CFI walk and registers the provider; the provider's only SB calls were
   ``input_frames.GetThread().GetThreadID()`` to find its thread's plan. Hung in 16 of 30 runs:
   the main thread, in the stop hook, waits in ``SBThread::GetFrameAtIndex`` for the thread's
   frame list, which the event-handler thread holds while it creates the provider, whose
   ``SBThread::GetThreadID`` waits for the lock the main thread holds (gdb stacks of the hung
   process). ``SBFrameList.GetThread`` takes no lock; ``SBThread.GetThreadID`` does.
3. The same with no SB call at all in the provider (below: it cannot tell threads apart, so the
   hook corrects only single-threaded processes): 0 hangs in 70 runs (clang-mfs-nodebug and
   bolt-random2, two loops at once), the invented frame gone from ``bt``; ``frame select 1``,
   ``up`` and ``register read rsp`` in frame 1 see the true caller (LLDB's own frame 2 passed
   through, with its registers).

**What it costs, and what it does not cover (why it is opt-in).** Registering a provider
makes LLDB announce that the thread's stack changed, and its event handler prints the stop
(thread and frame 0 with disassembly) a second time, asynchronously, after the prompt. We found
no SB call that makes LLDB re-read a thread's frames without it (a provider instance is made per
frame list, and the stop's list is made to print the stop, before or while the stop hook runs,
so a provider registered once cannot know the hook's plan in time). The e2e LLDB driver skips
the prompt LLDB redraws after it (tests/e2e/driver_lldb.py). Only single-threaded processes
are corrected (the hook says so once per process otherwise); ``finish`` still uses LLDB's own
list at its private stops; cores get no stop hook; turned on at a stop, it corrects from the
next stop. ``bb bt`` prints the CFI's frames and where LLDB's differ in every case.

To measure it again (a new LLDB): tests/e2e/test_exact_frames.py runs ten sessions with it on,
each command with a timeout.

**How the work is split (so that the provider needs no lock).**

* :class:`ExactFramesHook`, a scripted stop hook (``target stop-hook add -P``), walks the thread
  with ``unsplit.unwind``, compares with LLDB's own frames (pc, and CFA above frame 0) and, when
  LLDB invents frames, writes a *plan* (the indexes of LLDB's frames to keep), registers the
  provider anew and asks the thread for frame 0, so that the provider instance for this stop is
  made now.
* :class:`ExactFrames`, the provider, calls no LLDB API. LLDB makes a new instance for every new
  frame list (each stop of each thread): only the first instance after the hook's registration
  serves the plan; later ones (the process has moved on) pass LLDB's frames through.

Kept frames are LLDB's own, with their registers, variables and stack ids. A plan is made only
when every CFI frame is one of LLDB's frames; otherwise nothing is corrected.
"""

from __future__ import annotations

import itertools
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from unsplit.errors import UsageError

# LLDB looks classes up in its script interpreter's namespace, where `command script import`
# put unsplit_lldb (whose __getattr__ imports them).
CLASS = "unsplit_lldb.ExactFrames"
HOOK_CLASS = "unsplit_lldb.ExactFramesHook"


@dataclass
class _Plans:
    """What the hook decided, read by the provider: plain data only."""

    generation: int = 0
    plan: list[int] | None = None  # the indexes of LLDB's frames to keep, for the one thread
    served: int = 0  # the generation whose first provider instance was made
    registered: dict[int, int] = field(default_factory=dict)  # target id -> provider id


_PLANS = _Plans()
_GENERATIONS = itertools.count(1)


class ExactFrames:
    """The scripted frame provider: LLDB's frames by index, leaving out the invented ones.

    It calls no LLDB API at all, not even ``SBThread.GetThreadID`` (which waits for the API
    lock), so it cannot tell threads apart: the hook registers it only for a process with one
    thread."""

    def __init__(self, input_frames: Any, args: Any) -> None:
        self.plan: list[int] | None = None
        generation = _PLANS.generation
        if _PLANS.served != generation:  # the instance made at the hook's stop: it serves
            _PLANS.served = generation
            self.plan = _PLANS.plan

    @staticmethod
    def get_description() -> str:
        return "unsplit: leaves out the frames LLDB invents in cold fragments (CFI)"

    def get_frame_at_index(self, index: int) -> int | None:
        if self.plan is None:
            return index  # LLDB's own frame (past its last one, LLDB stops there)
        return self.plan[index] if index < len(self.plan) else None


def available() -> bool:
    import lldb

    return hasattr(lldb.SBTarget, "RegisterScriptedFrameProvider")


def probe(target: Any | None = None) -> str:
    """A one-line account of frame-provider support (kept for reports)."""
    if not available():
        return "scripted frame providers: not available in this LLDB"
    return "scripted frame providers: available; bb exact-frames " + (
        "on" if _HOOKS.enabled else "off")


@dataclass
class _Hooks:
    """Whether exact frames are on, and the stop hooks added (debugger id -> [(target, id)])."""

    enabled: bool = False
    added: dict[int, list[tuple[Any, int]]] = field(default_factory=dict)
    warned: set[int] = field(default_factory=set)  # process ids told "more than one thread"
    last_stop: tuple[int, int] = (0, 0)  # (process id, stop id) the hook last served


_HOOKS = _Hooks()
LIMITS = ("single-threaded processes only; not finish's private stops, not cores; "
          "the stop is printed a second time when a frame is left out")


def set_enabled(debugger: Any, target: Any, flag: bool | None) -> str:
    """``bb exact-frames [on|off]``: add or remove the stop hook (and the provider)."""
    if flag is None:
        return _status(target)
    if not available():
        if flag:
            raise UsageError("bb exact-frames: this LLDB has no scripted frame providers "
                             "(SBTarget.RegisterScriptedFrameProvider); bb bt shows the CFI's "
                             "frames")
        return "exact frames off"
    if flag:
        _add_hook(debugger, target)
    else:
        _remove_hooks(debugger)
    _HOOKS.enabled = flag
    return _status(target)


def _status(target: Any) -> str:
    if not _HOOKS.enabled:
        return "exact frames off: LLDB's own frames (bb bt shows the CFI's)"
    lines = ["exact frames on: where LLDB invents a frame in a cold fragment, bt, frame select, "
             f"up/down and register read show the CFI's frames ({LIMITS})"]
    process = target.GetProcess() if target is not None and target.IsValid() else None
    if process is not None and process.IsValid():
        if process.GetNumThreads() > 1:
            lines.append(f"note: this process has {process.GetNumThreads()} threads: its "
                         "frames are not corrected (bb bt shows the CFI's)")
        if _is_core(process):
            lines.append("note: a core file: its frames are not corrected (bb bt shows the "
                         "CFI's)")
    return "\n".join(lines)


def _is_core(process: Any) -> bool:
    return "elf-core" in str(process.GetPluginName() if hasattr(process, "GetPluginName")
                             else "")


def _add_hook(debugger: Any, target: Any) -> None:
    """One stop hook on the selected target (on LLDB's dummy target when there is none yet:
    LLDB copies its stop hooks into every target created later)."""
    if not target.IsValid():
        target = debugger.GetDummyTarget()
    added = _HOOKS.added.setdefault(int(debugger.GetID()), [])
    if any(t == target or t == debugger.GetDummyTarget() for t, _ in added):
        return
    out = _run(debugger, f"target stop-hook add -P {HOOK_CLASS}")
    m = re.search(r"Stop hook #(\d+) added", out)
    if m is None:
        raise UsageError(f"bb exact-frames: cannot add the stop hook: {out.strip()}")
    added.append((target, int(m.group(1))))


def _remove_hooks(debugger: Any) -> None:
    """Remove our stop hooks and the provider: LLDB's own frames again. A hook LLDB copied
    from its dummy target into a target made later keeps its number; one left in the dummy
    target (no command reaches it once a target exists) does nothing while exact frames are
    off."""
    for _target, number in _HOOKS.added.pop(int(debugger.GetID()), []):
        _run(debugger, f"target stop-hook delete {number}")
    for i in range(debugger.GetNumTargets()):
        withdraw(debugger.GetTargetAtIndex(i))


def _run(debugger: Any, command: str) -> str:
    """A command on the selected target (the dummy target when there is none)."""
    import lldb

    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(command, result)
    return (result.GetOutput() or "") + (result.GetError() or "")


def withdraw(target: Any) -> None:
    """Remove the provider from `target` (its threads get LLDB's own frames again)."""
    provider_id = _PLANS.registered.pop(_target_key(target), None)
    if provider_id is not None:
        target.RemoveScriptedFrameProvider(provider_id)
    _PLANS.plan = None


def _target_key(target: Any) -> int:
    return int(target.GetGlobalID()) if hasattr(target, "GetGlobalID") else 0


def _groups(thread: Any) -> list[tuple[list[int], int, int]]:
    """LLDB's frames as (indexes, pc, cfa), one group per concrete frame with the inlined frames
    that precede it (they share its registers)."""
    groups: list[tuple[list[int], int, int]] = []
    pending: list[int] = []
    for i in range(thread.GetNumFrames()):
        frame = thread.GetFrameAtIndex(i)
        pending.append(i)
        if not frame.IsInlined():
            groups.append((pending, int(frame.GetPC()), int(frame.GetCFA())))
            pending = []
    return groups


def plan_for(native: list[tuple[list[int], int, int]], cfi_frames: list[Any]) -> list[int] | None:
    """The LLDB frame indexes to keep, or None when nothing is to be left out (or the CFI's
    list cannot be made of LLDB's frames). Frame 0 is the thread's own; a caller matches by pc
    and CFA; past the CFI's last frame LLDB's remaining frames are kept."""
    if not native or not cfi_frames or native[0][1] != cfi_frames[0].pc:
        return None
    keep = list(native[0][0])
    at = 1
    for frame in cfi_frames[1:]:
        found = next((k for k in range(at, len(native))
                      if native[k][1] == frame.pc
                      and (frame.cfa is None or native[k][2] == frame.cfa)), None)
        if found is None:
            return None
        keep += native[found][0]
        at = found + 1
    keep += [i for group in native[at:] for i in group[0]]
    if keep == list(range(len(keep))) and len(keep) == sum(len(g[0]) for g in native):
        return None
    return keep


class ExactFramesHook:
    """The stop hook: plans for the threads where LLDB invents frames, then (re)registers the
    provider. Never raises into LLDB; never stops the stop."""

    def __init__(self, target: Any, extra_args: Any, internal_dict: dict[str, Any]) -> None:
        self.target = target

    def handle_stop(self, exe_ctx: Any, stream: Any) -> bool:
        if not _HOOKS.enabled:  # a hook left in LLDB's dummy target after `off`
            return True
        try:
            target = exe_ctx.GetTarget()
            process = target.GetProcess()
            stop = (int(process.GetProcessID()), int(process.GetStopID()))
            if stop == _HOOKS.last_stop:  # the same hook copied twice into one target
                return True
            _HOOKS.last_stop = stop
            threads = process.GetNumThreads()
            if threads > 1 and stop[0] not in _HOOKS.warned:
                _HOOKS.warned.add(stop[0])
                stream.Print(f"unsplit: exact frames: {threads} threads: frames are corrected "
                             "only in single-threaded processes (bb bt shows the CFI's)\n")
            self._plan(target)
        except Exception as e:  # the session always survives
            if os.environ.get("UNSPLIT_DEBUG"):
                import traceback

                traceback.print_exc(file=sys.stderr)
            stream.Print(f"unsplit: exact frames: {e}\n")
        return True

    def _plan(self, target: Any) -> None:
        import lldb
        from unsplit.cfi import registers_from_names
        from unsplit.unwind import backtrace

        from . import state as state_mod
        from . import unwinding
        from .host import LldbHost

        key = _target_key(target)
        if key in _PLANS.registered:  # back to LLDB's own frames before comparing with them
            target.RemoveScriptedFrameProvider(_PLANS.registered.pop(key))
        _PLANS.plan = None
        st = state_mod.for_debugger(target.GetDebugger().GetID())
        process = target.GetProcess()
        if not st.session.enabled or not process.IsValid() or process.GetNumThreads() != 1:
            return
        thread = process.GetThreadAtIndex(0)
        if thread.GetNumFrames() < 2:
            return
        host = LldbHost(target.GetDebugger(), target)
        regs = unwinding.frame0_registers(target, None, int(thread.GetIndexID()))
        frames = backtrace(host.modules(), registers_from_names(regs), host.read_memory,
                           st.session.index)
        plan = plan_for(_groups(thread), frames)
        if plan is None:
            return
        _PLANS.plan, _PLANS.generation = plan, next(_GENERATIONS)
        error = lldb.SBError()
        provider_id = target.RegisterScriptedFrameProvider(CLASS, lldb.SBStructuredData(),
                                                           error)
        if not error.Success():
            raise RuntimeError(error.GetCString() or "cannot register the frame provider")
        _PLANS.registered[key] = int(provider_id)
        thread.GetFrameAtIndex(0)  # make this stop's provider instance now
