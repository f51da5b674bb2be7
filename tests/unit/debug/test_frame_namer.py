"""The frame-naming rules (unsplit.debug.frame_namer) against fake debugger frames: which
address names a frame, and keep / rename / add a line. Oracles: the zoo's crash facts (the
frames GDB named in a real run), llvm-symbolizer-22's lines, nm's symbols, llvm-readobj's
build-ids (toolbox)."""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from unsplit.debug.frame_namer import (
    FrameKind,
    FrameNamer,
    FrameView,
    Shown,
    holds_return_address,
    lookup_address,
)
from unsplit.host import LoadedModule
from unsplit.index.module_index import IndexCache, ModuleIndex

from fixtures import toolbox

from ...conftest import ROOT, facts

INLINE, SIGNAL, OTHER = FrameKind.INLINE, FrameKind.SIGNAL, FrameKind.OTHER


@dataclass
class Fake:
    """A debugger's frame as the rules read it; `asked` counts the lazy questions."""

    pc_: int
    kind_: FrameKind = FrameKind.NORMAL
    name_: str = ""
    line: bool = True
    newer_: Fake | None = None
    asked: list[str] = field(default_factory=list)

    def pc(self) -> int:
        return self.pc_

    def kind(self) -> FrameKind:
        return self.kind_

    def newer(self) -> FrameView | None:
        return self.newer_

    def has_line(self) -> bool:
        self.asked.append("has_line")
        return self.line

    def name(self) -> str:
        self.asked.append("name")
        return self.name_


def stack(*frames: Fake) -> list[Fake]:
    """`frames` innermost first, each told its newer frame."""
    for newer, older in itertools.pairwise(frames):
        older.newer_ = newer
    return list(frames)


# -- which address names a frame -------------------------------------------------------------

def test_frame_0_and_plain_callers() -> None:
    f0, f1, f2 = stack(Fake(0x100), Fake(0x200), Fake(0x300))
    assert [holds_return_address(f) for f in (f0, f1, f2)] == [False, True, True]
    assert lookup_address(f1) == 0x1FF and lookup_address(f0) == 0x100


def test_gdb_inline_frames_share_their_frames_pc() -> None:
    """GDB: an inlined call and the frame it is in have one pc; that frame is a caller only
    when the real frame newer than both is."""
    inl0, outer0, caller = stack(Fake(0x100, INLINE), Fake(0x100), Fake(0x300))
    assert [holds_return_address(f) for f in (inl0, outer0, caller)] == [False, False, True]
    _, inl, outer = stack(Fake(0x100), Fake(0x250, INLINE), Fake(0x250))
    assert holds_return_address(inl) and holds_return_address(outer)


def test_lldb_frame_below_an_inlined_call_holds_its_first_address() -> None:
    """LLDB: the frame an inlined call is in has the inlined block's first address (another
    pc than the inlined frame's return address): no return address."""
    _, inl, outer = stack(Fake(0x100), Fake(0x250, INLINE), Fake(0x240))
    assert holds_return_address(inl)
    assert not holds_return_address(outer)


def test_interrupted_frames_and_other_kinds() -> None:
    _, tramp, interrupted, caller = stack(Fake(0x100), Fake(0x200, SIGNAL), Fake(0x300),
                                                Fake(0x400))
    assert not holds_return_address(tramp)
    assert not holds_return_address(interrupted)  # stopped at its pc by the signal
    assert holds_return_address(caller)
    dummy, above = stack(Fake(0x100, OTHER), Fake(0x200))
    assert not holds_return_address(dummy) and not holds_return_address(above)


# -- keep, rename, add a line: a real module, fake frames ------------------------------------

@pytest.fixture(scope="module")
def crash(zoo: dict[str, Any]) -> tuple[dict[str, Any], Path, int]:
    f = facts(zoo, "gcc-pgo", "crash")
    return f, ROOT / f["binary"], int(f["crash"]["load_bias"], 16)


def _namer(binary: Path, bias: int) -> FrameNamer:
    namer = FrameNamer(IndexCache())
    namer.update([LoadedModule(str(binary), bias)], None)
    return namer


def test_moved_code_is_renamed_with_its_line(crash: tuple[dict[str, Any], Path, int]) -> None:
    f, binary, bias = crash
    namer = _namer(binary, bias)
    frames = stack(*(Fake(int(fr["pc"], 16)) for fr in f["crash"]["frames"]))
    for fake, fact in zip(frames, f["crash"]["frames"], strict=True):
        naming = namer.name(fake)
        assert naming.shown is Shown.RENAME and naming.location is not None
        loc = naming.location
        assert (loc.procedure, loc.fragment, loc.line) == (fact["procedure"], fact["fragment"],
                                                            fact["line"])
        assert "has_line" not in fake.asked  # moved code is renamed whatever the debugger has


