"""Where a breakpoint named in terms of the original procedure goes now: the policy of `bb break`.

The adapters only apply what this module computes (GDB: breakpoints at addresses; LLDB: a
scripted resolver that asks :func:`resolve` for each module as it loads).

Location forms (PROC: a linkage name, a demangled name, or a qualified name without parameters
matching in every scope and overload, as GDB's `break` reads it: unsplit.index.names):
    PROC            the procedure's entry (--all-fragments: and the start of every fragment)
    PROC+OFFSET     an offset in the original procedure (BOLT: in the input function, via BAT;
                    split_info: logical; bb maps and symbols: in the fragments laid end to end)
    PROC:%ID        the start of basic block ID (bb address map, BAT)
    FILE:LINE       every place that line begins, in moved code too, from ESL, DWARF, or the
                    pre-BOLT binary's DWARF through BAT
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from unsplit.errors import AddressLookupError, UsageError
from unsplit.host import Host, LoadedModule
from unsplit.index.model import Procedure
from unsplit.index.module_index import ModuleIndex
from unsplit.index.names import matching

if TYPE_CHECKING:
    from unsplit.render.breaks import BreakGroup

_BLOCK = re.compile(r"^(?P<proc>.+?):%(?P<id>\d+)$")
_OFFSET = re.compile(r"^(?P<proc>.+?)\s*\+\s*(?P<off>0[xX][0-9a-fA-F]+|\d+)$")
_LINE = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+)$")
# A procedure name: C, linkage, or demangled C++ (`ns::f<int>(int const*, int) const`).
_NAME = re.compile(r"^[\w.$@~:<>()*&,\[\] -]+$")


@dataclass(frozen=True, slots=True)
class BreakSpec:
    """A parsed `bb break` location."""

    text: str
    procedure: str | None = None
    offset: int | None = None
    block: int | None = None
    file: str | None = None
    line: int | None = None
    all_fragments: bool = False
    condition: str | None = None  # the debugger's own expression, given to every location
    settled_line: int | None = None  # FILE:LINE's line as chosen over every module (settle)

    def option_text(self) -> str:
        """The location and its options as `bb break` prints them back."""
        return self.text + (" --all-fragments" if self.all_fragments else "") + (
            f" --condition {self.condition}" if self.condition else "")


@dataclass(frozen=True, slots=True)
class Site:
    """One address a breakpoint needs (a file address of the module that was asked)."""

    file_address: int
    procedure: str | None
    fragment: str | None
    why: str  # "entry", "cold.1 start", "+0x1c", "%5", "crash.c:32"


@runtime_checkable
class BreakpointHost(Host, Protocol):
    """A debugger that sets `bb break`'s native breakpoints."""

    def create_breakpoint(self, spec: BreakSpec, sites: list[tuple[LoadedModule, Site]]) -> str:
        """One native breakpoint at the sites the core resolved now, re-resolved by the
        adapter (`resolve`) when modules load; the debugger's own `break` message."""
        ...

    def bb_breakpoints(self) -> list[BreakGroup]:
        """Every `bb break` and its locations (`bb break --list`)."""
        ...


def parse(text: str, all_fragments: bool = False) -> BreakSpec:
    text = text.strip()
    if not text:
        raise UsageError("bb break: give a location: PROC, PROC+OFFSET, PROC:%ID or FILE:LINE")
    if m := _BLOCK.match(text):
        return BreakSpec(text, procedure=m["proc"], block=int(m["id"]))
    if m := _LINE.match(text):
        return BreakSpec(text, file=m["file"], line=int(m["line"]))
    if m := _OFFSET.match(text):
        return BreakSpec(text, procedure=m["proc"], offset=int(m["off"], 0))
    if _NAME.match(text):
        return BreakSpec(text, procedure=text, all_fragments=all_fragments)
    raise UsageError(f"bb break: cannot read location {text!r}; "
                     "use PROC, PROC+OFFSET, PROC:%ID or FILE:LINE")


