"""The GDB implementation of unsplit.host.Host: modules with load biases, the selected PC,
address expressions, and the switch for frame naming.

GDB 13's Python API has no load address for an objfile (``Objfile`` lacks it;
``Progspace.objfile_for_address`` arrives in 14), so the module list comes from ``info files``:
it gives the runtime range of every section of the executable and of each shared library, live,
on a core and before ``run``. The bias of a module is then the runtime start of one of its
sections minus that section's ``sh_addr`` in the ELF file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

import gdb  # type: ignore[import-not-found, unused-ignore]
from unsplit.commands import check_capabilities
from unsplit.debug.frame_namer import holds_return_address
from unsplit.elf.binary import allocated_sections
from unsplit.errors import UnsplitError, UsageError, reading
from unsplit.formats.dwarf_expr import REGISTER_NAMES
from unsplit.host import Host, LoadedModule
from unsplit.index.model.records import Location
from unsplit.index.session_view import SessionView

from . import console
from .frame_view import GdbFrame

if TYPE_CHECKING:  # the policies are imported by the first step or bb break
    from unsplit.debug.breakpoints import BreakSpec, Site
    from unsplit.debug.stepping import StepOutcome, StepPlan
    from unsplit.render.breaks import BreakGroup

_T = TypeVar("_T")
_RANGE = re.compile(r"^\s*0x([0-9a-fA-F]+) - 0x([0-9a-fA-F]+) is (\S+)(?: in (.+?))?\s*$")
_EXEC_FILE = re.compile(r"^\s*`(.+)', file type")


class MappedModule:
    """One module as `info files` shows it: its sections' runtime ranges, and its bias
    (filled in as the text is read: a slotted class, not a NamedTuple)."""

    __slots__ = ("bias", "path", "sections")

    def __init__(self, path: str, sections: dict[str, tuple[int, int]] | None = None,
                 bias: int | None = None) -> None:
        self.path = path
        self.sections: dict[str, tuple[int, int]] = {} if sections is None else sections
        self.bias = bias

    def contains(self, address: int) -> bool:
        return any(lo <= address < hi for lo, hi in self.sections.values())


def parse_info_files(text: str) -> list[MappedModule]:
    """Sections per file from `info files`; the executable first, core segments skipped."""
    modules: dict[str, MappedModule] = {}
    block = ""
    exe: str | None = None
    for line in text.splitlines():
        if line and not line[0].isspace():
            block = line
            continue
        if block.startswith("Local exec file") and exe is None:
            m = _EXEC_FILE.match(line)
            if m:
                exe = m.group(1)
                continue
        m = _RANGE.match(line)
        if m is None:
            continue
        lo, hi, name, path = int(m.group(1), 16), int(m.group(2), 16), m.group(3), m.group(4)
        if path is None:
            if not block.startswith("Local exec file") or exe is None:
                continue  # a core's load segments, a remote target's sections
            path = exe
        mod = modules.setdefault(path, MappedModule(path))
        mod.sections.setdefault(name, (lo, hi))
    return list(modules.values())


_SECTION_CACHE: dict[tuple[str, int, int], dict[str, int]] = {}


def _file_sections(path: str) -> dict[str, int]:
    """sh_addr of every allocated section of the ELF file at `path` ({} if unreadable)."""
    try:
        st = os.stat(path)
    except OSError:
        return {}
    key = (path, st.st_size, st.st_mtime_ns)
    found = _SECTION_CACHE.get(key)
    if found is None:
        quick = allocated_sections(path)  # struct on the headers; None: pyelftools' turn
        found = _SECTION_CACHE[key] = quick if quick is not None else _sections_of(path)
    return found


def _sections_of(path: str) -> dict[str, int]:
    # (imported here: a session that never asks spares pyelftools' import)
    from elftools.elf.elffile import ELFFile  # type: ignore[import-untyped, unused-ignore]

    found: dict[str, int] = {}
    try:
        with open(path, "rb") as stream, reading(path, 0, "section headers"):
            # Headers only: making the sections parses a .gnu.hash whole.
            elf = ELFFile(stream)
            for i in range(elf.num_sections()):
                header = elf._get_section_header(i)
                if header["sh_flags"] & 0x2:  # SHF_ALLOC
                    found.setdefault(elf._get_section_name(header), header["sh_addr"])
    except (OSError, UnsplitError):  # not an ELF pyelftools can read: not ours to explain
        return {}
    return found


def _bias(mod: MappedModule) -> int | None:
    file_sections = _file_sections(mod.path)
    names = sorted(mod.sections, key=lambda n: n != ".text")  # .text first, then any other
    for name in names:
        if name in file_sections:
            return mod.sections[name][0] - file_sections[name]
    return None


def progspace_file() -> str | None:
    """The current program space's file (None: no program, or no program space)."""
    space = gdb.current_progspace()
    return None if space is None else space.filename


