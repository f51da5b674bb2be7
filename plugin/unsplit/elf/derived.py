"""What the layers above work out from one file, kept on its :class:`Binary`, not in a module
global: it lives as long as the Binary, which the session's index cache owns (and drops when
the file changes on disk), and two sessions never see each other's.

A module declares ``_GROUPED = PerFile(_group)`` (an immutable key) and asks ``_GROUPED(binary)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar, cast

from unsplit.elf.binary import Binary

T = TypeVar("T")


class PerFile(Generic[T]):
    """``make(binary)``, made once per Binary (again after it raised: nothing is kept then)."""

    __slots__ = ("_make",)

    def __init__(self, make: Callable[[Binary], T]) -> None:
        self._make = make

    def __call__(self, binary: Binary) -> T:
        derived = binary.derived
        if self in derived:
            return cast(T, derived[self])
        value = derived[self] = self._make(binary)
        return value

    def known(self, binary: Binary) -> bool:
        """Whether the value is made already (a look-up that must not make it)."""
        return self in binary.derived

    def get(self, binary: Binary) -> T | None:
        """The value if made, else None (without making it)."""
        return cast("T | None", binary.derived.get(self))

    def set(self, binary: Binary, value: T) -> None:
        """Keep `value` (made another way: from the persistent index, say)."""
        binary.derived[self] = value

    def forget(self, binary: Binary) -> None:
        binary.derived.pop(self, None)
