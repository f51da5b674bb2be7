"""One error family for everything the core reports to a user. Adapters convert an UnsplitError
once, at the command boundary, into the debugger's own error; anything else is a bug, reported
as one line pointing at UNSPLIT_DEBUG=1 (:func:`internal_error`). Bad input and bugs are told
apart by where an error was raised, not its type: a DecodeError or an error raised inside the
library that parses a file for us (pyelftools) is bad input; any other is a bug."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

DEBUG_HINT = "(set UNSPLIT_DEBUG=1 for the traceback)"


def internal_error(e: BaseException) -> str:
    """The one line that reports a bug of unsplit: the exception's type (a KeyError's message
    alone reads ``'x'``) and message, and how to see the traceback."""
    return " ".join(f"unsplit: internal error: {type(e).__name__}: {e} {DEBUG_HINT}".split())


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


class EslError(DecodeError):
    """An error inside one procedure's ESL program (formats/esl.py): names the procedure and
    the program byte; ``offset`` is in the section, ``program_offset`` inside the ESL value, as
    its specification (§3) asks errors to be reported."""

    def __init__(self, section: str, entry: int, base: int, program_offset: int, msg: str):
        self.entry = entry
        self.program_offset = program_offset
        super().__init__(
            section, base + program_offset, f"ESL of {entry:#x}, byte {program_offset}: {msg}"
        )


class BadIndexFile(UnsplitError):
    """A cache file of unsplit's own that cannot be trusted (it is rebuilt); says why."""


class ExpressionError(UnsplitError):
    """A CFI rule or DWARF expression an unwinding step cannot evaluate with what it was
    given (a register it does not know, an empty stack)."""


class MemoryReadError(UnsplitError):
    """The debuggee's memory at an address is not available (not in the core, unmapped)."""


class Inexpressible(UnsplitError):
    """A CFI rule Breakpad's postfix language (as LLDB reads it) cannot say."""


class BinaryError(UnsplitError):
    """A file that is missing, unreadable or not the expected kind of ELF."""


# The libraries whose errors mean "this file is damaged" (top-level package names).
_READERS = frozenset({"elftools"})


def raised_by_reader(error: BaseException) -> bool:
    """Whether `error` was raised inside pyelftools: its traceback's innermost frame outside
    the standard library (which pyelftools calls: struct, io, zlib) is pyelftools' own."""
    modules = []
    tb = error.__traceback__
    while tb is not None:
        modules.append(str(tb.tb_frame.f_globals.get("__name__", "")).split(".")[0])
        tb = tb.tb_next
    for module in reversed(modules):
        if module not in sys.stdlib_module_names:
            return module in _READERS
    return False


@contextmanager
def reader_errors(convert: Callable[[str], UnsplitError]) -> Iterator[None]:
    """Around calls into pyelftools: an error it raises becomes convert(what it said); an
    UnsplitError passes as it is; an error raised in our own frames (a bug) propagates."""
    try:
        yield
    except UnsplitError:
        raise
    except Exception as e:
        if not raised_by_reader(e):
            raise
        raise convert(reader_message(e)) from None


def reading(section: str, offset: int | Callable[[], int], what: str
            ) -> AbstractContextManager[None]:
    """reader_errors, as DecodeError(section, offset, what and pyelftools' message); `offset`
    is called for only when there is an error."""
    def convert(message: str) -> UnsplitError:
        at = offset() if callable(offset) else offset
        return DecodeError(section, at, f"{what}: {message}")

    return reader_errors(convert)


def reader_message(error: BaseException) -> str:
    """What pyelftools said, in one line without a Python exception type: its own errors'
    text is meant for people; a builtin error from inside it names a field at best."""
    from_library = type(error).__module__.split(".")[0] in _READERS
    lines = str(error).strip().splitlines()
    text = lines[0] if lines else ""
    if from_library and text:
        return text
    return f"pyelftools cannot decode it ({text})" if text else "pyelftools cannot decode it"
