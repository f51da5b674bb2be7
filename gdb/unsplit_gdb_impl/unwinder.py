"""GDB's frames made exact (`bb exact-frames`): a Python unwinder registered as "unsplit" that
gives GDB the caller's registers where a split module's FDEs compete
(unsplit.debug.cfi_check.exact_needed: from the FDE `bb bt` trusts) or where no FDE covers moved
code (the pre-BOLT input's rules through BAT, input_cfi); elsewhere it returns None and GDB's
own unwinders run."""

from __future__ import annotations

import os
from bisect import bisect_right
from typing import Any

import gdb  # type: ignore[import-not-found, unused-ignore]
from gdb.unwinder import Unwinder, register_unwinder  # type: ignore[import-not-found, unused-ignore]
from unsplit.debug import cfi_check
from unsplit.errors import UnsplitError
from unsplit.formats.dwarf_expr import REGISTER_NAMES, RIP, RSP
from unsplit.host import LoadedModule
from unsplit.session import Session

from .host import GdbHost
from .report import report_internal

NAME = "unsplit"
_NAMES = tuple(n.lower() for n in REGISTER_NAMES)


class _FrameId:
    """What create_unwind_info takes: GDB 13 wants gdb.Value attributes `sp` and `pc`."""

    def __init__(self, sp: Any, pc: Any) -> None:
        self.sp, self.pc = sp, pc


class ExactUnwinder(Unwinder):
    def __init__(self, session: Session, host: GdbHost) -> None:
        super().__init__(NAME)
        self.session, self.host = session, host
        self.policies: dict[str, cfi_check.ModulePolicy | None] = {}
        self.unwound: dict[str, int] = {}  # frames given per module
        self._active: dict[str, bool] = {}  # the policies' answers, by path (once per frame)
        self._bare: dict[str, bool] = {}  # whether it has moved code without an FDE, by path
        self._has_pc = hasattr(gdb.PendingFrame, "pc")
        self._types: dict[str, Any] = {}
        self._spans: tuple[list[int], list[tuple[int, int, str, int]]] | None = None

    def __call__(self, pending_frame: Any) -> Any:
        try:
            # The path every frame takes, inline: GDB calls this for each frame it unwinds.
            # PendingFrame.pc() (GDB 14+) costs less than reading the register (GDB 13).
            pc = int(pending_frame.pc() if self._has_pc else
                     pending_frame.read_register("rip")) & ((1 << 64) - 1)
            los, spans = self._spans or self._spans_now()
            i = bisect_right(los, pc) - 1
            if i < 0 or pc >= spans[i][1]:
                return None
            path = spans[i][2]
            active = self._active.get(path)
            if active is None:
                policy = self._policy(path)
                active = self._active[path] = policy is not None and policy.active
                self._bare[path] = policy is not None and policy.uncovered > 0
            if not active:
                return None
            return self._unwind(pending_frame, pc, LoadedModule(path, spans[i][3]),
                                self._bare[path])
        except gdb.error:  # memory or registers GDB cannot give: its own unwinders try
            return None
        except UnsplitError:  # CFI that does not decode: the same
            return None
        except Exception as e:  # a bug: said once, and GDB unwinds as if we were not here
            report_internal(e, once=True)
            return None

    def _policy(self, path: str) -> cfi_check.ModulePolicy | None:
        if path not in self.policies:
            try:
                # The kept policy first: the module's index only where it was never counted
                policy = cfi_check.stored_policy(self.session.indexes.binary(path))
                self.policies[path] = policy if policy is not None else \
                    cfi_check.module_policy(self.session.index(path))
            except (UnsplitError, OSError):
                self.policies[path] = None
        return self.policies[path]

    def forget_modules(self, *_event: object) -> None:
        """Connected to before_prompt and the objfile events: the module list may change."""
        self._spans = None

    def _spans_now(self) -> tuple[list[int], list[tuple[int, int, str, int]]]:
        """Every mapped section's runtime range, sorted, with its module and bias, made once
        per command (GDB unwinds within one command with one module list): a bisection per
        frame, not the host's check of the module list and a walk over its sections."""
        if self._spans is None:
            spans = sorted((lo, hi, m.path, m.bias or 0) for m in self.host.mapped()
                           for lo, hi in m.sections.values())
            self._spans = ([s[0] for s in spans], spans)
        return self._spans

    def _unwind(self, pending_frame: Any, pc: int, mod: LoadedModule, bare: bool) -> Any:
        binary = self.session.indexes.binary(mod.path)
        # A caller's pc is a return address (looked up at pc - 1); frame 0's is exact. A frame
        # a signal interrupted is GDB's sigtramp unwinder's, which runs before Python's.
        innermost = pending_frame.level() == 0
        if not cfi_check.exact_needed(binary, pc - mod.bias, innermost, bare):
            return None
        from unsplit.debug import cfi  # (the first frame that needs it: most sessions none)

        regs = {i: int(pending_frame.read_register(name)) & ((1 << 64) - 1)
                for i, name in enumerate(_NAMES)}
        found = cfi.step(binary, pc - mod.bias, mod.bias, regs, self.host.read_memory,
                         innermost)
        if found is None or found.caller is None:
            return None
        info = pending_frame.create_unwind_info(_FrameId(
            self._value("rsp", found.cfa, pending_frame),
            self._value("rip", found.start + mod.bias, pending_frame)))
        undefined = {r for r, rule in (found.row.rules.items() if found.row else ())
                     if rule.kind == "undefined"}
        caller = found.caller
        for i, name in enumerate(_NAMES):
            if i in caller:
                value = caller[i]
            elif i in (RIP, RSP) or i in undefined:
                continue
            else:  # no rule: the same value, as GDB's DWARF unwinder leaves it on x86-64
                value = regs[i]
            info.add_saved_register(name, self._value(name, value, pending_frame))
        name = os.path.basename(mod.path)
        self.unwound[name] = self.unwound.get(name, 0) + 1
        return info

    def _value(self, register: str, value: int, pending_frame: Any) -> Any:
        kind = self._types.get(register)
        if kind is None:
            kind = self._types[register] = pending_frame.read_register(register).type
        return gdb.Value(value).cast(kind)

    def status(self) -> str:
        from unsplit.render.exact_frames import ModuleLine, gdb_status

        lines = [ModuleLine(os.path.basename(path), p.moved, p.contested,
                            self.unwound.get(os.path.basename(path), 0), p.uncovered)
                 for path, p in sorted(self.policies.items()) if p is not None]
        return gdb_status(bool(self.enabled), lines)


_installed: ExactUnwinder | None = None


def install(session: Session, host: GdbHost) -> ExactUnwinder:
    """Register the unwinder once (loading the plugin again keeps the first)."""
    global _installed
    if _installed is None:
        _installed = ExactUnwinder(session, host)
        register_unwinder(None, _installed, replace=True)
        for registry in ("before_prompt", "new_objfile", "clear_objfiles", "free_objfile",
                         "exited"):
            events = getattr(gdb.events, registry, None)  # free_objfile is GDB 13+
            if events is not None:
                events.connect(_installed.forget_modules)
    return _installed


def set_enabled(flag: bool | None) -> str:
    """`bb exact-frames [on|off]`; GDB forgets the frames it made either way."""
    if _installed is None:
        return "exact frames: this GDB has no Python unwinders (gdb.unwinder)"
    if flag is not None and flag != _installed.enabled:
        _installed.enabled = flag
        gdb.invalidate_cached_frames()
    return _installed.status()
