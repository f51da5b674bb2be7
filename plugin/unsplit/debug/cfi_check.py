"""What is wrong or ambiguous in a binary's unwind information (`unsplit check-cfi`), and where
a debugger that reads every FDE (GDB) may unwind with another FDE than the one we trust.

Three questions: FDEs of one section that share a start or overlap (a debugger picks one of
them; which one we trust is `unsplit.debug.cfi`'s choice, given with its reason); moved
fragments that no FDE describes; and, with the pre-BOLT input, whether each moved fragment's
CFA and return-address rules are the input's at the address BAT maps it to (DWARF 5 §6.4.1).
Everything is read lazily: FDE headers in one pass, rules only of the FDEs compared.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from unsplit.cache_dir import cache_root, keep_if_writable
from unsplit.elf import cfi_table
from unsplit.elf.binary import Binary
from unsplit.elf.derived import PerFile
from unsplit.errors import BadIndexFile, UnsplitError
from unsplit.formats import nops
from unsplit.index.bolt import prebolt
from unsplit.index.cache import store
from unsplit.index.model.frame import lookup_pc
from unsplit.index.model.records import Fragment
from unsplit.index.module_index import ModuleIndex
from unsplit.index.sources import bat as bat_source

if TYPE_CHECKING:  # rows are decoded only where FDEs compete (the decoder: cfi_table)
    from unsplit.formats.eh_frame import FrameDescription, Row


class Fde(NamedTuple):
    """One FDE by its header: where it is and what it covers."""

    section: str
    offset: int
    start: int
    end: int


class Conflict(NamedTuple):
    """FDEs of one section that cover common code: `shared` start at one address, else the
    later ones start inside the first. `trusted` is the one `cfi` unwinds with at `address`
    (None: none, e.g. all of them unlisted by .eh_frame_hdr); `differ_at` is the first address
    where two of them give different rules (None: they agree wherever they overlap)."""

    kind: str  # "shared-start" or "overlap"
    address: int
    fdes: tuple[Fde, ...]
    trusted: Fde | None
    why: str
    differ_at: int | None


class Uncovered(NamedTuple):
    """A moved fragment whose code no trusted FDE describes from `gap` on."""

    fragment: Fragment
    gap: int


class RuleMismatch(NamedTuple):
    """A moved fragment's CFA or return-address rule at `address` that is not the input's at
    `input_address` (where BAT maps it)."""

    fragment: Fragment
    address: int
    input_address: int
    what: str  # "CFA" or "return address"
    output_rule: str
    input_rule: str


# -- FDEs that compete for one address ----------------------------------------------------------


def conflicts(binary: Binary) -> Iterator[Conflict]:
    """Every group of FDEs of a section that share a start, and every FDE that starts inside
    an earlier one, in address order."""
    table = cfi_table.table_for(binary)
    for section in table.sections:
        every = section.every_fde()
        yield from _conflicts_in(table, section.name, every)


def _conflicts_in(table: cfi_table.CfiTable, name: str,
                  every: cfi_table.EveryFde) -> Iterator[Conflict]:
    starts, ends, offsets = every.starts, every.ends, every.offsets
    n = len(starts)
    reach, reach_i = 0, -1  # the furthest end so far, and its FDE
    i = 0
    while i < n:
        j = i + 1
        while j < n and starts[j] == starts[i]:
            j += 1
        group = [Fde(name, offsets[k], starts[k], ends[k]) for k in range(i, j)]
        if j - i > 1:
            yield _conflict(table, "shared-start", starts[i], group)
        if starts[i] < reach and reach_i >= 0:
            earlier = Fde(name, offsets[reach_i], starts[reach_i], ends[reach_i])
            yield _conflict(table, "overlap", starts[i], [earlier, *group])
        for k in range(i, j):
            if ends[k] > reach:
                reach, reach_i = ends[k], k
        i = j


def _conflict(table: cfi_table.CfiTable, kind: str, address: int, group: list[Fde]) -> Conflict:
    head = table.head_at(address)
    trusted = None if head is None else next(
        (f for f in group if (f.section, f.offset) == head[:2]), None)
    if trusted is None and head is not None:  # another section's FDE (.debug_frame) wins
        trusted = Fde(head[0], head[1], head[2], head[3])
    why = table.why_trusted(group[0].section) if trusted is not None else (
        "none of them: .eh_frame_hdr lists none that covers the address")
    return Conflict(kind, address, tuple(group), trusted, why, _differ_at(table, group))


def _differ_at(table: cfi_table.CfiTable, group: list[Fde]) -> int | None:
    """The first address two FDEs of `group` both cover where their rules differ."""
    first = group[0]
    for other in group[1:]:
        if _same_bytes(table, first, other):
            continue  # one CIE's rules, the same instructions: the same rows (most of them)
        a, b = _decode(table, first), _decode(table, other)
        lo, hi = max(a.start, b.start), min(a.end, b.end)
        points = sorted({lo, *(r.address for r in a.rows if lo < r.address < hi),
                         *(r.address for r in b.rows if lo < r.address < hi)})
        for address in points:
            if not _same(a.row_at(address), b.row_at(address)):
                return address
    return None


def _same_bytes(table: cfi_table.CfiTable, a: Fde, b: Fde) -> bool:
    """Whether two FDEs of one section that start together have equal CIEs and instructions
    (trailing DW_CFA_nop padding aside): then their rows are equal wherever both apply."""
    if a.section != b.section:
        return False
    section = table.section_named(a.section)
    ha, hb = section.reader.fde_head(a.offset), section.reader.fde_head(b.offset)
    if ha is None or hb is None:
        return False
    data = section.data
    if data[ha[4]:ha[5]].rstrip(b"\0") != data[hb[4]:hb[5]].rstrip(b"\0"):
        return False
    return ha[0] == hb[0] or section.reader.cie_bytes(ha[0]) == section.reader.cie_bytes(hb[0])


def _decode(table: cfi_table.CfiTable, fde: Fde) -> FrameDescription:
    """The FDE's rows, from the unwinder's cache when it has them; not kept otherwise (a
    check of every duplicate of a BOLTed libLLVM would keep a gigabyte of rows)."""
    section = table.section_named(fde.section)
    found = section.cache.get(fde.offset) or section.decode(fde.offset)
    assert found is not None  # every_fde lists FDEs only
    return found


def _same(a: Row | None, b: Row | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.cfa == b.cfa and a.rules == b.rules


# -- where GDB may choose another FDE -------------------------------------------------------------


class Contested:
    """Where more than one FDE of a binary covers an address: the merged ranges, sorted, and
    the FDEs that compete there (by start): where a debugger that reads every FDE may unwind
    with one we do not trust. Made from the FDE headers (no rules decoded), once per file, and
    kept in the cache directory beside the index (`contested-v2/`, the index store's format):
    a BOLTed libLLVM's 347,027 FDEs take seconds to scan, and GDB's unwinder asks in every
    session."""

    def __init__(self, los: array[int], his: array[int], fdes: cfi_table.EveryFde,
                 sections: bytes, names: list[str]) -> None:
        self.los, self.his = los, his
        self.fdes = fdes  # the competing FDEs alone
        self.sections, self.names = sections, names  # each one's section, by its index
        # others_differ's answers by address: a stale FDE of a big function takes milliseconds
        # to decode, and GDB asks again for each frame after every stop or cache flush.
        self.answers: dict[int, bool] = {}

    @classmethod
    def scan(cls, binary: Binary) -> Contested:
        los: list[int] = []
        his: list[int] = []
        members: list[tuple[int, int, int, int]] = []  # start, offset, end, section
        names = [section.name for section in cfi_table.table_for(binary).sections]
        for k, section in enumerate(cfi_table.table_for(binary).sections):
            every = section.every_fde()
            reach, reach_i = 0, -1
            for i, (start, end) in enumerate(zip(every.starts, every.ends, strict=True)):
                if start < reach:
                    lo, hi = start, min(end, reach)
                    if los and lo <= his[-1]:
                        his[-1] = max(his[-1], hi)
                    else:
                        los.append(lo)
                        his.append(hi)
                    for j in (reach_i, i):
                        members.append((every.starts[j], every.offsets[j], every.ends[j], k))
                if end > reach:
                    reach, reach_i = end, i
        members = sorted(set(members))
        ends = array("Q", (m[2] for m in members))
        return cls(array("Q", los), array("Q", his),
                   cfi_table.EveryFde("", array("Q", (m[0] for m in members)), ends,
                                array("Q", (m[1] for m in members)), cfi_table.reaches(ends)),
                   bytes(m[3] for m in members), names)

    @classmethod
    def none(cls) -> Contested:
        empty = array("Q")
        return cls(empty, empty, cfi_table.EveryFde("", empty, empty, empty, empty), b"", [])

    def __contains__(self, address: int) -> bool:
        i = bisect_right(self.los, address) - 1
        return i >= 0 and address < self.his[i]

    def __len__(self) -> int:
        return len(self.los)

    def covering(self, address: int) -> list[Fde]:
        """The competing FDEs that cover `address`."""
        f = self.fdes
        return [Fde(self.names[self.sections[i]], f.offsets[i], f.starts[i], f.ends[i])
                for i in f.covering(address)]


def stored_path(binary: Binary) -> str:
    """Where the binary's contested ranges are kept (`unsplit cache clear` removes it)."""
    key = binary.build_id.hex() if binary.build_id else \
        "path-" + os.path.realpath(binary.path).encode().hex()[-64:]
    return os.path.join(cache_root(), "contested-v2", key[:2], key[2:] + ".cfi")


_ARRAYS = ("los", "his", "starts", "ends", "offsets")


def _load(binary: Binary) -> tuple[Contested, int | None, int | None] | None:
    """The stored ranges, moved-fragment count and count of moved fragments without an FDE
    (None: not counted) of this very file."""
    try:
        with open(stored_path(binary), "rb") as f:
            head, arrays = store.decode(f.read())
    except (OSError, BadIndexFile):
        return None  # absent or damaged: scanned again, and written again
    moved, names, sections = head.get("moved"), head.get("sections"), arrays.get("sections")
    bare = head.get("uncovered")
    got = [arrays.get(name) for name in _ARRAYS]
    columns = [x for x in got if isinstance(x, array)]
    if head.get("source") != store.source_stamp(binary) or len(columns) != len(_ARRAYS) or \
            not isinstance(sections, bytes) or not isinstance(names, list) or \
            not all(isinstance(n, str) for n in names) or \
            not all(x is None or isinstance(x, int) for x in (moved, bare)):
        return None
    los, his, starts, ends, offsets = columns
    if len(los) != len(his) or not len(starts) == len(ends) == len(offsets) == len(sections) \
            or any(k >= len(names) for k in sections):
        return None
    every = cfi_table.EveryFde("", starts, ends, offsets, cfi_table.reaches(ends))
    return Contested(los, his, every, sections, names), moved, bare


def _save(binary: Binary, found: Contested, moved: int | None,
          bare: int | None = None) -> None:
    path = stored_path(binary)
    f = found.fdes
    data = store.encode({"source": store.source_stamp(binary), "module": binary.path,
                         "moved": moved, "uncovered": bare, "sections": found.names},
                        [("los", found.los), ("his", found.his), ("starts", f.starts),
                         ("ends", f.ends), ("offsets", f.offsets), ("sections", found.sections)])
    keep_if_writable(path, data)  # a read-only cache: scanned again next session


def _load_or_scan(binary: Binary) -> Contested:
    stored = _load(binary)
    if stored is not None:
        return stored[0]
    found = Contested.scan(binary)
    _save(binary, found, None)
    return found


_CONTESTED = PerFile(_load_or_scan)


def contested(binary: Binary) -> Contested:
    """The binary's :class:`Contested` ranges, made once and kept on it (and on disk)."""
    return _CONTESTED(binary)


def others_differ(binary: Binary, lookup: int) -> bool:
    """Whether an FDE other than the one we trust covers file address `lookup` (a pc, or a
    return address - 1) with other rules there: another unwinder's choice may then be wrong.
    Reads the kept competing FDEs, never the whole section. Raises DecodeError for CFI that
    does not decode."""
    found = contested(binary)
    if lookup not in found:
        return False
    known = found.answers.get(lookup)
    if known is None:
        known = found.answers[lookup] = _others_differ(binary, found, lookup)
    return known


def _others_differ(binary: Binary, found: Contested, lookup: int) -> bool:
    table = cfi_table.table_for(binary)
    trusted = table.fde_at(lookup)
    mine = None if trusted is None else trusted.row_at(lookup)
    for fde in found.covering(lookup):
        if trusted is not None and (fde.section, fde.offset) == (trusted.section,
                                                                 trusted.offset):
            continue
        if not _same(_decode(table, fde).row_at(lookup), mine):
            return True
    return False


# -- moved fragments ----------------------------------------------------------------------------


def uncovered(index: ModuleIndex, fragments: list[Fragment]) -> Iterator[Uncovered]:
    """Moved fragments whose code (from their start to their last byte that is not padding)
    the trusted FDEs do not describe: an unwinder then guesses (LLDB's assembly profiler,
    GDB's prologue analyser)."""
    binary = index.binary
    table = cfi_table.table_for(binary)
    for frag in fragments:
        at = frag.start
        while at < frag.end:
            head = table.head_at(at)
            if head is None:
                if not _padding(binary.code_bytes(at, frag.end - at), binary.machine):
                    yield Uncovered(frag, at)
                break
            at = head[3]


def _padding(code: bytes, machine: int) -> bool:
    """Bytes a linker or BOLT puts between functions: zeros, int3, nops."""
    return nops.padding(code, machine)


def rule_mismatches(index: ModuleIndex, fragments: list[Fragment], input_binary: Binary
                    ) -> Iterator[RuleMismatch]:
    """Where a moved fragment's CFA or return-address rule is not the input's at the address
    BAT maps it to: at the fragment's start and at each row its FDEs begin inside it."""
    out_table = cfi_table.table_for(index.binary)
    in_table = cfi_table.table_for(input_binary)
    for frag in fragments:
        for address, row, fde in _rows_in(out_table, frag):
            found = bat_source.input_offset(index.binary, address, input_binary)
            if found is None or found[2] is None:
                continue
            input_address = found[2] + found[1]
            in_fde = in_table.fde_at(input_address)
            in_row = None if in_fde is None else in_fde.row_at(input_address)
            if in_fde is None or in_row is None:
                continue  # the input has no CFI there either: nothing to compare with
            if row.cfa != in_row.cfa:
                yield RuleMismatch(frag, address, input_address, "CFA", row.cfa.describe(),
                                   in_row.cfa.describe())
            ra, in_ra = row.rules.get(fde.return_register), in_row.rules.get(
                in_fde.return_register)
            if ra != in_ra:
                yield RuleMismatch(frag, address, input_address, "return address",
                                   "unspecified" if ra is None else ra.describe(),
                                   "unspecified" if in_ra is None else in_ra.describe())


def _rows_in(table: cfi_table.CfiTable,
             frag: Fragment) -> Iterator[tuple[int, Row, FrameDescription]]:
    """(address, row, its FDE) at the fragment's start and wherever a row begins inside it."""
    at = frag.start
    while at < frag.end:
        fde = table.fde_at(at)
        if fde is None:
            return
        stop = min(fde.end, frag.end)
        for address in (at, *(r.address for r in fde.rows if at < r.address < stop)):
            row = fde.row_at(address)
            if row is not None:
                yield address, row, fde
        at = fde.end


def input_for_check(index: ModuleIndex, path: str) -> Binary:
    """The pre-BOLT input named by --input, verified against the output's BAT and build-id."""
    found = prebolt.set_input(index.binary, path)
    if found is None:
        raise UnsplitError(f"{path}: not the input of {index.binary.path}")
    return found


# -- the debugger's own unwinder, made exact where FDEs compete --------------------------------


class ModulePolicy(NamedTuple):
    """Whether a module's frames may need unsplit's unwinding (`bb exact-frames` says why):
    only a module with moved code whose FDEs compete for some address, or with moved
    fragments no FDE describes."""

    path: str
    moved: int  # moved fragments
    contested: int  # address ranges more than one FDE covers
    # Moved fragments whose start no trusted FDE covers (check-cfi's `uncovered` also finds
    # those an FDE covers in part; the policy is counted from the starts alone: making every
    # fragment's end on a BOLTed libLLVM costs several times the count).
    uncovered: int = 0

    @property
    def active(self) -> bool:
        return self.moved > 0 and (self.contested > 0 or self.uncovered > 0)


def stored_policy(binary: Binary) -> ModulePolicy | None:
    """The policy kept for this very file by an earlier :func:`module_policy` (None: not
    counted yet): read without the module's index, which a later session need not open for a
    module whose frames it only unwinds (libc's, under `main`)."""
    stored = _load(binary)
    if stored is None or stored[1] is None or stored[2] is None:
        return None
    _CONTESTED.set(binary, stored[0])
    moved = stored[1]
    return ModulePolicy(binary.path, moved, len(stored[0]) if moved else 0, stored[2])


def module_policy(index: ModuleIndex) -> ModulePolicy:
    """The module's policy; counted once per file and kept with its contested ranges (a
    BOLTed libLLVM's 89,233 moved fragments take two seconds to count)."""
    binary = index.binary
    stored = stored_policy(binary)
    if stored is not None:
        return stored
    starts = index.moved_starts()
    found = contested(binary) if starts else Contested.none()
    bare = 0
    if starts:  # (a module without moved code spares the decoding of its .eh_frame)
        table = cfi_table.table_for(binary)
        bare = sum(table.head_at(start) is None for start in starts)
    _save(binary, found, len(starts), bare)
    return ModulePolicy(binary.path, len(starts), len(found), bare)


def exact_needed(binary: Binary, file_pc: int, innermost: bool, uncovered: bool = False
                 ) -> bool:
    """Whether a frame at `file_pc` needs `bb bt`'s CFI step (cfi.step) to be exact: another
    unwinder may take another FDE than the trusted one there, with other rules; or, in a
    module with moved code no FDE describes (`uncovered`), no FDE covers it (cfi.step then
    takes the pre-BOLT input's rules, where it has them). Raises DecodeError for CFI that
    does not decode."""
    lookup = lookup_pc(file_pc, not innermost)
    if uncovered and cfi_table.table_for(binary).head_at(lookup) is None:
        return True
    return others_differ(binary, lookup)
