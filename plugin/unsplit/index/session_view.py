"""What the policies (debug/) and the renderers (render/) read of a debugging session: the
index of a loaded module, the module holding an address, where an address is, and two settings.
The Session (unsplit.session, above them) provides it; tests may pass a small fake."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from unsplit.host import Host, LoadedModule
from unsplit.index.model.records import Location

if TYPE_CHECKING:
    from unsplit.index.module_index import ModuleIndex


class SessionView(Protocol):
    """The part of unsplit.session.Session that layers below it may read."""

    verbose: bool  # `bb set verbose on`: steps and stops also say fragment and block
    demangling: Callable[[], str | None]  # how names are shown now (unsplit.index.names.demangle)

    def index(self, path: str) -> ModuleIndex:
        """The index of the module file at `path` (BinaryError when it cannot be read)."""
        ...

    def module_of(self, host: Host, address: int) -> tuple[LoadedModule, ModuleIndex] | None:
        """The loaded module whose code holds runtime `address`, and its index."""
        ...

    def locate(self, host: Host, address: int, *, lines: bool = True) -> Location | None:
        """Where runtime `address` is, or None outside every loaded module's code."""
        ...
