"""GDB mechanism of the core's step plans (unsplit.debug.stepping.StepPlan): internal breakpoints
on every target and on the return address, each ``stop()`` checking the frame by the plan's CFA
rule (so a recursive activation runs through); `step` also breaks on the current line's calls.
A stop none of them explains ends the step as it is; every breakpoint is deleted after it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import gdb  # type: ignore[import-not-found, unused-ignore]
from unsplit.debug.stepping import StepOutcome, StepPlan

from . import console

_CALL = re.compile(r"^\s*(call|callq|bl|blr|jalr?)\b")


def _sp(frame: gdb.Frame) -> int:
    return int(frame.read_register("sp"))


def _cfa(frame: gdb.Frame) -> int | None:
    """The CFA of `frame`: the SP its caller has once it returns."""
    older = frame.older()
    return None if older is None else _sp(older)


class _Site(gdb.Breakpoint):
    """One internal breakpoint of a plan; `stop` decides with the frame, records a hit."""

    def __init__(self, stepper: Stepper, address: int, role: str) -> None:
        super().__init__(f"*{address:#x}", gdb.BP_BREAKPOINT, internal=True)
        self.silent = True
        self.stepper = stepper
        self.role = role

    def stop(self) -> bool:
        try:
            return self.stepper.hit(self)
        except gdb.error:
            return True  # a frame GDB cannot unwind: stop rather than run away


class Stepper:
    """Applies one plan at a time (`apply`), for the GdbHost."""

    def __init__(self) -> None:
        self.plan: StepPlan | None = None
        self.cfa: int | None = None
        self.hit_site: _Site | None = None
        self.event: gdb.StopEvent | None = None
        self.exited = False

    def hit(self, site: _Site) -> bool:
        frame = gdb.newest_frame()
        if site.role == "return":
            ok = self.cfa is None or _sp(frame) >= self.cfa
        else:
            ok = self._is_stepping_frame(frame)
        if ok and self.hit_site is None:
            self.hit_site = site
        return ok

    def _is_stepping_frame(self, frame: gdb.Frame) -> bool:
        """The newest frame is the stepping frame: the plan's CFA rule says so where it has
        one; else GDB's caller frame, when GDB unwinds (stop rather than run away if not)."""
        if self.cfa is None:
            return True
        known = None if self.plan is None else self.plan.is_stepping_frame(
            int(frame.pc()), lambda name: int(frame.read_register(name)))
        if known is not None:
            return known
        cfa = _cfa(frame)
        return cfa is None or cfa == self.cfa

    # -- run control ------------------------------------------------------------------------

    def _on_stop(self, event: gdb.StopEvent) -> None:
        self.event = event

    def _on_exit(self, event: gdb.ExitedEvent) -> None:
        self.exited = True

    def _resume(self, command: str) -> str:
        self.hit_site, self.event, self.exited = None, None, False
        gdb.events.stop.connect(self._on_stop)
        gdb.events.exited.connect(self._on_exit)
        try:
            return console.execute(command)
        finally:
            gdb.events.stop.disconnect(self._on_stop)
            gdb.events.exited.disconnect(self._on_exit)

    def _foreign(self, text: str) -> StepOutcome | None:
        """The stop as GDB reported it, when something other than our sites caused it."""
        if self.exited:
            return StepOutcome("stopped", None, text.strip())
        event = self.event
        ours = self.hit_site is not None
        if isinstance(event, gdb.BreakpointEvent):
            others = [b for b in event.breakpoints if not isinstance(b, _Site)]
            if others or not ours:
                return StepOutcome("stopped", _pc(), text.strip())
            return None
        if ours and not isinstance(event, gdb.SignalEvent):
            return None
        return StepOutcome("stopped", _pc(), text.strip())

    def apply(self, plan: StepPlan) -> StepOutcome:
        if plan.mode == "instruction":
            return self._one_instruction("done")
        frame = gdb.newest_frame()
        enters = plan.mode == "enter" or (plan.step_into and plan.mode == "line" \
            and int(frame.pc()) == plan.pc)
        if enters and _skipped_inlined_call(frame):
            # GDB's own `step` here enters the inlined call without running (infrun's
            # step_into_inline_frame), as the step of the unsplit program would.
            console.execute("step")
            return StepOutcome("target", _pc())
        if plan.mode == "enter":
            return StepOutcome("target", _pc())  # GDB shows no call to enter here
        self.plan = plan
        return_to: int | None
        if plan.return_address is not None and plan.frame_cfa is not None:
            # The core's CFI unwinding: the stepping frame, wherever it is in the stack.
            self.cfa, return_to = plan.frame_cfa, plan.return_address
        else:
            older = frame.older()
            self.cfa = _cfa(frame)
            return_to = None if older is None else int(older.pc())
        sites: list[_Site] = []
        try:
            if return_to is not None:
                sites.append(_Site(self, return_to, "return"))
            if plan.mode == "line":
                code = _decode(frame, plan.ranges)
                starts, all_calls = code.starts, code.calls
                # A breakpoint inside an instruction would corrupt it: keep instruction starts
                # (lines carried through BAT are placed by offset in the block).
                targets = [t for t in plan.targets if t in starts or not plan.in_procedure(t)]
                exits = code.exits(plan.line_ranges, set(targets))
                if exits is not None:
                    # The line's code leaves only by these, each a target; nothing in it calls
                    # (so `step` has nothing to enter either): every other target can wait.
                    sites += [_Site(self, t, "target") for t in sorted(exits)]
                else:
                    sites += [_Site(self, t, "target") for t in targets]
                if plan.step_into and exits is None:
                    calls = [c for c in all_calls
                             if any(lo <= c < hi for lo, hi in plan.call_ranges)]
                    if int(frame.pc()) in calls:  # a breakpoint here would be stepped over
                        return self._step_into()
                    sites += [_Site(self, c, "call") for c in calls]
            text = self._resume("continue")
        finally:
            for site in sites:
                if site.is_valid():
                    site.delete()
        foreign = self._foreign(text)
        if foreign is not None:
            return foreign
        assert self.hit_site is not None
        role = self.hit_site.role
        if role == "call":
            return self._step_into()
        return StepOutcome("target" if role == "target" else "returned", _pc())

    def _step_into(self) -> StepOutcome:
        return self._one_instruction("called")

    def _one_instruction(self, kind: str) -> StepOutcome:
        # GDB prints the frame of a stepi that enters a function whatever to_string says;
        # the core prints where the step ended, so GDB's own notification is held back.
        quiet = _parameter("suppress-cli-notifications")
        if quiet is False:
            gdb.execute("set suppress-cli-notifications on", to_string=True)
        try:
            text = self._resume("stepi")
        finally:
            if quiet is False:
                gdb.execute("set suppress-cli-notifications off", to_string=True)
        if self.exited:
            return StepOutcome("stopped", None, text.strip() or "The program exited.")
        if isinstance(self.event, gdb.SignalEvent):
            return StepOutcome("stopped", _pc(), text.strip()
                               or f"Program received signal {self.event.stop_signal}.")
        return StepOutcome(kind, _pc())


