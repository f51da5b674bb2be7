"""`unsplit fold` and `unsplit perf-script`: perf script's samples with every frame of a split
module named by its procedure, as `unsplit where` names it (perf names moved code by fragment,
splitting a flame graph's towers). A caller is named by its call (pc - 1); each distinct
(module, address) is looked up once."""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from typing import IO, Any, TypeVar

from unsplit.elf.binary import Binary
from unsplit.errors import UnsplitError, UsageError
from unsplit.index.cache.store import IndexStore
from unsplit.index.model.frame import is_signal_trampoline
from unsplit.index.model.records import Location
from unsplit.index.module_index import IndexCache, ModuleIndex
from unsplit.index.names.demangle import GNU, shown
from unsplit.tools.perf_text import UNKNOWN, BadLine, PerfFrame, PerfSample, frames_of, read_samples

KERNEL_START = 0xFFFF_8000_0000_0000  # x86-64: kernel addresses are the upper half

T = TypeVar("T")


class ModuleNames:
    """Names the frames perf saw in one split module; each (address, role) once."""

    def __init__(self, index: ModuleIndex, style: str | None, lines: bool, inlines: bool
                 ) -> None:
        self.index = index
        self.style = style
        self.lines = lines
        self.inlines = inlines
        self._segments = _exec_segments(index.binary)
        self._by_name: dict[str, list[int]] | None = None
        self._folded: dict[tuple[int, bool], tuple[str, ...] | None] = {}
        self._symbol: dict[tuple[int, bool], tuple[str, int | None] | None] = {}
        self._srcline: dict[tuple[int, bool], str | None] = {}

    def file_address(self, frame: PerfFrame) -> int | None:
        """The ELF address of a frame: its symbol's address plus perf's offset where the
        symbol names one function of the module, else perf's address as a file offset (what
        perf prints) or, failing that, as a virtual address (older perf's runtime pc)."""
        if frame.offset is not None and frame.symbol != UNKNOWN:
            found = self._named(frame.symbol)
            if len(found) == 1:
                return found[0] + frame.offset
        for offset, size, vaddr, _ in self._segments:
            if offset <= frame.address < offset + size:
                return frame.address - offset + vaddr
        for _, _, vaddr, memsz in self._segments:
            if vaddr <= frame.address < vaddr + memsz:
                return frame.address
        return None

    def _named(self, name: str) -> list[int]:
        if self._by_name is None:
            self._by_name = {}
            for f in self.index.binary.functions:
                self._by_name.setdefault(f.name, []).append(f.value)
        return self._by_name.get(name, [])

    def folded(self, frame: PerfFrame, caller: bool) -> tuple[str, ...] | None:
        """The frame's folded names, outermost first (one, or the inlined calls after the
        procedure with --inlines); None where the module has no procedure there."""
        address = self.file_address(frame)
        if address is None:
            return None
        key = (address, caller)
        if key not in self._folded:
            self._folded[key] = self._fold(address - 1 if caller else address)
        return self._folded[key]

    def _fold(self, address: int) -> tuple[str, ...] | None:
        want_lines = self.lines or self.inlines
        loc = self.index.locate(address, lines=want_lines, blocks=False, offsets=False)
        name = loc.name(self.style)
        if name is None:
            return None
        chain = loc.inline_chain if self.inlines else ()
        if not chain:
            return (self._with_line(name, loc.as_procedure()),)
        own = loc.as_procedure()
        out = [self._with_line(name, own)]
        for f in reversed(chain[:-1]):
            callee = shown(f.function, self.style)
            out.append(f"{callee} ({f.file}:{f.line})" if self.lines and f.file and f.line
                       else callee)
        return tuple(out)

    def _with_line(self, name: str, loc: Location) -> str:
        if self.lines and loc.file and loc.line:
            return f"{name} ({loc.file}:{loc.line})"
        return name

    def symbol(self, frame: PerfFrame, caller: bool) -> tuple[str, int | None] | None:
        """(procedure, offset of the frame's own address in it) for perf script's text; None
        where the module has no procedure there."""
        return self._memo(self._symbol, frame, caller, self._symbol_at)

    def srcline(self, frame: PerfFrame, caller: bool) -> str | None:
        """``FILE:LINE`` of the frame, as ``--lines`` gives it in folded stacks (a caller's:
        its call's); None where the module has no procedure or no line there."""
        return self._memo(self._srcline, frame, caller, self._srcline_at)

    def _memo(self, table: dict[tuple[int, bool], T], frame: PerfFrame, caller: bool,
              make: Callable[[int, int], T]) -> T | None:
        """`make(address, at)` once per frame address and kind, `at` the address looked up (a
        caller's: its call's, the byte before its return address)."""
        address = self.file_address(frame)
        if address is None:
            return None
        key = (address, caller)
        if key not in table:
            table[key] = make(address, address - 1 if caller else address)
        return table[key]

    def _symbol_at(self, address: int, at: int) -> tuple[str, int | None] | None:
        name = self.index.locate(at, lines=False, blocks=False, offsets=False).name(self.style)
        if name is None:
            return None
        found = self.index.offset_at(at)
        return name, None if found is None else found + (address - at)

    def _srcline_at(self, address: int, at: int) -> str | None:
        loc = self.index.locate(at, lines=True, blocks=False, offsets=False)
        own = loc.as_procedure()
        return f"{own.file}:{own.line}" if (
            loc.name(self.style) is not None and own.file and own.line) else None


