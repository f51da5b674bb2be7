"""A frame of a stack, one record (:class:`Frame`) however it was found (the CFI, the debugger's
list, a batch debugger), and the rules every layer names it by: a caller is named by its call,
the byte before its return address (:func:`lookup_pc`), frame 0 and a frame a signal
interrupted by their own pc."""

from __future__ import annotations

import os
from typing import NamedTuple

from unsplit.index.model.records import LineInfo, Location
from unsplit.index.names.demangle import GNU

# What the signal trampolines of the platforms we debug are called (glibc x86-64 and AArch64,
# the Linux vDSO, BSD/macOS libc); a debugger that marks them itself (GDB's SIGTRAMP_FRAME, a
# CIE's 'S' augmentation) says so directly.
SIGNAL_TRAMPOLINES = ("__restore_rt", "__kernel_rt_sigreturn", "_sigtramp", "sigtramp")


def is_signal_trampoline(name: str | None) -> bool:
    """Whether a frame named `name` is a signal trampoline (the frame above it was interrupted)."""
    return bool(name) and any(t in (name or "") for t in SIGNAL_TRAMPOLINES)


def lookup_pc(pc: int, holds_return_address: bool) -> int:
    """The address that names a frame whose pc is `pc`: pc - 1 for a caller (a return
    address), pc itself for frame 0 and for a frame a signal interrupted."""
    return pc - 1 if holds_return_address else pc


def at_return_address(loc: Location, pc: int) -> Location:
    """A caller's Location, found at pc - 1, reported at its pc: the same procedure, fragment
    and line (the call's), the address and original offset of the return address."""
    return loc._replace(address=pc, file_address=loc.file_address + 1,
                        offset=None if loc.offset is None else loc.offset + 1)


class Frame(NamedTuple):
    """One frame: its number and pc (runtime), the module that holds the pc, and what is known
    of it. `location` is named at :func:`lookup_pc` and reported at `pc`
    (:func:`at_return_address`); `cfa` and `registers` are what the CFI recovered (DWARF
    register numbers), None where nothing unwound the frame; `stop_reason`, on the last frame of
    a walk, why it ended there; `lines`, what DWARF says of the address (inlined calls innermost
    first, the outer function last), where a symbolizer was asked."""

    number: int
    pc: int
    module: str | None = None
    bias: int = 0
    location: Location | None = None
    cfa: int | None = None
    registers: dict[int, int] | None = None  # not hashed (a dict): see __hash__
    stop_reason: str | None = None
    lines: tuple[LineInfo, ...] = ()
    inlined: bool = False  # an inlined call's frame: it shares the pc of the frame it is in

    def __hash__(self) -> int:
        return hash((self.number, self.pc, self.module, self.bias, self.location, self.cfa,
                     self.stop_reason, self.lines, self.inlined))

    @property
    def file_address(self) -> int:
        return self.pc - self.bias

    def label(self, style: str | None = GNU) -> str:
        """`run [cold]`: the procedure and fragment, or `??`."""
        return self.location.label(style) if self.location is not None else "??"

    @property
    def block(self) -> int | None:
        """The basic block's ID: from the bb map, else the BAT entry's."""
        loc = self.location
        if loc is None:
            return None
        if loc.block is not None:
            return loc.block.id
        return None if loc.bat is None else loc.bat.block


def as_numbered(frame: Frame, chain: list[LineInfo], count: int) -> list[Frame]:
    """The `count` frames a debugger's `bt` shows for concrete `frame` (numbered from
    `frame.number`): its inlined calls innermost first, then itself, each at its own line
    (`chain`: what DWARF says of the frame's address, innermost first, as
    unsplit.index.inlines.DwarfFrames gives it). The inlined frames are named by `chain` where
    it has as many frames as the debugger, else left unnamed; numbers are the debugger's
    either way, so `frame N` selects row N."""
    loc = frame.location
    if count <= 1 or loc is None:
        return [frame]
    named = len(chain) == count
    out = []
    for k in range(count - 1):
        inner = None
        if named:
            info = chain[k]
            inner = loc._replace(procedure=info.function, offset=None, block=None,
                                 file=os.path.basename(info.path) if info.path else None,
                                 path=info.path, line=info.line or None,
                                 column=info.column or None, inline_chain=())
        out.append(Frame(frame.number + k, frame.pc, frame.module, frame.bias, inner,
                         frame.cfa, frame.registers, inlined=True))
    outer = chain[-1] if named else None
    if outer is not None and outer.line:
        loc = loc._replace(file=os.path.basename(outer.path) if outer.path else loc.file,
                           path=outer.path or loc.path, line=outer.line,
                           column=outer.column or None, inline_chain=())
    out.append(frame._replace(number=frame.number + count - 1, location=loc))
    return out
