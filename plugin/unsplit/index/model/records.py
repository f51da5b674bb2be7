"""The logical model every fragment source feeds: a *procedure* is a function as its author wrote
it, cut by optimizers into *fragments* placed far apart; a fragment knows where it lies now
(``start``/``end``) and where it lay in the procedure (``logical_start``: the offset a user
means by ``foo+0x40``). Addresses are file virtual addresses; adapters add the load bias."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from unsplit.elf.line_row import LineRow as LineRow  # the model's line rows are the files'
from unsplit.index.names.demangle import GNU, shown
from unsplit.index.names.matching import split

HOT = "hot"
"""Name of the fragment that holds the procedure's entry."""


# -- fragment names ------------------------------------------------------------------------
# The one grammar of the symbols splitters give the pieces they move (every source reads it):
#   <base>.cold, <base>.cold.N   GCC, clang (machine function splitter), BOLT (spec §6.1)
#   <base>.warm                  BOLT --split-strategy=cdsplit
#   <base>.__part.N              clang basic-block sections (fragment tag "part.N")
# Anything else ends the base name: GCC's IPA clones (``foo.part.0``, ``foo.isra.0``,
# ``foo.constprop.1``) and ThinLTO's promoted locals (``foo.llvm.123``) are functions of their
# own, and their pieces are ``foo.part.0.cold``, ``foo.llvm.123.cold``.

_FRAGMENT_SUFFIX = re.compile(r"^(?P<base>.+?)\.(?P<kind>cold|warm|__part)(?:\.(?P<n>\d+))?$")
_TAG = re.compile(r"^(?P<kind>cold|warm|part)(?:\.(?P<n>\d+))?$")
FRAGMENT_NAME_IN_STRTAB = re.compile(rb"\.(?:cold|warm|__part)(?:\.\d+)?\0")
"""A fragment name's end in an ELF string table: one pass tells a table without any."""

# Original order of the pieces after the entry: warm code sat before cold code (BOLT's
# FragmentNum order: main, warm, cold, then cold.0, cold.1, ...).
_KIND_RANK = {"warm": 0, "part": 1, "cold": 2}


# BOLT leaves the original body of a function it moved where it was and, when some code it left
# in place may still call that address, patches its entry with a jump to the new code under the
# name ``<base>.org.0`` (BOLT's PatchEntries pass). Never run beyond that jump: not the procedure.
BOLT_ORIGINAL_SUFFIX = ".org.0"
BOLT_PSEUDO_UNIT = "bolt-pseudo.o"
"""The STT_FILE BOLT files its own symbols under (fragments, patched originals): no source."""


def bolt_original_of(symbol: str) -> str | None:
    """``foo.org.0`` -> ``foo`` (the name of a BOLT output's patched original entry), else None.
    Only a BOLT output's symbols mean this (ModuleIndex.bolt_original asks)."""
    if not symbol.endswith(BOLT_ORIGINAL_SUFFIX) or len(symbol) == len(BOLT_ORIGINAL_SUFFIX):
        return None
    return symbol[:-len(BOLT_ORIGINAL_SUFFIX)]


class FragmentName(NamedTuple):
    """A fragment symbol read by the grammar: ``foo.cold.3`` is base ``foo``, kind ``cold``,
    number 3, tag ``cold.3`` (the Fragment.name the model gives it)."""

    base: str
    kind: str  # "cold", "warm" or "part"
    number: int | None

    @property
    def tag(self) -> str:
        return self.kind if self.number is None else f"{self.kind}.{self.number}"


def parse_fragment_name(symbol: str) -> FragmentName | None:
    """``foo.cold.3`` -> FragmentName("foo", "cold", 3); None for a name no splitter makes."""
    if ".cold" not in symbol and ".warm" not in symbol and ".__part" not in symbol:
        return None  # the common case, without the regex's walk over a long mangled name
    m = _FRAGMENT_SUFFIX.match(symbol)
    if m is None:
        return None
    kind = "part" if m["kind"] == "__part" else m["kind"]
    return FragmentName(m["base"], kind, None if m["n"] is None else int(m["n"]))


def split_fragment_name(symbol: str) -> tuple[str, str] | None:
    """`foo.cold.3` -> ("foo", "cold.3"); `foo.__part.1` -> ("foo", "part.1"); else None."""
    found = parse_fragment_name(symbol)
    return None if found is None else (found.base, found.tag)


def fragment_order(tag: str) -> tuple[int, int]:
    """Sort key of a fragment tag in its procedure's original order: ``hot`` first, then
    ``warm``, ``part.N``, ``cold``, ``cold.0``, ``cold.1``..., then any other tag."""
    if tag == HOT:
        return (-1, -1)
    m = _TAG.match(tag)
    if m is None:
        return (len(_KIND_RANK), -1)
    return _KIND_RANK[m["kind"]], -1 if m["n"] is None else int(m["n"])


