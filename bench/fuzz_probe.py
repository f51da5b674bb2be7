"""What bench/fuzz.py counts as a bug besides an exception that escapes: an error of ours that a
handler turned into a user-facing error or warning.

A builtin error (or struct.error) raised in unsplit's own frames is a bug (unsplit.errors): when
an UnsplitError is made while one is being handled, a bug was swallowed, whether the result
became a "clean" error or a warning. install() records each such case; a warning text that
names a Python exception type is one too (no user-facing text should).

    .venv/bin/python bench/fuzz_probe.py unsplit ARGS...   # the CLI, with the probe installed

prints each swallowed bug to stderr as ``unsplit-fuzz: swallowed TYPE at FILE:LINE: MESSAGE``.
"""

from __future__ import annotations

import atexit
import builtins
import re
import struct
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "plugin") not in sys.path:
    sys.path.insert(0, str(ROOT / "plugin"))

from unsplit import errors  # noqa: E402

# Errors that report the environment or a codec's answer, not a bug: a file that cannot be
# opened, bytes that are not UTF-8 (decoders ask the codec; it answers by raising).
_NOT_BUGS = (OSError, UnicodeError)
_BUILTIN_ERRORS = tuple(sorted({name for name, value in vars(builtins).items()
                                if isinstance(value, type) and issubclass(value, Exception)
                                and name.endswith("Error")
                                and not issubclass(value, _NOT_BUGS)}))
# A Python exception type named in a text meant for a user.
TYPE_NAMED = re.compile(r"\b(?:" + "|".join(_BUILTIN_ERRORS) + r"|struct\.error)\b")

SWALLOWED: list[str] = []


def is_bug(error: BaseException) -> bool:
    """A builtin error (or struct.error) raised in our frames, not inside pyelftools."""
    if isinstance(error, (errors.UnsplitError, *_NOT_BUGS)):
        return False
    builtin = type(error).__module__ == "builtins" or isinstance(error, struct.error)
    return builtin and not errors.raised_by_reader(error)


def where(error: BaseException) -> str:
    """The innermost frame of unsplit's own code the error went through."""
    frames = traceback.extract_tb(error.__traceback__)
    own = [f for f in frames if "/unsplit/" in f.filename] or frames
    return f"{Path(own[-1].filename).name}:{own[-1].lineno}" if own else "?"


def describe(error: BaseException) -> str:
    return f"{type(error).__name__} at {where(error)}: {str(error)[:200]}"


def install() -> None:
    """Check every UnsplitError as it is made: one made while a bug is handled records it."""
    made = errors.UnsplitError.__init__

    def checked(self: errors.UnsplitError, *args: object) -> None:
        handled = sys.exc_info()[1]
        if handled is not None and is_bug(handled):
            SWALLOWED.append(describe(handled))
        made(self, *args)

    errors.UnsplitError.__init__ = checked  # type: ignore[method-assign]


def check_warnings(texts: list[str]) -> None:
    """Record each warning that names a Python exception type."""
    SWALLOWED.extend(f"a warning names a Python exception: {t[:200]}" for t in texts
                     if TYPE_NAMED.search(t))


def report() -> None:
    for text in SWALLOWED:
        print(f"unsplit-fuzz: swallowed {text}", file=sys.stderr)


def main() -> int:
    from unsplit import cli

    install()
    atexit.register(report)
    return cli.main(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
