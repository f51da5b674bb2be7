"""Process-wide adapter state, kept out of ``unsplit_lldb`` so a second ``command script import``
(which reloads that module) finds what the first one registered and registers nothing twice."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from unsplit.debug.stepping_host import SteppingHost
from unsplit.debuginfo.background import Writer
from unsplit.host import LiveHost
from unsplit.index.names.demangle import LLVM
from unsplit.session import Session

from .stop_memo import StopMemo

if TYPE_CHECKING:
    import lldb


@dataclass
class FormatState:
    """One debugger's format settings: the user's own values and the ones we installed."""

    saved: dict[str, str] = field(default_factory=dict)  # setting -> user's value
    installed: dict[str, str] = field(default_factory=dict)  # setting -> our value
    parts: dict[str, str] = field(default_factory=dict)  # callback name -> native part
    # merged callback -> (its span, the span after the function scope) (formats.merge)
    spans: dict[str, tuple[str, str]] = field(default_factory=dict)


def _llvm() -> str | None:
    """LLDB shows names demangled by LLVM's demangler, always (it has no setting for it)."""
    return LLVM


@dataclass
class PendingFile:
    """A module's debug file being written by `writer`, its names file given meanwhile
    (names_first.py)."""

    module: str
    writer: Writer
    names: str
    loaded: bool = False


@dataclass
class DebuggerState:
    session: Session = field(default_factory=lambda: Session(_llvm))
    formats: FormatState = field(default_factory=FormatState)
    registered: set[str] = field(default_factory=set)  # commands added ("bb", "bb where", …)
    reported: set[str] = field(default_factory=set)  # internal errors already said once
    pending: dict[str, PendingFile] = field(default_factory=dict)  # module -> its writer
    frames: StopMemo = field(default_factory=StopMemo)  # names and lines of this stop's frames
    # the thread that starts writers while a core loads (names_first.watch), and its stop
    watcher: tuple[threading.Thread, threading.Event] | None = None


_STATES: dict[int, DebuggerState] = {}


def for_debugger(debugger_id: int) -> DebuggerState:
    state = _STATES.get(debugger_id)
    if state is None:
        state = _STATES[debugger_id] = DebuggerState()
    return state


class StepHost(LiveHost, SteppingHost, Protocol):
    """What the scripted thread plan (stepping.py) asks of the host it makes: LldbHost."""


class HostMaker(Protocol):
    def __call__(self, debugger: lldb.SBDebugger, target: lldb.SBTarget,
                 frame: lldb.SBFrame | None = None) -> StepHost: ...


# The adapter's Host class, registered by host.py as it loads: stepping makes hosts through
# `make_host` and so never imports host.py, which imports it (no import circle).
_HOST_CLASS: list[HostMaker] = []


def register_host(cls: HostMaker) -> None:
    _HOST_CLASS[:] = [cls]


def make_host(debugger: lldb.SBDebugger, target: lldb.SBTarget,
              frame: lldb.SBFrame | None = None) -> StepHost:
    """An LldbHost on `target` (and `frame`)."""
    return _HOST_CLASS[0](debugger, target, frame)
