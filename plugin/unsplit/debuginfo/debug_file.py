"""Which debug file a split module gets: the pre-BOLT input's DWARF moved through BAT
(unsplit.debuginfo.translate) when the module is a BOLT output whose input has DWARF, else
what the index knows, names and lines (unsplit.debuginfo.synthesize)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from unsplit.debuginfo import synthesize
from unsplit.debuginfo.translate import build as translate
from unsplit.index import bat_translate
from unsplit.index.module_index import ModuleIndex


@dataclass(frozen=True, slots=True)
class Made:
    """One debug file's bytes and what went into it (one of the two summaries)."""

    data: bytes
    translated: translate.Summary | None
    synthesized: synthesize.Summary | None

    def report(self) -> dict[str, Any]:
        """The --json fields of what was written."""
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
    found = translate.input_with_dwarf(index)
    if found is not None and bat_translate.has_bat(index.binary):
        data, summary = translate.build(index, *found)
        return Made(data, summary, None)
    data, names = synthesize.build(index, progress)
    return Made(data, None, names)
