"""Fragment source for BOLTed binaries: procedures from ``.note.bolt_bat`` and BOLT's fragment
symbols (``shared/specs/bolt-bat.md`` §2, §3, §6.1). BOLT reorders blocks, so fragments are laid
end to end for ``logical_start`` (offsets stay unique) and the true input offset comes from
:func:`input_offset`."""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from unsplit.elf.binary import Binary
from unsplit.elf.dwarf_lines import DwarfLines
from unsplit.errors import AddressLookupError, DecodeError
from unsplit.formats import bat_scan
from unsplit.index.bolt import bat_translate, prebolt
from unsplit.index.model.records import (
    BatFacts,
    Block,
    Fragment,
    LineRow,
    Procedure,
    bolt_original_of,
    fragment_order,
)
from unsplit.index.sources import BaseSource

if TYPE_CHECKING:
    from unsplit.index.sources import StoredParts


class BatProcedures:
    """Procedures from BAT by address or name, each made on first use and kept; their blocks
    are decoded when first read (Procedure.blocks).

    BAT pairs each fragment with its input function by address, so procedures are told apart
    by their main fragment, never by name alone (two units' static ``helper`` may both be
    BOLTed). ``placed`` holds the fragment starts an earlier source placed (split_info): those
    fragments are left out, and a procedure whose main fragment is among them is not given."""

    def __init__(self, index: bat_translate.BatIndex) -> None:
        self.index = index
        self._made: dict[int, Procedure] = {}
        self.placed: set[int] = set()

    def __len__(self) -> int:
        return len(self.index.table.hot)

    def __iter__(self) -> Iterator[Procedure]:
        """Every procedure, in hot-table order (whole-module tools and tests)."""
        for hot in self.index.table.hot:
            if hot not in self.placed:
                yield self._procedure(hot)

    def spans(self) -> Iterator[tuple[str, str | None, list[tuple[int, int]]]]:
        """What :meth:`__iter__` gives, without making a Procedure per function: each
        procedure's name, its entry fragment's symbol and its fragments' [start, end), in
        BOLT's order (from BatIndex.all_fragments, made once)."""
        frags = self.index.all_fragments()
        starts, ends, kinds, symbols = frags.starts, frags.ends, frags.kinds, frags.symbols
        parents, placed = frags.parents, self.placed
        split: dict[int, list[int]] = {}  # a main fragment's split ones, by address
        for k, (start, parent) in enumerate(zip(starts, parents, strict=True)):
            if start != parent:
                split.setdefault(parent, []).append(k)
        for hot in self.index.table.hot:
            if hot in placed:
                continue
            k = bisect_left(starts, hot)
            siblings = split.get(hot)
            if siblings is None:
                yield frags.procedures[hot], symbols[k], [(hot, ends[k])]
                continue
            children = [c for c in siblings if starts[c] not in placed] if placed else siblings
            if len(children) > 1 and any(kinds[c] is not None for c in children):
                children = sorted(children, key=lambda c: _order(
                    kinds[c] or f"cold.{siblings.index(c)}", starts[c]))
            yield (frags.procedures[hot], symbols[k],
                   [(hot, ends[k]), *[(starts[c], ends[c]) for c in children]])

    def unnamed_fragments(self, skip: set[int]) -> Iterator[tuple[str, int, int, bool]]:
        """:meth:`spans`' fragments the module has no symbol of their procedure's name for,
        as (procedure name, start, end, whether moved): every moved one, and each entry
        fragment without a symbol; procedures whose entry is in ``skip`` left out. One pass
        over BatIndex.all_fragments' columns in address order, without a list per procedure
        (the names file of a BOLTed libLLVM: 218k fragments)."""
        frags = self.index.all_fragments()
        starts, ends, parents, symbols = frags.starts, frags.ends, frags.parents, frags.symbols
        procedures, placed = frags.procedures, self.placed
        leave_out = skip | placed
        for k, (start, parent) in enumerate(zip(starts, parents, strict=True)):
            if leave_out and (parent in leave_out or start in placed):
                continue
            if start != parent:
                yield procedures[parent], start, ends[k], True
            elif symbols[k] is None:
                yield procedures[parent], start, ends[k], False

    def places(self, start: int) -> bool:
        """Whether one of BAT's procedures has a fragment starting at ``start``: a later
        source's fragment there is left out (ModuleIndex._merge_sources)."""
        parent = self.index.table.parent_of(start)
        return parent is not None and parent not in self.placed and start not in self.placed

    def at(self, address: int) -> tuple[Procedure, Fragment] | None:
        """The procedure and fragment holding ``address``, or None outside BAT's fragments."""
        info = self.index.fragment_at(address)
        if info is None or info.start in self.placed or info.parent in self.placed:
            return None
        proc = self._procedure(info.parent)
        frag = next((f for f in proc.fragments if f.start == info.start), None)
        return None if frag is None else (proc, frag)

    def at_entry(self, entry: int) -> Procedure | None:
        """The procedure whose main fragment starts at ``entry``, or None."""
        if self.index.table.parent_of(entry) != entry or entry in self.placed:
            return None
        return self._procedure(entry)

    def get(self, name: str) -> Procedure | None:
        """The procedure of the first main fragment of that name (as the index names them)."""
        hot = self.index.procedures.get(name)
        return None if hot is None or hot in self.placed else self._procedure(hot)

    def all_named(self, name: str) -> list[Procedure]:
        """Every procedure of that name, in address order of their main fragments."""
        return [self._procedure(hot) for hot in sorted(self.index.hots_named(name))
                if hot not in self.placed]

    def names(self) -> list[str]:
        return list(self.index.procedures)

    def moved_fragments(self) -> list[Fragment]:
        """Every fragment that is not its procedure's entry (for unwinders), made without
        keeping a Procedure per function."""
        out: list[Fragment] = []
        for parent, infos in self.index.split_procedures():
            if parent in self.placed:
                continue
            proc = self._made.get(parent)
            frags = proc.fragments if proc is not None else _fragments(
                sorted(infos, key=lambda f: _order(f.name, f.start)))
            out.extend(f for f in frags[1:] if f.start not in self.placed)
        return out

    def moved_starts(self) -> list[int]:
        """The starts of moved_fragments, without making fragments (no names, no ends: what
        the LLDB CFI symbol file needs; 89k fragments of a BOLTed libLLVM in a tenth of the
        time). A split fragment is never its procedure's first (BOLT's order: hot first)."""
        return list(self._moved_starts())

    def has_moved(self) -> bool:
        """Whether moved_starts has any, found at the first: listing them all is in the way of a
        big module's names file."""
        return next(self._moved_starts(), None) is not None

    def _moved_starts(self) -> Iterator[int]:
        table = self.index.table
        placed = self.placed
        parents = table.split_parents()
        children = table.split_fragments
        done: set[int] = set()
        for parent in parents:
            if parent in done or parent in placed:
                continue
            done.add(parent)
            yield from (a for a in children(parent) if a not in placed)

    def _procedure(self, hot: int) -> Procedure:
        proc = self._made.get(hot)
        if proc is None:
            proc = _procedure(self.index, hot)
            if self.placed and any(f.start in self.placed for f in proc.fragments):
                proc.fragments = [f for f in proc.fragments if f.start not in self.placed]
            self._made[hot] = proc
        return proc