def _exec_segments(binary: Binary) -> list[tuple[int, int, int, int]]:
    """(p_offset, p_filesz, p_vaddr, p_memsz) of each executable PT_LOAD."""
    return [(int(s["p_offset"]), int(s["p_filesz"]), int(s["p_vaddr"]), int(s["p_memsz"]))
            for s in binary.elf.iter_segments()
            if s["p_type"] == "PT_LOAD" and int(s["p_flags"]) & 1]


class Renamer:
    """The split modules of a profile, opened as perf names them (each once). `recorded`: the
    build-id perf recorded for each path (``perf buildid-list``), where known: a file there
    now with another one is not the file profiled."""

    def __init__(self, style: str | None, lines: bool = False, inlines: bool = False,
                 warn: Any = None, recorded: dict[str, str] | None = None) -> None:
        self.style, self.lines, self.inlines = style, lines, inlines
        self.cache = IndexCache(IndexStore(), _progress)
        self.modules: dict[str, ModuleNames | None] = {}
        self.warn = warn or _warn
        self.recorded = recorded or {}

    def module(self, dso: str) -> ModuleNames | None:
        """The names of `dso`'s frames, None for a module that is not split (or not a file
        here: the kernel, ``[vdso]``, a JIT map, a file of another machine, one that is not
        the file profiled)."""
        if dso in self.modules:
            return self.modules[dso]
        found: ModuleNames | None = None
        if dso and not dso.startswith("[") and os.path.isfile(dso):
            try:
                index = self.cache.open(dso)
                if index.moved_starts() and self._profiled(dso, index.binary.build_id):
                    found = ModuleNames(index, self.style, self.lines, self.inlines)
            except UnsplitError as e:
                self.warn(f"{dso}: {e}; its frames keep perf's names")
        self.modules[dso] = found
        return found

    def _profiled(self, dso: str, build_id: bytes | None) -> bool:
        """Whether the split file at `dso` is the one profiled, as far as can be told; a
        warning where it is not, or where nothing can tell."""
        if build_id is None:
            self.warn(f"{dso}: no build-id, so nothing tells whether it is the file profiled: "
                      "its frames are named from it as it is now")
            return True
        recorded = self.recorded.get(dso)
        if recorded is not None and recorded != build_id.hex():
            self.warn(f"{dso}: not the file profiled (build-id {build_id.hex()}, the profile's "
                      f"{recorded}): its frames keep perf's names")
            return False
        return True


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _warn(text: str) -> None:
    print(f"unsplit: warning: {text}", file=sys.stderr)


def roles(frames: list[PerfFrame]) -> list[bool]:
    """For each frame (leaf first), whether its address is a return address: every one but
    the leaf, a user frame below kernel frames (the pc the kernel interrupted) and the frame
    a signal trampoline interrupted."""
    out = []
    previous: PerfFrame | None = None
    for frame in frames:
        interrupted = previous is None or (
            previous.address >= KERNEL_START and frame.address < KERNEL_START) or \
            is_signal_trampoline(previous.symbol)
        out.append(not interrupted)
        previous = frame
    return out


