"""Per-PC answers for the hot paths (every `bt` frame, every stop), kept in the session's
location cache (unsplit.index.location_cache) until the module list changes, so a backtrace
costs one dictionary look-up per frame once warm.

Which frames the plugin shows differently from GDB (:meth:`Locator.shown`): a frame in moved
code (a non-entry fragment), named by its procedure; and any frame GDB has no line for while the
core has one (BOLTed code without DWARF, whose lines come from BAT and the pre-BOLT binary, hot
part and lite-mode functions BOLT left in place included; ESL lines). GDB's own line stands
wherever GDB has one, as LLDB's does in the LLDB adapter.
"""

from __future__ import annotations

import gdb  # type: ignore[import-not-found, unused-ignore]
from unsplit.index.location_cache import LINES, MOVED_LINES
from unsplit.index.model import Location
from unsplit.session import Session

from .host import GdbHost, OneModuleHost, address_in_block


class Locator:
    def __init__(self, session: Session, host: GdbHost) -> None:
        self.session = session
        self.host = host
        self.cache = session.locations  # shared with every bb command of the session
        self._modules = -1  # the host's module-list generation the cache was made with

    def _sync(self) -> None:
        # Locations change with the module list (and with `bb input`, which drops them itself).
        if self.host.generation != self._modules:
            self.cache.invalidate()
            self._modules = self.host.generation

    def begin_backtrace(self) -> None:
        """Check the module list once for a whole `bt`: it cannot change while one prints, and
        checking it costs a third of a warm frame's naming (gdb.objfiles() and friends)."""
        self.host.mapped()
        self._sync()

    def locate(self, address: int, *, checked: bool = False) -> Location | None:
        """`checked`: begin_backtrace() has checked the module list, so a cached pc is trusted."""
        key = (address, MOVED_LINES)
        if checked and key in self.cache:
            return self.cache[key]
        module = self.host.module_at(address)  # refreshes the module list when it changed
        self._sync()
        if key in self.cache:
            return self.cache[key]
        loc = None
        if module is not None:
            host = OneModuleHost(self.host, module)
            # Lines only for moved code: the rest keeps GDB's own names and lines, and a line
            # question costs a scan of big DWARF (libc's) the first time.
            loc = self.session.locate(host, address, lines=False)
            if loc is not None and loc.in_moved_code:
                loc = self.session.locate(host, address)
            for warning in self.session.new_warnings(loc):  # e.g. damaged DWARF: said once
                gdb.write(f"unsplit: {warning}\n", gdb.STDERR)
        self.cache[key] = loc
        return loc

    def _locate_line(self, address: int, *, checked: bool = False) -> Location | None:
        """`locate` with the source line, whatever code holds `address` (a line question costs
        a DWARF look-up: asked only for frames GDB has no line for)."""
        loc = self.locate(address, checked=checked)
        if loc is None or loc.in_moved_code:
            return loc  # moved code's Location has its line already
        key = (address, LINES)
        if key not in self.cache:
            module = self.host.module_at(address)
            self.cache[key] = None if module is None else self.session.locate(
                OneModuleHost(self.host, module), address)
        return self.cache[key]

    def shown(self, frame: gdb.Frame, *, checked: bool = False) -> Location | None:
        """The Location the plugin shows for `frame` instead of GDB's own: in moved code always
        (with its line when the core knows it), elsewhere only when GDB has no line for the
        frame and the core has one; None when GDB's frame stands as it is."""
        address = address_in_block(frame)
        loc = self.locate(address, checked=checked)
        if loc is not None and loc.in_moved_code:
            return loc
        if loc is None or gdb_has_line(frame):
            return None
        loc = self._locate_line(address, checked=checked)
        return loc if loc is not None and loc.file and loc.line else None


def gdb_has_line(frame: gdb.Frame) -> bool:
    """Does GDB itself know a source line for `frame` (line 0 is "no source", as BOLT's
    --update-debug-sections writes for much of its cold code)?"""
    sal = frame.find_sal()
    return bool(sal.symtab and sal.symtab.filename and sal.line)