def input_offset(
    binary: Binary, file_address: int, input_binary: Binary | None = None
) -> tuple[str, int, int | None] | None:
    """(procedure, input offset, input function address) of a BOLTed output address.

    The input offset follows BOLT's own rule (spec §3.2). The input function address is the
    procedure's address in the pre-BOLT binary: ``input_binary`` if given, else the one
    :func:`unsplit.index.bolt.prebolt.input_for` finds or was told; None when there is none. None
    overall when the address is not in code BAT describes (including lite-mode functions
    BOLT left unchanged).
    """
    try:
        index = bat_translate.load(binary)
    except DecodeError:
        return None
    tr = None if index is None else index.translate(file_address)
    if tr is None:
        return None
    if input_binary is None:
        input_binary = prebolt.input_for(binary)
    address = None if input_binary is None else prebolt.function_address(
        input_binary, tr.procedure, prebolt.output_unit(binary, tr.procedure, tr.parent_address))
    return tr.procedure, tr.input_offset, address


def _order(name: str, start: int) -> tuple[int, int, int]:
    """hot, then warm, then cold, then cold.0, cold.1, ... (BOLT's FragmentNum order)."""
    return (*fragment_order(name), start)


def _procedure(index: bat_translate.BatIndex, hot: int) -> Procedure:
    infos = sorted(index.fragments_at(hot), key=lambda f: _order(f.name, f.start))

    def load_blocks() -> list[Block]:
        return [b for info in infos for b in _blocks(index, info)]

    return Procedure(infos[0].procedure, _fragments(infos), load_blocks=load_blocks)


