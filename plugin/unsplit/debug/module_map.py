"""The modules a debugger has loaded, as the adapter last said (its module events): which one
holds a runtime address, by its code's ranges, and whether its image in memory is its file.

Each module is checked once, as it is attached: a core of another program has its own code
where the debugger placed a file of the same name, and its frames must not be named by it.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Callable, Iterable

from unsplit.elf.binary import Binary
from unsplit.elf.core import image_build_id
from unsplit.errors import UnsplitError
from unsplit.host import LoadedModule
from unsplit.index.module_index import IndexCache, ModuleIndex

ReadMemory = Callable[[int, int], bytes]
"""The debuggee's memory (MachineState.read_memory): b"" or fewer bytes where unreadable."""


class Attached:
    """One loaded module: its file, bias, code (runtime ranges), and why its image in memory
    is not its file (None: it is, or nothing could tell). Mutable (its index comes later), so
    a slotted class, not a NamedTuple."""

    __slots__ = ("checked", "code", "failed", "index", "mismatch", "module", "stamp")

    def __init__(self, module: LoadedModule, stamp: tuple[int, int],
                 code: list[tuple[int, int]], mismatch: str | None, checked: bool = True,
                 index: ModuleIndex | None = None, failed: bool = False) -> None:
        self.module = module
        self.stamp = stamp  # the file's (size, mtime): a file rebuilt on disk is attached again
        self.code = code
        self.mismatch = mismatch
        self.checked = checked  # False: attached without memory to check it against
        self.index = index
        self.failed = failed  # the index could not be made: the module names nothing


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


class ModuleMap:
    """The session's loaded modules, updated by :meth:`update` on the adapter's module
    events; :meth:`at` bisects their code for the module holding an address."""

    def __init__(self, indexes: IndexCache) -> None:
        self.indexes = indexes
        self._attached: dict[LoadedModule, Attached] = {}
        self._starts: list[int] = []
        self._ranges: list[tuple[int, int, Attached]] = []
        self._listed: list[LoadedModule] = []

    def modules(self) -> list[LoadedModule]:
        """The module list as the adapter last gave it (files or not)."""
        return list(self._listed)

    def update(self, modules: Iterable[LoadedModule], read: ReadMemory | None) -> bool:
        """The debugger's module list now; whether anything came, went or changed on disk.
        New modules are checked against memory with `read` (None: the host cannot read it)."""
        self._listed = list(modules)
        kept: dict[LoadedModule, Attached] = {}
        attached = False
        for module in dict.fromkeys(self._listed):
            stamp = _stamp(module.path) if module.path else None
            if stamp is None:
                continue  # not a file here ([vdso], a deleted library)
            old = self._attached.get(module)
            if old is None or old.stamp != stamp or (not old.checked and read is not None):
                old = self._attach(module, stamp, read)
                attached = True
            kept[module] = old
        changed = attached or list(kept) != list(self._attached)
        if changed:
            self._attached = kept
            self._ranges = sorted(((lo, hi, a) for a in kept.values() for lo, hi in a.code),
                                  key=lambda r: r[0])
            self._starts = [lo for lo, _, _ in self._ranges]
        return changed

    def _attach(self, module: LoadedModule, stamp: tuple[int, int],
                read: ReadMemory | None) -> Attached:
        try:
            binary = self.indexes.binary(module.path)
            code = [(lo + module.bias, hi + module.bias)
                    for lo, hi in binary.text_address_ranges()]
            mismatch = None if read is None else image_mismatch(read, module, binary)
        except (OSError, UnsplitError):  # a file the core cannot read: it names nothing
            return Attached(module, stamp, [], None, failed=True)
        return Attached(module, stamp, code, mismatch, checked=read is not None)

    def attached(self, module: LoadedModule) -> Attached | None:
        return self._attached.get(module)

    def at(self, address: int) -> Attached | None:
        """The attached module whose code holds runtime `address`."""
        i = bisect_right(self._starts, address) - 1
        if i < 0:
            return None
        _, hi, attached = self._ranges[i]  # modules' code does not overlap
        return attached if address < hi else None

    def index(self, attached: Attached) -> ModuleIndex | None:
        """The module's index, made once (None: it cannot be made; said where it is used)."""
        if attached.index is None and not attached.failed:
            try:
                attached.index = self.indexes.open(attached.module.path)
            except UnsplitError:
                attached.failed = True
        return attached.index


def image_mismatch(read: ReadMemory, mod: LoadedModule, binary: Binary) -> str | None:
    """Why `mod`'s image in memory is not `binary` (their build-ids differ), or None: it is, or
    memory cannot tell."""
    want = binary.build_id
    loads = binary.load_addresses()  # program headers alone, read with struct
    if want is None or not loads:
        return None
    start = mod.bias + min(loads)
    # A debugger that placed the file by the core's entry point may be off the page.
    for header in dict.fromkeys((start, start & ~0xFFF, (start + 0xFFF) & ~0xFFF)):
        got = image_build_id(read, header)
        if got is not None and got != want:
            return (f"the image in memory has build-id {got.hex()}, the file {want.hex()} "
                    "(a core of another binary?); its code is not named")
        if got is not None:
            break
    return None