class Fragment(NamedTuple):
    """One contiguous piece of a procedure's code."""

    procedure: str
    name: str  # "hot", "cold", "cold.3", "warm", "part.1", ...
    start: int
    end: int
    symbol: str | None = None  # the ELF symbol naming it, e.g. "foo.cold.3"
    logical_start: int = 0  # offset of `start` within the procedure as first laid out
    source: str = "symbols"  # which format told us: symbols, dwarf, bb_addr_map, bat, split_info

    @property
    def size(self) -> int:
        return self.end - self.start

    def contains(self, address: int) -> bool:
        return self.start <= address < self.end


class Block(NamedTuple):
    """A machine basic block (from a bb address map, BAT or split_info)."""

    id: int
    start: int
    end: int
    flags: tuple[str, ...] = ()  # e.g. ("return", "can_fall_through")
    frequency: float | None = None  # relative to the entry block, from the PGO map
    successors: tuple[tuple[int, float], ...] = ()  # (block id, probability)


class Procedure:
    """A logical procedure: its fragments in original order (fragments[0] holds the entry).

    `blocks` may be made on first use: a source whose blocks are costly to decode (a bb address
    map holds millions) passes `load_blocks`, called once, the first time `blocks` is read.
    """

    __slots__ = ("_blocks", "_load_blocks", "fragments", "name")

    def __init__(self, name: str, fragments: list[Fragment] | None = None,
                 blocks: list[Block] | None = None, *,
                 load_blocks: Callable[[], list[Block]] | None = None) -> None:
        self.name = name
        self.fragments: list[Fragment] = [] if fragments is None else fragments
        self._blocks: list[Block] = [] if blocks is None else blocks
        self._load_blocks = load_blocks

    @property
    def blocks(self) -> list[Block]:
        load = self._load_blocks
        if load is not None:
            self._load_blocks = None
            self._blocks = load()
        return self._blocks

    @blocks.setter
    def blocks(self, value: list[Block]) -> None:
        self._blocks = value
        self._load_blocks = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Procedure):
            return NotImplemented
        return (self.name, self.fragments, self.blocks) == (
            other.name, other.fragments, other.blocks)

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it replaces

    def __repr__(self) -> str:
        return f"Procedure(name={self.name!r}, fragments={self.fragments!r}, " \
               f"blocks={self.blocks!r})"

    @property
    def entry(self) -> int:
        return self.fragments[0].start

    @property
    def is_split(self) -> bool:
        return len(self.fragments) > 1

    @property
    def logical_size(self) -> int:
        return max((f.logical_start + f.size for f in self.fragments), default=0)

    def fragment_at(self, address: int) -> Fragment | None:
        for frag in self.fragments:
            if frag.contains(address):
                return frag
        return None

    def fragment_named(self, name: str) -> Fragment | None:
        for frag in self.fragments:
            if frag.name == name:
                return frag
        return None

    def logical_offset(self, address: int) -> int | None:
        frag = self.fragment_at(address)
        return None if frag is None else frag.logical_start + address - frag.start

    def addresses_of(self, offset: int) -> list[int]:
        """Every address that logical `offset` lives at now (none if it fell outside)."""
        return [
            f.start + offset - f.logical_start
            for f in self.fragments
            if f.logical_start <= offset < f.logical_start + f.size
        ]

    def block_at(self, address: int) -> Block | None:
        for block in self.blocks:
            if block.start <= address < block.end:
                return block
        return None


class LineInfo(NamedTuple):
    """One line of llvm-symbolizer's answer (LLVM's DILineInfo): a function and where in it."""

    function: str
    path: str | None  # None: llvm-symbolizer's "??"
    line: int
    column: int
    start_line: int = 0
    start_address: int | None = None


class InlineFrame(NamedTuple):
    """One frame of the chain DWARF gives an address where code is inlined: the function (its
    linkage name, else its DWARF name) and where in it the address is — for an inlined call,
    a line of the callee; for the procedure itself (the chain's last), the line of the call."""

    function: str
    path: str | None
    line: int
    column: int

    @property
    def file(self) -> str | None:
        return None if self.path is None else os.path.basename(self.path)

    def to_json(self, style: str | None = GNU) -> dict[str, Any]:
        return {"function": shown(self.function, style), "linkage_name": self.function,
                "file": self.file, "path": self.path, "line": self.line,
                "column": self.column}


class BatFacts(NamedTuple):
    """What BOLT's address translation says of one output address (spec §3.1, §3.2): the
    input offset (== the location's offset, said explicitly), the kind of the anchor entry
    and its distance, the input block of the nearest block entry, the fragment kind."""

    input_offset: int
    entry: str  # "block" or "branch"
    entry_distance: int
    block: int | None  # input basic-block index of the nearest block entry
    fragment_kind: str  # hot, warm or cold


