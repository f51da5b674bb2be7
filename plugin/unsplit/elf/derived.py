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


class _ForInput:
    __slots__ = ("input", "made", "value")

    def __init__(self) -> None:
        self.input: Binary | None = None
        self.value: object = None
        self.made = False


class PerInput(Generic[T]):
    """A value made for one Binary and the pre-BOLT input it has now (`bb input` changes it),
    kept on the Binary with that input: made again for another input. The input is told apart
    by identity, the object kept alive here, never by ``id()``, which an input freed since can
    share with the one after it."""

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        self._kept: PerFile[_ForInput] = PerFile(lambda _: _ForInput())

    def __call__(self, binary: Binary, current: Binary | None, make: Callable[[], T]) -> T:
        kept = self._kept(binary)
        if not kept.made or kept.input is not current:
            kept.input, kept.value, kept.made = current, make(), True
        return cast(T, kept.value)