def perf_name(frame: PerfFrame) -> str:
    """The name perf gave a frame, as stackcollapse-perf.pl folds it: ``[dso]`` (its base
    name) where perf had no symbol."""
    if frame.symbol != UNKNOWN:
        return frame.symbol
    if frame.dso and frame.dso != UNKNOWN:
        return f"[{os.path.basename(frame.dso.strip('[]'))}]"
    return UNKNOWN


def fold(renamer: Renamer, lines: IO[str], comm: bool = True) -> tuple[Counter[str], int]:
    """Folded stacks of perf script's text and how many samples; each unreadable line is one
    warning (once per distinct sample), and the rest is read. Samples with the same frame
    lines are folded once."""
    stacks: Counter[str] = Counter()
    known: dict[tuple[str, str], str] = {}
    count = 0
    for item in read_samples(lines):
        if isinstance(item, BadLine):
            _bad(renamer, item)
            continue
        count += 1
        key = (item.comm if comm else "", item.body)
        folded = known.get(key)
        if folded is None:
            folded = known[key] = _fold_sample(renamer, item, comm)
        stacks[folded] += 1
    return stacks, count


def _bad(renamer: Renamer, bad: BadLine) -> None:
    renamer.warn(f"line {bad.line}: not perf script's text: {bad.text[:80]!r}")


def _fold_sample(renamer: Renamer, sample: PerfSample, comm: bool) -> str:
    frames, bad = frames_of(sample)
    for b in bad:
        _bad(renamer, b)
    names: list[str] = []
    for frame, caller in zip(frames, roles(frames), strict=True):
        module = renamer.module(frame.dso)
        found = None if module is None else module.folded(frame, caller)
        if found is None:
            names.append(perf_name(frame).replace(";", ":"))
        else:
            names.extend(reversed([n.replace(";", ":") for n in found]))
    names.reverse()
    if comm:
        names.insert(0, sample.comm.replace(";", ":"))
    return ";".join(names) or UNKNOWN


def rewrite(renamer: Renamer, lines: IO[str], out: IO[str], srclines: bool = False) -> int:
    """perf script's text with moved frames renamed, sample by sample; how many samples.
    Samples with the same frame lines are rewritten once. `srclines`: each renamed frame
    followed by its line as ``perf script -F +srcline`` prints one (``  FILE:LINE``, ``??:0``
    where none is known), in place of perf's; the other frames keep the line perf printed."""
    count = 0
    known: dict[str, str] = {}
    for item in read_samples(lines):
        if isinstance(item, BadLine):
            _bad(renamer, item)
            continue
        count += 1
        body = known.get(item.body)
        if body is None:
            frames, bad = frames_of(item)
            for b in bad:
                _bad(renamer, b)
            body = known[item.body] = "".join(
                _frame_text(renamer, frame, caller, srclines)
                for frame, caller in zip(frames, roles(frames), strict=True))
        out.write(f"{item.header}{body}\n" if item.one_line else f"{item.header}\n{body}\n")
    return count


def _frame_text(renamer: Renamer, frame: PerfFrame, caller: bool, srclines: bool) -> str:
    """The frame's line (and the srcline perf printed after it, or ours), each with its
    newline."""
    module = renamer.module(frame.dso)
    found = None if module is None else module.symbol(frame, caller)
    if found is None or module is None:
        return frame.text + "\n" + ("" if frame.srcline is None else frame.srcline + "\n")
    name, offset = found
    rest = frame.text.lstrip()
    head = frame.text[:len(frame.text) - len(rest)]
    address = rest.split(None, 1)[0]
    said = name if offset is None or frame.offset is None else f"{name}+{offset:#x}"
    text = f"{head}{address} {said} ({frame.dso})\n"
    if srclines:
        return text + f"  {module.srcline(frame, caller) or '??:0'}\n"
    return text + ("" if frame.srcline is None else frame.srcline + "\n")


# --- the command line ------------------------------------------------------------------------


