"""Fragment source for BOLTed binaries: procedures from ``.note.bolt_bat`` and BOLT's symbols.

Specification: ``shared/specs/bolt-bat.md`` §2 (the note), §3 (what its maps mean), §6.1
(``foo.cold.N``/``foo.warm``/``foo.cold`` fragment symbols).

BAT maps output code back to *input-function offsets*, and those are not contiguous per
fragment (BOLT reorders blocks inside a fragment and across fragments), so a fragment's
``logical_start`` cannot be its input offset. We lay the fragments end to end instead
(``logical_start`` = sum of the sizes before it, hot first) so that ``Procedure`` offsets stay
unique, and give the true input offset through :func:`input_offset`, which the index uses for
the ``offset`` of BOLTed code.
"""

from __future__ import annotations

from collections.abc import Iterator

from unsplit.elf.binary import Binary
from unsplit.elf.derived import PerFile
from unsplit.errors import DecodeError
from unsplit.index import bat_translate
from unsplit.index.model import Block, Fragment, Procedure, fragment_order


def _no_problem(binary: Binary) -> DecodeError | None:
    return None


_PROBLEMS = PerFile(_no_problem)  # what procedures() met, for problem()


def procedures(binary: Binary) -> BatProcedures | list[Procedure]:
    """The procedures of every input function BAT has a map for (source="bat"), made one at
    a time when asked for (a BOLTed libLLVM has 129k).

    A malformed note yields [] (the symbols source then still names the fragments) and the
    error is kept for :func:`problem`, so one bad note never breaks a debugging session.
    """
    try:
        index = bat_translate.load(binary)
    except DecodeError as e:
        _PROBLEMS.set(binary, e)
        return []
    if index is None or not index.table.hot:
        return []
    return BatProcedures(index)


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

    def names(self) -> list[str]:
        return list(self.index.procedures)

    def moved_fragments(self) -> list[Fragment]:
        """Every fragment that is not its procedure's entry (for unwinders), made without
        keeping a Procedure per function."""
        table = self.index.table
        out: list[Fragment] = []
        done: set[int] = set()
        for parent in table.split_parents():
            if parent in done or parent in self.placed:
                continue
            done.add(parent)
            proc = self._made.get(parent)
            frags = proc.fragments if proc is not None else _fragments(
                sorted(self.index.fragments_at(parent, keep=False),
                       key=lambda f: _order(f.name, f.start)))
            out.extend(f for f in frags[1:] if f.start not in self.placed)
        return out

    def moved_starts(self) -> list[int]:
        """The starts of moved_fragments, without making fragments (no names, no ends: what
        the LLDB CFI symbol file needs; 89k fragments of a BOLTed libLLVM in a tenth of the
        time). A split fragment is never its procedure's first (BOLT's order: hot first)."""
        table = self.index.table
        placed = self.placed
        parents = table.split_parents()
        children = table.split_fragments
        out: list[int] = []
        done: set[int] = set()
        for parent in parents:
            if parent in done or parent in placed:
                continue
            done.add(parent)
            out.extend(a for a in children(parent) if a not in placed)
        return out

    def _procedure(self, hot: int) -> Procedure:
        proc = self._made.get(hot)
        if proc is None:
            proc = _procedure(self.index, hot)
            if self.placed and any(f.start in self.placed for f in proc.fragments):
                proc.fragments = [f for f in proc.fragments if f.start not in self.placed]
            self._made[hot] = proc
        return proc


def problem(binary: Binary) -> DecodeError | None:
    """The DecodeError that made :func:`procedures` return [] for ``binary``, if any."""
    return _PROBLEMS.get(binary)


def input_offset(
    binary: Binary, file_address: int, input_binary: Binary | None = None
) -> tuple[str, int, int | None] | None:
    """(procedure, input offset, input function address) of a BOLTed output address.

    The input offset follows BOLT's own rule (spec §3.2). The input function address is the
    procedure's address in the pre-BOLT binary: ``input_binary`` if given, else the one
    :func:`unsplit.index.prebolt.input_for` finds or was told; None when there is none. None
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
    from unsplit.index import prebolt

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