def _fragments(infos: list[bat_translate.FragmentInfo]) -> list[Fragment]:
    """A procedure's fragments laid end to end in BOLT's order (see the module docstring)."""
    fragments: list[Fragment] = []
    logical = 0
    for info in infos:
        fragments.append(
            Fragment(
                procedure=info.procedure,
                name=info.name,
                start=info.start,
                end=info.end,
                symbol=info.symbol,
                logical_start=logical,
                source="bat",
            )
        )
        logical += info.end - info.start
    return fragments


def _blocks(index: bat_translate.BatIndex, info: bat_translate.FragmentInfo) -> list[Block]:
    """Output basic blocks from BB entries: each runs to the next BB entry or the fragment end.

    Block ids are the input block indices when encoded (LLVM 19+), else the entry ordinal.
    Deleted-block entries (keyed at the fragment end, spec §2.3) give no block.
    """
    m = index.table.maps[info.start]
    starts = [
        (m.output_offsets[i], int(m.bb_indices[i]) if m.bb_present else i)
        for i in range(len(m))
        if not m.input_values[i] & 1
    ]
    out = []
    size = info.end - info.start
    for k, (off, ident) in enumerate(starts):
        nxt = starts[k + 1][0] if k + 1 < len(starts) else size
        if off < min(nxt, size):
            out.append(Block(ident, info.start + off, info.start + min(nxt, size)))
    return out


_EM_X86_64 = 62