def _input_lines(args: argparse.Namespace) -> tuple[IO[str], subprocess.Popen[str] | None]:
    """perf script's text: stdin, or a `perf script` run on ``-i FILE`` (its stderr is ours)."""
    if args.input is None:
        # perf prints symbol names as the binaries spell them: a byte that is not UTF-8 is
        # one character of the name, never the end of the profile
        return io.TextIOWrapper(sys.stdin.buffer, errors="replace"), None
    if not os.path.isfile(args.input):
        raise UsageError(f"{args.input}: no such file")
    perf = shutil.which("perf")
    if perf is None:
        raise UsageError("perf is not installed: run `perf script` elsewhere and pipe its "
                         "text in")
    proc = subprocess.Popen([perf, "script", "-i", args.input], stdout=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, errors="replace")
    assert proc.stdout is not None
    return proc.stdout, proc


def recorded_build_ids(args: argparse.Namespace) -> dict[str, str]:
    """The build-id perf recorded for each file of ``-i PERF_DATA`` (``perf buildid-list``),
    {} when reading stdin or when perf cannot say (a damaged file: `perf script` says so)."""
    perf = shutil.which("perf")
    if args.input is None or perf is None:
        return {}
    proc = subprocess.run([perf, "buildid-list", "-i", args.input], capture_output=True,
                          text=True, errors="replace", stdin=subprocess.DEVNULL)
    out: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        build_id, _, path = line.partition(" ")
        if path and all(c in "0123456789abcdef" for c in build_id):
            out.setdefault(path, build_id)
    return out


def _finish(proc: subprocess.Popen[str] | None, args: argparse.Namespace) -> None:
    if proc is None:
        return
    status = proc.wait()
    if status != 0:
        raise UnsplitError(f"perf script -i {args.input}: exit status {status} (what it printed "
                           "before was read)")


def _run_fold(args: argparse.Namespace) -> str:
    lines, proc = _input_lines(args)
    renamer = Renamer(None if args.no_demangle else GNU, args.lines, args.inlines,
                      recorded=recorded_build_ids(args))
    stacks, _ = fold(renamer, lines, comm=not args.no_comm)
    out = sys.stdout
    try:
        for stack in sorted(stacks):
            out.write(f"{stack} {stacks[stack]}\n")
        out.flush()
    except BrokenPipeError:
        sys.stderr.close()
    _finish(proc, args)  # what perf printed before it failed is folded above
    return ""


def _run_script(args: argparse.Namespace) -> str:
    lines, proc = _input_lines(args)
    renamer = Renamer(None if args.no_demangle else GNU, args.lines,
                      recorded=recorded_build_ids(args))
    try:
        rewrite(renamer, lines, sys.stdout, args.lines)
        sys.stdout.flush()
    except BrokenPipeError:
        sys.stderr.close()
        return ""
    _finish(proc, args)
    return ""


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-i", "--input", metavar="PERF_DATA",
                   help="run `perf script -i PERF_DATA` (default: read its text on stdin)")
    p.add_argument("--no-demangle", action="store_true",
                   help="linkage names for renamed frames (perf's own option; pass it to "
                        "perf script too)")


def add_cli(subparsers: Any) -> None:
    """Register `unsplit fold` and `unsplit perf-script` (output streams to stdout)."""
    p = subparsers.add_parser(
        "fold", help="folded stacks of a perf profile, moved code named by its procedure",
        description="Folded stacks (`comm;a;b;c COUNT`, root first, for flamegraph.pl, inferno "
                    "and speedscope) of perf script's text: every frame of a split module is "
                    "its procedure, so one procedure is one tower.")
    _common(p)
    p.add_argument("--lines", action="store_true",
                   help="each renamed frame with its line: `name (file:line)`")
    p.add_argument("--inlines", action="store_true",
                   help="the calls inlined at a renamed frame's address, as frames of their own")
    p.add_argument("--no-comm", action="store_true",
                   help="no command name as the root frame")
    p.set_defaults(handler=_run_fold)
    s = subparsers.add_parser(
        "perf-script", help="perf script's text, moved code named by its procedure",
        description="perf script's own text, each frame of a split module named by its "
                    "procedure and its offset there (for BOLTed code, in the pre-BOLT input).")
    _common(s)
    s.add_argument("--lines", action="store_true",
                   help="each renamed frame followed by its line, `  FILE:LINE`, as `perf "
                        "script -F +srcline` prints one (replacing perf's)")
    s.set_defaults(handler=_run_script)
