"""Probe for scripted frame providers (``SBTarget.RegisterScriptedFrameProvider``, LLDB 22).

A provider would give API clients (lldb-dap in VS Code, scripts walking SBThread frames) the
same logical names the CLI gets through ``frame-format``. LLDB 22's provider interface
(lldb/plugins/scripted_frame_provider.py) can only pass an input frame through unchanged
(return its index) or build a ``ScriptedFrame`` from scratch, which must then supply its own
register context, variables and symbol context: renaming a real frame means re-implementing
the frame. That is not done yet: we probe, record why we skipped, and `bb` stays usable.
"""

from __future__ import annotations

from typing import Any

import lldb


def probe(target: Any | None = None) -> str:
    """A one-line account of frame-provider support (shown by nothing yet; kept for reports)."""
    if not hasattr(lldb.SBTarget, "RegisterScriptedFrameProvider"):
        return "scripted frame providers: not available in this LLDB"
    return ("scripted frame providers: available, not registered "
            "(renaming needs full ScriptedFrame objects; CLI names come from frame-format)")