class BatSource(BaseSource):
    """BOLT address translation as a Source: BAT's procedures (a lazy set), and, for the code
    it describes, the pre-BOLT input's lines at the input address BAT gives (BOLT drops DWARF
    unless asked to update it), with the facts `bb where` shows (spec §3.1, §3.2).

    ``stored``: the persistent index's parts (the note's scan, read again a record at a time);
    ``fragment_at``: the index's fragment look-up (lite mode's unmoved functions, §3.5);
    ``warnings``: where the input's DWARF reports what it cannot read."""

    name = "bat"

    def __init__(self, binary: Binary, stored: StoredParts | None = None,
                 fragment_at: Callable[[int], Fragment | None] | None = None,
                 warnings: list[str] | None = None) -> None:
        super().__init__(binary)
        self._stored = stored
        self.fragment_at = fragment_at
        self.warnings = [] if warnings is None else warnings
        self._read: tuple[BatProcedures | None, DecodeError | None] | None = None
        self._input_lines: DwarfLines | None = None
        self._same_as_input: dict[tuple[str, int], bool] = {}  # (input, fragment) -> unmoved?

    def procedures(self) -> BatProcedures | list[Procedure]:
        """The procedures of every input function BAT has a map for (source="bat"), made one
        at a time when asked for (a BOLTed libLLVM has 129k); [] for a malformed note (the
        symbols then still name the fragments: one bad note never breaks a session)."""
        found = self._note()[0]
        return [] if found is None else found

    def problems(self) -> list[str]:
        bad = self._note()[1]  # the note is ignored; symbols alone still name fragments
        return [] if bad is None else [f"BOLT address translation ignored: {bad}"]

    @property
    def found(self) -> BatProcedures | None:
        """BAT's procedures, None without a usable note."""
        read = self._read
        return (read if read is not None else self._note())[0]

    def _note(self) -> tuple[BatProcedures | None, DecodeError | None]:
        """The note read once, from the persistent index's scan when there is one: its
        procedures, or the DecodeError that made it unusable."""
        if self._read is None:
            self._read = self._read_note()
        return self._read

    def _read_note(self) -> tuple[BatProcedures | None, DecodeError | None]:
        stored = self._stored
        index = None
        if stored is not None and stored.bat_scan is not None:
            try:
                index = bat_translate.load_from_scan(self.binary, stored.bat_scan,
                                                     stored.bat_symbol_order)
            except DecodeError:
                index = None  # read the note itself, which says what is wrong
            else:
                return (None if index is None or not index.table.hot
                        else BatProcedures(index)), None
        try:
            index = bat_translate.load(self.binary)
        except DecodeError as e:
            return None, e
        return (None if index is None or not index.table.hot else BatProcedures(index)), None

    def stored_scan(self) -> tuple[bat_scan.BatScan | None, array[int] | None]:
        """The note's scan and the symbol order the persistent index keeps (None, None when
        BAT gave no procedures or was decoded whole)."""
        if self.found is None:
            return None, None
        maps = self.found.index.table.maps
        if not isinstance(maps, bat_scan.LazyMaps):
            return None, None
        return maps.scan, self.found.index.symbol_order()

    # -- BOLTed code: input addresses and lines ----------------------------------------------

    def input_binary(self) -> Binary | None:
        return None if self.found is None else prebolt.input_for(self.binary)

    def input_location(self, file_address: int) -> tuple[str, int, int | None] | None:
        """(procedure, input offset, input function address) for BOLTed code, else None."""
        if self.found is None:
            return None
        return input_offset(self.binary, file_address)

    def has_lines(self) -> bool:
        return self.found is not None

    def lines_now(self) -> bool:
        lines = self._lines() if self.found is not None else None
        return lines is not None and lines.available

    def _lines(self) -> DwarfLines | None:
        """The input's DWARF lines (made again when `bb input` named another input)."""
        input_binary = self.input_binary()
        if input_binary is None:
            return None
        if self._input_lines is None or self._input_lines.binary is not \
                (input_binary.dwarf_binary or input_binary):
            self._input_lines = DwarfLines(input_binary, self.warnings,
                                           f"pre-BOLT {input_binary.path}: ")
        return self._input_lines

    def line_at(self, file_address: int) -> LineRow | None:
        return self._line(file_address, False)

    def line_as_gdb(self, file_address: int) -> LineRow | None:
        """line_at as GDB reads the input's rows: past a line-0 row (DwarfLines.line_as_gdb)."""
        return self._line(file_address, True)

    def _line(self, file_address: int, as_gdb: bool) -> LineRow | None:
        input_address = self.input_address(file_address)
        lines = None if input_address is None else self._lines()
        if lines is None or input_address is None:
            return None
        row = lines.line_as_gdb(input_address) if as_gdb else lines.lookup(input_address)
        return None if row is None else row.moved(file_address, "bat")

    def lines_in(self, start: int, end: int) -> list[LineRow]:
        """The pre-BOLT rows of each BAT-described piece of the fragment at `start`, carried
        to where the piece is now (by address).

        A row at input offset X is carried from the anchor (a block start or a BAT entry)
        whose run holds it: the anchor's input offset is the greatest entry offset <= X. From
        any other anchor the offset would be interpolated across code BOLT moved or
        re-encoded (a branch grown from rel8 to rel32), into the middle of an instruction."""
        at = None if self.found is None else self.found.at(start)
        lines = None if at is None else self._lines()
        if at is None or lines is None:
            return []
        proc = at[0]
        entry_outputs, entry_inputs = self._entries(proc)
        anchors = sorted({b.start for b in proc.blocks if start <= b.start < end} | {start}
                         | {a for a in entry_outputs if start <= a < end})
        out: set[LineRow] = set()
        for k, anchor in enumerate(anchors):
            found = self.input_location(anchor)
            if found is None or found[2] is None:
                continue
            offset, function = found[1], found[2]
            stop = anchors[k + 1] if k + 1 < len(anchors) else end
            i = bisect_right(entry_inputs, offset)
            run_end = entry_inputs[i] if i < len(entry_inputs) else offset + (stop - anchor)
            size = min(stop - anchor, run_end - offset)
            for row in lines.rows_in(function + offset, function + offset + size):
                out.add(row._replace(address=anchor + row.address - function - offset))
        return sorted(out, key=lambda r: r.address)

    def line_starts(self, file: str, line: int) -> set[int]:
        """The pre-BOLT binary's rows where file:line begins, carried to the output through
        BAT (every place BOLT put that code: it may duplicate it)."""
        input_binary = self.input_binary()
        lines = self._lines()
        if input_binary is None or lines is None:
            return set()
        functions = sorted(input_binary.functions, key=lambda f: f.value)
        starts = [f.value for f in functions]
        out: set[int] = set()
        for row in lines.statements(file, line):
            i = bisect_right(starts, row.address) - 1
            if i < 0 or row.address >= functions[i].value + functions[i].size:
                continue
            f = functions[i]
            placement = bat_translate.placements(self.binary, f.name, row.address - f.value)
            if placement is not None:
                out.update(s.address for s in placement.sites)
            elif self._kept_in_place(f.name, f.value, f.size):
                out.add(row.address)  # lite mode left the function alone: its own address
        return out

    def _kept_in_place(self, name: str, address: int, size: int) -> bool:
        """Whether the output has input function `name` at the same address with the same size
        (what BOLT did not touch: lite mode's unprofiled functions, spec §2.3, §3.5)."""
        ours = self.binary.function_at(name, address)
        return ours is not None and ours.size == size

    def change_points(self, start: int, end: int) -> list[int] | None:
        """Where line_at's answer may change in the fragment [start, end). Code BOLT left where
        it was: the input's rows there. Code BOLT moved: each BAT anchor and the byte after it
        (an exact translation becomes an extrapolated one), each byte of a jump opcode BOLT may
        have inserted and the byte after it, and the input's rows carried along each anchor's
        run (spec §3.2: the input offset grows with the output one). None when it cannot say."""
        input_binary = self.input_binary()
        lines = None if input_binary is None else self._lines()
        if input_binary is None or lines is None:
            return []  # no line anywhere
        found = self.input_location(start)
        if found is None:
            return None if self._unmoved(start, input_binary) is None else \
                lines.change_points(start, end)
        index = bat_translate.load(self.binary)
        frag = None if index is None else index.fragment_at(start)
        if index is None or frag is None or frag.start != start or frag.end < end:
            return None
        points = {start}
        if found[2] is None:
            return [start]  # the input function is unknown: no line anywhere
        outs = sorted({start + int(o) for o in index.table.maps[start].output_offsets
                       if start + int(o) < end} | {start})
        for k, anchor in enumerate(outs):
            run_end = outs[k + 1] if k + 1 < len(outs) else end
            points.update((anchor, anchor + 1))
            at = self.input_location(anchor)
            if at is None or at[2] is None:
                return None
            first = at[2] + at[1]
            theirs = lines.change_points(first, first + run_end - anchor)
            if theirs is None:
                return None
            points.update(anchor + p - first for p in theirs)
        if self.binary.machine == _EM_X86_64:
            for address in range(start, end):  # what _inserted_jump looks at
                if self.binary.code_byte(address) in (0xE9, 0xEB):
                    points.update((address, address + 1))
        return sorted(p for p in points if start <= p < end)

    def next_line(self, file: str, line: int) -> int | None:
        """The first line of `file` after `line` in the pre-BOLT binary's DWARF."""
        lines = self._lines() if self.input_binary() is not None else None
        return None if lines is None else lines.next_line(file, line)

    def _entries(self, proc: Procedure) -> tuple[set[int], list[int]]:
        """The BAT entries of `proc`'s fragments: their output addresses, and their input
        offsets (sorted), where BOLT's mapping from input to output code starts a new run."""
        assert self.found is not None
        maps = self.found.index.table.maps
        outputs: set[int] = set()
        inputs: set[int] = set()
        for frag in proc.fragments:
            m = maps.get(frag.start)
            if m is None:
                continue
            outputs.update(frag.start + int(o) for o in m.output_offsets)
            inputs.update(int(v) >> 1 for v in m.input_values)
        return outputs, sorted(inputs)

    def input_address(self, file_address: int) -> int | None:
        """The address in the pre-BOLT binary whose line (and inlined frames) BOLT's own
        line table gives ``file_address``; None without BAT, an input binary or a translation."""
        input_binary = self.input_binary()
        if input_binary is None:
            return None
        found = self.input_location(file_address)
        if found is None:
            original = self._original_entry(file_address, input_binary)
            return self._unmoved(file_address, input_binary) if original is None else original
        if found[2] is None:
            return None
        if self._inserted_jump(file_address):
            # BOLT rebuilds unconditional jumps when it lays blocks out: they come from no input
            # instruction (BAT has no entry for them, spec §2.3) and BOLT's own line table
            # continues the row of the code before them. So do we: that code is the branch BAT
            # anchors (whose size BOLT may have changed: jne rel8 -> rel32), or else the byte
            # before is the last byte of an input instruction translated from the same anchor.
            anchor = self._branch_right_before(file_address)
            before = self.input_location(file_address - 1 if anchor is None else anchor)
            return None if before is None or before[2] is None else before[2] + before[1]
        return found[2] + found[1]

    def _inserted_jump(self, file_address: int) -> bool:
        """An x86-64 ``jmp rel32``/``jmp rel8`` with no BAT entry of its own (spec §2.3: every
        control-flow instruction BOLT kept from the input has a branch entry)."""
        tr = bat_translate.translate(self.binary, file_address)
        if tr is None or tr.exact or self.binary.machine != _EM_X86_64:
            return False
        return self.binary.code_byte(file_address) in (0xE9, 0xEB)

    def _branch_right_before(self, file_address: int) -> int | None:
        """The anchor of ``file_address`` if it is a conditional jump ending right there: a
        branch entry, or a block entry when the jump is its block's first instruction (BAT then
        keeps the block entry alone, spec §2.3)."""
        tr = bat_translate.translate(self.binary, file_address)
        if tr is None:
            return None
        first = self.binary.code_byte(tr.anchor_output)
        size = 2 if first is not None and 0x70 <= first <= 0x7F else None
        if first == 0x0F:
            second = self.binary.code_byte(tr.anchor_output + 1)
            size = 6 if second is not None and 0x80 <= second <= 0x8F else None
        return tr.anchor_output if size == file_address - tr.anchor_output else None

    def _original_entry(self, file_address: int, input_binary: Binary) -> int | None:
        """Code of BOLT's patched original of a function (``foo.org.0``: a jump at foo's input
        address to foo's new code, which BAT does not describe) stands for foo's entry in the
        pre-BOLT input, as llvm-symbolizer-22 on the input names that address: its address."""
        frag = None if self.fragment_at is None else self.fragment_at(file_address)
        if frag is None or frag.symbol is None:
            return None
        base = bolt_original_of(frag.symbol)
        found = None if base is None else input_binary.function_at(base, frag.start)
        return None if found is None else found.value

    def _unmoved(self, file_address: int, input_binary: Binary) -> int | None:
        """Code BAT does not describe in a BOLTed binary is the input's own, unchanged, when the
        function symbol around it has the same name, address and size in the input (lite mode
        leaves unprofiled functions in place, spec §2.3, §3.5)."""
        frag = None if self.fragment_at is None else self.fragment_at(file_address)
        if frag is None or frag.symbol is None:
            return None
        key = (input_binary.path, frag.start)  # asked for every byte of a function: once each
        same = self._same_as_input.get(key)
        if same is None:
            unit = prebolt.output_unit(self.binary, frag.symbol, frag.start)  # same-named statics
            theirs = prebolt.function_address(input_binary, frag.symbol, unit)
            ours = self.binary.function_at(frag.symbol, frag.start)
            mine = None if theirs is None else input_binary.function_at(frag.symbol, theirs)
            same = self._same_as_input[key] = ours is not None and mine is not None and (
                ours.value, ours.size) == (mine.value, mine.size)
        return file_address if same else None

    def facts(self, file_address: int) -> BatFacts | None:
        """BAT's translation of one BOLTed address (spec §3.1, §3.2)."""
        found = self.found
        tr = None if found is None else found.index.translate(file_address)
        if tr is None:
            return None
        return BatFacts(tr.input_offset, "branch" if tr.is_branch else "block",
                        file_address - tr.anchor_output, tr.bb_index,
                        tr.fragment.split(".")[0])

    def addresses_of(self, procedure: Procedure, offset: int) -> list[int] | None:
        """Every place BOLT put input offset `offset` of `procedure` (it may duplicate code;
        spec §3.2 inverted); None where BAT does not know the procedure (lite mode left it)."""
        found = self.found
        if found is None or not any(f.source == self.name for f in procedure.fragments):
            return None
        placement = found.index.placements(procedure.name, offset)
        if placement is None:
            return None
        if not placement.sites:
            raise AddressLookupError(placement.describe())
        return [s.address for s in placement.sites]