class Location(NamedTuple):
    """The answer to "where is this address": what `bb where` and `unsplit where` print.

    ``file``/``line``/``column``/``path`` are the line table's row: where the instruction is,
    which is a line of an inlined function where code was inlined. ``inline_chain`` (DWARF's
    frames there, innermost first, the procedure's own last; empty where nothing is inlined)
    says so: whatever names the procedure shows it with its own line (:meth:`as_procedure`),
    never with a callee's, and names the inlined calls (:attr:`inlined`)."""

    address: int  # as the user gave it (runtime address in a debugger)
    file_address: int  # the same, as an ELF virtual address of `module`
    module: str
    procedure: str | None  # its linkage name (as the symbol table says); name() shows it
    fragment: str | None = None
    fragment_symbol: str | None = None
    fragment_start: int | None = None  # runtime address, like `address`
    offset: int | None = None  # logical offset in the procedure
    file: str | None = None
    line: int | None = None
    column: int | None = None
    path: str | None = None
    input_address: int | None = None  # BOLT: where this code was in the pre-BOLT binary
    block: Block | None = None
    sources: tuple[str, ...] = ()
    bat: BatFacts | None = None  # BOLTed code: what BAT says of it
    warnings: tuple[str, ...] = ()  # one line each: what the module's index could not read
    inline_chain: tuple[InlineFrame, ...] = ()

    @property
    def in_moved_code(self) -> bool:
        return self.fragment is not None and self.fragment != HOT

    @property
    def inlined(self) -> tuple[InlineFrame, ...]:
        """The calls inlined at the address, innermost first, each at its line in the callee."""
        return self.inline_chain[:-1]

    def as_procedure(self) -> Location:
        """This location as the procedure's own frame has it: at the line of the outermost
        inlined call where code is inlined (the line a debugger gives the procedure's frame
        below the inlined ones), without the chain; itself elsewhere."""
        if not self.inline_chain:
            return self
        own = self.inline_chain[-1]
        return self._replace(file=own.file, path=own.path, line=own.line or None,
                             column=own.column, inline_chain=())

    def name(self, style: str | None = GNU, *, parameters: bool = True) -> str | None:
        """The procedure as a debugger shows it: demangled in `style`
        (unsplit.index.names.demangle), or its linkage name (`procedure`) when `style` is None;
        without `parameters`, the qualified name alone (`ns::f`, C's `f` for `f.constprop.0`),
        as debuggers show a function they have DWARF for."""
        if self.procedure is None:
            return None
        name = shown(self.procedure, style)
        if parameters or name.startswith("_Z"):  # (not demangled: a linkage name)
            return name
        return split(name)[0]

    def label(self, style: str | None = GNU, *, parameters: bool = True) -> str:
        """How a frame in this location is named: `foo`, or `foo [cold.3]` in moved code."""
        name = self.name(style, parameters=parameters)
        if name is None:
            return "??"
        return f"{name} [{self.fragment}]" if self.in_moved_code else name

    def to_json(self, style: str | None = GNU) -> dict[str, Any]:
        """The procedure's file and line (:meth:`as_procedure`); where code is inlined, the
        inlined calls too (``inlined``, innermost first)."""
        own = self.as_procedure()
        out: dict[str, Any] = {
            "address": hex(self.address),
            "module": self.module,
            "procedure": self.name(style),
            "linkage_name": self.procedure,
            "fragment": self.fragment,
            "fragment_symbol": self.fragment_symbol,
            "fragment_start": None if self.fragment_start is None else hex(self.fragment_start),
            "offset": self.offset,
            "file": own.file,
            "path": own.path,
            "line": own.line,
            "column": own.column,
        }
        if self.inlined:
            out["inlined"] = [f.to_json(style) for f in self.inlined]
        if self.input_address is not None:
            out["input_address"] = hex(self.input_address)
        if self.bat is not None:
            out["input_offset"] = self.bat.input_offset
            out["bat_entry"] = self.bat.entry
            out["bat_entry_distance"] = self.bat.entry_distance
            out["bat_block"] = self.bat.block
            out["fragment_kind"] = self.bat.fragment_kind
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.file_address != self.address:
            out["file_address"] = hex(self.file_address)
        if self.block is not None:
            out["block"] = self.block.id
            out["block_offset"] = self.file_address - self.block.start
            out["block_flags"] = list(self.block.flags)
            if self.block.frequency is not None:
                out["block_frequency"] = self.block.frequency
            if self.block.successors:
                out["successors"] = [{"block": b, "probability": p}
                                     for b, p in self.block.successors]
        return out
