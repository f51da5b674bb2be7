"""The lines of one module, one service for every reader: :meth:`LineTable.line_at` for `where`
and `bt`, :meth:`LineTable.procedure_lines` (line spans) for breakpoints and stepping. Sources,
most precise first: ESL, the module's DWARF, the pre-BOLT input's DWARF through BAT; a row of
line 0 lets the next one answer. A *line start* is a candidate address (a row or block start in
the procedure) whose best row begins there, is a statement and names another line than the code
before it in the same fragment."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from typing import NamedTuple

from unsplit.elf.binary import Binary
from unsplit.elf.dwarf_lines import DwarfLines
from unsplit.errors import UnsplitError
from unsplit.index.model.records import LineRow, Procedure
from unsplit.index.sources import Source, SourceSet

LineSource = Callable[[int], LineRow | None]


class Span(NamedTuple):
    """File addresses [start, end) of one fragment that run under one line (or none)."""

    start: int
    end: int
    file: str | None
    line: int | None
    starts_line: bool  # a step that reaches `start` from another line stops here

    @property
    def key(self) -> tuple[str, int] | None:
        return None if self.file is None or self.line is None else (self.file, self.line)


class ProcedureLines:
    """A procedure's code cut into line spans, every fragment, in address order."""

    __slots__ = ("_starts", "has_lines", "procedure", "spans")

    def __init__(self, procedure: Procedure, spans: list[Span], has_lines: bool) -> None:
        self.procedure, self.spans, self.has_lines = procedure, spans, has_lines
        self._starts = [s.start for s in spans]

    def span_at(self, address: int) -> Span | None:
        i = bisect_right(self._starts, address) - 1
        if i >= 0 and address < self.spans[i].end:
            return self.spans[i]
        return None

    def line_starts(self) -> list[Span]:
        return [s for s in self.spans if s.starts_line]


