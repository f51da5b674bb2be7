"""What a debugger adapter provides to set `bb break`'s breakpoints, apart from the policy
(breakpoints.py): the command table names it as every debugger loads, and a session that sets
no `bb break` never imports the policy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from unsplit.host import Host, LoadedModule

if TYPE_CHECKING:
    from unsplit.debug.breakpoints import BreakSpec, Site
    from unsplit.render.breaks import BreakGroup


@runtime_checkable
class BreakpointHost(Host, Protocol):
    """A debugger that sets `bb break`'s native breakpoints."""

    def create_breakpoint(self, spec: BreakSpec, sites: list[tuple[LoadedModule, Site]]) -> str:
        """One native breakpoint at the sites the core resolved now, re-resolved by the
        adapter (`resolve`) when modules load; the debugger's own `break` message."""
        ...

    def bb_breakpoints(self) -> list[BreakGroup]:
        """Every `bb break` and its locations (`bb break --list`)."""
        ...
