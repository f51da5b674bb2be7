"""The text of a GDB command as the console would print it (``gdb.execute(..., to_string=True)``).

Under GDB/MI (``gdb -i mi``, as IDEs run it), GDB 18.1 returns a captured command's output as
MI stream records (``~"Symbols from \\"/bin/x\\".\\n"``, one per line, GDB/MI Output Syntax)
where GDB 13 returns the plain text. Everything that reads a command's text (``info files``
for the module list above all) would then read nothing: in an MI session of GDB 18 the frame
filter saw no module and named no frame. ``execute`` gives the plain text in both.
"""

from __future__ import annotations

import re

import gdb  # type: ignore[import-not-found, unused-ignore]

# One stream record: console (~), target (@) or log (&) output, a C string (GDB's printchar).
_RECORD = re.compile(r'^([~@&])"((?:[^"\\]|\\.)*)"$')
_ESCAPE = re.compile(r"\\([0-7]{1,3}|.)")
_NAMED = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "e": "\x1b", "a": "\a",
          "v": "\v"}


def _unescape(body: str) -> str:
    def one(m: re.Match[str]) -> str:
        c = m.group(1)
        if c[0] in "01234567":
            return chr(int(c, 8))
        return _NAMED.get(c, c)
    return _ESCAPE.sub(one, body)


def plain_text(text: str) -> str:
    """`text` itself, or what its console records say when every line of it is an MI stream
    record (the log records, GDB's own echo of the command, are left out)."""
    lines = text.splitlines()
    records = [_RECORD.match(line) for line in lines]
    if not lines or not all(records):
        return text
    return "".join(_unescape(m.group(2)) for m in records if m is not None and m.group(1) != "&")


def execute(command: str) -> str:
    """Run `command` and return what it printed, as plain text."""
    return plain_text(str(gdb.execute(command, to_string=True) or ""))


def _interpreter_arg(argv: list[str]) -> str | None:
    """The interpreter GDB's command line names (``-i mi``, ``--interpreter=mi3``; GDB's
    getopt_long_only takes one or two dashes and any prefix of a long option), else None."""
    for i, arg in enumerate(argv[1:], 1):
        if arg in ("--args", "--"):
            return None  # the program's own arguments follow
        if not arg.startswith("-"):
            continue
        name, eq, value = arg.lstrip("-").partition("=")
        if name and "interpreter".startswith(name) and (name == "i" or len(name) > 1):
            return value if eq else (argv[i + 1] if i + 1 < len(argv) else None)
    return None


def mi_interpreter() -> bool:
    """Whether GDB's main interface is GDB/MI, as its command line says: Python has no way to ask
    GDB 13 which interpreter prints (a second UI made with `new-ui mi` is not seen)."""
    try:
        with open("/proc/self/cmdline", "rb") as f:
            argv = f.read().decode(errors="replace").split("\0")
    except OSError:
        return False
    interpreter = _interpreter_arg(argv)
    return interpreter is not None and interpreter.startswith("mi")
