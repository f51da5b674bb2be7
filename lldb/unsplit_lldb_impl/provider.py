"""Scripted frame providers (``SBTarget.RegisterScriptedFrameProvider``, LLDB 22): probed, not
registered. What was measured with LLDB 22.1.8 (issue 9), and why ``bb bt`` is the fix for now:

**When LLDB invents a frame.** For frame 0, ``FuncUnwinders::GetUnwindPlanAtNonCallSite`` takes
the ``.eh_frame`` plan "augmented" by the assembly profiler, which it builds only when the FDE's
first row is a function entry (CFA=rsp+8, rip=[CFA-8]); otherwise it falls back to "assembly insn
profiling" (``image show-unwind -a $pc``), which assumes the fragment starts a fresh frame. A cold
fragment entered with registers pushed and then split by a ``ret`` in its middle is that case:
the zoo's ``switch rare`` in ``main.cold`` past its ``ret`` (clang-mfs-nodebug, bolt-random2)
shows main's pc twice. Frames above frame 0 use the synchronous plan (the ``.eh_frame`` itself)
and are right; so is every stop on the crash path of ``crash`` in every variant (stepped one
instruction at a time). No setting selects the plan: ``settings list`` has nothing about unwind
plans besides ``disable-language-runtime-unwindplans``.

**Why no provider is registered.** A provider can pass an input frame through (return its index,
LLDB keeps its variables and registers) or build a ``ScriptedFrame`` whose register context is
packed bytes (the CFI's registers would do). Both work for ``bt``, ``frame select``, ``up``
and ``register read`` in a single session, but in 22.1.8 any SB call made by the provider
(``ScriptedFrameProvider.__init__`` itself tests ``self.thread``; reading frame 0's registers or
memory) can deadlock LLDB: the event-handler thread creates the provider while holding the frame
list's lock and waits for the API lock, which the private-state thread holds while it waits for
the frame list (``process continue`` past a shared-library stop hung in about half the runs).
A provider making no SB call at all (pure pass-through) did not hang in 6 runs, so one whose
corrections are computed beforehand, at a public stop, may be safe; LLDB's own tests added
after 22 for these deadlocks suggest waiting for a release that has the fixes. Until then
``bb bt`` prints the CFI's frames and where LLDB's differ. An invented frame also breaks
``finish``: its step-out never finds the frame it expects, and the program runs on.
"""

from __future__ import annotations

from typing import Any

import lldb


def probe(target: Any | None = None) -> str:
    """A one-line account of frame-provider support (kept for reports)."""
    if not hasattr(lldb.SBTarget, "RegisterScriptedFrameProvider"):
        return "scripted frame providers: not available in this LLDB"
    return ("scripted frame providers: available, not registered (LLDB 22.1.8 deadlocks "
            "when a provider calls the SB API; bb bt shows the CFI's frames)")
