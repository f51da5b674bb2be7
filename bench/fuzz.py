"""Fuzz campaign: damaged input to every decoder and reader of unsplit. Not run by CI.

    .venv/bin/python bench/fuzz.py [--count N] [--jobs J] [--cli N] [--cli-from N]
                                   [--only NAME,...] [--seed S] [--crashers DIR]

Each decoder gets --count damaged inputs (default 100,000), made from a real section of a zoo
binary (fixtures/build, `fixtures/build.py` first) or, for formats no toolchain writes, from the
encoder's output; one damage per input, chosen at random: flipped bits, a run of 0xff, a zeroed
tail, two chunks swapped, a truncation, or random bytes. The decoders are called in-process
through their bytes-in APIs (the DWARF readers through a Binary whose one section is replaced),
--jobs processes at a time. Every outcome is one of

    ok      decoded (possibly with errors reported inside the result: bb maps, ESL programs)
    warned  (DWARF, CLI) answered, with a warning naming the damaged section and offset
    clean   an UnsplitError: the one-line error the user sees
    crash   anything else (or more than 10 s, or memory exhausted): a bug; and a bug that a
            handler swallowed: an UnsplitError made while a builtin error raised in unsplit's
            own frames was being handled, or a warning that names a Python exception type
            (bench/fuzz_probe.py)

then --cli damaged ELF files and cores (default 300; --cli-from N starts at input N) go
through the CLI commands (`where`, `lines`, `ranges`, `bbmap`, `blocks`, `symbolize` with
addresses on stdin, `debuginfo` on damaged sections of a binary, BOLTed, split by GCC or clang,
or annotated with .split_info; `frames` and `lldb-cfi --print` on a damaged core, or on a core
with a damaged binary), each run a child process forked from a worker that imported unsplit,
with the probe installed: ok is exit status 0 or 1 without a traceback; crash is status 2
("internal error"), a traceback, a signal, more than 120 s, or a bug the probe saw swallowed.

The counts are printed as a table and saved to bench/results/fuzz.json; the first input of each
distinct crash (exception type and the line that raised it) is written to --crashers (default
bench/results/crashers/) with its traceback, to be turned into a regression test.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import io
import json
import multiprocessing
import os
import pkgutil
import random
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugin"))

import fuzz_probe  # noqa: E402
from elftools.dwarf.dwarfinfo import DebugSectionDescriptor, DWARFInfo  # noqa: E402
from saving import save  # noqa: E402
from unsplit.elf import cfi_table  # noqa: E402
from unsplit.elf import core as corefile  # noqa: E402
from unsplit.elf import dwarf_lines as lines  # noqa: E402
from unsplit.elf.binary import Binary  # noqa: E402
from unsplit.errors import UnsplitError  # noqa: E402
from unsplit.formats import bat, bat_scan, bb_addr_map, bb_addr_map_flat, esl, mip  # noqa: E402
from unsplit.formats import split_info as si  # noqa: E402
from unsplit.index.code_lines import CodeWalker  # noqa: E402
from unsplit.index.inlines import InlineChains  # noqa: E402
from unsplit.index.sources.mip import map_procedures  # noqa: E402

ZOO = ROOT / "fixtures" / "build"
TIMEOUT = 10  # seconds one input may take before it counts as a hang
MEMORY = 3 << 30  # bytes of address space a worker may use


# --- damage ----------------------------------------------------------------------------------


def damage(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One kind of damage, applied at a random place: (its name, the damaged bytes)."""
    if not data:
        return "random", bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
    b = bytearray(data)
    n = len(b)
    kind = rng.choice(("flip", "ff_run", "zero_tail", "swap", "truncate", "random"))
    if kind == "flip":
        for _ in range(rng.randrange(1, 9)):
            b[rng.randrange(n)] ^= 1 << rng.randrange(8)
    elif kind == "ff_run":
        at = rng.randrange(n)
        size = min(rng.randrange(1, 33), n - at)
        b[at:at + size] = b"\xff" * size
    elif kind == "zero_tail":
        at = rng.randrange(n)
        b[at:] = bytes(n - at)
    elif kind == "swap":
        size = rng.randrange(1, max(2, min(65, n // 2 + 1)))
        if 2 * size <= n:
            i = rng.randrange(n - 2 * size + 1)
            j = rng.randrange(i + size, n - size + 1)
            b[i:i + size], b[j:j + size] = b[j:j + size], b[i:i + size]
    elif kind == "truncate":
        del b[rng.randrange(n):]
    else:
        for _ in range(rng.randrange(1, 9)):
            b[rng.randrange(n)] = rng.randrange(256)
    return kind, bytes(b)


# --- a Binary with one section replaced -------------------------------------------------------


class _Section:
    """Enough of a pyelftools Section for cfi's section reader: header fields and data()."""

    def __init__(self, real: Any, data: bytes) -> None:
        self.header = dict(real.header)
        self.header["sh_size"] = len(data)
        self._data = data

    def __getitem__(self, name: str) -> Any:
        return self.header[name]

    def data(self) -> bytes:
        return self._data


_DWARF_FIELDS = {
    ".debug_info": "debug_info_sec", ".debug_aranges": "debug_aranges_sec",
    ".debug_abbrev": "debug_abbrev_sec", ".debug_str": "debug_str_sec",
    ".debug_line": "debug_line_sec", ".debug_line_str": "debug_line_str_sec",
    ".debug_rnglists": "debug_rnglists_sec", ".debug_ranges": "debug_ranges_sec",
    ".debug_str_offsets": "debug_str_offsets_sec", ".debug_addr": "debug_addr_sec",
}
_DWARF_ARGS = ["debug_info_sec", "debug_aranges_sec", "debug_abbrev_sec", "debug_frame_sec",
               "eh_frame_sec", "debug_str_sec", "debug_loc_sec", "debug_ranges_sec",
               "debug_line_sec", "debug_pubtypes_sec", "debug_pubnames_sec", "debug_addr_sec",
               "debug_str_offsets_sec", "debug_line_str_sec", "debug_loclists_sec",
               "debug_rnglists_sec", "debug_sup_sec", "gnu_debugaltlink_sec", "debug_types_sec"]


class DamagedBinary(Binary):
    """A Binary whose named sections read as given bytes (section(), section_data() and
    pyelftools' DWARFInfo): the readers see damage without a file being written."""

    replaced: dict[str, bytes]

    @classmethod
    def of(cls, base: Binary, replaced: dict[str, bytes]) -> DamagedBinary:
        made = object.__new__(cls)
        made.__dict__.update({k: v for k, v in base.__dict__.items()
                              if k in ("path", "_stream", "_raw", "elf", "identity",
                                       "functions", "_section_index", "_symbol_tables",
                                       "_symbol_columns")})
        made._sections = {}
        made.derived = {}
        made.replaced = replaced
        made.__dict__["dwarf_binary"] = made if base.has_dwarf else None
        if base.has_dwarf:
            made.__dict__["dwarf"] = _dwarf_with(base.dwarf, replaced)
        return made

    def section(self, name: str) -> Any:
        if name in self.replaced:
            real = super().section(name)
            return None if real is None else _Section(real, self.replaced[name])
        return super().section(name)

    def section_data(self, name: str) -> bytes | None:
        if name in self.replaced:
            return self.replaced[name]
        return super().section_data(name)


def _dwarf_with(real: DWARFInfo, replaced: dict[str, bytes]) -> DWARFInfo:
    """pyelftools' DWARFInfo with `replaced` sections. Damage that cannot reach the CUs and their
    DIEs reuses `real`'s parsed CUs and abbreviations (a warm copy: 5x fewer CPU seconds)."""
    if set(replaced) <= {".debug_aranges"}:  # read by unsplit with struct, never by pyelftools
        return real
    if set(replaced) <= {".debug_line"}:
        old = real.debug_line_sec
        data = replaced[".debug_line"]
        warm = copy.copy(real)
        warm.debug_line_sec = DebugSectionDescriptor(io.BytesIO(data), old.name,
                                                     old.global_offset, len(data), old.address)
        warm._linetable_cache = {}
        return warm
    args = {name: getattr(real, name, None) for name in _DWARF_ARGS}
    for section, data in replaced.items():
        field = _DWARF_FIELDS.get(section)
        old = args.get(field or "")
        if field is not None and old is not None:
            args[field] = DebugSectionDescriptor(io.BytesIO(data), old.name, old.global_offset,
                                                 len(data), old.address)
    return DWARFInfo(real.config, **args)


# --- the decoders -----------------------------------------------------------------------------


@dataclass
class Target:
    """One decoder: the section it reads, seeds for that section (real ones, from different
    producers), and a call that reads one damaged seed (by its number)."""

    name: str
    section: str
    seeds: Callable[[], list[bytes]]
    run: Callable[[int, bytes], object]


def _zoo(variant: str, program: str = "crash") -> Binary:
    path = ZOO / variant / program
    if not path.exists():
        sys.exit(f"fuzz: {path} missing: run fixtures/build.py first")
    return Binary(str(path))


def _bat_run(data: bytes) -> object:
    table = bat.decode_note(data)
    _bat_questions(table)
    # The fast first pass the index uses (it hands anything unusual to the full decoder).
    desc, base = bat.note_descriptor(data, bat.SECTION)
    scanned = bat_scan.scan(desc, base)
    if isinstance(scanned, bat_scan.BatScan):
        _bat_questions(bat_scan.table(scanned, lambda at, n: desc[at:at + n], base))
    return table


def _bat_questions(table: bat.BatTable) -> None:
    for address, m in list(table.maps.items())[:64]:
        list(m.entries())
        m.translate(3)
        table.parent_of(address)
        table.split_fragments(address)


def _bb_run(data: bytes) -> object:
    found = bb_addr_map.decode(data)
    for f in found.functions:
        list(f.entries())
    bb_addr_map.scan(data)
    list(bb_addr_map_flat.iter_functions(data))  # the columns reader the index uses
    return found


_FUNCS = [("work", 0x401000, 0x40), ("other", 0x401040, 0x40), ("main", 0x401080, 0x20)]


def _split_seed() -> bytes:
    return si.encode([si.SplitRecord(0x401006, 0x405000, 0x10, 2),
                      si.SplitRecord(0x405004, 0x406000, 0x8, 2),
                      si.SplitRecord(0x401050, 0x405100, 0x20, 5)])


def _split_run(data: bytes) -> object:
    procs = si.sp_init(si.decode(data), _FUNCS)
    for p in procs:
        p.address_of(5)
        p.logical_offset(p.start + 1)
    return procs


def _esl_seed() -> bytes:
    rows = [esl.EslRow(0, 1, 10), esl.EslRow(4, 1, 11, 3), esl.EslRow(13, 2, 26),
            esl.EslRow(20, 2, 25, 7), esl.EslRow(40, 1, 3)]
    return esl.encode_opt_table([
        esl.OptProc(0x401000, 1, 10, 1, ("src/a.c", "include/b.h"),
                    esl.encode_rows(rows, 10, 1)),
        esl.OptProc(0x401040, 2, 7, 4, ("src/a.c", "include/b.h"),
                    bytes.fromhex("031380C6050FF1")),
        esl.OptProc(0x401080, 1, 1, 1, ("x.c",), None),
    ])


def _esl_run(data: bytes) -> object:
    [sp] = si.sp_init([si.SplitRecord(0x401006, 0x405000, 0x10, 2)], _FUNCS[:1])
    ranges = [(r.start, r.end, r.logical_start) for r in sp.ranges]
    out = []
    for proc in esl.decode_opt_table(data):
        result = esl.run_program(proc, sp.size if proc.entry == sp.start else None)
        out.append(esl.map_rows(result.rows, ranges, sp.branches))
    return out


def _mip_seed() -> bytes:
    funcs = [mip.MipFunction("work", 0x401000, 0x40, 0x1234, (4, 9, 0x20), 0),
             mip.MipFunction("other", 0x401040, 0x40, 0x99, (), 8),
             mip.MipFunction("main_with_a_longer_name", 0x401080, 0x20, 7, (1, 2), 16)]
    return mip.encode(funcs, 0x500000)


def _mip_run(data: bytes) -> object:
    found = mip.decode(data, 0x500000)
    return map_procedures(found)


class _DwarfTarget:
    """DwarfLines (and symbolize's inline chains) over zoo binaries with one damaged section: the
    questions `where`, `bb break FILE:LINE` and `symbolize` ask. Each input damages one of
    `cases` (variant, section), picked by the input's number."""

    def __init__(self, cases: list[tuple[str, str]], chains: bool, file: str = "crash.c"
                 ) -> None:
        # Inline chains walk every DIE of a CU: only for damage that can reach them.
        self.cases, self.chains, self.file = cases, chains, file
        self._bases: list[tuple[Binary, list[int]]] = []

    def seeds(self) -> list[bytes]:
        out = []
        for variant, section in self.cases:
            base = _zoo(variant)
            funcs = sorted((f for f in base.functions if f.size), key=lambda f: f.value)
            # a handful of functions, spread over the file (CUs, fragments)
            picked = funcs[:: max(1, len(funcs) // 5)][:5]
            self._bases.append((base, [f.value + f.size // 2 for f in picked]))
            data = base.section_data(section)
            if not data:
                sys.exit(f"fuzz: {variant}/crash has no {section}")
            out.append(data)
            try:  # parses the undamaged CUs once (see _dwarf_with)
                self.run(len(out) - 1, data)
            except Exception:  # a bug this meets meets the inputs too: counted
                pass  # there (raised here, it would stop the worker before any input)
        return out

    def run(self, case: int, data: bytes) -> object:
        base, addresses = self._bases[case]
        binary = DamagedBinary.of(base, {self.cases[case][1]: data})
        found = lines.DwarfLines(binary)
        chains = InlineChains(found)
        out: list[object] = []
        for a in addresses:
            out.append(found.lookup(a))
            if self.chains:
                out.append(chains.chain(a))
            cu = found.cu_offset_at(a)
            if cu is not None:
                out.append(found.file_paths(cu))
        out.append(found.statements(self.file, 12))
        return Degraded(found.warnings) if found.warnings else out


class _CfiTarget:
    def __init__(self, variant: str, section: str = ".eh_frame") -> None:
        self.variant, self.section = variant, section
        self._base: Binary | None = None
        self._addresses: list[int] = []

    @property
    def base(self) -> Binary:
        if self._base is None:
            self._base = _zoo(self.variant)
            self._addresses = [f.value + 1 for f in self._base.functions if f.size][:24]
        return self._base

    def seed(self) -> bytes:
        return self.base.section_data(self.section) or b""

    def run(self, data: bytes) -> object:
        # No .eh_frame_hdr: the whole section is walked (the hdr's table is checked apart).
        binary = DamagedBinary.of(self.base, {self.section: data})
        binary._sections[".eh_frame_hdr"] = None
        table = cfi_table.CfiTable(binary)
        return [table.fde_at(a) for a in self._addresses]


class _CoreTarget:
    """A core file whose notes segment is damaged (the rest of the file stays whole)."""

    def __init__(self, variant: str) -> None:
        self.path = ZOO / variant / "crash.core"
        self._whole: bytes | None = None
        self._notes = (0, 0)

    def seed(self) -> bytes:
        self._whole = self.path.read_bytes()
        d = self._whole
        phoff, = struct.unpack_from("<Q", d, 32)
        _, phnum = struct.unpack_from("<HH", d, 54)
        for i in range(phnum):
            p_type, _, offset, _, _, filesz = struct.unpack_from("<IIQQQQ", d, phoff + 56 * i)
            if p_type == 4:  # PT_NOTE
                self._notes = (offset, filesz)
                return d[offset:offset + filesz]
        sys.exit(f"fuzz: {self.path} has no notes")

    def run(self, data: bytes) -> object:
        assert self._whole is not None
        at, size = self._notes
        whole = self._whole[:at] + data + self._whole[at + size:]
        core = corefile.Core(str(self.path), data=whole)
        out = [core.threads, core.auxv, core.mappings]
        out.append(corefile.note_build_id(data))
        return out


class _TranslateTarget:
    """`unsplit debuginfo`'s rewriter (unsplit.debuginfo.translate.build) on a BOLT output whose
    pre-BOLT input has one damaged DWARF section, or whose BAT is cut short. Each input damages
    one of `cases` (variant, program, section), picked by the input's number. What the rewriter
    says it left out (units, lists, line tables) makes the outcome "warned"."""

    CASES = [("bolt-all", "except", s) for s in (
        ".debug_info", ".debug_abbrev", ".debug_line", ".debug_loclists", ".debug_rnglists",
        ".debug_addr", ".debug_str_offsets")] + [
        ("bolt-gcc-dwarf4", "crash", s) for s in (
            ".debug_info", ".debug_abbrev", ".debug_line", ".debug_loc", ".debug_ranges")] + [
        ("bolt-gcc", "loop", s) for s in (".debug_info", ".debug_loclists", ".debug_rnglists")
    ] + [("bolt-all", "crash", ".note.bolt_bat"), ("bolt-clang-dwarf4", "except", ".debug_loc")]

    def __init__(self) -> None:
        self._bases: list[tuple[Any, Binary]] = []
        self._dwarf: list[dict[str, bytes]] = []

    def seeds(self) -> list[bytes]:
        from unsplit.debuginfo import synthesize
        from unsplit.debuginfo.translate import build as translate
        from unsplit.index.module_index import ModuleIndex

        # What reads neither the damaged section nor the BAT is answered from memory (most of
        # a run's time otherwise): the lines of each procedure no input unit covers (asked of
        # the index byte by byte), and the input map of an undamaged BAT.
        synthesize.CodeWalker = _RememberedWalker  # type: ignore[attr-defined]
        translate.InputMap = _RememberedMaps  # type: ignore[attr-defined, assignment]
        out = []
        for variant, program, section in self.CASES:
            path = ZOO / variant / program
            if not path.exists():
                sys.exit(f"fuzz: {path} missing: run fixtures/build.py first")
            index = ModuleIndex.open(str(path))
            given = Binary(str(ZOO / variant / "input" / program))
            self._bases.append((index, given))
            self._dwarf.append({name: found for name in translate.READ
                                if (found := given.section_data(name)) is not None})
            data = (index.binary if section == bat.SECTION else given).section_data(section)
            if not data:
                sys.exit(f"fuzz: {variant}/{program} has no {section}")
            out.append(data)
        return out

    def run(self, case: int, data: bytes) -> object:
        from unsplit.debuginfo.translate import build as translate

        index, given = self._bases[case]
        section = self.CASES[case][2]
        if section == bat.SECTION:  # cut short: the rest of the note is lost
            index = copy.copy(index)
            index.binary = DamagedBinary.of(index.binary, {section: data[:len(data) // 2 + (
                data[0] if data else 0)]})
            _, summary = translate.build(index, given, given)
        else:  # every DWARF section read from memory, the damaged one as damaged
            damaged = DamagedBinary.of(given, {**self._dwarf[case], section: data})
            _, summary = translate.build(index, given, damaged)
        said = summary.left_out + summary.warnings
        return Degraded(said) if said else summary


class _RememberedMaps:
    """InputMap.of answered again for a module whose BAT is not damaged."""

    _known: ClassVar[dict[tuple[int, int], Any]] = {}

    @classmethod
    def of(cls, output: Binary, given: Binary) -> Any:
        from unsplit.index.bolt.input_map import InputMap

        if isinstance(output, DamagedBinary):
            return InputMap.of(output, given)
        key = (id(output), id(given))
        if key not in cls._known:
            cls._known[key] = InputMap.of(output, given)
        return cls._known[key]


class _RememberedWalker(CodeWalker):
    """CodeWalker.walk answered again for the same module and range."""

    _known: ClassVar[dict[tuple[int, int, int], Any]] = {}

    def walk(self, start: int, end: int) -> Any:
        key = (id(self.index), start, end)
        if key not in self._known:
            self._known[key] = super().walk(start, end)
        return self._known[key]


def _one(seed: Callable[[], bytes], run: Callable[[bytes], object]
         ) -> tuple[Callable[[], list[bytes]], Callable[[int, bytes], object]]:
    return (lambda: [seed()]), (lambda _case, data: run(data))


def targets() -> list[Target]:
    bolt = _zoo("bolt-all")
    mfs = _zoo("clang-mfs")
    eh = _CfiTarget("gcc-pgo")
    core = _CoreTarget("clang-mfs")
    out = [
        Target("bat", ".note.bolt_bat",
               *_one(lambda: bolt.section_data(".note.bolt_bat") or b"", _bat_run)),
        Target("bb_addr_map", ".llvm_bb_addr_map",
               *_one(lambda: mfs.section_data(".llvm_bb_addr_map") or b"", _bb_run)),
        Target("split_info", ".split_info", *_one(_split_seed, _split_run)),
        Target("esl", ".opt_table", *_one(_esl_seed, _esl_run)),
        Target("mip", "__llvm_mipmap", *_one(_mip_seed, _mip_run)),
        Target("cfi", ".eh_frame", *_one(eh.seed, eh.run)),
        Target("core_notes", "PT_NOTE", *_one(core.seed, core.run)),
    ]
    for name, cases in (
            ("dwarf_line", [("gcc-pgo", ".debug_line"), ("clang-mfs", ".debug_line")]),
            ("dwarf_aranges", [("gcc-pgo", ".debug_aranges")]),
            ("dwarf_info", [("gcc-pgo", ".debug_info"), ("clang-mfs", ".debug_info"),
                            ("clang-mfs", ".debug_abbrev"), ("gcc-pgo", ".debug_abbrev"),
                            ("gcc-pgo", ".debug_str"), ("clang-mfs", ".debug_line_str"),
                            ("gcc-pgo", ".debug_rnglists"), ("clang-mfs", ".debug_rnglists"),
                            ("clang-mfs", ".debug_str_offsets"), ("clang-mfs", ".debug_addr")])):
        t = _DwarfTarget(cases, chains=name == "dwarf_info")
        out.append(Target(name, ",".join(sorted({c[1] for c in cases})), t.seeds, t.run))
    translated = _TranslateTarget()
    out.append(Target("debuginfo", "input DWARF,.note.bolt_bat", translated.seeds,
                      translated.run))
    return out


# --- running ----------------------------------------------------------------------------------


class _Hang(Exception):
    pass


def _alarm(_signum: int, _frame: Any) -> None:
    raise _Hang(f"more than {TIMEOUT} s")


@dataclass
class Tally:
    ok: int = 0
    warned: int = 0
    clean: int = 0
    crash: int = 0

    def add(self, other: Tally) -> None:
        self.ok += other.ok
        self.warned += other.warned
        self.clean += other.clean
        self.crash += other.crash

    @property
    def total(self) -> int:
        return self.ok + self.warned + self.clean + self.crash


class Degraded(list[str]):
    """What a reader returns when it answered with warnings (the warnings)."""


def _chunk(job: tuple[str, int, int, int]) -> tuple[str, Tally, dict[str, dict[str, Any]]]:
    """Run inputs [start, start + n) of one target (seeded by their number: reproducible)."""
    name, start, n, seed = job
    target = next(t for t in _TARGETS if t.name == name)
    seeds = _SEEDS[name]
    tally = Tally()
    crashes: dict[str, dict[str, Any]] = {}
    for k in range(start, start + n):
        rng = random.Random(f"{seed}:{name}:{k}")
        case = k % len(seeds)
        kind, data = damage(seeds[case], rng)
        signal.alarm(TIMEOUT)
        fuzz_probe.SWALLOWED.clear()
        outcome = "crash"
        try:
            found = target.run(case, data)
            if isinstance(found, Degraded):
                fuzz_probe.check_warnings(found)
                outcome = "warned"
            else:
                outcome = "ok"
        except UnsplitError:
            outcome = "clean"
        except (Exception, _Hang) as e:  # every other exception is the finding
            key = f"{type(e).__name__} at {fuzz_probe.where(e)}"
            _found(crashes, key, k, case, kind, data, str(e), traceback.format_exc())
        finally:
            signal.alarm(0)
        if outcome != "crash" and fuzz_probe.SWALLOWED:  # a bug that ended as an error or a
            outcome = "crash"  # warning
            said = fuzz_probe.SWALLOWED[0]
            _found(crashes, f"swallowed {said.split(':', 2)[0]}", k, case, kind, data, said,
                   "\n".join(fuzz_probe.SWALLOWED))
        setattr(tally, outcome, getattr(tally, outcome) + 1)
    return name, tally, crashes


def _found(crashes: dict[str, dict[str, Any]], key: str, k: int, case: int, kind: str,
           data: bytes, message: str, trace: str) -> None:
    """Count one crash; keep the first input of each kind (`key`)."""
    if key not in crashes:
        crashes[key] = {"input": k, "case": case, "damage": kind, "message": message[:300],
                        "traceback": trace[-3000:],
                        "data": data.hex() if len(data) < 1 << 20 else None}
    crashes[key]["count"] = crashes[key].get("count", 0) + 1


_TARGETS: list[Target] = []
_SEEDS: dict[str, list[bytes]] = {}


def _init_worker(only: list[str]) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    signal.signal(signal.SIGALRM, _alarm)
    fuzz_probe.install()
    _TARGETS[:] = [t for t in targets() if not only or t.name in only]
    _SEEDS.update({t.name: t.seeds() for t in _TARGETS})


def decoders(count: int, jobs: int, only: list[str], seed: int) -> dict[str, Any]:
    names = [t.name for t in targets() if not only or t.name in only]
    size = 2000
    work = [(name, s, min(size, count - s), seed) for name in names
            for s in range(0, count, size)]
    results: dict[str, Any] = {n: {"tally": Tally(), "crashes": {}, "seconds": 0.0}
                               for n in names}
    started = time.perf_counter()
    with multiprocessing.Pool(jobs, _init_worker, (only,)) as pool:
        for name, tally, crashes in pool.imap_unordered(_chunk, work):
            r = results[name]
            t = r["tally"]
            t.add(tally)
            for key, c in crashes.items():
                have = r["crashes"].get(key)
                if have is None:
                    r["crashes"][key] = c
                else:
                    have["count"] += c["count"]
            if t.total == count:
                r["seconds"] = round(time.perf_counter() - started, 1)
                print(f"  {name:<18} {t.ok:>8} {t.warned:>8} {t.clean:>8} {t.crash:>6}"
                      f"   ({r['seconds']} s since start)", flush=True)
    return results


# --- the CLI on damaged ELF files -------------------------------------------------------------

# Where a case's binary comes from: a zoo variant (fixtures/build/VARIANT/PROGRAM), or
# "annotated:VARIANT[:DEBUG]", that binary through `unsplit annotate` (made once per campaign:
# it gains .split_info and .opt_table; DEBUG is the variant whose DWARF gives the lines when
# VARIANT has none). Addresses, facts and the core are the zoo variant's.
_CLI_CASES = [  # (source, program, what to damage, commands). A section name damages the
    # binary ({exe} is the damaged copy); "core:notes", "core:headers" (ELF and program
    # headers) and "core:memory" (a writable PT_LOAD: stacks, the heap) damage a copy of the
    # program's core ({core}) and leave the binary whole. {input} is the pre-BOLT binary,
    # {out} a file to write.
    ("bolt-all-dbg", "crash", [".note.bolt_bat", ".debug_line", ".debug_info", ".debug_abbrev",
                               ".debug_str", ".eh_frame", ".symtab"],
     [["where", "--exe", "{exe}", "--json", "{addr}"], ["symbolize", "--exe", "{exe}"],
      ["lines", "{exe}", "--json"], ["ranges", "{exe}"]]),
    ("clang-mfs", "crash", [".llvm_bb_addr_map", ".debug_line", ".debug_info", ".debug_abbrev",
                            ".debug_rnglists", ".debug_str", ".debug_line_str", ".symtab"],
     [["where", "--exe", "{exe}", "{addr}"], ["bbmap", "{exe}"],
      ["blocks", "--exe", "{exe}", "{proc}"], ["symbolize", "--exe", "{exe}", "--no-inlines"],
      ["ranges", "{exe}", "--json"], ["lines", "{exe}"]]),
    ("gcc-pgo", "crash", [".debug_line", ".debug_aranges", ".debug_info", ".debug_abbrev",
                          ".debug_str", ".debug_rnglists", ".eh_frame", ".symtab"],
     [["where", "--exe", "{exe}", "--json", "{addr}"], ["lines", "{exe}"],
      ["symbolize", "--exe", "{exe}", "--inlines"], ["ranges", "{exe}"]]),
    ("bolt-all", "crash", ["core:notes", "core:headers", "core:memory", ".eh_frame",
                           ".eh_frame_hdr", ".symtab", ".strtab", ".note.bolt_bat"],
     [["frames", "{core}", "--exe", "{exe}", "--json"], ["lldb-cfi", "--print", "{exe}"]]),
    ("clang-mfs", "crash", ["core:notes", "core:headers", "core:memory", ".eh_frame",
                            ".debug_info", ".debug_line"],
     [["frames", "{core}", "--exe", "{exe}"]]),
    ("bolt-all", "crash", [".note.bolt_bat", ".symtab", ".strtab", ".eh_frame"],
     [["where", "--exe", "{exe}", "--input", "{input}", "{addr}"],
      ["symbolize", "--exe", "{exe}", "--input", "{input}"], ["ranges", "{exe}"],
      ["lines", "{exe}"], ["debuginfo", "{exe}", "--input", "{input}", "-o", "{out}"]]),
    ("annotated:gcc-pgo", "crash", [".split_info", ".opt_table"],
     [["ranges", "{exe}"], ["lines", "{exe}", "--json"],
      ["where", "--exe", "{exe}", "{addr}"], ["symbolize", "--exe", "{exe}"]]),
    ("annotated:clang-mfs-nodebug:clang-mfs", "crash", [".split_info", ".opt_table",
                                                        ".llvm_bb_addr_map"],
     [["ranges", "{exe}"], ["lines", "{exe}"], ["where", "--exe", "{exe}", "--json", "{addr}"],
      ["debuginfo", "{exe}", "-o", "{out}"], ["frames", "{core}", "--exe", "{exe}"]]),
    ("gcc-pgo", "crash", ["core:notes", "core:headers", "core:memory"],
     [["frames", "{core}", "--exe", "{exe}", "--json"]]),
]


def _section_span(path: Path, name: str, rng: random.Random) -> tuple[int, int] | None:
    """(file offset, size) of what `name` damages (see _CLI_CASES); None when there is none."""
    if name.startswith("core:"):
        return _core_span(path.read_bytes(), name[5:], rng)
    b = Binary(str(path))
    try:
        sec = b.section(name)
        if sec is None or sec["sh_type"] == "SHT_NOBITS":
            return None
        return sec["sh_offset"], sec["sh_size"]
    finally:
        b.close()


def _core_span(d: bytes, part: str, rng: random.Random) -> tuple[int, int] | None:
    phoff, = struct.unpack_from("<Q", d, 32)
    _, phnum = struct.unpack_from("<HH", d, 54)
    if part == "headers":
        return 0, phoff + 56 * phnum
    segments = [struct.unpack_from("<IIQQQQ", d, phoff + 56 * i) for i in range(phnum)]
    if part == "notes":
        found = [(offset, filesz) for p_type, _, offset, _, _, filesz in segments if p_type == 4]
    else:  # writable PT_LOADs with contents
        found = [(offset, filesz) for p_type, flags, offset, _, _, filesz in segments
                 if p_type == 1 and flags & 2 and filesz]
    return found[rng.randrange(len(found))] if found else None


_CRASH_SAID = ("Traceback", "internal error", "unsplit-fuzz: swallowed")
CLI_TIMEOUT = 120  # seconds one command may take before it counts as a hang


def _cli_env(tmp: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "plugin"),
           "UNSPLIT_CACHE": str(tmp / f"cache-{os.getpid()}")}
    env.pop("UNSPLIT_DEBUG", None)
    return env


def _cli_sources(tmp: Path) -> dict[str, Path]:
    """Every case's source binary; the annotated ones are written into `tmp`."""
    found: dict[str, Path] = {}
    for source, program, _, _ in _CLI_CASES:
        variant, *debug = source.split(":")[1:] or [source]
        if not source.startswith("annotated:"):
            found[source] = ZOO / source / program
            continue
        out = tmp / f"{source.replace(':', '-')}-{program}"
        extra = ["--debug", str(ZOO / debug[0] / program)] if debug else []
        subprocess.run([sys.executable, str(ROOT / "bench" / "fuzz_probe.py"), "unsplit",
                        "annotate", str(ZOO / variant / program), "-o", str(out), *extra],
                       env=_cli_env(tmp), check=True, capture_output=True)
        found[source] = out
    return found


def _zoo_variant(source: str) -> str:
    return source.split(":")[1] if source.startswith("annotated:") else source


_CLI: dict[str, Any] = {}  # a worker's campaign: seed, tmp, sources


def _init_cli_worker(seed: int, tmp: Path, sources: dict[str, Path]) -> None:
    """Import every module of unsplit once: each run is a child forked from here, a fresh
    process (nothing has run yet) without the interpreter's start-up, 9/10 of a run's CPU."""
    _CLI.update(seed=seed, tmp=tmp, sources=sources)
    os.environ.clear()
    os.environ.update(_cli_env(tmp))
    import unsplit
    for module in pkgutil.walk_packages(unsplit.__path__, "unsplit."):
        if not module.name.endswith("__main__"):  # that one runs the command line
            importlib.import_module(module.name)
    fuzz_probe.install()


def _cli_input(k: int) -> dict[str, Any]:
    """Damage input k (seeded by its number: reproducible) and run its case's commands;
    the outcome of each run. A crashing input's files are kept for the parent to save."""
    rng = random.Random(f"{_CLI['seed']}:cli:{k}")
    source, program, sections, commands = _CLI_CASES[k % len(_CLI_CASES)]
    variant = _zoo_variant(source)
    src = _CLI["sources"][source]
    tmp: Path = _CLI["tmp"]
    facts = json.loads((ZOO / variant / f"{program}.facts.json").read_text())
    section = sections[rng.randrange(len(sections))]
    zoo_core = ZOO / variant / f"{program}.core"
    target = zoo_core if section.startswith("core:") else src
    span = _section_span(target, section, rng)
    if span is None:
        return {"k": k, "runs": []}
    whole = bytearray(target.read_bytes())
    at, size = span
    kind, damaged = damage(bytes(whole[at:at + size]), rng)
    whole[at:at + size] = damaged[:size].ljust(size, b"\0")  # the section keeps its place
    # A directory per input: what the commands find beside the binary (a pre-BOLT input is
    # searched there) is its own core, never another worker's half-written copy.
    here = tmp / f"input-{k}"
    here.mkdir()
    exe, core, out = (here / f"{variant}{s}" for s in ("", ".core", ".out"))
    exe.write_bytes(whole if target == src else src.read_bytes())
    exe.chmod(0o755)
    core.write_bytes(whole if target != src else
                     zoo_core.read_bytes() if zoo_core.exists() else b"")
    frame = facts["crash"]["frames"][0]
    addr, proc = frame.get("link_pc", frame["pc"]), frame["procedure"]
    fields = {"exe": exe, "core": core, "addr": addr, "proc": proc, "out": out,
              "input": ZOO / variant / "input" / program}
    runs = []
    for command in commands:
        argv = [a.format(**fields) for a in command]
        stdin = f"{addr}\n0x{int(addr, 16) - 1:x}\n" if command[0] == "symbolize" else ""
        runs.append(_cli_run(argv, stdin, section, kind))
        out.unlink(missing_ok=True)
    kept = any(r["outcome"] == "crash" for r in runs)
    if not kept:
        shutil.rmtree(here)
    return {"k": k, "runs": runs, "exe": str(exe), "core": str(core), "kept": kept,
            "variant": variant, "section": section, "damage": kind}


def _unsplit(argv: list[str], stdin: str) -> subprocess.CompletedProcess[str]:
    """`unsplit ARGV` with the probe (bench/fuzz_probe.py main) in a child forked from this
    worker: its own process, fds 0-2 and exit status; a signal is a negative status."""
    tmp: Path = _CLI["tmp"]
    paths = [tmp / f"run-{os.getpid()}.{n}" for n in ("in", "out", "err")]
    paths[0].write_text(stdin)
    sys.stdout.flush()
    sys.stderr.flush()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child)
        code = 2
        try:
            for fd, path in enumerate(paths):
                os.dup2(os.open(path, os.O_RDONLY if fd == 0 else
                                os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
            sys.stdin = open(0, closefd=False)
            sys.stdout = open(1, "w", closefd=False)
            sys.stderr = open(2, "w", closefd=False)
            sys.argv = ["unsplit", *argv]
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(CLI_TIMEOUT)
            fuzz_probe.SWALLOWED.clear()
            from unsplit import cli as command_line
            code = command_line.main(argv)
        except SystemExit as e:  # argparse
            code = e.code if isinstance(e.code, int) else 1
        except BaseException:  # what escapes main, as the interpreter would show it
            traceback.print_exc()
            code = 1
        finally:
            fuzz_probe.report()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(child, 0)
    out, err = (p.read_text(errors="replace") for p in paths[1:])
    return subprocess.CompletedProcess(argv, os.waitstatus_to_exitcode(status), out, err)


def _cli_run(argv: list[str], stdin: str, section: str, kind: str) -> dict[str, Any]:
    p = _unsplit(argv, stdin)
    if p.returncode == -signal.SIGALRM:
        return {"outcome": "crash", "argv": argv, "returncode": None, "stdout": "",
                "stderr": f"more than {CLI_TIMEOUT} s", "last": f"more than {CLI_TIMEOUT} s",
                "key": f"{argv[0]} on {section}: more than {CLI_TIMEOUT} s"}
    warnings = [line for line in (p.stdout + p.stderr).splitlines() if "warning" in line]
    said = [line for line in p.stderr.splitlines() if any(w in line for w in _CRASH_SAID)]
    said += [f"a warning names a Python exception: {w}" for w in warnings
             if fuzz_probe.TYPE_NAMED.search(w)]
    run: dict[str, Any] = {"argv": argv, "returncode": p.returncode}
    if p.returncode not in (0, 1) or said:
        last = (said or p.stderr.strip().splitlines() or ["(no output)"])[-1][:300]
        run.update(outcome="crash", stderr=p.stderr[-3000:], stdout=p.stdout[-2000:],
                   key=f"{argv[0]} on {section}: {last.split(': ', 1)[-1][:120]}", last=last)
    else:
        run["outcome"] = ("warned" if warnings else "ok") if p.returncode == 0 else "clean"
    return run


def cli(count: int, seed: int, crashers: Path, jobs: int = 1, start: int = 0
        ) -> dict[str, Any]:
    """Inputs [start, start + count) through the command line, `jobs` at a time."""
    tally = Tally()
    crashes: dict[str, dict[str, Any]] = {}
    runs = files = 0
    with tempfile.TemporaryDirectory(prefix="unsplit-fuzz-") as name:
        tmp = Path(name)
        sources = _cli_sources(tmp)
        with multiprocessing.Pool(jobs, _init_cli_worker, (seed, tmp, sources)) as pool:
            for found in pool.imap_unordered(_cli_input, range(start, start + count)):
                files += bool(found["runs"])
                for run in found["runs"]:
                    runs += 1
                    setattr(tally, run["outcome"], getattr(tally, run["outcome"]) + 1)
                    if run["outcome"] == "crash":
                        _cli_crash(crashes, crashers, found, run)
                if found.get("kept"):
                    shutil.rmtree(Path(found["exe"]).parent)
    return {"tally": tally, "crashes": crashes, "runs": runs, "files": files}


def _cli_crash(crashes: dict[str, dict[str, Any]], crashers: Path, found: dict[str, Any],
               run: dict[str, Any]) -> None:
    """Count one crashing run; keep the first input of each kind with what reproduces it."""
    key = run["key"]
    if key not in crashes:
        crashers.mkdir(parents=True, exist_ok=True)
        kept = crashers / f"cli-{len(crashes)}"
        shutil.copy(found["exe"], kept.with_suffix(".exe"))
        shutil.copy(found["core"], kept.with_suffix(".core"))
        kept.with_suffix(".txt").write_text(
            f"{key}\n{' '.join(run['argv'])}\n{run['stdout']}\n{run['stderr']}")
        crashes[key] = {"input": found["k"], "damage": found["damage"],
                        "section": found["section"], "variant": found["variant"],
                        "stderr": run["last"], "count": 0, "returncode": run["returncode"],
                        "argv": run["argv"]}
    crashes[key]["count"] += 1


def _report(results: dict[str, Any], crashers: Path) -> dict[str, Any]:
    """Print each distinct crash and write its first input (and traceback) to `crashers`;
    the summary saved in bench/results/fuzz.json."""
    crashers.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {}
    for name, r in results.items():
        t = r["tally"]
        summary[name] = {"ok": t.ok, "warned": t.warned, "clean": t.clean, "crash": t.crash,
                         "crashes": {k: {kk: vv for kk, vv in c.items()
                                         if kk not in ("data", "traceback")}
                                     for k, c in r["crashes"].items()}}
        if "runs" in r:
            summary[name]["runs"] = r["runs"]
        for i, (key, c) in enumerate(r["crashes"].items()):
            print(f"  CRASH {name}: {key} x{c['count']}: {c.get('message') or c.get('stderr')}")
            stem = crashers / f"{name}-{i}"
            if c.get("data"):
                stem.with_suffix(".bin").write_bytes(bytes.fromhex(c["data"]))
            if c.get("traceback"):
                stem.with_suffix(".txt").write_text(f"{key}\n{c['traceback']}")
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=100_000, help="damaged inputs per decoder")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes")
    ap.add_argument("--cli", type=int, default=300,
                    help="damaged ELF files and cores through the CLI")
    ap.add_argument("--only", default="", help="comma-separated decoder names")
    ap.add_argument("--cli-from", type=int, default=0,
                    help="the first CLI input's number (to run a campaign in parts)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--crashers", type=Path, default=ROOT / "bench" / "results" / "crashers")
    args = ap.parse_args()
    only = [n for n in args.only.split(",") if n]
    print(f"  {'decoder':<18} {'ok':>8} {'warned':>8} {'clean':>8} {'crash':>6}")
    summary: dict[str, Any] = {}
    if args.count:  # reported before the CLI runs: its crashers are kept whatever happens next
        summary.update(_report(decoders(args.count, args.jobs, only, args.seed), args.crashers))
    if args.cli:
        print(f"CLI: {args.cli} damaged ELF files and cores ...", flush=True)
        found = cli(args.cli, args.seed, args.crashers, args.jobs, args.cli_from)
        t = found["tally"]
        print(f"  {'cli (runs)':<18} {t.ok:>8} {t.warned:>8} {t.clean:>8} {t.crash:>6}"
              f"   ({found['runs']} runs of {found['files']} files)")
        summary.update(_report({"cli": found}, args.crashers))
    save("fuzz", {"count": args.count, "cli": args.cli, "cli_from": args.cli_from,
                  "seed": args.seed, "only": only,
                  "results": summary})


if __name__ == "__main__":
    main()