def settle(spec: BreakSpec, indexes: Iterable[ModuleIndex]) -> BreakSpec:
    """`spec` with FILE:LINE's line chosen over every module, as GDB's linespec does
    (linespec.c, decode_digits_ordinary and its best_entry): LINE where any module has code
    for it, else the first line after it that any module has code for; then that one line in
    each module. A module never takes its own next line: glibc's iconv/loop.c:285 for a
    program's loop.c:30. Other specs are returned as they are."""
    if spec.file is None or spec.line is None:
        return spec
    tables = [index.line_table for index in indexes]
    if any(table.line_starts(spec.file, spec.line) for table in tables):
        return replace(spec, settled_line=spec.line)
    after = [n for table in tables if (n := table.next_line(spec.file, spec.line)) is not None]
    return replace(spec, settled_line=min(after, default=spec.line))


def resolve(index: ModuleIndex, spec: BreakSpec) -> list[Site]:
    """Every address of `spec` in one module (file addresses); [] when it has none there.
    FILE:LINE takes the line :func:`settle` chose over every module (unsettled: over this
    one)."""
    if spec.file is not None and spec.line is not None:
        line = spec.settled_line or settle(spec, [index]).settled_line or spec.line
        return _line_sites(index, spec.file, line, f"{spec.file}:{spec.line}")
    assert spec.procedure is not None
    sites: list[Site] = []
    for name in procedures_named(index, spec.procedure):
        for proc in index.procedures.all_named(name):  # static functions of several units
            sites += _procedure_sites(index, proc, spec)
    return sites


def procedures_named(index: ModuleIndex, text: str) -> list[str]:
    """Linkage names of the procedures of one module that `text` names (unsplit.index.names),
    BOLT's patched originals left out (:func:`originals_named`)."""
    return [name for name in matching(index.procedures, text)
            if not _left_out(index, name, text)]


def originals_named(index: ModuleIndex, text: str) -> list[str]:
    """BOLT's patched originals (``foo.org.0``) that `text` also names, left out of every
    `bb break` and `bb blocks`: never run but for the jump to their function's new code, where
    the breakpoint is. Named by their own linkage name, they stay."""
    if not index.binary.is_bolt_output:
        return []
    originals = [name for name in index.procedures if index.bolt_original(name) is not None]
    return [name for name in matching(originals, text) if _left_out(index, name, text)]


def _left_out(index: ModuleIndex, name: str, text: str) -> bool:
    return name != text.strip() and index.bolt_original(name) is not None


def _procedure_sites(index: ModuleIndex, proc: Procedure, spec: BreakSpec) -> list[Site]:
    if spec.block is not None:
        return _block_sites(proc, spec.block)
    if spec.offset is not None:
        return _offset_sites(index, proc, spec.offset)
    sites = [Site(proc.entry, proc.name, proc.fragments[0].name, "entry")]
    if spec.all_fragments:
        sites += [Site(f.start, proc.name, f.name, f"{f.name} start")
                  for f in proc.fragments[1:]]
    return sites


def _block_sites(proc: Procedure, block_id: int) -> list[Site]:
    found = [b for b in proc.blocks if b.id == block_id]
    if not found and not proc.blocks:
        raise AddressLookupError(f"{proc.name}: no basic-block information (no bb address map "
                                 "or BAT for it)")
    out = []
    for b in found:
        frag = proc.fragment_at(b.start)
        out.append(Site(b.start, proc.name, frag.name if frag else None, f"%{block_id}"))
    return out


def _offset_sites(index: ModuleIndex, proc: Procedure, offset: int) -> list[Site]:
    return [Site(a, proc.name, _fragment_name(index, proc, a), f"+{offset:#x}")
            for a in index.addresses_of(proc, offset)]


def _fragment_name(index: ModuleIndex, proc: Procedure, address: int) -> str | None:
    """The procedure's fragment at `address`, else the module's (BAT knows input functions by
    name: a static function of the same name in another unit)."""
    frag = proc.fragment_at(address) or index.fragment_at(address)
    return frag.name if frag else None


def _line_sites(index: ModuleIndex, file: str, line: int, where: str) -> list[Site]:
    """Where `file`:`line` begins in this module (`line`: the one settle chose, which for a line
    without code is the next line with code, as GDB 13's `break` and LLDB's move-to-nearest-code
    go)."""
    out = []
    for a in sorted(index.line_table.line_starts(file, line)):
        frag = index.fragment_at(a)
        out.append(Site(a, frag.procedure if frag else None, frag.name if frag else None, where))
    return out