def _skipped_inlined_call(frame: gdb.Frame) -> bool:
    """Whether an inlined call begins at `frame`'s pc and GDB shows the caller for it (it
    skips the inlined frames whose code begins where it stopped): GDB's `step` enters it."""
    if frame.type() == gdb.INLINE_FRAME:
        return False
    try:
        block = gdb.block_for_pc(int(frame.pc()))
    except RuntimeError:
        return False
    functions = []  # the blocks of functions around the pc, innermost first
    while block is not None:
        if block.function is not None:
            functions.append(block)
        block = block.superblock
    # More than one: the innermost is an inlined call's block.
    return len(functions) > 1 and functions[0].start == int(frame.pc())


def _parameter(name: str) -> Any:
    try:
        return gdb.parameter(name)
    except (gdb.error, RuntimeError):
        return None


def _pc() -> int:
    return int(gdb.newest_frame().pc())


_JUMP_PREFIXES = frozenset(("rep", "repz", "repe", "repnz", "repne", "bnd", "notrack", "lock",
                            "cs", "ds", "ss", "es", "fs", "gs", "data16", "addr32"))
_RETURNS = frozenset(("ret", "retq", "retl", "retw"))
_DIRECT = re.compile(r"^(?:\$)?(0x[0-9a-f]+)(?: <[^>]*>)?$")


