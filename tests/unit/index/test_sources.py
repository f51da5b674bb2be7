"""The Source protocol (unsplit.index.sources) is all the module index talks to: a fake source,
put first among a real binary's sources, is asked for procedures, blocks, lines, line starts,
logical offsets and problems, and its answers are the index's, ahead of the real sources'."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from unsplit.debug import breakpoints
from unsplit.elf.binary import Binary
from unsplit.errors import DecodeError
from unsplit.index import module_index
from unsplit.index.model.records import HOT, Block, Fragment, LineRow, Procedure
from unsplit.index.module_index import ModuleIndex
from unsplit.index.sources import Source, SourceSet, StoredParts, open_sources

from fixtures import toolbox

from ...conftest import ROOT, facts

FAKE_FILE = "fake.src"


class FakeSource:
    """A format of its own, for one function of a real binary: split in two at `mid`, the
    second piece laid first (logically), its blocks, one line per piece, one problem."""

    name = "fake"
    lines_before_dwarf = True

    def __init__(self, name: str, start: int, end: int, *, broken: bool = False) -> None:
        self.proc_name, self.start, self.end = name, start, end
        self.mid = start + (end - start) // 2
        self.broken = broken
        self.asked: list[str] = []

    def procedures(self) -> list[Procedure]:
        self.asked.append("procedures")
        if self.broken:
            raise DecodeError(".fake", 4, "expected a fake record")
        return [Procedure(self.proc_name, [
            Fragment(self.proc_name, HOT, self.start, self.mid, self.proc_name, 0, "fake"),
            Fragment(self.proc_name, "part.1", self.mid, self.end, None,
                     self.mid - self.start, "fake")])]

    def blocks_at(self, address: int) -> list[Block] | None:
        return None

    def addresses_of(self, procedure: Procedure, offset: int) -> list[int] | None:
        """Its own layout: the second piece first (offset 0 is at `mid`)."""
        if procedure.name != self.proc_name:
            return None
        first = self.end - self.mid
        return [self.mid + offset if offset < first else self.start + offset - first]

    def facts(self, address: int) -> None:
        return None

    def has_lines(self) -> bool:
        return not self.broken

    def line_at(self, address: int) -> LineRow | None:
        if not self.start <= address < self.end:
            return None
        line = 1 if address < self.mid else 2
        return LineRow(self.start if line == 1 else self.mid, FAKE_FILE, line, 0, "fake")

    def lines_in(self, start: int, end: int) -> list[LineRow]:
        rows = [LineRow(self.start, FAKE_FILE, 1, 0, "fake"),
                LineRow(self.mid, FAKE_FILE, 2, 0, "fake")]
        return [r for r in rows if start <= r.address < end]

    def line_starts(self, file: str, line: int) -> set[int]:
        return {r.address for r in self.lines_in(self.start, self.end)
                if file == FAKE_FILE and r.line == line}

    def logical_offset(self, address: int) -> int | None:
        # as if the format knew better than the linear layout: the second piece came first
        if self.mid <= address < self.end:
            return address - self.mid
        return None

    def problems(self) -> list[str]:
        return ["fake: one record skipped"]


def _binary(zoo: dict[str, Any]) -> tuple[Path, str, int, int]:
    f = facts(zoo, "gcc-pgo", "crash")
    path = ROOT / f["binary"]
    main = next(f for f in Binary(str(path)).functions if f.name == "main")
    assert main.size > 8
    return path, "main", main.value, main.value + main.size


def _index_with(fake: Source, path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleIndex:
    def with_fake(binary: Binary, stored: StoredParts | None = None, fragment_at: Any = None,
                  warnings: list[str] | None = None) -> SourceSet:
        real = open_sources(binary, stored, fragment_at, warnings)
        return SourceSet([fake, *real.all], real.symbols, real.bat, real.split_info)

    monkeypatch.setattr(module_index, "open_sources", with_fake)
    return ModuleIndex(Binary(str(path)))


def test_the_index_answers_with_a_sources_answers(zoo: dict[str, Any],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path, name, start, end = _binary(zoo)
    fake = FakeSource(name, start, end)
    index = _index_with(fake, path, monkeypatch)
    mid = fake.mid

    assert index.sources_used[0] == "fake" and fake.asked == ["procedures"]
    proc = index.procedure_at(mid + 1)
    assert proc is not None and proc.name == name and [f.name for f in proc.fragments] == [
        HOT, "part.1"]
    assert index.procedures[name] is proc  # the precise source's procedure, not a symbol's
    loc = index.locate(mid + 1)
    assert (loc.procedure, loc.fragment, loc.offset) == (name, "part.1", 1)  # logical_offset
    assert (loc.file, loc.line) == (FAKE_FILE, 2)  # its lines come before the DWARF
    assert loc.sources == ("fake", "fake")
    assert "fake: one record skipped" in loc.warnings
    assert index.line_table.line_starts(FAKE_FILE, 2) == {mid}
    spans = index.line_table.procedure_lines(proc).spans
    assert {(s.line, s.starts_line) for s in spans if s.file == FAKE_FILE} == {
        (1, True), (2, True)}
    # `bb break main+OFF` goes where the source says (its second piece first), not where the
    # fragments' linear layout would put it.
    first = fake.end - mid
    sites = breakpoints.resolve(index, breakpoints.parse(f"{name}+1"))
    assert [(s.file_address, s.fragment) for s in sites] == [(mid + 1, "part.1")]
    sites = breakpoints.resolve(index, breakpoints.parse(f"{name}+{first + 2:#x}"))
    assert [(s.file_address, s.fragment) for s in sites] == [(start + 2, HOT)]


def test_a_broken_source_costs_only_its_own_answers(zoo: dict[str, Any],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path, name, start, end = _binary(zoo)
    index = _index_with(FakeSource(name, start, end, broken=True), path, monkeypatch)
    assert "fake" not in index.sources_used
    assert any(w.startswith("fake: ") and "expected a fake record" in w for w in index.warnings)
    loc = index.locate(start)
    assert loc.procedure == name and loc.sources[0] == "symbols"  # the symbols still name it
    assert loc.file != FAKE_FILE


def test_sources_in_priority_order_each_with_its_section(zoo: dict[str, Any]) -> None:
    """split_info, BAT and the symbols are always asked; the bb address map and MIP sources
    only for a file with their section (llvm-readobj-22 and llvm-readelf-22 say which)."""
    for variant in ("gcc-pgo", "bolt-random2", "clang-mip", "clang-mfs"):
        program = next(iter(zoo[variant]["programs"]))
        path = ROOT / facts(zoo, variant, program)["binary"]
        sources = open_sources(Binary(str(path)))
        has_map = bool(toolbox.bb_addr_map(path))
        has_mip = "__llvm_mipmap" in toolbox.section_names(path)
        assert [s.name for s in sources.all] == [
            "split_info", "bat", *(["bb_addr_map"] if has_map else []), "symbols",
            *(["mip"] if has_mip else [])], variant
        assert sources.named("bat") is sources.bat and sources.named("nope") is None
    assert has_map  # clang-mfs: the case with the section is checked too


def test_a_source_answers_what_it_is_asked_first(zoo: dict[str, Any]) -> None:
    """A source keeps what it decodes itself: blocks, lines and BAT's input locations are the
    same whether or not procedures() was asked before (each on a fresh Binary)."""
    from unsplit.index.bolt import bat_translate
    from unsplit.index.sources import bb_addr_map as bb
    from unsplit.index.sources.bat import BatSource

    path = str(ROOT / facts(zoo, "clang-mfs", "crash")["binary"])
    binary = Binary(path)
    plain = set(binary.function_columns.values)
    one_range = [fm for ms in bb.map_sections(binary)
                 for fm in bb.decode_section(binary, ms, strict=False).functions
                 if len(fm.ranges) == 1 and fm.address in plain]
    assert one_range
    for fm in one_range:
        blocks = bb.BbAddrMapSource(Binary(path)).blocks_at(fm.address)
        assert blocks == bb._blocks(fm) and blocks

    path = str(ROOT / facts(zoo, "bolt-random2", "crash")["binary"])
    table = bat_translate.load(Binary(path))
    assert table is not None
    addresses = [a + 1 for a in table.table.starts()]
    first, after = BatSource(Binary(path)), BatSource(Binary(path))
    after.procedures()
    assert first.has_lines() and after.has_lines()
    found = [first.input_location(a) for a in addresses]
    assert found == [after.input_location(a) for a in addresses] and any(found)


def test_only_the_index_tells_sources_apart() -> None:
    """Breakpoints, rendering, the session, the tools and the adapters ask the index
    (addresses_of, logical_ranges, Location.bat) and never test which source made a fragment."""
    import ast

    core = ROOT / "plugin" / "unsplit"
    paths = [*(core / "debug").rglob("*.py"), *(core / "render").rglob("*.py"),
             *(core / "tools").rglob("*.py"), core / "session.py", core / "commands.py",
             core / "cli.py", *(ROOT / "gdb").rglob("*.py"),
             *(ROOT / "lldb").rglob("*.py")]
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(
                    isinstance(side, ast.Attribute) and side.attr == "source"
                    for side in (node.left, *node.comparators)):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
