"""One row of a line table, the record every line source gives (DWARF's, ESL's, BAT's through
the pre-BOLT input): plain data, below the model that re-exports it
(unsplit.index.model.records)."""

from __future__ import annotations

from typing import NamedTuple


class LineRow(NamedTuple):
    """One row of a line table: code from `address` on comes from file:line."""

    address: int
    file: str
    line: int
    column: int = 0
    source: str = "dwarf"  # dwarf, esl or bat
    is_stmt: bool = True
    path: str = ""  # `file` joined to its directory (what llvm-symbolizer prints)

    def moved(self, address: int, source: str) -> LineRow:
        """The same row at `address`, from `source` (_replace, without its
        generality: unsplit debuginfo asks for a row at every byte of BOLTed code)."""
        return LineRow(address, self.file, self.line, self.column, source, self.is_stmt,
                       self.path)
