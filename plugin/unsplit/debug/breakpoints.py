"""Where a breakpoint named in terms of the original procedure goes now: the policy of `bb break`
(docs/commands.md: PROC, PROC+OFFSET, PROC:%ID, FILE:LINE). The adapters only apply what it
computes: GDB sets breakpoints at the addresses, LLDB's scripted resolver asks :func:`resolve`
per module."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from unsplit.errors import AddressLookupError, UsageError
from unsplit.index.inlines import module_frames
from unsplit.index.model.records import Procedure
from unsplit.index.module_index import ModuleIndex
from unsplit.index.names.matching import matching

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
    """Linkage names of the procedures of one module that `text` names
    (unsplit.index.names.matching),
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
    for a in sorted(_first_in_each_scope(index, index.line_table.line_starts(file, line))):
        frag = index.fragment_at(a)
        out.append(Site(a, frag.procedure if frag else None, frag.name if frag else None, where))
    return out


def _first_in_each_scope(index: ModuleIndex, addresses: set[int]) -> set[int]:
    """Of the places a line of BOLTed code begins, those GDB's `break` keeps on the pre-BOLT
    input (linespec.c, for optimized code that scatters one line over several ranges of one
    scope): the first in each scope (block, inlined call, function) by input address, so a
    loop's `for` line that is begun again after its body is one location, not two. Every copy
    BOLT made of the kept place stays. Code the module's own DWARF describes keeps them all:
    there GDB's rule would merge a cold part's place with the hot one's (GCC's rows of an
    inlined body outside its inlined call's ranges: both read as the function's scope)."""
    frames = module_frames(index)
    scoped = [(frames.scope(a), a) for a in addresses]
    first: dict[int, int] = {}
    for found, _ in scoped:
        if found is not None and found[0] == 1:
            first[found[2]] = min(first.get(found[2], found[1]), found[1])
    return {a for found, a in scoped
            if found is None or found[0] != 1 or first[found[2]] == found[1]}
