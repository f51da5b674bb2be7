"""The index of one binary: which procedure and fragment holds an address, and what a procedure
is made of. Built once per binary from every fragment source (unsplit.sources), then answered by
bisection over a sorted array of fragment starts.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace

from . import bat_translate, prebolt
from .binary import Binary, FunctionSymbol
from .errors import AddressLookupError, UnsplitError
from .lines import DwarfLines
from .model import HOT, Block, Fragment, LineRow, Location, Procedure
from .sources import bat as bat_source
from .sources import bb_addr_map as bb_addr_map_source
from .sources import registered
from .sources import split_info as split_info_source
from .sources import symbols as symbols_source
from .sources.split_info import EslLines

LineSource = Callable[[int], LineRow | None]


class ModuleIndex:
    """Procedures, fragments and lines of one ELF file (file addresses throughout)."""

    def __init__(self, binary: Binary) -> None:
        self.binary = binary
        self.sources_used: list[str] = []
        self.warnings: list[str] = []
        self._input_lines: DwarfLines | None = None
        merged = self._merge_sources()
        bad_bat = bat_source.problem(binary)
        if bad_bat is not None:  # the note is ignored; symbols alone still name fragments
            self.warnings.append(f"BOLT address translation ignored: {bad_bat}")
        owned = sorted(
            ((f, p) for p in merged.values() for f in p.fragments),
            key=lambda fp: (fp[0].start, -fp[0].end),
        )
        self._starts = array("Q", (f.start for f, _ in owned))
        self._fragments = [f for f, _ in owned]
        self._owners = [p for _, p in owned]  # names repeat (static functions): keep the object
        by_name: dict[str, Procedure] = {}
        for proc in merged.values():
            by_name.setdefault(proc.name, proc)
        self.procedures = ProcedureTable(
            by_name, [f for f in symbols_source.plain(binary) if (f.name, f.value) not in merged],
            lambda address: bb_addr_map_source.blocks_at(binary, address))
        self.dwarf_lines = DwarfLines(binary)
        self.line_sources = self._line_sources()

    @classmethod
    def open(cls, path: str) -> ModuleIndex:
        return cls(Binary(path))

    def _line_sources(self) -> list[LineSource]:
        """Most precise first: ESL programs, the binary's DWARF, then for BOLTed code the
        pre-BOLT binary's DWARF through BAT (BOLT drops DWARF unless asked to update it)."""
        out: list[LineSource] = []
        try:
            esl = EslLines(self.binary)
            if esl.available:
                out.append(esl.lookup)
        except UnsplitError as e:
            self.warnings.append(str(e))
        out.append(self.dwarf_lines.lookup)
        if "bat" in self.sources_used:
            out.append(self._bat_line)
        return out

    def _bat_line(self, file_address: int) -> LineRow | None:
        input_binary = prebolt.input_for(self.binary)
        input_address = self.bat_input_address(file_address)
        if input_binary is None or input_address is None:
            return None
        if self._input_lines is None or self._input_lines.binary is not \
                (input_binary.dwarf_binary or input_binary):
            self._input_lines = DwarfLines(input_binary)
        row = self._input_lines.lookup(input_address)
        return None if row is None else replace(row, address=file_address, source="bat")

    def bat_input_address(self, file_address: int) -> int | None:
        """The address in the pre-BOLT binary whose line (and inlined frames) BOLT's own
        line table gives ``file_address``; None without BAT, an input binary or a translation."""
        input_binary = None if "bat" not in self.sources_used else prebolt.input_for(self.binary)
        if input_binary is None:
            return None
        found = self.input_location(file_address)
        if found is None:
            input_address = self._unmoved(file_address, input_binary)
        elif found[2] is None:
            return None
        elif self._inserted_jump(file_address):
            # BOLT rebuilds unconditional jumps when it lays blocks out: they come from no input
            # instruction (BAT has no entry for them, spec §2.3) and BOLT's own line table
            # continues the row of the code before them. So do we: that code is the branch BAT
            # anchors (whose size BOLT may have changed: jne rel8 -> rel32), or else the byte
            # before is the last byte of an input instruction translated from the same anchor.
            anchor = self._branch_right_before(file_address)
            before = self.input_location(file_address - 1 if anchor is None else anchor)
            input_address = None if before is None or before[2] is None \
                else before[2] + before[1]
        else:
            input_address = found[2] + found[1]
        return input_address

    def _inserted_jump(self, file_address: int) -> bool:
        """An x86-64 ``jmp rel32``/``jmp rel8`` with no BAT entry of its own (spec §2.3: every
        control-flow instruction BOLT kept from the input has a branch entry)."""
        tr = bat_translate.translate(self.binary, file_address)
        if tr is None or tr.exact or self.binary.elf["e_machine"] != "EM_X86_64":
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

    def _unmoved(self, file_address: int, input_binary: Binary) -> int | None:
        """Code BAT does not describe in a BOLTed binary is the input's own, unchanged, when the
        function symbol around it has the same name, address and size in the input (lite mode
        leaves unprofiled functions in place, spec §2.3, §3.5)."""
        frag = self.fragment_at(file_address)
        if frag is None or frag.symbol is None:
            return None
        unit = prebolt.output_unit(self.binary, frag.symbol, frag.start)  # same-named statics
        theirs = prebolt.function_address(input_binary, frag.symbol, unit)
        ours = self.binary.function_at(frag.symbol, frag.start)
        mine = None if theirs is None else input_binary.function_at(frag.symbol, theirs)
        if ours is None or mine is None or (ours.value, ours.size) != (mine.value, mine.size):
            return None
        return file_address

    def esl_statements(self, file: str, line: int) -> list[LineRow]:
        """ESL rows where file:line begins (the first row of each run of that line)."""
        out: list[LineRow] = []
        previous: LineRow | None = None
        for row in self._esl_rows():
            if row.line == line and (file in (row.file, row.path)
                                     or row.file.endswith("/" + file)) and not (
                    previous is not None and previous.line == line
                    and previous.file == row.file):
                out.append(row)
            previous = row
        return out

    def _esl_rows(self) -> list[LineRow]:
        if ".split_info" not in self.binary._section_index:
            return []
        return split_info_source.line_rows(self.binary)

    def input_location(self, file_address: int) -> tuple[str, int, int | None] | None:
        """(procedure, input offset, input function address) for BOLTed code, else None."""
        if "bat" not in self.sources_used:
            return None
        return bat_source.input_offset(self.binary, file_address)

    def _merge_sources(self) -> dict[tuple[str, int], Procedure]:
        """Procedures by (name, entry): two units' static functions may share a name. A later
        source's procedure keeps only the fragments no earlier source placed (BAT pairs a
        fragment with its input function; a name-based source might pair it with another)."""
        merged: dict[tuple[str, int], Procedure] = {}
        placed: set[int] = set()
        for name, fn in registered():
            try:
                found = fn(self.binary)
            except UnsplitError as e:  # one bad section must not hide what the others know
                self.warnings.append(f"{name}: {e}")
                continue
            if found:
                self.sources_used.append(name)
            mine: set[int] = set()
            for proc in found:
                key = (proc.name, proc.entry)
                have = merged.get(key)
                if have is None:
                    kept = [f for f in proc.fragments if f.start not in placed]
                    if len(kept) < len(proc.fragments) and kept[:1] == proc.fragments[:1]:
                        proc = Procedure(proc.name, kept, proc.blocks)
                    if kept[:1] == proc.fragments[:1]:
                        merged[key] = proc
                        mine.update(f.start for f in proc.fragments)
                elif not have.blocks and proc.blocks:
                    have.blocks = proc.blocks
            placed |= mine
        return merged

    # -- questions ----------------------------------------------------------------------

    def fragment_at(self, address: int) -> Fragment | None:
        """The innermost fragment that contains file address `address`."""
        found = self._lookup(address)
        return None if found is None else found[1]

    def _lookup(self, address: int) -> tuple[Procedure, Fragment] | None:
        i = bisect_right(self._starts, address) - 1
        # Fragments may nest (an alias symbol over a range); walk back to one that contains it.
        while i >= 0:
            frag = self._fragments[i]
            if frag.contains(address):
                return self._owners[i], frag
            if address - frag.start > 1 << 24:  # far past any plausible enclosing fragment
                break
            i -= 1
        proc = self.procedures.plain_at(address)
        return None if proc is None else (proc, proc.fragments[0])

    def moved_fragments(self) -> list[Fragment]:
        """Every fragment that is not its procedure's entry, in address order: code entered by
        a jump from elsewhere in its procedure, which unwinders must not take for a function
        start."""
        return [f for f, p in zip(self._fragments, self._owners, strict=True)
                if p.fragments[0] is not f]

    def all_procedures(self) -> Iterator[Procedure]:
        """Every procedure once, by object (two statics may share a name): those a fragment
        source knows, then each one-piece function of the symbol table."""
        seen: set[int] = set()
        for proc in self._owners:
            if id(proc) not in seen:
                seen.add(id(proc))
                yield proc
        yield from self.procedures.plain()

    def procedure_at(self, address: int) -> Procedure | None:
        """The procedure whose code holds file address ``address`` (not looked up by name)."""
        found = self._lookup(address)
        return None if found is None else found[0]

    def procedure(self, name: str) -> Procedure:
        proc = self.procedures.get(name)
        if proc is None:
            raise AddressLookupError(f"no procedure named {name!r} in {self.binary.path}")
        return proc

    def line_at(self, address: int) -> LineRow | None:
        """The best line row for `address`; line 0 ("no source") lets the next source answer."""
        for source in self.line_sources:
            row = source(address)
            if row is not None and row.line:
                return row
        return None

    def locate(self, file_address: int, bias: int = 0, *, lines: bool = True) -> Location:
        """What `bb where` says of an address; `bias` turns file addresses into runtime ones.
        `lines=False` skips the line look-up: naming a frame needs none, and the first line
        question in a module with big DWARF (libc's debug file) costs a scan of its CUs."""
        found = self._lookup(file_address)
        row = self.line_at(file_address) if lines else None
        module = self.binary.path
        if found is None:
            return Location(bias + file_address, file_address, module, None,
                            file=row.file if row else None, line=row.line if row else None,
                            column=row.column if row else None, path=row.path if row else None,
                            warnings=tuple(self.warnings))
        proc, frag = found
        offset = frag.logical_start + file_address - frag.start
        if frag.source == "split_info":  # a piece may hold branches: §1's exact mapping
            exact = split_info_source.logical_offset(self.binary, file_address)
            offset = offset if exact is None else exact
        input_address = None
        bat_facts: dict[str, object] = {}
        bolted = self.input_location(file_address)
        if bolted is not None:  # BOLT: the offset in the input function, as BAT says
            offset = bolted[1]
            input_address = None if bolted[2] is None else bolted[2] + bolted[1]
            bat_facts = self._bat_facts(file_address)
        return Location(
            address=bias + file_address,
            file_address=file_address,
            module=module,
            procedure=proc.name,
            fragment=frag.name,
            fragment_symbol=frag.symbol,
            fragment_start=bias + frag.start,
            offset=offset,
            input_address=input_address,
            file=row.file if row else None,
            line=row.line if row else None,
            column=row.column if row else None,
            path=row.path if row else None,
            block=proc.block_at(file_address),
            sources=(frag.source,) + ((row.source,) if row else ()),
            warnings=tuple(self.warnings),
            **bat_facts,  # type: ignore[arg-type]
        )

    def _bat_facts(self, file_address: int) -> dict[str, object]:
        """Location fields from BAT's translation of one BOLTed address (spec §3.1, §3.2)."""
        tr = bat_translate.translate(self.binary, file_address)
        if tr is None:
            return {}
        return {
            "input_offset": tr.input_offset,
            "bat_entry": "branch" if tr.is_branch else "block",
            "bat_entry_distance": file_address - tr.anchor_output,
            "bat_block": tr.bb_index,
            "fragment_kind": tr.fragment.split(".")[0],
        }


