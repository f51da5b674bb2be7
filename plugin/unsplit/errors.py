"""One error family for everything the core reports to a user.

Adapters convert an UnsplitError once, at the command boundary, into the debugger's own error
(``gdb.GdbError``, ``SBCommandReturnObject.SetError``); anything else is a bug and is reported
as one line that points at UNSPLIT_DEBUG=1.
"""

from __future__ import annotations


class UnsplitError(Exception):
    """Root of every error meant for the user; its str() is one line."""


class DecodeError(UnsplitError):
    """Malformed on-disk data: says which section (or file) and at which offset."""

    def __init__(self, section: str, offset: int, message: str) -> None:
        self.section = section
        self.offset = offset
        self.message = message
        super().__init__(f"{section}: at offset {offset:#x}: {message}")


class UnsupportedVersion(DecodeError):
    """Well-formed data in a version we do not read."""


class AddressLookupError(UnsplitError):
    """An address, procedure or line that the binary does not contain."""


class UsageError(UnsplitError):
    """A command used the wrong way."""


class BinaryError(UnsplitError):
    """A file that is missing, unreadable or not the expected kind of ELF."""
