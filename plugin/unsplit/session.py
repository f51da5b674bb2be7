"""Per-debugger state shared by every command: the index cache and the enabled flag.

Maps runtime addresses to (module, file address) through the Host's module list, so the
adapters never do address arithmetic themselves.
"""

from __future__ import annotations

import os

from . import breakpoints
from .breakpoints import BreakSpec, Site
from .errors import BinaryError, UnsplitError
from .host import Host, LoadedModule
from .index import IndexCache, ModuleIndex
from .model import Location, Procedure


class Session:
    def __init__(self) -> None:
        self.indexes = IndexCache()
        self.enabled = True
        self.input_override: dict[str, str] = {}  # output binary -> pre-BOLT input (bb input)
        self._bad: dict[str, str] = {}  # modules that failed to load, and why (said once)

    def index(self, path: str) -> ModuleIndex:
        try:
            return self.indexes.get(path)
        except FileNotFoundError:
            raise BinaryError(f"{path}: no such file") from None
        except OSError as e:
            raise BinaryError(f"{path}: {e.strerror}") from None

    def _holds(self, path: str, file_address: int) -> bool:
        """Is `file_address` in the code of `path`? Reads section headers only."""
        try:
            ranges = self.indexes.binary(path).text_address_ranges()
        except (OSError, UnsplitError):
            return False
        return any(lo <= file_address < hi for lo, hi in ranges)

    def module_of(self, host: Host, address: int) -> tuple[LoadedModule, ModuleIndex] | None:
        """The loaded module whose code contains runtime `address`."""
        for mod in host.modules():
            if not mod.path or not os.path.exists(mod.path) or mod.path in self._bad:
                continue
            if not self._holds(mod.path, address - mod.bias):
                continue
            try:
                return mod, self.index(mod.path)
            except UnsplitError as e:
                self._bad[mod.path] = str(e)
        return None

    def find_procedure(self, host: Host, name: str) -> tuple[LoadedModule, Procedure] | None:
        """The first loaded module (executable first) that defines procedure `name`."""
        for mod in host.modules():
            if not mod.path or not os.path.exists(mod.path):
                continue
            try:
                proc = self.index(mod.path).procedures.get(name)
            except UnsplitError:
                continue
            if proc is not None:
                return mod, proc
        return None

    def resolve_breakpoint(self, host: Host, spec: BreakSpec) -> list[tuple[LoadedModule, Site]]:
        """Every site of `spec` in every loaded module (runtime address = bias + site)."""
        out: list[tuple[LoadedModule, Site]] = []
        for mod in host.modules():
            if not mod.path or not os.path.exists(mod.path):
                continue
            try:
                index = self.index(mod.path)
            except UnsplitError:
                continue
            out.extend((mod, site) for site in breakpoints.resolve(index, spec))
        return out

    def locate(self, host: Host, address: int) -> Location | None:
        """Where runtime `address` is, or None when no loaded module has code there."""
        found = self.module_of(host, address)
        if found is None:
            return None
        mod, index = found
        return index.locate(address - mod.bias, mod.bias)
