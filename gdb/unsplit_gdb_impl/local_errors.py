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

_MARK = gdb.lookup_type("char").const().volatile()  # the texts' element type
_TEXTS: dict[bytes, None] = {}  # the texts made (insertion order: the oldest go first)
_KEPT = 256
# how GDB's own printer words the error: GDB 13 names the variable, GDB 18 does not
_NAMED = int("0" + re.sub(r"\D.*", "", gdb.VERSION, flags=re.S)) <= 13


class Printed:
    """A local printed as `text` (GDB's Symbol/Value interface)."""

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
    if not mi and _entirely_optimized_out(value, [64]) is True:
        return Printed(symbol, "<optimized out>")  # as value_check_printable has it
    if printer is None:
        return None
    # (a Python error of a printer's own GDB prints as it goes: not twice)
    stack = gdb.parameter("python print-stack")
    gdb.execute("set python print-stack none", to_string=True)
    try:
        value.format_string()
        return None
    except gdb.error as e:  # a printer's child GDB cannot read (gdb.MemoryError)
        why = str(e)
    except Exception:  # raised in the pretty-printer's Python, not ours: GDB's frame
        return None  # printer, as its own, prints it inline and goes on
    finally:
        gdb.execute(f"set python print-stack {stack}", to_string=True)
    return Printed(symbol, _partial(printer) + (
        f"<error reading variable {symbol.print_name} ({why})>" if _NAMED and not mi else
        f"<error reading variable: {why}>"))


def _entirely_optimized_out(value: gdb.Value, budget: list[int]) -> bool | None:
    """Whether every part of `value` is optimized out (None: more parts than `budget` has, a
    count shared by the parts). GDB's own printer says `<optimized out>` for such a value; its
    Python frame printer hands it to the type's printer (`{_M_guarded = <optimized out>}`, or
    libstdc++'s raising "value has been optimized out" and printing nothing)."""
    if not value.is_optimized_out:
        return False
    kind = value.type.strip_typedefs()
    if kind.code == gdb.TYPE_CODE_ARRAY:
        low, high = kind.range()
        if high - low + 1 > budget[0]:
            return None
        parts = [value[i] for i in range(low, high + 1)]
    elif kind.code in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION):
        parts = [value[f] for f in kind.fields() if hasattr(f, "bitpos")]  # not static
    else:
        return True
    for part in parts:
        budget[0] -= 1
        inner = _entirely_optimized_out(part, budget) if budget[0] > 0 else None
        if inner is not True:
            return inner
    return True  # (a class without data members, such as an allocator, too)


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
