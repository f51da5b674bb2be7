"""Fragments from the ELF symbol table by the splitters' naming conventions (``foo.cold``,
``foo.__part.N``, BOLT's ``foo.cold.N``/``foo.warm``; index.model.records holds the grammar).
GCC's ``foo.part.N``/``.isra.N``/``.constprop.N`` are procedures of their own. A local fragment
belongs to the function of its base name in the same STT_FILE group, else to the global one."""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from unsplit.elf.binary import Binary, FunctionSymbol
from unsplit.elf.derived import PerFile
from unsplit.index.model.records import (
    FRAGMENT_NAME_IN_STRTAB,
    HOT,
    Fragment,
    Procedure,
    fragment_order,
    split_fragment_name,
)
from unsplit.index.sources import BaseSource

if TYPE_CHECKING:
    from unsplit.index.sources import StoredParts

__all__ = ["PlainFunctions", "SymbolsSource", "split_fragment_name"]


def _order_key(sym: FunctionSymbol) -> tuple[int, int, int]:
    split = split_fragment_name(sym.name)
    assert split is not None
    return (*fragment_order(split[1]), sym.value)


class PlainFunctions:
    """Functions in one piece, sorted by start, as arrays: names are offsets into ``strings``
    (NUL-terminated), decoded when asked for."""

    __slots__ = ("ends", "name_offsets", "starts", "strings")

    def __init__(self, starts: array[int], ends: array[int], name_offsets: array[int],
                 strings: bytes) -> None:
        self.starts, self.ends, self.name_offsets, self.strings = starts, ends, name_offsets, \
            strings

    def __len__(self) -> int:
        return len(self.starts)

    def name(self, i: int) -> str:
        offset = self.name_offsets[i]
        end = self.strings.find(b"\0", offset)
        return self.strings[offset: end if end >= 0 else len(self.strings)].decode(
            "utf-8", "replace")

    @classmethod
    def of(cls, functions: list[FunctionSymbol]) -> PlainFunctions:
        """From symbol objects (a binary that has fragments, or a test)."""
        functions = sorted(functions, key=lambda f: f.value)
        strings = bytearray()
        offsets = array("L")
        for f in functions:
            offsets.append(len(strings))
            strings += f.name.encode() + b"\0"
        return cls(array("Q", (f.value for f in functions)),
                   array("Q", (f.value + f.size for f in functions)), offsets, bytes(strings))


def _has_fragment_names(binary: Binary) -> bool:
    """Whether any symbol name may be a fragment's (one regex pass over the string table):
    without any, the symbols are taken as arrays and no Python object is made per symbol."""
    return FRAGMENT_NAME_IN_STRTAB.search(binary.function_columns.strtab + b"\0") is not None


def plain_columns(binary: Binary) -> PlainFunctions:
    """:func:`_plain_columns`, made once per Binary (a debug file's writer makes them while
    another process scans BAT: unsplit.index.bolt.scan_ahead)."""
    return _PLAIN(binary)


def _plain_columns(binary: Binary) -> PlainFunctions:
    """:func:`_group`'s answer for a table without fragment names: every function, minus
    aliases (same name and value) and later functions of an already seen name (per file for
    locals), sorted by start."""
    cols = binary.function_columns
    strtab, values = cols.strtab, cols.values
    seen: set[tuple[bytes, int]] = set()
    keys: set[tuple[bytes | None, bytes]] = set()
    keep = []
    for i, offset in enumerate(cols.name_offsets):
        name = strtab[offset: strtab.find(b"\0", offset)]
        place = (name, values[i])
        if place in seen:
            continue
        seen.add(place)
        file = cols.files[i]
        key = (strtab[file: strtab.find(b"\0", file)] if cols.locals[i] and file >= 0
               else None, name)
        if key in keys:
            continue
        keys.add(key)
        keep.append(i)
    keep.sort(key=values.__getitem__)
    return PlainFunctions(array("Q", (values[i] for i in keep)),
                          array("Q", (values[i] + cols.sizes[i] for i in keep)),
                          array("L", (cols.name_offsets[i] for i in keep)), strtab)


_PLAIN = PerFile(_plain_columns)


def work_out_plain(binary: Binary) -> None:
    """Make the plain functions' columns of a table without fragment names now (see
    :func:`plain_columns`)."""
    if not _has_fragment_names(binary):
        plain_columns(binary)


