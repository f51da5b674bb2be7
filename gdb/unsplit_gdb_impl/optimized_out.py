"""Whether a value is optimized out whole, as GDB's own printers decide it (value.c,
value_entirely_optimized_out: one optimized-out range over all the value's bits). GDB's own
`bt`, `bt full` and `info locals` print such a value `<optimized out>` (value_check_printable);
its Python frame printer hands it to the type's printer, which prints it part by part
(`{a = <optimized out>, b = <optimized out>}`, `{<No data fields>}`) or raises (libstdc++'s
"value has been optimized out"). Python sees only whether some bit of a value is optimized out
(Value.is_optimized_out), so the parts are walked down to the scalars."""

from __future__ import annotations

import gdb  # type: ignore[import-not-found, unused-ignore]

PARTS_LOOKED_AT = 256
"""A value with more parts counts as there: GDB's Python printer's answer stands."""

_WHOLES = (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION)


def entirely_optimized_out(value: gdb.Value) -> bool:
    """Whether no bit of `value` is there: each of its parts is optimized out (a scalar,
    pointer or reference with any bit missing, as GDB prints it) or has no bits (a C struct
    without members, which alone is never optimized out whole)."""
    try:
        if value.type.sizeof == 0:
            return False
        todo, looked = [value], 0
        while todo:
            part = todo.pop()
            looked += 1
            kind = part.type.strip_typedefs()
            if kind.sizeof == 0:
                continue  # no bits, none missing
            if not part.is_optimized_out:
                return False
            if kind.code == gdb.TYPE_CODE_ARRAY:
                low, high = kind.range()
                if looked + len(todo) + high - low + 1 > PARTS_LOOKED_AT:
                    return False
                todo += [part[i] for i in range(low, high + 1)]
            elif kind.code in _WHOLES:
                # (a field without `bitpos` is a static member: not part of the value)
                todo += [part[f] for f in kind.fields() if hasattr(f, "bitpos")]
                if looked + len(todo) > PARTS_LOOKED_AT:
                    return False
    except gdb.error:  # GDB reads it again and says why it cannot
        return False
    return True