@dataclass(frozen=True, slots=True)
class _Code:
    """The instructions of a procedure's ranges, as GDB disassembles them."""

    x86: bool  # the only instruction set whose jumps `exits` reads
    instructions: tuple[tuple[int, int, str], ...]  # (address, length, text), by address
    starts: frozenset[int]
    calls: list[int]

    def exits(self, line_ranges: tuple[tuple[int, int], ...],
              targets: set[int]) -> set[int] | None:
        """Where control leaves `line_ranges` (the current line's code) by a jump or by
        running past its end, when each is one of `targets`; None when the line's code calls,
        jumps through a register or memory, leaves to anything but a target (the step must
        then go on through other lines' code), or is not read here."""
        if not self.x86 or not line_ranges:
            return None
        exits: set[int] = set()
        inside = 0
        for address, length, text in self.instructions:
            if not any(lo <= address < hi for lo, hi in line_ranges):
                continue
            inside += 1
            words = text.split()
            while words and words[0] in _JUMP_PREFIXES:
                words = words[1:]
            if not words or words[0].startswith(("call", "lcall", "(bad)", "xbegin", "lret",
                                                 "iret", "sysret", "ljmp")):
                return None
            mnemonic, operand = words[0], " ".join(words[1:])
            ends = mnemonic in _RETURNS or mnemonic in ("jmp", "jmpq")
            if mnemonic.startswith("j") or mnemonic.startswith("loop"):
                m = _DIRECT.match(operand)
                if m is None:
                    return None  # through a register or memory: anywhere
                exits.add(int(m.group(1), 16))
            if not ends:
                exits.add(address + length)
        exits = {e for e in exits if not any(lo <= e < hi for lo, hi in line_ranges)}
        return exits if inside and exits <= targets else None


_decoded: dict[tuple[int, tuple[tuple[int, int], ...]], _Code] = {}


def _decode(frame: gdb.Frame, ranges: tuple[tuple[int, int], ...]) -> _Code:
    """The instructions in `ranges`, their starts and calls (cached per process)."""
    key = (gdb.selected_inferior().pid, ranges)
    found = _decoded.get(key)
    if found is not None:
        return found
    arch = frame.architecture()
    instructions: list[tuple[int, int, str]] = []
    calls: list[int] = []
    for lo, hi in ranges:
        if hi <= lo:
            continue
        for insn in arch.disassemble(lo, hi - 1):
            address = int(insn["addr"])
            instructions.append((address, int(insn["length"]), str(insn["asm"])))
            if _CALL.match(insn["asm"]):
                calls.append(address)
    instructions.sort()
    code = _Code(arch.name().startswith("i386"), tuple(instructions),
                 frozenset(a for a, _, _ in instructions), calls)
    _decoded[key] = code
    return code


def cannot_run() -> str | None:
    """Why the program cannot be stepped (a core file, no process), or None."""
    from unsplit.debug.stepping import CORE_FILE, NOT_RUNNING

    inferior = gdb.selected_inferior()
    connection = getattr(inferior, "connection", None)
    if connection is not None and getattr(connection, "type", None) == "core":
        return CORE_FILE
    if inferior.pid == 0:
        return NOT_RUNNING
    return None
