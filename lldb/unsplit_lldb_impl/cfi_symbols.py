"""LLDB's own frames made exact: every module without DWARF that has moved fragments gets a
Breakpad symbol file of their CFI (``unsplit.breakpad`` says why that fixes LLDB's unwinding).

Three ways the file reaches LLDB, so that every client sees it (``bt``, ``frame select``,
``finish``, cores, all threads, lldb-dap):

* the cache directory is appended to ``target.debug-file-search-paths`` at import: LLDB then
  finds a file written by an earlier session (or ``unsplit lldb-cfi``) by itself, for a
  module without DWARF, whenever it loads one;
* :func:`sync` writes the file and runs ``target symbols add`` for modules loaded before it
  existed: at import (targets made before it, cores), from a stop hook at every stop of a
  live process (libraries loaded since), and before every ``bb`` command.

A module with DWARF is never given one (LLDB uses the DWARF's ranges there and is right; a
Breakpad file would replace that DWARF). ``UNSPLIT_LLDB_CFI=0`` turns all of it off.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from unsplit import breakpad
from unsplit.errors import UnsplitError

from . import state as state_mod

HOOK_CLASS = "unsplit_lldb.CfiSymbolsHook"


@dataclass
class _Done:
    """Modules already looked at, by (path, UUID), with what was done (for `bb exact-frames`)."""

    seen: dict[tuple[str, str], str] = field(default_factory=dict)
    hooked: set[int] = field(default_factory=set)  # debugger ids with the stop hook


_DONE = _Done()


def enabled() -> bool:
    return os.environ.get("UNSPLIT_LLDB_CFI", "1") != "0"


def _run(debugger: Any, command: str) -> tuple[bool, str]:
    import lldb

    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(command, result)
    return result.Succeeded(), (result.GetOutput() or "") + (result.GetError() or "")


def install(debugger: Any) -> list[str]:
    """At import: the search path, the stop hook (in LLDB's dummy target, which LLDB copies
    into every target made later, and in the targets that exist), and a first sync."""
    if not enabled():
        return []
    notes = []
    root = breakpad.cache_dir()
    ok, out = _run(debugger, "settings show target.debug-file-search-paths")
    if root not in out:
        ok, out = _run(debugger, f'settings append target.debug-file-search-paths "{root}"')
        if not ok:
            notes.append(f"unsplit: cannot add {root} to target.debug-file-search-paths: "
                         f"{out.strip()}")
    if int(debugger.GetID()) not in _DONE.hooked:
        _DONE.hooked.add(int(debugger.GetID()))
        targets = [debugger.GetTargetAtIndex(i) for i in range(debugger.GetNumTargets())]
        for target in [debugger.GetDummyTarget(), *targets]:
            _add_hook(debugger, target)
    for i in range(debugger.GetNumTargets()):
        notes += sync(debugger, debugger.GetTargetAtIndex(i))
    return notes


def _add_hook(debugger: Any, target: Any) -> None:
    if target == debugger.GetDummyTarget() and debugger.GetSelectedTarget().IsValid():
        return  # with a target selected, commands cannot reach the dummy one
    _run_on(debugger, target, f"target stop-hook add -P {HOOK_CLASS}")


def sync(debugger: Any, target: Any) -> list[str]:
    """Give each new module of `target` that needs one its CFI symbol file; returns warnings.
    Cheap when nothing is new (one look per module per session)."""
    if not enabled() or not target.IsValid():
        return []
    notes: list[str] = []
    for module in target.module_iter():
        path = module.GetFileSpec().fullpath or ""
        key = (path, module.GetUUIDString() or "")
        if not path or key in _DONE.seen:
            continue
        try:
            _DONE.seen[key] = _give(debugger, target, module, path)
        except (OSError, UnsplitError, ValueError) as e:  # never stops the debugger
            _DONE.seen[key] = f"not given: {e}"
            notes.append(f"unsplit: CFI for LLDB's unwinder not given to {path}: {e}")
    return notes


def _give(debugger: Any, target: Any, module: Any, path: str) -> str:
    symbol_file = module.GetSymbolFileSpec().fullpath or ""
    root = breakpad.cache_dir()
    if symbol_file.startswith(root + os.sep):
        return "given (found in the cache by LLDB)"
    if module.GetNumCompileUnits() > 0:
        return "has DWARF: LLDB's own ranges"
    if not os.path.isfile(path):
        return "no file"
    st = state_mod.for_debugger(debugger.GetID())
    index = st.session.index(path)
    if index.binary.dwarf_binary is not None:
        return "has DWARF (a debug file LLDB did not load)"
    moved = index.moved_fragments()
    if not moved:
        return "no moved fragments"
    uuid = module.GetUUIDString() or ""
    text = breakpad.symbol_file(index.binary, [f.start for f in moved], uuid)
    if text is None:
        return "no CFI to give"
    ident = index.binary.build_id or bytes.fromhex(uuid.replace("-", "") or "00")
    out = breakpad.cache_path(ident, root)
    try:
        with open(out, encoding="ascii") as f:
            same = f.read() == text
    except OSError:
        same = False
    if not same:
        breakpad.write(out, text)
    ok, message = _run_on(debugger, target, f'target symbols add "{out}"')
    if not ok:
        raise UnsplitError(message.strip().splitlines()[0] if message.strip() else "failed")
    return f"given: {out}"


def _run_on(debugger: Any, target: Any, command: str) -> tuple[bool, str]:
    """`command` with `target` selected (`target symbols add` acts on the selected one)."""
    selected = debugger.GetSelectedTarget()
    switch = selected.IsValid() and selected != target
    if switch:
        debugger.SetSelectedTarget(target)
    try:
        return _run(debugger, command)
    finally:
        if switch:
            debugger.SetSelectedTarget(selected)


def status() -> list[str]:
    """One line per module looked at (for `bb exact-frames`)."""
    return [f"{os.path.basename(path)}: {what}" for (path, _), what in sorted(_DONE.seen.items())]


class CfiSymbolsHook:
    """The stop hook: modules loaded since the last stop get their CFI symbol file before
    anyone looks at the stop's frames. Never raises into LLDB; never stops the stop."""

    def __init__(self, target: Any, extra_args: Any, internal_dict: dict[str, Any]) -> None:
        self.target = target

    def handle_stop(self, exe_ctx: Any, stream: Any) -> bool:
        try:
            target = exe_ctx.GetTarget()
            for note in sync(target.GetDebugger(), target):
                stream.Print(note + "\n")
        except Exception as e:  # the session always survives
            stream.Print(f"unsplit: CFI for LLDB's unwinder: {e}\n")
        return True
