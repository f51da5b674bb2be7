"""Backtraces from call frame information alone, for any debugger or none.

Walks frames with the CFI (debug.cfi) of whichever loaded module holds each pc, and names each
frame through the module's index, so a pc in a cold fragment is unwound by that fragment's own
FDE: no prologue analysis, no guess at a function start (what makes LLDB's assembly profiler
invent frames, shared/NOTES.md). :func:`compare` says where a debugger's own unwinding differs;
unsplit.render.frames prints both.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from unsplit.debug import cfi
from unsplit.elf.binary import Binary
from unsplit.errors import UnsplitError
from unsplit.formats import dwarf_expr
from unsplit.host import LoadedModule
from unsplit.index.model.frame import Frame, at_return_address, lookup_pc
from unsplit.index.model.records import Location
from unsplit.index.module_index import ModuleIndex
from unsplit.index.names.demangle import GNU


class _Modules:
    """Runtime pc -> (module, its Binary, its index) through each module's PT_LOAD ranges."""

    def __init__(self, modules: list[LoadedModule],
                 index_for: Callable[[str], ModuleIndex]) -> None:
        self.modules = modules
        self.index_for = index_for
        self._binaries: dict[str, Binary | None] = {}
        self._indexes: dict[str, ModuleIndex | None] = {}
        self._ranges: dict[str, list[tuple[int, int]]] = {}

    def index(self, path: str) -> ModuleIndex | None:
        if path not in self._indexes:
            try:
                self._indexes[path] = self.index_for(path)
            except (UnsplitError, OSError):
                self._indexes[path] = None
        return self._indexes[path]

    def binary(self, path: str) -> Binary | None:
        if path not in self._binaries:
            index = self.index(path)
            if index is not None:
                self._binaries[path] = index.binary
            else:
                try:
                    self._binaries[path] = Binary(path)
                except UnsplitError:
                    self._binaries[path] = None
        return self._binaries[path]

    def ranges(self, path: str) -> list[tuple[int, int]]:
        if path not in self._ranges:
            binary = self.binary(path)
            self._ranges[path] = [] if binary is None else [
                (s["p_vaddr"], s["p_vaddr"] + s["p_memsz"])
                for s in binary.elf.iter_segments()
                if s["p_type"] == "PT_LOAD" and s["p_flags"] & 1]  # PF_X
        return self._ranges[path]

    def holding(self, pc: int) -> LoadedModule | None:
        for mod in self.modules:
            if not mod.path:
                continue
            if any(lo <= pc - mod.bias < hi for lo, hi in self.ranges(mod.path)):
                return mod
        return None

    def locate(self, mod: LoadedModule, pc: int, innermost: bool) -> Location | None:
        index = self.index(mod.path)
        if index is None:
            return None
        file_pc = pc - mod.bias
        loc = index.locate(lookup_pc(file_pc, not innermost), mod.bias)
        return loc if innermost else at_return_address(loc, pc)


def backtrace(modules: list[LoadedModule], regs: dict[int, int],
              read_memory: dwarf_expr.ReadMemory, index_for: Callable[[str], ModuleIndex],
              limit: int = 256) -> list[Frame]:
    """Frames from the innermost (`regs`: DWARF-numbered registers of frame 0, runtime values)
    outwards, through the CFI of each frame's module. Ends at the outermost frame (undefined or
    zero return address), where no module or FDE covers a pc, on a loop, or at `limit`; the last
    frame's `stop_reason` says which. Never raises for bad CFI or unreadable memory: that ends
    the walk, with the reason."""
    mods = _Modules(modules, index_for)
    frames: list[Frame] = []
    current = dict(regs)
    innermost = True
    seen: set[tuple[int, int]] = set()
    while True:
        pc = current.get(dwarf_expr.RIP)
        if pc is None:
            _stop(frames, "the pc is unknown")
            break
        mod = mods.holding(pc)
        number = len(frames)
        loc = None if mod is None else mods.locate(mod, pc, innermost)
        frame = Frame(number, pc, None if mod is None else mod.path,
                      0 if mod is None else mod.bias, loc, registers=dict(current))
        if mod is None:
            frames.append(frame._replace(stop_reason=f"no loaded module has code at {pc:#x}"))
            break
        binary = mods.binary(mod.path)
        result: cfi.Step | None = None
        reason: str | None = None
        if binary is None:
            reason = f"cannot read {mod.path}"
        else:
            try:
                result = cfi.step(binary, pc - mod.bias, mod.bias, current, read_memory,
                                  innermost)
            except UnsplitError as e:
                reason = str(e)
            if result is None and reason is None:
                reason = f"no CFI covers {pc:#x} in {os.path.basename(mod.path)}"
        if result is not None:
            frame = frame._replace(cfa=result.cfa)
            reason = result.why_outermost
        if result is None or result.caller is None:
            frames.append(frame._replace(stop_reason=reason))
            break
        frames.append(frame)
        caller = result.caller
        key = (caller.get(dwarf_expr.RIP, 0), caller.get(dwarf_expr.RSP, 0))
        went_down = caller.get(dwarf_expr.RSP, 0) < current.get(dwarf_expr.RSP, 0)
        if key in seen or (went_down and not result.fde.signal_frame):
            frames[-1] = frames[-1]._replace(stop_reason="the caller's frame would repeat or "
                                 "lie below this one (corrupt stack?)")
            break
        seen.add(key)
        if len(frames) >= limit:
            frames[-1] = frames[-1]._replace(stop_reason=f"stopped after {limit} frames")
            break
        # The frame after a signal frame was interrupted, not calling: its pc is exact.
        innermost = result.fde.signal_frame
        current = caller
    return frames


