"""Which debug file a split module gets: the pre-BOLT input's DWARF moved through BAT
(unsplit.debuginfo.translate) when the module is a BOLT output whose input has DWARF, else
what the index knows, names and lines (unsplit.debuginfo.synthesize); both with the split
procedures' CFI (unsplit.debuginfo.frames) and the module's symbol table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from unsplit.debuginfo import frames, synthesize
from unsplit.debuginfo.translate import build as translate
from unsplit.index.module_index import ModuleIndex


class Made(NamedTuple):
    """One debug file's bytes and what went into it (one of the two summaries)."""

    data: bytes
    translated: translate.Summary | None
    synthesized: synthesize.Summary | None
    cfi: frames.FrameSummary | None = None  # the fragments' CFI (.debug_frame)

    def report(self) -> dict[str, Any]:
        """The --json fields of what was written."""
        return {**self._dwarf(), **self._cfi()}

    def _cfi(self) -> dict[str, Any]:
        c = self.cfi
        return {"cfi_fdes": 0 if c is None else c.fdes,
                "cfi_fragments_not_whole": 0 if c is None else c.uncovered,
                "cfi_problems": [] if c is None else c.problems}

    def _dwarf(self) -> dict[str, Any]:
        t, s = self.translated, self.synthesized
        if t is not None:
            return {"made_from": "input DWARF", "input": t.input, "units": t.units,
                    "input_functions_placed": t.functions,
                    "procedures_without_input_dwarf": t.described,
                    "units_left_out": t.left_out,
                    "dropped": t.dropped, "damaged": t.warnings,
                    "functions_not_in_input": t.unplaced_functions}
        assert s is not None
        return {"made_from": "index", "units": s.units, "procedures": s.procedures,
                "split_procedures": s.split_procedures, "line_rows": s.rows,
                "split_without_lines": s.without_lines,
                "moved_bytes_without_lines": s.uncovered_bytes}


def make(index: ModuleIndex, progress: Callable[[str], None] | None = None) -> Made:
    """The debug file for the split module `index` describes (`progress` hears how a long
    one is going)."""
    procedures = list(index.procedure_spans())  # walked once for both (129k in libLLVM)
    made = frames.debug_frame(index, procedures)
    also = [] if made is None else [(".debug_frame", made[0])]
    cfi = None if made is None else made[1]
    found = translate.input_with_dwarf(index.binary)
    if found is not None:
        data, summary = translate.build(index, *found, also)
        return Made(data, summary, None, cfi)
    data, names = synthesize.build(index, also, progress, procedures)
    return Made(data, None, names, cfi)
