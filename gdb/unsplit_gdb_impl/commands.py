"""The `bb` prefix command and one gdb.Command per entry of unsplit.commands.COMMANDS.

Help is the docstring (GDB's convention: `help bb` lists the subcommands by their first doc
line); every subcommand runs unsplit.commands.dispatch. Errors are converted here, once:
UnsplitError -> gdb.GdbError (GDB prints its one line), anything else -> one line that points at
UNSPLIT_DEBUG=1. The session always survives.
"""

from __future__ import annotations

import os
import traceback
from typing import Any

import gdb  # type: ignore[import-not-found, unused-ignore]
from unsplit import commands as core
from unsplit.errors import UnsplitError, internal_error
from unsplit.session import Session

from .host import GdbHost


def _prefix_doc() -> str:
    # The core's help lists the subcommands; `help bb` lists them again from the subcommands'
    # docstrings, so keep only the other paragraphs.
    paragraphs = core.PREFIX_HELP.split("\n\n")
    return "\n\n".join(p for p in paragraphs if not p.startswith("Subcommands:"))


def run_guarded(session: Session, host: GdbHost, name: str, argument: str) -> None:
    try:
        text = core.dispatch(session, host, name, argument)
    except UnsplitError as e:
        raise gdb.GdbError(str(e)) from None
    except gdb.GdbError:
        raise
    except gdb.error as e:  # GDB refused something we asked (memory, no symbol file ...)
        raise gdb.GdbError(f"unsplit: {e}") from None
    except Exception as e:
        if os.environ.get("UNSPLIT_DEBUG"):
            gdb.write("".join(traceback.format_exception(e)), gdb.STDERR)
        raise gdb.GdbError(internal_error(e)) from None
    if text:
        gdb.write(text if text.endswith("\n") else text + "\n")


class BbPrefix(gdb.Command):
    __doc__ = _prefix_doc()

    def __init__(self) -> None:
        super().__init__("bb", gdb.COMMAND_USER, gdb.COMPLETE_COMMAND, True)

    def invoke(self, argument: str, from_tty: bool) -> None:
        word = argument.strip()
        if not word:
            gdb.write(core.PREFIX_HELP + "\n")
            return
        raise gdb.GdbError(
            f"unknown bb command {word.split()[0]!r}; try: {', '.join(core.COMMANDS)}")


def _options(command: core.Command) -> list[str]:
    parser = command.parser()
    return sorted(o for action in parser._actions for o in action.option_strings)


def make_subcommand(command: core.Command, help_text: str, session: Session,
                    host: GdbHost) -> Any:
    """A gdb.Command class for one table entry; its docstring is the command's help."""

    def __init__(self: Any) -> None:
        gdb.Command.__init__(self, f"bb {command.name}", gdb.COMMAND_USER)

    def invoke(self: Any, argument: str, from_tty: bool) -> None:
        run_guarded(session, host, command.name, argument)

    def complete(self: Any, text: str, word: str | None) -> Any:
        # GDB breaks words at '-', so `word` may be "j" for "--j": complete the whole token
        # and hand back only the part that replaces `word`.
        token = text.split()[-1] if text and not text[-1].isspace() else ""
        if token.startswith("-"):
            cut = len(token) - len(word or "")
            return [o[cut:] for o in _options(command) if o.startswith(token)]
        return gdb.COMPLETE_EXPRESSION

    doc = f"{command.summary}\n\n{help_text.rstrip()}"
    cls = type(f"Bb{command.name.title().replace('-', '')}", (gdb.Command,), {
        "__doc__": doc, "__init__": __init__, "invoke": invoke, "complete": complete})
    return cls()


def register(session: Session, host: GdbHost) -> list[Any]:
    """Create `bb` and its subcommands; the caller keeps the objects alive."""
    made: list[Any] = [BbPrefix()]
    helps = core.helps()  # (kept between sessions: GDB reads each help as it is made)
    made.extend(make_subcommand(c, helps[c.name], session, host)
                for c in core.COMMANDS.values())
    return made