def _stop(frames: list[Frame], reason: str) -> None:
    if frames:
        frames[-1] = frames[-1]._replace(stop_reason=reason)


def compare(native_pcs: list[int], cfi_frames: list[Frame],
            style: str | None = GNU) -> list[str]:
    """Where a debugger's frame list (its pcs, innermost first) and the CFI's disagree, one line
    each; empty when they agree. A debugger that stops earlier (GDB stops at `main`) is not a
    disagreement; frames it invents or skips, and different pcs, are, and so is a list that
    ends in moved code below `main` (LLDB 19 ends in cold parts that DWARF describes)."""
    cfi_pcs = [f.pc for f in cfi_frames]
    out: list[str] = []
    i = j = 0
    while i < len(native_pcs) and j < len(cfi_pcs):
        if native_pcs[i] == cfi_pcs[j]:
            i += 1
            j += 1
            continue
        later_cfi = cfi_pcs.index(native_pcs[i], j) if native_pcs[i] in cfi_pcs[j:] else None
        later_native = native_pcs.index(cfi_pcs[j], i) if cfi_pcs[j] in native_pcs[i:] else None
        if later_native is not None and (later_cfi is None or later_native - i <= later_cfi - j):
            for k in range(i, later_native):
                out.append(f"debugger frame #{k} ({native_pcs[k]:#x}) is not a real frame: "
                           f"the CFI goes from frame #{j - 1} to {cfi_pcs[j]:#x}")
            i = later_native
        elif later_cfi is not None:
            for k in range(j, later_cfi):
                out.append(f"the debugger skips frame #{k} ({cfi_pcs[k]:#x}, "
                           f"{cfi_frames[k].label(style)})")
            j = later_cfi
        else:
            out.append(f"frame #{j}: the debugger has {native_pcs[i]:#x}, "
                       f"the CFI {cfi_pcs[j]:#x} ({cfi_frames[j].label(style)})")
            i += 1
            j += 1
    if 0 < i == len(native_pcs) and j < len(cfi_pcs) and _ends_early(cfi_frames[j - 1]):
        out.append(f"the debugger's frames end at frame #{j - 1} "
                   f"({cfi_frames[j - 1].label(style)}); "
                   f"the CFI goes on to {cfi_pcs[j]:#x} ({cfi_frames[j].label(style)})")
    for k in range(i, len(native_pcs)):
        out.append(f"debugger frame #{k} ({native_pcs[k]:#x}) is past the CFI's last frame"
                   + (f" ({cfi_frames[-1].stop_reason})"
                      if cfi_frames and cfi_frames[-1].stop_reason else ""))
    return out


def _ends_early(frame: Frame) -> bool:
    """A debugger's last frame that cannot be where it meant to stop: one in moved code, other
    than main's (GDB's backtrace past-main stops at main, wherever main's pc is)."""
    loc = frame.location
    return (loc is not None and loc.in_moved_code and loc.procedure is not None
            and loc.procedure != "main")
