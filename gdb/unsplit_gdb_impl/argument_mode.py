"""How the backtrace GDB is printing prints arguments: `all`, `scalars`, `none` or `presence`.

`bt -frame-arguments MODE` overrides `print frame-arguments` for that command alone (stack.c
keeps the options on its own stack), and GDB 13's Python can neither see a command's options
nor print an optimized-out argument as GDB's own `bt` does in both modes (`...` in `scalars`,
`<optimized out>` in `all`: frames.py). The one trace of the options a frame filter can read is
GDB's command history, which holds a command typed at the terminal while it runs; a command
from a script, `-ex` or a user-defined command is not there, and the setting stands."""

from __future__ import annotations

import gdb  # type: ignore[import-not-found, unused-ignore]

MODES = ("all", "scalars", "none", "presence")
_OPTION = "-frame-arguments"
_SHORTEST = len("-frame-a")  # shorter is ambiguous with -frame-info


def frame_arguments() -> str:
    """The mode of the backtrace being printed (the typed `bt`'s option, else the setting)."""
    try:
        last = gdb.execute("show commands", to_string=True).splitlines()
    except gdb.error:  # no history kept: the setting stands
        last = []
    typed = typed_mode(last[-1].split(None, 1)[-1] if last else "")
    return typed or str(gdb.parameter("print frame-arguments"))


def typed_mode(line: str) -> str | None:
    """The `-frame-arguments` of `line` when it is a backtrace command (`backtrace`, `bt`,
    `where`, `info stack`, each option and mode as short as GDB takes it), else None."""
    words = line.split()
    if words[:1] in (["bt"], ["where"]) or (words and len(words[0]) >= 2
                                            and "backtrace".startswith(words[0])):
        options = words[1:]
    elif len(words) >= 2 and "info".startswith(words[0]) and "stack".startswith(words[1]):
        options = words[2:]
    else:
        return None
    found = None
    for i, word in enumerate(options):
        if word == "--" or not word.startswith("-"):
            if i == 0 or not options[i - 1].startswith("-"):
                break  # past the options (a value follows its option)
            continue
        if len(word) >= _SHORTEST and _OPTION.startswith(word) and i + 1 < len(options):
            modes = [m for m in MODES if m.startswith(options[i + 1])]
            found = modes[0] if len(modes) == 1 else found
    return found
