"""The corrected frame line after `frame`, `up`, `down` and `info frame`, which GDB 13 prints
without frame filters and with no Python event: through the CLI's post-hooks
(``define hookpost-up``), each running StopPrinter.on_frame_command. A hook the user defined is
left alone, and :func:`install` names the commands that keep GDB's own line."""

from __future__ import annotations

from collections.abc import Iterable

import gdb  # type: ignore[import-not-found, unused-ignore]

from . import console

COMMANDS = ("frame", "up", "down", "frame level", "frame function", "info frame")
"""The commands that print the selected frame (`frame N` is `frame` with an argument)."""

CALL = "python import unsplit_gdb_impl; unsplit_gdb_impl.after_frame_command()"


def hook_name(command: str) -> str:
    """`up` -> `hookpost-up`, `info frame` -> `info hookpost-frame` (a subcommand's hook)."""
    prefix, _, last = command.rpartition(" ")
    return f"{prefix} hookpost-{last}".lstrip()


def _definition(name: str) -> str | None:
    try:
        text = console.execute(f"show user {name}")
    except gdb.error:  # "Undefined command" / "Not a user command": no hook yet
        return None
    return text


def install() -> list[str]:
    """Define our post-hook on each command of COMMANDS that has none of the user's; return one
    warning per command left with GDB's own line (the user's hook, or GDB refused ours)."""
    return define_hooks(((c, hook_name(c), CALL) for c in COMMANDS), CALL,
                        "shows GDB's own line only")


def define_hooks(hooks: Iterable[tuple[str, str, str]], marker: str, otherwise: str
                 ) -> list[str]:
    """Define each (command, hook, call) of `hooks` whose hook is unset or ours (its text holds
    `marker`); one warning per hook the user owns or GDB refused, saying the command `otherwise`."""
    warnings = []
    for command, name, call in hooks:
        current = _definition(name)
        if current is not None and marker not in current:
            warnings.append(f"unsplit: `{name}` is yours, so `{command}` {otherwise}")
            continue
        try:
            gdb.execute(f"define {name}\n{call}\nend")
        except gdb.error as e:
            warnings.append(f"unsplit: cannot define `{name}` ({e}), so `{command}` {otherwise}")
    return warnings
