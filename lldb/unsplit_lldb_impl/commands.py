"""The ``bb`` commands in LLDB: a container plus one class per entry of ``COMMANDS``.

Classes follow lldb/examples/python/cmdtemplate.py: constructed with (debugger, internal_dict),
called with (debugger, command, exe_ctx, result), help from get_short_help/get_long_help, and
everything taken from ``exe_ctx``. Errors end up in ``result`` as one line; LLDB never dies.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, ClassVar

import lldb
from unsplit.commands import COMMANDS, dispatch
from unsplit.errors import UnsplitError

from . import cfi_symbols
from . import state as state_mod
from .host import LldbHost
from .report import with_traceback

PREFIX = "bb"
PREFIX_SHORT_HELP = ("unsplit: debug hot/cold split code as if it had never been split "
                     "(bb COMMAND --help for options)")


def run_command(name: str, debugger: lldb.SBDebugger, command: str,
                exe_ctx: lldb.SBExecutionContext, result: lldb.SBCommandReturnObject) -> None:
    """Run `bb NAME COMMAND` and put its text, or its one-line error, into `result`."""
    try:
        # The CFI first: a symbol file it gives flushes the thread's frames, and LLDB 19
        # crashes in SBFrame.GetFrameID on a frame taken before (a BOLT core, measured).
        target = exe_ctx.GetTarget()
        notes = cfi_symbols.sync(debugger, target if target.IsValid()
                                 else debugger.GetSelectedTarget())
        host = LldbHost.from_exe_ctx(debugger, exe_ctx)
        host.notes += notes
        session = state_mod.for_debugger(debugger.GetID()).session
        text = dispatch(session, host, name, command or "")
    except UnsplitError as e:
        result.SetError(" ".join(str(e).split("\n")))
        return
    except Exception as e:
        result.SetError(with_traceback(e))
        return
    for note in host.notes:
        result.AppendWarning(note)
    if text:
        result.AppendMessage(text)
    result.SetStatus(lldb.eReturnStatusSuccessFinishResult)


class BbCommand:
    """Base of the generated `bb NAME` classes; `command_name` picks the COMMANDS entry."""

    command_name: ClassVar[str] = ""

    def __init__(self, debugger: lldb.SBDebugger, internal_dict: dict[str, Any]) -> None:
        self.debugger = debugger

    def get_short_help(self) -> str:
        return COMMANDS[self.command_name].summary

    def get_long_help(self) -> str:
        return COMMANDS[self.command_name].help

    def __call__(self, debugger: lldb.SBDebugger, command: str, exe_ctx: lldb.SBExecutionContext,
                 result: lldb.SBCommandReturnObject) -> None:
        run_command(self.command_name, debugger, command, exe_ctx, result)


def class_name(name: str) -> str:
    return "Bb" + "".join(p.capitalize() for p in name.replace("-", "_").split("_")) + "Command"


def make_classes(module: ModuleType) -> dict[str, str]:
    """One BbCommand subclass per COMMANDS entry, set on `module`; returns name -> class path."""
    paths = {}
    for name in COMMANDS:
        cls_name = class_name(name)
        cls = type(cls_name, (BbCommand,), {"command_name": name, "__doc__":
                                            COMMANDS[name].summary})
        setattr(module, cls_name, cls)
        paths[name] = f"{module.__name__}.{cls_name}"
    return paths


def _run(debugger: lldb.SBDebugger, line: str) -> str | None:
    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(line, result)
    return None if result.Succeeded() else (result.GetError() or "failed").strip()


def register(debugger: lldb.SBDebugger, module: ModuleType) -> list[str]:
    """Add `bb` and its subcommands once per debugger; returns one line per failure."""
    st = state_mod.for_debugger(debugger.GetID())
    paths = make_classes(module)  # a re-import replaces the module: its classes are new
    problems = []
    if PREFIX not in st.registered:
        error = _run(debugger, f'command container add -h "{PREFIX_SHORT_HELP}" {PREFIX}')
        if error:
            return [f"unsplit: cannot add the {PREFIX!r} command: {error}"]
        st.registered.add(PREFIX)
    for name, path in paths.items():
        key = f"{PREFIX} {name}"
        if key in st.registered:
            continue
        error = _run(debugger, f"command script add -c {path} {PREFIX} {name}")
        if error:
            problems.append(f"unsplit: cannot add {key!r}: {error}")
            continue
        st.registered.add(key)
    return problems
