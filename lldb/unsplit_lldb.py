"""What LLDB imports to load unsplit (in ~/.lldbinit:
``command script import /path/to/unsplit/lldb/unsplit_lldb.py``): makes the core, the adapter
and the venv's pyelftools importable and registers the ``bb`` commands, the
``${script.frame:…}`` frame names and the moved fragments' debug files, once however often it is
imported."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import lldb


def __lldb_init_module(debugger: lldb.SBDebugger, internal_dict: dict[str, Any]) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(os.path.dirname(here), "plugin"))  # this checkout's core
    from unsplit import dependencies

    problem = dependencies.adapter_problem(here)
    if problem is not None:  # one line, and LLDB goes on without the plugin
        print(problem, file=sys.stderr)
        return
    import lldb
    from unsplit_lldb_impl import backtrace, capabilities, cfi_symbols, commands, naming

    problems = commands.register(debugger, sys.modules[__name__])
    missing = capabilities.missing_for_naming(lldb)
    if missing:  # an LLDB older than the SB calls the frame names need: say so, go on
        problems.append(f"unsplit: this LLDB has no {', '.join(missing)}: bt keeps LLDB's own "
                        "frame names; bb commands work")
    else:
        problems += naming.install(debugger) + backtrace.install(debugger)
    problems += cfi_symbols.install(debugger)  # LLDB's own unwinder, right in cold fragments
    for line in problems:
        print(line, file=sys.stderr)


# -- ${script.frame:unsplit_lldb.NAME} callbacks: LLDB calls NAME(frame, internal_dict) --------

def backtrace(debugger: lldb.SBDebugger, command: str, exe_ctx: lldb.SBExecutionContext,
              result: lldb.SBCommandReturnObject, internal_dict: dict[str, Any]) -> None:
    """LLDB's `bt` (help _regexp-bt), moved code named by its procedure and fragment."""
    from unsplit_lldb_impl import backtrace

    backtrace.run(debugger, command, exe_ctx, result)


def frame_function(frame: lldb.SBFrame, internal_dict: dict[str, Any]) -> str:
    """The function part of `frame-format`: `transfer [cold] + 31` in moved code."""
    from unsplit_lldb_impl import naming

    return naming.guarded_name(frame, "frame_function")


def frame_function_line(frame: lldb.SBFrame, internal_dict: dict[str, Any]) -> str:
    """The function part of `frame-format` through its line part: `transfer [cold] + 31 at
    file.c:12`, one call per frame (unsplit_lldb_impl/formats.py: merge)."""
    from unsplit_lldb_impl import naming

    return naming.guarded_name_and_line(frame, "frame_function_line")


def thread_function(frame: lldb.SBFrame, internal_dict: dict[str, Any]) -> str:
    """The function part of `thread-format`."""
    from unsplit_lldb_impl import naming

    return naming.guarded_name(frame, "thread_function")


def thread_stop_function(frame: lldb.SBFrame, internal_dict: dict[str, Any]) -> str:
    """The function part of `thread-stop-format`, when the user's has one."""
    from unsplit_lldb_impl import naming

    return naming.guarded_name(frame, "thread_stop_function")


def frame_line(frame: lldb.SBFrame, internal_dict: dict[str, Any]) -> str:
    """` at file:line` from unsplit when LLDB has no line for the frame (BOLT without DWARF)."""
    from unsplit_lldb_impl import naming

    return naming.guarded_line(frame)


def __getattr__(name: str) -> Any:
    """Classes LLDB looks up by name, imported on first use: `unsplit_lldb.SplitResolver` (the
    `bb break` resolver: `breakpoint set -P`, BreakpointCreateFromScript) and
    `unsplit_lldb.LogicalStep` (the `bb next`/`bb step` plan: `thread step-scripted -C`),
    `unsplit_lldb.CfiSymbolsHook` (the stop hook that gives new modules their CFI symbol
    file)."""
    if name == "SplitResolver":
        from unsplit_lldb_impl.breakpoints import SplitResolver

        return SplitResolver
    if name == "LogicalStep":
        from unsplit_lldb_impl.stepping import LogicalStep

        return LogicalStep
    if name == "CfiSymbolsHook":
        from unsplit_lldb_impl.cfi_symbols import CfiSymbolsHook

        return CfiSymbolsHook
    raise AttributeError(name)
