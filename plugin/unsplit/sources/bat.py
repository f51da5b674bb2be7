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

import re

from .. import bat_translate
from ..binary import Binary
from ..errors import DecodeError
from ..model import Block, Fragment, Procedure

_PROBLEMS: dict[tuple[str, int, int], DecodeError] = {}


def procedures(binary: Binary) -> list[Procedure]:
    """One Procedure per input function BAT has a map for (source="bat").

    A malformed note yields [] (the symbols source then still names the fragments) and the
    error is kept for :func:`problem`, so one bad note never breaks a debugging session.
    """
    try:
        index = bat_translate.load(binary)
    except DecodeError as e:
        _PROBLEMS[binary.identity] = e
        return []
    if index is None:
        return []
    # By main-fragment address, not name: two static functions may share a name.
    return [_procedure(index, hot) for hot in index.table.hot]


def problem(binary: Binary) -> DecodeError | None:
    """The DecodeError that made :func:`procedures` return [] for ``binary``, if any."""
    return _PROBLEMS.get(binary.identity)


def input_offset(
    binary: Binary, file_address: int, input_binary: Binary | None = None
) -> tuple[str, int, int | None] | None:
    """(procedure, input offset, input function address) of a BOLTed output address.

    The input offset follows BOLT's own rule (spec §3.2). The input function address is the
    procedure's address in the pre-BOLT binary: ``input_binary`` if given, else the one
    :func:`unsplit.prebolt.input_for` finds or was told; None when there is none. None
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
    from .. import prebolt

    if input_binary is None:
        input_binary = prebolt.input_for(binary)
    unit = prebolt.output_unit(binary, tr.procedure, tr.parent_address)
    address = None if input_binary is None else prebolt.function_address(
        input_binary, tr.procedure, unit)
    return tr.procedure, tr.input_offset, address


_ORDER = re.compile(r"^(warm|cold)(?:\.([0-9]+))?$")


def _order(name: str, start: int) -> tuple[int, int, int]:
    """hot, then warm, then cold, then cold.0, cold.1, ... (BOLT's FragmentNum order)."""
    if name == "hot":
        return (0, 0, start)
    m = _ORDER.match(name)
    if m is None:
        return (4, 0, start)
    if m.group(1) == "warm":
        return (1, 0, start)
    return (2, 0, start) if m.group(2) is None else (3, int(m.group(2)), start)


def _procedure(index: bat_translate.BatIndex, hot: int) -> Procedure:
    infos = sorted(index.fragments_at(hot), key=lambda f: _order(f.name, f.start))
    name = infos[0].procedure
    fragments: list[Fragment] = []
    blocks: list[Block] = []
    logical = 0
    for info in infos:
        fragments.append(
            Fragment(
                procedure=name,
                name=info.name,
                start=info.start,
                end=info.end,
                symbol=info.symbol,
                logical_start=logical,
                source="bat",
            )
        )
        logical += info.end - info.start
        blocks += _blocks(index, info)
    return Procedure(name, fragments, blocks)


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