def loaded_core() -> tuple[object, ...] | None:
    """Which core file the selected inferior holds (inferior, pid, program), None when it
    holds none (a live process, or no program)."""
    inferior = gdb.selected_inferior()
    connection = getattr(inferior, "connection", None)
    if connection is None or getattr(connection, "type", None) != "core":
        return None
    return (inferior.num, inferior.pid, progspace_file())

_SYMBOL_LIKE = re.compile(r"^[A-Za-z_.$][\w.$@]*$")


def _address_value(expression: str) -> int:
    value = gdb.parse_and_eval(expression)
    if value.type.strip_typedefs().code == gdb.TYPE_CODE_FUNC and value.address is not None:
        value = value.address
    return int(value) & ((1 << 64) - 1)


class StepReports(Protocol):
    """What GDB prints for its own steps (step_report.StepReporter, set by register())."""

    @property
    def session(self) -> SessionView: ...

    def context(self, kind: str, line: int | None) -> object: ...

    def report(self, host: Host, kind: str, loc: Location | None, pc: int,
               context: object) -> str: ...


class GdbHost:
    """Host for the GDB that loaded the plugin (one per GDB process)."""

    def __init__(self) -> None:
        self._mapped: list[MappedModule] | None = None
        self._key: tuple[object, ...] | None = None
        self.generation = 0  # bumped whenever the module list changes; frame caches follow it
        self.naming_switch: Callable[[bool], None] | None = None
        self.debuginfo_switch: Callable[[bool | None], str] | None = None
        self.exact_switch: Callable[[bool | None], str] | None = None  # unwinder.set_enabled
        self.breakpoint_maker: Callable[[BreakSpec, list[tuple[LoadedModule, Site]]], str] | None \
            = None  # breakpoints.Breakpoints.create, set by register()
        self.breakpoint_lister: Callable[[], list[BreakGroup]] | None = None  # .listing
        self.step_reporter: StepReports | None = None  # step_report.StepReporter

    # -- modules ------------------------------------------------------------------------

    def invalidate(self, *_event: object) -> None:
        """Forget the module list (connected to new_objfile, clear_objfiles, exited ...)."""
        self._mapped = None

    def _fingerprint(self) -> tuple[object, ...]:
        inferior = gdb.selected_inferior()
        return (inferior.num, inferior.pid, progspace_file(),
                len(gdb.objfiles()))

    def mapped(self) -> list[MappedModule]:
        key = self._fingerprint()
        if self._mapped is None or key != self._key:
            text = console.execute("info files")
            mapped = [m for m in parse_info_files(text) if os.path.isfile(m.path)]
            for mod in mapped:
                mod.bias = _bias(mod)
            self._mapped = [m for m in mapped if m.bias is not None]
            self._key = key
            self.generation += 1
        return self._mapped

    def modules(self) -> list[LoadedModule]:
        return [LoadedModule(m.path, m.bias or 0) for m in self.mapped()]

    # -- frames and expressions ---------------------------------------------------------

    def selected_pc(self) -> int:
        try:
            return int(gdb.selected_frame().pc())
        except gdb.error:
            raise UsageError("no process or core file: give an address") from None

    def selected_frame_is_caller(self) -> bool:
        try:
            frame = gdb.selected_frame()
        except gdb.error:
            return False
        return holds_return_address(GdbFrame(frame))

    def selected_frame_level(self) -> int:
        try:
            return int(gdb.selected_frame().level())
        except gdb.error:
            return 0

    # -- stepping (unsplit.debug.stepping: the plan is the core's, see stepping.py) ---------------

    def statements_only(self) -> bool:
        """GDB steps stop only where a statement row begins."""
        return True

    def stops_on_return(self) -> bool:
        """GDB's steps go on from a return in the middle of a line to where a line begins."""
        return False

    def step_whole(self, kind: str, line: int | None) -> str | None:
        return None  # GDB's front ends see the stops of the internal breakpoints' steps

    def cannot_run(self) -> str | None:
        from .stepping import cannot_run

        return cannot_run()

    def step_logical(self, plan: StepPlan) -> StepOutcome:
        from .stepping import Stepper

        return Stepper().apply(plan)

    def step_context(self, kind: str, line: int | None) -> object:
        if self.step_reporter is None:
            return None
        try:
            return self.step_reporter.context(kind, line)
        except gdb.error:  # no frame to compare with: the report says the frame line
            return None

    def stop_report(self, kind: str, loc: Location | None, pc: int, context: object) -> str:
        """What GDB prints for its own step to `pc` (see step_report.py)."""
        from unsplit.render.stop import verbose_line

        if self.step_reporter is None:
            return verbose_line(loc, pc)
        try:
            return self.step_reporter.report(self, kind, loc, pc, context)
        except gdb.error:  # GDB cannot show the frame: say where, our way
            return verbose_line(loc, pc, self.step_reporter.session.demangling())

    def evaluate_address(self, expression: str) -> int:
        try:
            return _address_value(expression)
        except gdb.error as e:
            # Fragment symbols (`transfer.cold`, `foo.cold.1`) need GDB's quotes, which the
            # command line's shlex has already removed: try the name quoted.
            if _SYMBOL_LIKE.match(expression):
                try:
                    return _address_value(f"'{expression}'")
                except gdb.error:
                    pass
            raise UsageError(f"cannot evaluate {expression!r}: {e}") from None

    # -- bb bt (unsplit.debug.unwind compares GDB's frames with the CFI's) -------------------------

    def _in_thread(self, number: int | None, read: Callable[[], _T]) -> _T:
        """`read()` with thread `number` selected, then the user's thread and frame again."""
        try:
            if number is None:
                return read()
            found = [t for t in gdb.selected_inferior().threads() if t.num == number]
            if not found:
                raise UsageError(f"no thread {number}")
            thread, frame = gdb.selected_thread(), gdb.selected_frame()
            found[0].switch()
            try:
                return read()
            finally:
                thread.switch()
                frame.select()
        except gdb.error as e:
            raise UsageError(f"no process or core file ({e})") from None

    def thread_numbers(self) -> list[int]:
        return sorted(t.num for t in gdb.selected_inferior().threads())

    def frame0_registers(self, thread: int | None = None) -> dict[str, int]:
        def read() -> dict[str, int]:
            frame = gdb.newest_frame()
            return {name: int(frame.read_register(name.lower())) & ((1 << 64) - 1)
                    for name in REGISTER_NAMES}

        return self._in_thread(thread, read)

    def read_memory(self, address: int, size: int) -> bytes:
        try:
            return bytes(gdb.selected_inferior().read_memory(address, size))
        except (gdb.error, OverflowError, ValueError):
            return b""

    def native_frame_pcs(self, thread: int | None = None) -> list[int]:
        def read() -> list[int]:
            pcs: list[int] = []
            frame: gdb.Frame | None = gdb.newest_frame()
            while frame is not None and len(pcs) < 512:
                # An inline frame shares its caller's registers: not a frame an unwinder makes.
                if frame.type() != gdb.INLINE_FRAME:
                    pcs.append(int(frame.pc()))
                try:
                    frame = frame.older()
                except gdb.error:  # GDB's own unwinder gave up: its list ends here
                    break
            return pcs

        return self._in_thread(thread, read)

    def native_frame_numbers(self, thread: int | None = None) -> list[tuple[int, int]]:
        def read() -> list[tuple[int, int]]:
            numbers: list[tuple[int, int]] = []
            frame: gdb.Frame | None = gdb.newest_frame()
            first: int | None = None
            while frame is not None and len(numbers) < 512:
                first = frame.level() if first is None else first
                if frame.type() != gdb.INLINE_FRAME:  # as native_frame_pcs counts them
                    numbers.append((first, frame.level() - first + 1))
                    first = None
                try:
                    frame = frame.older()
                except gdb.error:
                    break
            return numbers

        return self._in_thread(thread, read)

    def set_frame_naming(self, flag: bool) -> list[str]:
        if self.naming_switch is not None:
            self.naming_switch(flag)
        return []

    def set_exact_frames(self, flag: bool | None) -> str:
        if self.exact_switch is None:
            raise UsageError("bb exact-frames: this GDB has no Python unwinders (gdb.unwinder)")
        return self.exact_switch(flag)

    def set_debuginfo(self, flag: bool | None) -> str:
        if self.debuginfo_switch is None:
            raise UsageError("bb debuginfo: not set up in this GDB")
        return self.debuginfo_switch(flag)

    def create_breakpoint(self, spec: BreakSpec, sites: list[tuple[LoadedModule, Site]]) -> str:
        if self.breakpoint_maker is None:
            raise UsageError("bb break: breakpoints are not set up in this GDB")
        return self.breakpoint_maker(spec, sites)

    def bb_breakpoints(self) -> list[BreakGroup]:
        if self.breakpoint_lister is None:
            raise UsageError("bb break: breakpoints are not set up in this GDB")
        return self.breakpoint_lister()


# What GdbHost provides: every protocol of the core's a `bb` command asks for (commands.py's
# CAPABILITIES), checked as the adapter loads: a missing or renamed method fails every session
# at once, not the one command that needs it.
PROVIDES = check_capabilities(GdbHost)
