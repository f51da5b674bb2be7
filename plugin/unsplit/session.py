"""Per-debugger state shared by every command: the index cache and the enabled flag.

Maps runtime addresses to (module, file address) through the Host's module list, so the
adapters never do address arithmetic themselves.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from unsplit.debug.frame_namer import FrameNamer
from unsplit.elf.binary import Binary
from unsplit.errors import BinaryError, UnsplitError, UsageError
from unsplit.host import Host, LoadedModule, MachineState
from unsplit.index.bolt import bat_translate, prebolt
from unsplit.index.cache.locations import LocationCache
from unsplit.index.cache.store import IndexStore
from unsplit.index.model.records import Location, Procedure
from unsplit.index.module_index import IndexCache, ModuleIndex
from unsplit.index.names.demangle import GNU
from unsplit.render import inputs as input_text

if TYPE_CHECKING:  # bb break's policy: imported by the first command that asks for it
    from unsplit.debug.breakpoints import BreakSpec, Site


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _gnu() -> str | None:
    return GNU


class NamedInput(NamedTuple):
    """`bb input PATH` for a module not loaded yet, given to it as it loads: the module named
    by `module` (its path or file name), else the one whose build-id is `build_id` (PATH's with
    BOLT's last bit flipped back)."""

    path: str
    module: str | None
    build_id: bytes | None

    def names(self, binary: Binary) -> bool:
        if self.module is not None:
            return self.module in (binary.path, os.path.basename(binary.path))
        return self.build_id is not None and binary.build_id == self.build_id


class Session:
    """``persistent``: indexes come from and go to the cache on disk (unsplit.index.cache.store);
    ``progress`` hears about a first index build that takes a while (default: stderr, which
    GDB and LLDB show in the session)."""

    def __init__(self, demangling: Callable[[], str | None] = _gnu, *, persistent: bool = True,
                 progress: Callable[[str], None] | None = _stderr) -> None:
        self.indexes = IndexCache(IndexStore() if persistent else None, progress,
                                  opened=self._opened)
        self.named_inputs: list[NamedInput] = []  # `bb input` for modules not loaded yet
        self._input_notes: dict[str, list[str]] = {}  # module -> what to say of it at load
        self._inputs_said: set[str] = set()
        self.enabled = True
        # How procedure names are shown (an unsplit.index.names.demangle style; None: linkage
        # names), asked at each use: the debugger's own setting (GDB's `print demangle`) may change.
        self.demangling = demangling
        self.verbose = False  # `bb set verbose on`: steps and stops also say fragment and block
        self._sources: dict[str, tuple[tuple[int, int], list[str] | None]] = {}
        # Both adapters' frame naming: the module map the adapter keeps up to date, the
        # locations by pc (dropped by set_input too: the lines of BOLTed code change).
        self.namer = FrameNamer(self.indexes)

    @property
    def locations(self) -> LocationCache:
        return self.namer.locations

    def set_input(self, binary: Binary, path: str | None) -> Binary | None:
        """`bb input PATH`: the pre-BOLT input of `binary` (one of this session's, so the choice
        is this session's), verified; None forgets it (search again). A debug file the
        debugger holds for it was made from the input before: its lines are the core's again."""
        self.locations.invalidate()
        found = prebolt.set_input(binary, path)
        self.namer.describe(binary.path, False)
        return found

    def name_input(self, path: str, module: str | None) -> NamedInput:
        """`bb input PATH [--module NAME]` for a module not loaded yet: remembered, and given
        to the module when it loads (files opened already get it now)."""
        candidate = Binary(path)  # BinaryError (one line) when it is no ELF file
        named = NamedInput(path, module, prebolt.input_build_id(candidate.build_id or b"")
                           or None)
        candidate.close()
        if module is None and named.build_id is None:
            raise UsageError(f"bb input: {path} has no build-id to find its module by: name "
                             "the module with --module NAME")
        self.named_inputs = [n for n in self.named_inputs
                             if (n.module, n.build_id) != (named.module, named.build_id)]
        self.named_inputs.append(named)
        for binary in self.indexes.binaries():
            if named.names(binary):
                self.set_input(binary, path)
        return named

    def _opened(self, binary: Binary) -> None:
        """A file the session opens for the first time gets the input named for it ahead."""
        for named in reversed(self.named_inputs):
            if named.names(binary):
                try:
                    prebolt.set_input(binary, named.path)
                    said = input_text.given_at_load(binary.path, named.path)
                except BinaryError as e:
                    said = input_text.refused_at_load(binary.path, str(e))
                self._input_notes.setdefault(binary.path, []).append(said)
                return

    def input_notes(self, path: str) -> list[str]:
        """What to say, once, of a module's pre-BOLT input as it loads: the input `bb input`
        named ahead for it (or why it was refused), or, for a BOLTed module whose input is
        nowhere, that its code has no lines and how to give it one (not when its BAT cannot
        be read: then no input would help, and the index says why)."""
        if path in self._inputs_said or not os.path.isfile(path):
            return []
        self._inputs_said.add(path)
        try:
            binary = self.indexes.binary(path)
            notes = self._input_notes.pop(path, [])
            if bat_translate.has_bat(binary) and prebolt.input_for(binary) is None:
                # The index first: from the persistent store it gives BAT's scan, where
                # bat_translate.load alone would decode the whole note again, in every
                # session.
                self.indexes.get(path)
            if bat_translate.has_bat(binary) and prebolt.input_for(binary) is None \
                    and bat_translate.load(binary) is not None:  # DecodeError: BAT is ignored
                notes.append(input_text.not_found(
                    path, prebolt.input_build_id(binary.build_id or b"") or None))
        except (OSError, UnsplitError):  # a file the core cannot read: said where it is used
            return []
        return notes

    def source_lines(self, path: str) -> list[str] | None:
        """A source file's lines (for step reports), read again only when the file changed:
        an amalgamation such as sqlite3.c is 9 MB."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        key = (st.st_mtime_ns, st.st_size)
        found = self._sources.get(path)
        if found is None or found[0] != key:
            from unsplit.render.frames import source_lines

            found = self._sources[path] = (key, source_lines(path))
        return found[1]

    def index(self, path: str) -> ModuleIndex:
        return self.indexes.open(path)

    def module_of(self, host: Host, address: int) -> tuple[LoadedModule, ModuleIndex] | None:
        """The loaded module whose code contains runtime `address`: the host's module list
        goes into the namer's module map first (each new module attached once)."""
        self.namer.update(host.modules(), host.read_memory if isinstance(host, MachineState)
                          else None)
        modules = self.namer.modules
        attached = modules.at(address)
        index = None if attached is None else modules.index(attached)
        return None if attached is None or index is None else (attached.module, index)

    def find_procedures(self, host: Host, name: str) -> list[tuple[LoadedModule, Procedure]]:
        """Every procedure `name` names in the loaded modules (executable first): the linkage
        name itself, or what unsplit.index.names.matching reads a demangled one as, and each unit's
        static function of that name, as `bb break NAME` sets a location in each."""
        from unsplit.debug import breakpoints  # bb break's policy, imported when first asked

        out: list[tuple[LoadedModule, Procedure]] = []
        for mod in host.modules():
            if not mod.path or not os.path.exists(mod.path):
                continue
            try:
                index = self.index(mod.path)
                names = ([name] if index.procedures.get(name) is not None
                         else breakpoints.procedures_named(index, name))
                out += [(mod, proc) for linkage in names
                        for proc in index.procedures.all_named(linkage)]
            except UnsplitError:
                continue
        return out

    def originals_named(self, host: Host, name: str) -> list[str]:
        """BOLT's patched originals (``foo.org.0``) in the loaded modules that `name` also names
        and that find_procedures and resolve_breakpoint leave out (debug.breakpoints)."""
        from unsplit.debug import breakpoints  # bb break's policy, imported when first asked

        out: list[str] = []
        for mod in host.modules():
            if not mod.path or not os.path.exists(mod.path):
                continue
            try:
                out += breakpoints.originals_named(self.index(mod.path), name)
            except UnsplitError:
                continue
        return out

    def resolve_breakpoint(self, host: Host, spec: BreakSpec) -> list[tuple[LoadedModule, Site]]:
        """Every site of `spec` in every loaded module (runtime address = bias + site)."""
        from unsplit.debug import breakpoints  # bb break's policy, imported when first asked

        indexed = [(mod, index) for mod in host.modules()
                   if (index := self.readable_index(mod.path)) is not None]
        spec = breakpoints.settle(spec, (index for _, index in indexed))
        return [(mod, site) for mod, index in indexed
                for site in breakpoints.resolve(index, spec)]

    def readable_index(self, path: str) -> ModuleIndex | None:
        """The index of the module file `path`, or None where there is none to read (no file:
        [vdso]; a file that cannot be indexed has no breakpoint sites either)."""
        if not path or not os.path.exists(path):
            return None
        try:
            return self.index(path)
        except UnsplitError:
            return None

    def locate(self, host: Host, address: int, *, lines: bool = True) -> Location | None:
        """Where runtime `address` is, or None when no loaded module has code there
        (`lines=False`: without its source line, see ModuleIndex.locate)."""
        found = self.module_of(host, address)
        if found is None:
            return None
        mod, index = found
        other = self.image_mismatch(mod)
        if other is not None:  # never name code by the wrong file
            return Location(address, address - mod.bias, mod.path, None, warnings=(other,))
        return index.locate(address - mod.bias, mod.bias, lines=lines)

    def image_mismatch(self, mod: LoadedModule) -> str | None:
        """Why `mod`'s image in memory is not its file (their build-ids differ), or None: a core
        of another program has its own code where the debugger placed this file. Checked as the
        module was attached (module_of), with the memory of the host that gave it."""
        attached = self.namer.modules.attached(mod)
        return None if attached is None else attached.mismatch
