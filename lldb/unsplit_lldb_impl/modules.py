"""LLDB's module list for the session's module map (unsplit.debug.module_map): each module's
file and load bias, asked again only when the process ran or a module came or went."""

from __future__ import annotations

from typing import TYPE_CHECKING

from unsplit.host import LoadedModule
from unsplit.session import Session

from . import state as state_mod
from .unwinding import read_memory

if TYPE_CHECKING:
    import lldb

_INVALID = 0xFFFFFFFFFFFFFFFF  # LLDB_INVALID_ADDRESS


def module_bias(target: lldb.SBTarget, module: lldb.SBModule) -> int:
    """Load address minus file address of the first loaded section (0 before the run)."""
    for section in module.section_iter():
        load = section.GetLoadAddress(target)
        if load != _INVALID:
            return int(load) - int(section.GetFileAddress())
    return 0


def module_list(target: lldb.SBTarget) -> list[LoadedModule]:
    """Every module of `target` with a file, as LLDB lists it now."""
    mods = []
    for module in target.module_iter():
        path = module.GetFileSpec().fullpath
        if path:
            mods.append(LoadedModule(path, module_bias(target, module)))
    return mods


def live_key(target: lldb.SBTarget, process: lldb.SBProcess) -> tuple[int, int, int]:
    """What changes when the module list of a live process may have: the process, its stop,
    the module count."""
    return int(process.GetUniqueID()), int(process.GetStopID()), int(target.GetNumModules())


def sync(session: Session, target: lldb.SBTarget, process: lldb.SBProcess,
         live: bool | None = None, key: tuple[int, int, int] | None = None) -> None:
    """Bring the session's module map up to `target`'s module list when the process (the
    program, without one), its stop or the module count changed (`live`: the process is
    valid, as a frame's is; `key`: its live_key, when the caller has it)."""
    live = process.IsValid() if live is None else live
    if key is None:
        key = live_key(target, process) if live else \
            (target.GetExecutable().fullpath, 0, target.GetNumModules())
    session.namer.sync(key, lambda: module_list(target), lambda a, n: read_memory(target, a, n))


def loaded_modules(target: lldb.SBTarget) -> list[LoadedModule]:
    """`target`'s modules, as the session's module map has them (brought up to date)."""
    session = state_mod.for_debugger(target.GetDebugger().GetID()).session
    sync(session, target, target.GetProcess())
    return session.namer.modules.modules()