def test_moved_code_has_no_core_line_where_the_debugger_shows_its_own(
        crash: tuple[dict[str, Any], Path, int]) -> None:
    """`own_lines` (LLDB): the debugger's line stands wherever it has one, so the core reads no
    line there (on a first `bt` that is the whole DWARF line table's header and more); a
    frame without one still gets the core's."""
    f, binary, bias = crash
    namer = _namer(binary, bias)
    fact = f["crash"]["frames"][0]
    pc = int(fact["pc"], 16)
    naming = namer.name(Fake(pc, line=True), own_lines=True)
    assert naming.shown is Shown.RENAME and naming.location is not None
    loc = naming.location
    assert (loc.procedure, loc.fragment, loc.line) == (fact["procedure"], fact["fragment"], None)
    for fake in (Fake(pc, line=False), Fake(pc, line=True)):  # own_lines=False: GDB's
        naming = namer.name(fake, own_lines=fake.line is False)
        assert naming.location is not None and naming.location.line == fact["line"]


def test_inlined_function_in_moved_code_keeps_its_name(
        crash: tuple[dict[str, Any], Path, int]) -> None:
    f, binary, bias = crash
    namer = _namer(binary, bias)
    fact = f["crash"]["frames"][0]
    pc = int(fact["pc"], 16)
    assert namer.name(Fake(pc, INLINE, "memcpy")).shown is Shown.KEEP
    assert namer.name(Fake(pc, INLINE, fact["procedure"])).shown is Shown.RENAME
    assert namer.name(Fake(pc, INLINE, fact["symbol"])).shown is Shown.RENAME


def test_a_line_is_added_only_where_the_debugger_has_none(
        crash: tuple[dict[str, Any], Path, int]) -> None:
    _, binary, bias = crash
    main = next(s for s in toolbox.text_symbols(binary) if s.name == "main")
    want = toolbox.symbolize(binary, [main.start])[main.start][0]
    namer = _namer(binary, bias)
    assert namer.name(Fake(bias + main.start, line=True)).shown is Shown.KEEP
    hot = namer.locate(bias + main.start)  # no line asked where the debugger has one
    assert hot is not None and hot.procedure == "main" and hot.line is None
    naming = namer.name(Fake(bias + main.start, line=False))
    assert naming.shown is Shown.ADD_LINE and naming.location is not None
    assert (naming.location.file, naming.location.line) == want
    assert naming.location.procedure == "main" and not naming.location.in_moved_code


def test_code_of_no_module_is_kept(crash: tuple[dict[str, Any], Path, int]) -> None:
    _, binary, bias = crash
    naming = _namer(binary, bias).name(Fake(0x10, line=False))
    assert naming.shown is Shown.KEEP and naming.location is None


def _memory(image: Path, base: int) -> Any:
    """Memory holding the file `image` at `base`, as a debugger reads it."""
    data = image.read_bytes()
    return lambda address, size: data[address - base:address - base + size] \
        if address >= base else b""


def test_an_image_of_another_file_is_never_named(zoo: dict[str, Any],
                                                 crash: tuple[dict[str, Any], Path, int]) -> None:
    """The build-id is checked as the module is attached: memory holding another program's
    image (a core of another binary) names nothing, and says why once."""
    f, binary, bias = crash
    other = ROOT / facts(zoo, "clang-mfs", "crash")["binary"]
    mine, theirs = toolbox.build_id(binary), toolbox.build_id(other)
    assert mine and theirs and mine != theirs
    pcs = [int(fr["pc"], 16) for fr in f["crash"]["frames"]]

    namer = FrameNamer(IndexCache())
    namer.update([LoadedModule(str(binary), bias)], _memory(other, bias))
    assert [namer.name(Fake(pc)).shown for pc in pcs] == [Shown.KEEP] * 3
    said = namer.take_warnings()
    assert len(said) == 1 and theirs in said[0] and mine in said[0]
    assert namer.take_warnings() == []

    namer = FrameNamer(IndexCache())
    namer.update([LoadedModule(str(binary), bias)], _memory(binary, bias))
    assert namer.name(Fake(pcs[0])).shown is Shown.RENAME and namer.take_warnings() == []


