"""Fragments from the ELF symbol table, by the naming conventions of the splitters.

- GCC (``-freorder-blocks-and-partition``) and clang (``-fsplit-machine-functions``,
  basic-block sections): ``foo.cold``; clang basic-block sections: ``foo.__part.N``.
- BOLT (``--split-functions``): ``foo.cold.N`` and, with ``--split-strategy=cdsplit``,
  ``foo.warm`` and ``foo.cold`` (shared/NOTES.md, shared/specs/bolt-bat.md §6.1).

``foo.part.N``, ``foo.isra.N`` and ``foo.constprop.N`` are *separate* functions made by GCC's
IPA passes (each may have its own ``.cold``), so they are procedures of their own here.

A local fragment belongs to the function of the same base name in the same STT_FILE group
(two files may each have a static ``helper`` with a ``helper.cold``), else to the global one.
"""

from __future__ import annotations

import re
import weakref
from collections import defaultdict

from ..binary import Binary, FunctionSymbol
from ..model import HOT, Fragment, Procedure

_FRAGMENT_SUFFIX = re.compile(r"^(?P<base>.+?)\.(?P<kind>cold|warm|__part)(?:\.(?P<n>\d+))?$")

# Original order of fragments after the entry part: warm code sat before cold code.
_KIND_RANK = {"warm": 0, "__part": 1, "cold": 2}


def split_fragment_name(symbol: str) -> tuple[str, str] | None:
    """`foo.cold.3` -> ("foo", "cold.3"); `foo.__part.1` -> ("foo", "part.1"); else None."""
    if ".cold" not in symbol and ".warm" not in symbol and ".__part" not in symbol:
        return None  # the common case, without the regex's walk over a long mangled name
    m = _FRAGMENT_SUFFIX.match(symbol)
    if m is None:
        return None
    kind = "part" if m["kind"] == "__part" else m["kind"]
    return m["base"], kind if m["n"] is None else f"{kind}.{m['n']}"


def _order_key(sym: FunctionSymbol) -> tuple[int, int, int]:
    m = _FRAGMENT_SUFFIX.match(sym.name)
    assert m is not None
    return _KIND_RANK[m["kind"]], -1 if m["n"] is None else int(m["n"]), sym.value


def procedures(binary: Binary) -> list[Procedure]:
    """One Procedure per function that has moved fragments (and per orphaned fragment).

    Functions in one piece are left to :func:`plain`: the index keeps those as compact arrays
    and makes a Procedure only when one is asked for (a clang-size binary has 150k of them).
    """
    return _grouped(binary)[0]


def plain(binary: Binary) -> list[FunctionSymbol]:
    """Function symbols that have no fragment and are not fragments themselves."""
    return _grouped(binary)[1]


_GROUPED: weakref.WeakKeyDictionary[Binary, tuple[list[Procedure], list[FunctionSymbol]]] = \
    weakref.WeakKeyDictionary()


def _grouped(binary: Binary) -> tuple[list[Procedure], list[FunctionSymbol]]:
    hit = _GROUPED.get(binary)
    if hit is None:
        hit = _GROUPED[binary] = _group(binary)
    return hit


def _group(binary: Binary) -> tuple[list[Procedure], list[FunctionSymbol]]:
    parents: dict[tuple[str | None, str], FunctionSymbol] = {}
    parts: dict[tuple[str | None, str], list[FunctionSymbol]] = defaultdict(list)
    seen: set[tuple[str, int]] = set()
    for sym in binary.functions:
        if (sym.name, sym.value) in seen:  # aliases in .symtab and .dynsym, or duplicates
            continue
        seen.add((sym.name, sym.value))
        split = split_fragment_name(sym.name)
        if split is None:
            parents.setdefault((sym.file if sym.local else None, sym.name), sym)
        else:
            parts[(sym.file, split[0])].append(sym)

    # The linker makes hidden-visibility functions local and lists them after every file's own
    # locals, under an unnamed STT_FILE (GNU ld and lld), away from their fragments' file: such
    # a fragment's parent is the only function of its name, whatever file it is listed under.
    by_name: dict[str, list[FunctionSymbol]] = defaultdict(list)
    for sym in parents.values():
        by_name[sym.name].append(sym)
    by_parent: dict[int, list[FunctionSymbol]] = defaultdict(list)
    orphans: list[FunctionSymbol] = []
    for (file, base), syms in parts.items():
        parent = parents.get((file, base)) or parents.get((None, base))
        if parent is None and len(by_name.get(base, ())) == 1:
            parent = by_name[base][0]
        if parent is None:
            orphans.extend(syms)
        else:
            by_parent[id(parent)].extend(syms)

    out = []
    alone = []
    for parent in parents.values():
        if id(parent) not in by_parent:
            alone.append(parent)
            continue
        fragments = [Fragment(parent.name, HOT, parent.value, parent.value + parent.size,
                              parent.name, 0, "symbols")]
        logical = parent.size
        for sym in sorted(by_parent[id(parent)], key=_order_key):
            split = split_fragment_name(sym.name)
            assert split is not None
            fragments.append(Fragment(parent.name, split[1], sym.value, sym.value + sym.size,
                                      sym.name, logical, "symbols"))
            logical += sym.size
        out.append(Procedure(parent.name, fragments))
    # A fragment whose parent has no symbol (stripped to .dynsym, say) still names its procedure.
    for sym in orphans:
        base, name = split_fragment_name(sym.name) or (sym.name, HOT)
        out.append(Procedure(base, [Fragment(base, name, sym.value, sym.value + sym.size,
                                             sym.name, 0, "symbols")]))
    return out, alone