class LineTable:
    """The line service of one module index: its line sources in order, and each procedure's
    spans, made once (by name and entry: two units' static functions may share a name) and
    made again when the pre-BOLT input changes (`bb input`)."""

    def __init__(self, sources: SourceSet, dwarf: DwarfLines, warnings: list[str]) -> None:
        self._sources = sources
        self.dwarf = dwarf
        before: list[Source] = []
        after: list[Source] = []
        self._with_lines: list[Source] = []
        for source in sources.all:
            try:
                if source.has_lines():
                    (before if source.lines_before_dwarf else after).append(source)
                    self._with_lines.append(source)
            except UnsplitError as e:
                warnings.append(str(e))
        self.sources: list[LineSource] = [*(s.line_at for s in before), dwarf.lookup,
                                          *(s.line_at for s in after)]
        # A frame's line as GDB takes it: past a line-0 row of DWARF (the module's own, or
        # the pre-BOLT input's that BAT carries), to the row before it.
        bat = sources.bat
        self.frame_sources: list[LineSource] = [
            *(bat.line_as_gdb if s is bat else s.line_at for s in before), dwarf.line_as_gdb,
            *(bat.line_as_gdb if s is bat else s.line_at for s in after)]
        self._spans: dict[tuple[str, int], ProcedureLines] = {}
        self._input: Binary | None = None

    def line_at(self, address: int, *, frame: bool = False) -> LineRow | None:
        """The best line row for `address`; line 0 lets the next source answer. `frame`: the
        line of a debugger's frame, as GDB gives it (DwarfLines.line_as_gdb: a call clang gave
        line 0 is on the line before it) where llvm-symbolizer-22 says 0 (`where`)."""
        for source in self.frame_sources if frame else self.sources:
            row = source(address)
            if row is not None and row.line:
                return row
        return None

    def lines_now(self) -> bool:
        """Whether any source can give a line now (a module with no DWARF, no ESL and no
        pre-BOLT input with DWARF has none: nothing to ask byte by byte)."""
        return self.dwarf.available or any(s.lines_now() for s in self._with_lines)

    def change_points(self, start: int, end: int) -> list[int] | None:
        """Addresses in [start, end), `start` first, between two of which line_at gives the
        same answer for every byte; None when a source cannot say so (ask byte by byte)."""
        points = self.dwarf.change_points(start, end)
        if points is None:
            return None
        found = set(points) | {start}
        for source in self._with_lines:
            theirs = source.change_points(start, end)
            if theirs is None:
                return None
            found.update(theirs)
        return sorted(found)

    def line_starts(self, file: str, line: int) -> set[int]:
        """Every address where `file`:`line` begins, in any source: the module's DWARF
        statements where some source has a line, ESL's, and BAT's carried from the pre-BOLT
        binary (`file`: a base name, a path suffix or a full path)."""
        out = {r.address for r in self.dwarf.statements(file, line)
               if self.line_at(r.address) is not None}
        for source in self._sources.all:
            out |= source.line_starts(file, line)
        return out

    def next_line(self, file: str, line: int) -> int | None:
        """The first line of `file` after `line` that any source has code for."""
        found = [self.dwarf.next_line(file, line),
                 *(source.next_line(file, line) for source in self._sources.all)]
        return min((n for n in found if n is not None), default=None)

    def rows_in(self, start: int, end: int) -> list[LineRow]:
        """Every source's rows at addresses in [start, end) (a damaged section: none of its)."""
        out = [r for r in self.dwarf.rows_in(start, end) if start <= r.address < end]
        for source in self._sources.all:
            try:
                out.extend(r for r in source.lines_in(start, end) if start <= r.address < end)
            except UnsplitError:
                continue
        return out

    def procedure_lines(self, proc: Procedure) -> ProcedureLines:
        """The line spans of `proc`."""
        current = self._sources.bat.input_binary()
        if current is not self._input:
            self._spans.clear()
            self._input = current
        key = (proc.name, proc.entry)
        found = self._spans.get(key)
        if found is None:
            found = self._spans[key] = self._build(proc)
        return found

    def _build(self, proc: Procedure) -> ProcedureLines:
        spans: list[Span] = []
        statement_rows: list[LineRow] = []
        has_lines = False
        for frag in sorted(proc.fragments, key=lambda f: f.start):
            stmts = self._candidates(proc, frag.start, frag.end, statement_rows)
            points = sorted(stmts)
            previous: tuple[str, int] | None = None
            for k, point in enumerate(points):
                end = points[k + 1] if k + 1 < len(points) else frag.end
                row = self.line_at(point)
                key = None if row is None else (row.file, row.line)
                # GCC puts several rows at one address, the last often not a statement: the
                # address begins a statement if any of its rows says so (GDB's rule too).
                starts = row is not None and row.address == point and (
                    stmts[point] or row.is_stmt) and (k == 0 or key != previous)
                if row is not None:
                    has_lines = True
                if spans and spans[-1].end == point and spans[-1].key == key and not starts:
                    last = spans[-1]  # one span per run of a line: fewer, larger ranges
                    spans[-1] = Span(last.start, end, last.file, last.line, last.starts_line)
                else:
                    spans.append(Span(point, end, row.file if row else None,
                                      row.line if row else None, starts))
                previous = key
        # A line none of whose rows is a statement (clang marks code that machine-function
        # splitting moved so) still begins where a run of its rows begins.
        # Not a line that has a statement row where a line starts already (GCC puts several
        # rows at one address): GDB stops for it there, never on its later rows.
        stated = {s.key for s in spans if s.starts_line}
        begun = {s.start for s in spans if s.starts_line}
        stated |= {(r.file, r.line) for r in statement_rows if r.address in begun}
        for i, span in enumerate(spans):
            if span.key is not None and span.key not in stated and (
                    i == 0 or spans[i - 1].key != span.key or spans[i - 1].end != span.start):
                spans[i] = Span(span.start, span.end, span.file, span.line, True)
        return ProcedureLines(proc, spans, has_lines)

    def _candidates(self, proc: Procedure, start: int, end: int,
                    statement_rows: list[LineRow]) -> dict[int, bool]:
        """Addresses in [start, end) where the line may change -> whether a row there is a
        statement (a line-table row with is_stmt and a line); those rows go to
        `statement_rows`."""
        out: dict[int, bool] = {start: False}
        for r in self.rows_in(start, end):
            statement = r.is_stmt and r.line != 0
            out[r.address] = out.get(r.address, False) or statement
            if statement:
                statement_rows.append(r)
        for b in proc.blocks:
            if start <= b.start < end:
                out.setdefault(b.start, False)
        return out