def test_locations_last_while_the_module_list_does(
        crash: tuple[dict[str, Any], Path, int]) -> None:
    f, binary, bias = crash
    pc = int(f["crash"]["frames"][0]["pc"], 16)
    namer = FrameNamer(IndexCache())
    listed = [LoadedModule(str(binary), bias)]
    calls = []

    def modules() -> list[LoadedModule]:
        calls.append(1)
        return listed

    namer.sync(1, modules, None)
    namer.name(Fake(pc))
    generation = namer.locations.generation
    namer.sync(1, modules, None)  # the same key: the list is not asked again
    namer.sync(2, modules, None)  # another key, the same modules: the locations stay
    assert len(calls) == 2 and namer.locations and namer.locations.generation == generation
    listed = [LoadedModule(str(binary), bias + 0x1000)]
    namer.sync(3, modules, None)
    assert not namer.locations and namer.locations.generation > generation
    assert namer.name(Fake(pc)).shown is not Shown.RENAME  # the code moved with the module
    assert namer.name(Fake(pc + 0x1000)).shown is Shown.RENAME


def test_a_module_the_debugger_reads_our_file_for_is_named_without_lines(
        zoo: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the debugger reads unsplit's debug file for a BOLTed module, that file's lines and
    inlined calls are the core's: frames there are renamed by procedure and fragment (the
    crash's facts) without a line question to the pre-BOLT input; `bb input` (describe False)
    brings the core's lines back (the source's markers)."""
    f = facts(zoo, "bolt-random2", "crash")
    site = f["markers"]["crash.c"]["crash site"]
    binary, bias = ROOT / f["binary"], int(f["crash"]["load_bias"], 16)
    main = next(s for s in toolbox.text_symbols(binary) if s.name == "main")
    pre_bolt = ROOT / f["input"]
    entry = next(s for s in toolbox.text_symbols(pre_bolt) if s.name == "main")
    want = toolbox.symbolize(pre_bolt, [entry.start])[entry.start][0]
    namer = _namer(binary, bias)
    namer.describe(str(binary))
    assert namer.describes(str(binary))

    def no_lines(*_: object, **__: object) -> None:
        raise AssertionError("a line asked of the core in a module the debugger describes")

    with monkeypatch.context() as m:
        for method in ("line_at", "inline_chain", "input_location"):
            m.setattr(ModuleIndex, method, no_lines)
        frames = stack(*(Fake(int(fr["pc"], 16), line=False) for fr in f["crash"]["frames"][:3]))
        for fake, fact in zip(frames, f["crash"]["frames"], strict=False):
            naming = namer.name(fake)
            assert naming.shown is Shown.RENAME and naming.location is not None
            loc = naming.location
            assert (loc.procedure, loc.fragment) == (fact["procedure"], fact["fragment"])
            assert (loc.line, loc.inline_chain, loc.offset) == (None, (), None)
        # hot code where the debugger has no line: the file has none either
        assert namer.name(Fake(bias + main.start, line=False)).shown is Shown.KEEP
    whole = namer.locate_all(int(f["crash"]["frames"][0]["pc"], 16))  # `bb set verbose`
    assert whole is not None and (whole.file, whole.line) == ("crash.c", site)
    assert whole.offset is not None and whole.block is not None
    namer.describe(str(binary), False)
    loc = namer.name(Fake(int(f["crash"]["frames"][0]["pc"], 16))).location
    assert loc is not None and (loc.file, loc.line) == ("crash.c", site)
    added = namer.name(Fake(bias + main.start, line=False))
    assert added.shown is Shown.ADD_LINE and added.location is not None
    assert (added.location.file, added.location.line) == want


def test_a_modules_real_path_is_resolved_once(crash: tuple[dict[str, Any], Path, int],
                                              monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    """Every location looked up asks whether the debugger reads unsplit's file for its module:
    the module's path is resolved (a system call per component) once, not per look-up."""
    f, binary, bias = crash
    namer = _namer(binary, bias)
    link = tmp_path / "crash"  # the same file under another name, as a debugger may list it
    link.symlink_to(binary)
    resolved: list[str] = []
    real = os.path.realpath

    def counted(path: Any, *args: Any, **kwargs: Any) -> Any:
        resolved.append(str(path))
        return real(path, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(os.path, "realpath", counted)
        namer.describe(str(binary))
        pcs = [int(fr["pc"], 16) for fr in f["crash"]["frames"]]
        for delta in range(8):  # new pcs: each a location looked up
            for pc in pcs:
                namer.name(Fake(pc + delta))
        assert all(namer.describes(str(binary)) for _ in range(3))
        assert namer.describes(str(link)) and namer.describes(str(link))
    assert resolved.count(str(binary)) == 1 and resolved.count(str(link)) == 1
