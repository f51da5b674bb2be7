"""A local whose pretty-printer fails part-way, given to GDB's Python frame printer as GDB's own
`bt full` prints it. That printer (py-framefilter.c) prints each local by common_val_print
unguarded: where a child cannot be read (a garbage `std::vector` at a stop before its
constructor ran) the error ended the frame's locals with "Python Exception <class
'gdb.MemoryError'>" (LevelDB's `DBImpl::Recover`: 7 locals lost). GDB's own printer
(print_variable_and_value) keeps what it printed, adds `<error reading variable NAME (WHY)>`
and goes on; the text is built here and printed unquoted by :func:`unsplit_local_errors`."""

from __future__ import annotations

import re
from typing import Any

import gdb  # type: ignore[import-not-found, unused-ignore]

from .optimized_out import entirely_optimized_out

_MARK = gdb.lookup_type("char").const().volatile()  # the texts' element type
_TEXTS: dict[bytes, None] = {}  # the texts made (insertion order: the oldest go first)
_KEPT = 256
# how GDB's own printer words the error: GDB 13 names the variable, GDB 18 does not
_NAMED = int("0" + re.sub(r"\D.*", "", gdb.VERSION, flags=re.S)) <= 13


class Printed:
    """A local or argument printed as `text` (GDB's Symbol/Value interface)."""

    def __init__(self, symbol: gdb.Symbol, text: str) -> None:
        data = text.encode()
        _TEXTS[data] = None
        while len(_TEXTS) > _KEPT:
            del _TEXTS[next(iter(_TEXTS))]
        self._symbol = symbol
        self._value = gdb.Value(data, _MARK.array(len(data) - 1)) if data else gdb.Value("")

    def symbol(self) -> gdb.Symbol:
        return self._symbol

    def value(self) -> gdb.Value:
        return self._value


def checked(frame: gdb.Frame, symbol: gdb.Symbol, mi: bool) -> Printed | None:
    """The local as GDB's own `bt full` (`mi`: `-stack-list-variables`, mi-cmd-stack.c, which
    words the error so and prints a struct optimized out whole part by part) prints it where
    the frame printer would not (GDB prints every other local itself: None)."""
    try:
        value = frame.read_var(symbol)
        printer = gdb.default_visualizer(value)
    except gdb.error:  # GDB reads it again and says why it cannot
        return None
    if not mi and entirely_optimized_out(value):
        return Printed(symbol, "<optimized out>")  # as value_check_printable has it
    if printer is None:
        return None
    # The printer runs once, here, and its text is what GDB prints (a Python error of the
    # printer's own is said as it runs: before the frame's locals, where GDB's own `bt full`
    # says it inside the value). GDB/MI prints the value again itself (`--simple-values`
    # prints the value's type, which only GDB has): there the error is said then, not twice.
    options = _as_listed()
    stack = gdb.parameter("python print-stack") if mi else None
    if stack is not None:
        gdb.execute("set python print-stack none", to_string=True)
    try:
        text = value.format_string(**options)
    except gdb.error as e:  # a printer's child GDB cannot read (gdb.MemoryError)
        why = str(e)
    except Exception:  # raised in the pretty-printer's Python, not ours: GDB's frame
        return None  # printer, as its own, prints it inline and goes on
    else:
        return None if mi else Printed(symbol, _indented(text))
    finally:
        if stack is not None:
            gdb.execute(f"set python print-stack {stack}", to_string=True)
    return Printed(symbol, _partial(printer) + (
        f"<error reading variable {symbol.print_name} ({why})>" if _NAMED and not mi else
        f"<error reading variable: {why}>"))


_DEPTH = 4
"""How deep GDB's printers take a local of `bt full` to be (py-framefilter.c, enumerate_locals;
stack.c, print_variable_and_value): `print max-depth` counts from there, and each line of
`print pretty` is indented by two spaces a level."""


def _as_listed() -> dict[str, Any]:
    """Value.format_string's options for a local as `bt full` prints it."""
    depth = gdb.parameter("print max-depth")  # (None: unlimited)
    return {"deref_refs": True,  # as enumerate_locals sets it
            "max_depth": max(depth - _DEPTH, 0) if isinstance(depth, int) and depth >= 0
            else -1}


def _indented(text: str) -> str:
    """`text`, made at depth 0, with the lines after the first indented as at _DEPTH."""
    if not (gdb.parameter("print pretty") or gdb.parameter("print array")):
        return text  # one line, but for a printer's own line breaks
    return text.replace("\n", "\n" + " " * (2 * _DEPTH))


def _partial(printer: Any) -> str:
    """What GDB prints of `printer`'s value before the child it cannot read (py-prettyprint.c,
    print_string_repr and print_children, one line): `std::vector of length -3, … = {`."""
    text = ""
    try:
        head = printer.to_string() if hasattr(printer, "to_string") else None
        if isinstance(head, gdb.Value):
            head = head.format_string()
        hint = printer.display_hint() if hasattr(printer, "display_hint") else None
        if hint == "string" and isinstance(head, str):
            head = f'"{head}"'
        text = "" if head is None else str(head)
        if not hasattr(printer, "children") or gdb.parameter("print pretty"):
            return text + (" = " if text else "")
        text += " = {" if text else "{"
        for i, (name, child) in enumerate(printer.children()):
            if i:
                text += ", " if hint != "map" or i % 2 == 0 else ""
            if hint == "map":
                text += "[" if i % 2 == 0 else ""
            elif hint != "array":
                text += f"{name} = "
            text += child if isinstance(child, str) else gdb.Value(child).format_string()
            if hint == "map" and i % 2 == 0:
                text += "] = "
    except gdb.error:  # the child GDB could not read: the error follows
        return text
    return text


def unsplit_local_errors(value: gdb.Value) -> _TextPrinter | None:
    """The pretty-printer of the texts :class:`Printed` makes (their type and bytes)."""
    if not _TEXTS:
        return None
    kind = value.type
    if kind.code != gdb.TYPE_CODE_ARRAY or kind.target() != _MARK:
        return None
    text = value.string(length=kind.sizeof)
    return _TextPrinter(text) if text.encode() in _TEXTS else None


class _TextPrinter:
    def __init__(self, text: str) -> None:
        self._text = text

    def to_string(self) -> str:
        return self._text


def install() -> None:
    if unsplit_local_errors not in gdb.pretty_printers:
        gdb.pretty_printers.append(unsplit_local_errors)