class ProcedureTable(Mapping[str, Procedure]):
    """Procedures by name: the split ones (and any a precise source knows) as objects, functions
    in one piece as sorted arrays, made into a Procedure only when asked for."""

    def __init__(self, known: dict[str, Procedure], plain: list[FunctionSymbol],
                 blocks_at: Callable[[int], list[Block] | None] | None = None) -> None:
        self._known = known
        self._blocks_at = blocks_at  # a one-piece function's blocks, by its start
        plain = sorted(plain, key=lambda f: f.value)
        self._starts = array("Q", (f.value for f in plain))
        self._ends = array("Q", (f.value + f.size for f in plain))
        self._names = [f.name for f in plain]
        self._by_name: dict[str, int] | None = None
        self._made: dict[int, Procedure] = {}

    def _make(self, i: int) -> Procedure:
        proc = self._made.get(i)
        if proc is None:
            name, start, end = self._names[i], self._starts[i], self._ends[i]
            blocks_at = self._blocks_at
            load = None if blocks_at is None else (lambda: blocks_at(start) or [])
            proc = Procedure(name, [Fragment(name, HOT, start, end, name, 0, "symbols")],
                             load_blocks=load)
            self._made[i] = proc
        return proc

    def plain(self) -> Iterator[Procedure]:
        """Every one-piece function, in address order (made as they are asked for)."""
        for i in range(len(self._names)):
            yield self._make(i)

    def plain_at(self, address: int) -> Procedure | None:
        """The one-piece function that contains `address`, if any."""
        i = bisect_right(self._starts, address) - 1
        return self._make(i) if i >= 0 and address < self._ends[i] else None

    def _index_of(self, name: str) -> int | None:
        if self._by_name is None:
            self._by_name = {}
            for i, n in enumerate(self._names):
                self._by_name.setdefault(n, i)
        return self._by_name.get(name)

    def __getitem__(self, name: str) -> Procedure:
        proc = self._known.get(name)
        if proc is not None:
            return proc
        i = self._index_of(name)
        if i is None:
            raise KeyError(name)
        return self._make(i)

    def __iter__(self) -> Iterator[str]:
        yield from self._known
        seen = set(self._known)
        for n in self._names:
            if n not in seen:
                seen.add(n)
                yield n

    def __len__(self) -> int:
        return sum(1 for _ in self)


class IndexCache:
    """One Binary and (when first asked for) one ModuleIndex per file; both are dropped when
    the file changes on disk."""

    def __init__(self) -> None:
        self._by_path: dict[str, tuple[tuple[int, int], Binary, ModuleIndex | None]] = {}

    def _entry(self, path: str) -> tuple[tuple[int, int], Binary, ModuleIndex | None]:
        st = os.stat(path)
        stamp = (st.st_size, st.st_mtime_ns)
        hit = self._by_path.get(path)
        if hit is None or hit[0] != stamp:
            hit = (stamp, Binary(path), None)
            self._by_path[path] = hit
        return hit

    def binary(self, path: str) -> Binary:
        """The opened file alone: cheap, for questions like "is this address its code"."""
        return self._entry(path)[1]

    def get(self, path: str) -> ModuleIndex:
        stamp, binary, index = self._entry(path)
        if index is None:
            index = ModuleIndex(binary)
            self._by_path[path] = (stamp, binary, index)
        return index