def _group(binary: Binary) -> tuple[list[Procedure], PlainFunctions]:
    """(one Procedure per function that has fragments, and per orphaned fragment; every other
    function as arrays), from the symbol columns: a Python object is made only for the split
    functions and their pieces (libc's debug .symtab: 6,700 functions, 92 of them split)."""
    cols = binary.function_columns
    values = cols.values
    table = cols.strtab + b"\0"  # a last name without its NUL ends with the table
    raw = [table[at: table.find(b"\0", at)] for at in cols.name_offsets]
    # Names compare as their bytes where the whole table is UTF-8 (each then decodes to a
    # different text), else as FunctionSymbol decodes them (two damaged names may read alike).
    utf8 = _is_utf8(table)
    keys: Sequence[bytes | str] = raw if utf8 else [t.decode("utf-8", "replace") for t in raw]
    files: dict[int, bytes | str] = {}
    seen: set[tuple[bytes | str, int]] = set()
    parents: dict[tuple[bytes | str | None, bytes | str], int] = {}
    parts: dict[tuple[bytes | str | None, str], list[int]] = defaultdict(list)
    file_offsets, local_flags = cols.files, cols.locals
    for i, place in enumerate(zip(keys, values, strict=True)):
        if place in seen:  # aliases in .symtab and .dynsym, or duplicates
            continue
        seen.add(place)
        name = place[0]
        file_at = file_offsets[i]
        file = None
        if file_at >= 0:
            file = files.get(file_at)
            if file is None:
                text = table[file_at: table.find(b"\0", file_at)]
                file = files[file_at] = text if utf8 else text.decode("utf-8", "replace")
        text = raw[i]
        split = None
        if b".cold" in text or b".warm" in text or b".__part" in text:
            split = split_fragment_name(text.decode("utf-8", "replace"))
        if split is None:
            parents.setdefault((file if local_flags[i] else None, name), i)
        else:
            parts[(file, split[0])].append(i)

    def key_of(base: str) -> bytes | str:
        return base.encode() if utf8 else base

    # The linker makes hidden-visibility functions local and lists them after every file's own
    # locals, under an unnamed STT_FILE (GNU ld and lld), away from their fragments' file: such
    # a fragment's parent is the only function of its name, whatever file it is listed under.
    by_name: dict[bytes | str, list[int]] = defaultdict(list)
    for (_, name), i in parents.items():
        by_name[name].append(i)
    by_parent: dict[int, list[int]] = defaultdict(list)
    orphans: list[int] = []
    for (file, base_name), found in parts.items():
        base = key_of(base_name)
        parent = parents.get((file, base))
        if parent is None:
            parent = parents.get((None, base))
        if parent is None and len(by_name.get(base, ())) == 1:
            parent = by_name[base][0]
        if parent is None:
            orphans.extend(found)
        else:
            by_parent[parent].extend(found)

    out = []
    alone = []
    for i in parents.values():
        if i not in by_parent:
            alone.append(i)
            continue
        head = cols.symbol(i)
        fragments = [Fragment(head.name, HOT, head.value, head.value + head.size, head.name, 0,
                              "symbols")]
        logical = head.size
        for sym in sorted((cols.symbol(k) for k in by_parent[i]), key=_order_key):
            split = split_fragment_name(sym.name)
            assert split is not None
            fragments.append(Fragment(head.name, split[1], sym.value, sym.value + sym.size,
                                      sym.name, logical, "symbols"))
            logical += sym.size
        out.append(Procedure(head.name, fragments))
    # A fragment whose parent has no symbol (stripped to .dynsym, say) still names its procedure.
    for k in orphans:
        sym = cols.symbol(k)
        base, name = split_fragment_name(sym.name) or (sym.name, HOT)
        out.append(Procedure(base, [Fragment(base, name, sym.value, sym.value + sym.size,
                                             sym.name, 0, "symbols")]))
    alone.sort(key=values.__getitem__)
    sizes, offsets = cols.sizes, cols.name_offsets
    return out, PlainFunctions(array("Q", [values[i] for i in alone]),
                               array("Q", [values[i] + sizes[i] for i in alone]),
                               array("L", [offsets[i] for i in alone]), cols.strtab)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


class SymbolsSource(BaseSource):
    """Split functions named by the splitters' conventions as a Source, and every function in
    one piece as arrays (plain); both from the persistent index's `stored` parts when given."""

    name = "symbols"

    def __init__(self, binary: Binary, stored: StoredParts | None = None) -> None:
        super().__init__(binary)
        self._stored = stored
        self._groups: tuple[list[Procedure], PlainFunctions] | None = None

    def procedures(self) -> list[Procedure]:
        """One Procedure per function that has moved fragments (and per orphaned fragment).

        Functions in one piece are left to :meth:`plain`: the index keeps those as compact
        arrays and makes a Procedure only when one is asked for (a clang-size binary has 150k).
        """
        if self._stored is not None:
            return list(self._stored.symbol_procedures)
        if not _has_fragment_names(self.binary):
            return []
        return self._grouped()[0]

    def plain(self) -> PlainFunctions:
        """Function symbols that have no fragment and are not fragments themselves."""
        if self._stored is not None:
            return self._stored.plain
        if not _has_fragment_names(self.binary):
            return plain_columns(self.binary)
        return self._grouped()[1]

    def _grouped(self) -> tuple[list[Procedure], PlainFunctions]:
        """procedures() and plain() share one grouping of the symbols."""
        if self._groups is None:
            self._groups = _group(self.binary)
        return self._groups

    def problems(self) -> list[str]:
        if self._stored is not None:  # a file with problems is never stored
            return []
        cols = self.binary.function_columns
        if not cols.past_end:
            return []
        return [f"{cols.table}: {cols.past_end} function symbol(s) whose value + size passes "
                "2^64 ignored"]
