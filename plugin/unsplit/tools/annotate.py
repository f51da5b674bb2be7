"""`unsplit ranges`, `unsplit lines` and `unsplit annotate` (docs/command-line.md): the
split-routine formats (shared/specs/split-info-and-esl.md) at work. `annotate` writes a copy of
a binary with `.split_info` and `.opt_table` derived from what it says, so that the copy debugs
with true procedures and lines with no DWARF (BOLT: :mod:`unsplit.tools.annotate_bolt`)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from unsplit.debug import breakpoints
from unsplit.elf.binary import Binary
from unsplit.elf.dwarf_lines import DwarfLines
from unsplit.errors import AddressLookupError, UnsplitError, UsageError
from unsplit.formats import esl
from unsplit.formats import split_info as si
from unsplit.index.bolt import bat_translate, prebolt
from unsplit.index.model.records import HOT, Fragment, LineRow, Procedure
from unsplit.index.module_index import ModuleIndex
from unsplit.index.names.demangle import LLVM, shown
from unsplit.index.sources import split_info
from unsplit.tools import annotate_bolt

OBJCOPY = "llvm-objcopy-22"
OBJDUMP = "llvm-objdump-22"
EM_AARCH64 = "EM_AARCH64"


# --- ranges ----------------------------------------------------------------------------------


def _split_procedures(index: ModuleIndex, name: str | None) -> list[Procedure]:
    """The procedures `name` names, as `bb break` reads it (each unit's static function of
    that name too), or every split procedure; by entry."""
    if name is None:
        found = [p for p in index.procedures.values() if p.is_split]
    else:
        found = [p for linkage in breakpoints.procedures_named(index, name)
                 for p in index.procedures.all_named(linkage)]
        if not found:
            raise AddressLookupError(f"no procedure named {name!r} in {index.binary.path}")
    return sorted(found, key=lambda p: p.entry)


def ranges_json(path: str, name: str | None = None, style: str | None = LLVM
                ) -> list[dict[str, Any]]:
    """Each split procedure's ranges in the order they lay before the split. A range's
    ``offset`` is its first byte's offset in the procedure as `where` gives it (BOLT: the input
    offset BAT gives); ``position`` is where it starts with the ranges laid end to end (another
    quantity for BOLTed code, whose blocks BOLT reorders), ``logical_size`` their total."""
    return _ranges_data(path, name, style)[0]


def _ranges_data(path: str, name: str | None, style: str | None
                 ) -> tuple[list[dict[str, Any]], list[str]]:
    """(the ranges, what the index could not read: a section it refused, one line each)."""
    binary = Binary(path)
    index = ModuleIndex(binary)
    out = []
    for p in _split_procedures(index, name):
        spans, size = index.logical_ranges(p)
        ranges, position = [], 0
        for lo, hi in spans:
            ranges.append({"start": hex(lo), "end": hex(hi), "offset": index.offset_at(lo),
                           "position": position})
            position += hi - lo
        out.append(
            {
                "procedure": shown(p.name, style),
                "linkage_name": p.name,
                "entry": hex(p.entry),
                "logical_size": size,
                "ranges": ranges,
            }
        )
    return out, [f"warning: {w}" for w in index.warnings]


def _style(args: argparse.Namespace) -> str | None:
    return None if args.no_demangle else LLVM


def _ranges(args: argparse.Namespace) -> str:
    data, warnings = _ranges_data(args.binary, args.proc, _style(args))
    for w in warnings:  # on stderr: stdout stays the ranges (one JSON document with --json)
        print(w, file=sys.stderr)
    if args.json:
        return json.dumps(data, indent=1)
    lines = []
    for p in data:
        lines.append(f"{p['procedure']}: entry {p['entry']}, {len(p['ranges'])} ranges, "
                     f"{p['logical_size']:#x} bytes laid end to end")
        rows = [("offset", "range", "size", "laid end to end at")]
        for r in p["ranges"]:
            lo, hi = int(r["start"], 16), int(r["end"], 16)
            offset = "?" if r["offset"] is None else f"+{r['offset']:#x}"
            rows.append((offset, f"[{lo:#x}, {hi:#x})", f"{hi - lo:#x}", f"{r['position']:#x}"))
        widths = [max(len(row[k]) for row in rows) for k in range(4)]
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                  for row in rows]
    return "\n".join(lines) if lines else "no split procedures"


# --- lines -----------------------------------------------------------------------------------


def _row_sources(binary: Binary, info: split_info.LineInfo, warnings: list[str]
                 ) -> Callable[[Procedure], list[LineRow]]:
    """Rows of one procedure from the best source: its ESL program, else the binary's DWARF,
    else (BOLTed code) the pre-BOLT binary's DWARF through BAT, one row per line change.
    What damaged DWARF costs goes to `warnings`."""
    dwarf = DwarfOracle(DwarfLines(binary, warnings))
    bolt: list[annotate_bolt.BoltLines | None] = []  # made on first need (runs objdump)

    def rows(p: Procedure) -> list[LineRow]:
        have = info.rows_by_procedure.get(p.entry)
        if have is not None:
            return have
        frags = sorted(p.fragments, key=lambda f: f.start)
        if dwarf.available:
            return [r for f in frags for r in dwarf.dwarf.rows_in(f.start, f.end)]
        if not bolt:
            found = prebolt.input_for(binary) if bat_translate.has_bat(binary) else None
            bolt.append(
                None
                if found is None
                else annotate_bolt.BoltLines(binary, found, _instructions(binary.path))
            )
        oracle = bolt[0]
        return [] if oracle is None else [r for f in frags for r in oracle.rows_in(f.start, f.end)]

    return rows


def lines_json(path: str, name: str | None = None, style: str | None = LLVM
               ) -> list[dict[str, Any]]:
    return _lines_data(path, name, style)[0]


def _lines_data(path: str, name: str | None, style: str | None
                ) -> tuple[list[dict[str, Any]], list[str]]:
    """(rows as the module docstring says, warnings about partial or missing ESL programs)."""
    binary = Binary(path)
    index = ModuleIndex(binary)
    info = index.sources.split_info.line_info()
    every = all_procedures(binary, index)
    procs = {p.entry: p for p in _split_procedures(index, name)}
    if name is None:  # every procedure an ESL program describes, split or not
        for p in every:
            if p.entry in info.rows_by_procedure:
                procs.setdefault(p.entry, p)
    damaged: list[str] = []
    rows_of = _row_sources(binary, info, damaged)
    out: list[dict[str, Any]] = []
    for entry in sorted(procs):
        p = procs[entry]
        for r in sorted(rows_of(p), key=lambda r: r.address):  # stable: later stays later
            out.append(
                {
                    "procedure": shown(p.name, style),
                    "linkage_name": p.name,
                    "address": hex(r.address),
                    "file": r.file,
                    "path": r.path,
                    "line": r.line,
                    "column": r.column,
                    "source": r.source,
                }
            )
    names = {p.entry: shown(p.name, style) for p in every}
    wanted = set(procs) if name is not None else None
    warnings = [
        f"warning: {names.get(e, hex(e))}: ESL lines partial ({err})"
        for e, err in sorted(info.partial.items())
        if wanted is None or e in wanted
    ]
    warnings += [
        f"warning: {names.get(e, hex(e))}: PROC {e:#x} has no ESL program"
        for e in info.without_esl
        if wanted is None or e in wanted
    ]
    warnings += [f"warning: {w}" for w in damaged]
    return out, warnings


def _lines(args: argparse.Namespace) -> str:
    data, warnings = _lines_data(args.binary, args.proc, _style(args))
    if args.json:  # stdout stays one JSON document; the warnings go to stderr
        for w in warnings:
            print(w, file=sys.stderr)
        return json.dumps(data, indent=1)
    return "\n".join(
        warnings
        + [
            f"{r['procedure']:<24} {r['address']:>12}  {r['file']}:{r['line']}:{r['column']}"
            f"  [{r['source']}]"
            for r in data
        ]
    )


# --- annotate --------------------------------------------------------------------------------

_INSN = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
_TARGET = re.compile(r"(?:0x)?([0-9a-f]+) <")
_AARCH64_BRANCHES = ("b", "cbz", "cbnz", "tbz", "tbnz")

Insn = tuple[int, str, str]


def _instructions(path: str) -> list[Insn]:
    """(address, mnemonic, operands) of every instruction in IN's executable sections."""
    if shutil.which(OBJDUMP) is None:
        raise UsageError(f"annotate needs {OBJDUMP} to find the branches to moved code")
    text = subprocess.run(
        [OBJDUMP, "-d", "--no-show-raw-insn", path], check=True, capture_output=True, text=True
    ).stdout
    out = []
    for line in text.splitlines():
        m = _INSN.match(line)
        if m:
            out.append((int(m[1], 16), m[2], m[3]))
    out.sort()
    return out


def branch_target(mnemonic: str, operands: str) -> int | None:
    """The target of a direct jump (x86 j*, AArch64 b/b.cond/cbz/tbz), else None."""
    if not (mnemonic.startswith(("j", "b.")) or mnemonic in _AARCH64_BRANCHES):
        return None
    ops = operands.split("#", 1)[0]  # an indirect jump's comment names data, not a target
    if "*" in ops:
        return None
    t = _TARGET.search(ops)
    return int(t[1], 16) if t else None


Fallback = Callable[[Procedure, Fragment], int]


def derive_records(
    procs: list[Procedure], insns: list[Insn], fallback: Fallback | None = None
) -> tuple[list[si.SplitRecord], list[str]]:
    """One record per moved fragment, placed where control first leaves for it.

    A fragment's branch is the first direct jump into it from code already placed: the hot part
    by address, then the fragments placed before, in placement order (so a fragment reached only
    from another moved one becomes a nested move, §1). Branch address and length become
    branch_addr and branch_size. A fragment no jump reaches gets a zero-size record at
    ``fallback(proc, fragment)`` (a pure insertion point), or is left out without a fallback.
    Returns (records, notes).
    """
    addrs = [a for a, _, _ in insns]
    records: list[si.SplitRecord] = []
    notes: list[str] = []
    for p in procs:
        frags = sorted(p.fragments, key=lambda f: f.logical_start)
        placed, pending = frags[:1], frags[1:]
        while pending:
            progress = False
            for frag in list(pending):
                branch = _first_jump_into(frag, placed, insns, addrs)
                if branch is not None:
                    records.append(si.SplitRecord(branch[0], frag.start, frag.size, branch[1]))
                    placed.append(frag)
                    pending.remove(frag)
                    progress = True
            if not progress:
                break
        for frag in pending:
            label = frag.symbol or hex(frag.start)
            if fallback is None:
                notes.append(f"{p.name}: no jump to {label}: left out")
                continue
            at = fallback(p, frag)
            notes.append(f"{p.name}: no jump to {label}: inserted at {at:#x} (input order)")
            records.append(si.SplitRecord(at, frag.start, frag.size, 0))
    return records, notes


def _first_jump_into(
    frag: Fragment, placed: list[Fragment], insns: list[Insn], addrs: list[int]
) -> tuple[int, int] | None:
    for other in placed:
        i = bisect_left(addrs, other.start)
        while i + 1 < len(insns) and insns[i][0] < other.end:
            a, mnemonic, ops = insns[i]
            target = branch_target(mnemonic, ops)
            if target is not None and frag.start <= target < frag.end:
                return a, insns[i + 1][0] - a
            i += 1
    return None


class LineOracle(Protocol):
    """Rows at the binary's own addresses for code in [lo, hi), in address order."""

    @property
    def available(self) -> bool: ...

    def rows_in(self, lo: int, hi: int) -> list[LineRow]: ...


class DwarfOracle:
    """Compiler splits: the DWARF rows of the range, plus the row in force at its start."""

    def __init__(self, dwarf: DwarfLines) -> None:
        self.dwarf = dwarf

    @property
    def available(self) -> bool:
        return self.dwarf.available

    def rows_in(self, lo: int, hi: int) -> list[LineRow]:
        found = self.dwarf.rows_in(lo, hi)
        if not found or found[0].address != lo:
            first = self.dwarf.lookup(lo)
            if first is not None:
                found = [first._replace(address=lo), *found]
        return found


def all_procedures(binary: Binary, index: ModuleIndex) -> list[Procedure]:
    """Every procedure the index knows plus every sized function in one piece."""
    procs = dict(index.procedures)
    starts = {f.start for p in procs.values() for f in p.fragments}
    for f in binary.functions:
        if f.size and f.value not in starts and f.name not in procs:
            starts.add(f.value)
            procs[f.name] = Procedure(
                f.name, [Fragment(f.name, HOT, f.value, f.value + f.size, f.name)]
            )
    return sorted(procs.values(), key=lambda p: p.entry)


def derive_opt_table(
    binary: Binary, split: list[si.SplitProcedure], procs: list[Procedure], lines: LineOracle
) -> tuple[bytes, int]:
    """`.opt_table` with one ESL program per procedure that has lines; (bytes, rows).

    Rows are made in logical order (each range's rows at its logical offsets), and a row equal
    to the one before it is dropped: it would change neither a look-up nor a FILE:LINE site.
    """
    unit = 4 if binary.elf["e_machine"] == EM_AARCH64 else 1
    by_entry = {sp.start: sp for sp in split}
    files: dict[str, int] = {}
    pending: list[tuple[int, list[esl.EslRow]]] = []
    for p in procs:
        sp = by_entry.get(p.entry)
        if sp is not None:
            spans = [(r.start, r.end, r.logical_start) for r in sp.ranges]
        else:
            hot = p.fragments[0]
            spans = [(hot.start, hot.end, 0)]
        rows: list[esl.EslRow] = []
        for lo, hi, lstart in spans:
            for r in lines.rows_in(lo, hi):
                if r.line < 1:  # no line: the previous row goes on covering it
                    continue
                number = files.setdefault(r.path or r.file, len(files) + 1)
                rows.append(esl.EslRow(lstart + r.address - lo, number, r.line, r.column))
        rows.sort(key=lambda r: r.pc)  # stable: rows at one pc keep their order
        rows = [r for i, r in enumerate(rows) if i == 0 or _key(r) != _key(rows[i - 1])]
        if rows:
            pending.append((p.entry, rows))
    table = tuple(files)
    if unit > 1 and any(r.pc % unit for _, rows in pending for r in rows):
        unit = 1
    procs_out = [
        esl.OptProc(
            entry,
            rows[0].file,
            rows[0].line,
            unit,
            table,
            esl.encode_rows(rows, rows[0].line, rows[0].file, unit),
        )
        for entry, rows in pending
    ]
    return esl.encode_opt_table(procs_out), sum(len(r) for _, r in pending)


def _key(r: esl.EslRow) -> tuple[int, int, int]:
    return r.file, r.line, r.column


@dataclass(frozen=True, slots=True)
class Derived:
    """What annotate adds to a copy of IN, and how it got there."""

    split_info: bytes
    opt_table: bytes
    split_count: int
    records: int
    rows: int
    lines_from: str  # the file whose DWARF gave the lines
    bolted: bool
    notes: tuple[str, ...]


def derive(binary: Binary, input_path: str | None = None, debug_path: str | None = None) -> Derived:
    """`.split_info` and `.opt_table` for `binary`: from BAT and the pre-BOLT binary's DWARF
    when it has BAT, else from its fragments, jumps and DWARF (its own or `debug_path`'s)."""
    index = ModuleIndex(binary)
    insns = _instructions(binary.path)
    procs = all_procedures(binary, index)
    split_procs = [p for p in procs if p.is_split]
    lines: LineOracle
    if bat_translate.has_bat(binary):
        if input_path is not None:
            source = prebolt.set_input(binary, input_path)
        else:
            source = prebolt.input_for(binary)
        if source is None:
            raise UsageError(
                f"{binary.path}: BOLTed, and no pre-BOLT binary found for its lines "
                "(give it with --input PATH)"
            )
        lines = annotate_bolt.BoltLines(binary, source, insns)

        def fallback(p: Procedure, f: Fragment) -> int:
            return annotate_bolt.insertion_point(binary, p, f.start, insns)

        records, notes = derive_records(split_procs, insns, fallback)
    else:
        source = binary
        if debug_path is not None:
            source = Binary(debug_path)
            if source.build_id != binary.build_id:
                raise UsageError(f"{debug_path}: build-id differs from {binary.path}'s")
        lines = DwarfOracle(DwarfLines(source))
        records, notes = derive_records(split_procs, insns, None)
    if not lines.available:
        raise UsageError(
            f"{source.path}: no DWARF lines to derive {esl.SECTION} from"
            + ("" if bat_translate.has_bat(binary) else " (name a build with DWARF: --debug PATH)")
        )
    funcs = [(f.name, f.value, f.size) for f in binary.functions]
    split = si.sp_init(records, funcs)
    table, nrows = derive_opt_table(binary, split, procs, lines)
    return Derived(
        si.encode(records), table, len(split), len(records), nrows, source.path,
        bat_translate.has_bat(binary), tuple(notes),
    )  # fmt: skip


def _write(src: str, dst: str, derived: Derived) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        si_path, ot_path = os.path.join(tmp, "split_info"), os.path.join(tmp, "opt_table")
        with open(si_path, "wb") as f:
            f.write(derived.split_info)
        with open(ot_path, "wb") as f:
            f.write(derived.opt_table)
        # llvm-objcopy-22 sets alignments before it adds sections: a second pass gives
        # .split_info the alignment of 8 that §1 asks for (the copy is ours to rewrite).
        for cmd in (
            [OBJCOPY, "--add-section", f"{si.SECTION}={si_path}",
             "--add-section", f"{esl.SECTION}={ot_path}", src, dst],
            [OBJCOPY, "--set-section-alignment", f"{si.SECTION}=8", dst],
        ):  # fmt: skip
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode:
                raise UsageError(f"{OBJCOPY} failed: {done.stderr.strip()}")


def twin_candidates(src: str, compare: str | None, debug_path: str | None) -> list[str]:
    """Files that may be IN built with DWARF: --compare, then the zoo's `<dir>-dbg/<name>`
    (BOLT's --update-debug-sections build), then --debug."""
    here = os.path.dirname(os.path.abspath(src))
    found = [compare] if compare else []
    found.append(os.path.join(here + "-dbg", os.path.basename(src)))
    if debug_path:
        found.append(debug_path)
    return found


def size_report(src: str, dst: str, derived: Derived, twin: str | None) -> str:
    """"added N bytes (...); the --update-debug-sections build is M bytes larger" (one line)."""
    added = os.path.getsize(dst) - os.path.getsize(src)
    text = (
        f"added {added} bytes ({si.SECTION} {len(derived.split_info)}, "
        f"{esl.SECTION} {len(derived.opt_table)})"
    )
    if twin is None:
        own = _debug_bytes(src)
        if own:
            return f"{text}; {os.path.basename(src)}'s own .debug_* sections are {own} bytes"
        return text + "; no build with DWARF to compare with (--compare PATH)"
    what = "the --update-debug-sections build" if derived.bolted else "the build with DWARF"
    debug = _debug_bytes(twin)
    return (
        f"{text}; {what} ({twin}) is {os.path.getsize(twin) - os.path.getsize(src)} bytes "
        f"larger than {os.path.basename(src)}, {debug} of them .debug_* sections"
    )


def _debug_bytes(path: str) -> int:
    b = Binary(path)
    try:
        return sum(s["sh_size"] for s in b.elf.iter_sections() if s.name.startswith(".debug_"))
    finally:
        b.close()


def _twin(src: Binary, candidates: list[str]) -> str | None:
    for path in candidates:
        if not os.path.isfile(path) or os.path.samefile(path, src.path):
            continue
        try:
            other = Binary(path)
        except UnsplitError:
            continue
        try:
            if other.build_id == src.build_id and other.has_dwarf:
                return path
        finally:
            other.close()
    return None


def annotate(
    src: str,
    dst: str,
    input_path: str | None = None,
    debug_path: str | None = None,
    compare: str | None = None,
) -> str:
    """Write DST: a copy of SRC with `.split_info` and `.opt_table`; returns a summary."""
    if os.path.exists(dst) and os.path.samefile(src, dst):
        raise UsageError("annotate writes a copy: OUT must not be IN")
    if shutil.which(OBJCOPY) is None:
        raise UsageError(f"annotate needs {OBJCOPY}")
    binary = Binary(src)
    try:
        if binary.section(si.SECTION) is not None or binary.section(esl.SECTION) is not None:
            raise UsageError(f"{src} already has {si.SECTION} or {esl.SECTION}")
        derived = derive(binary, input_path, debug_path)
        _write(src, dst, derived)
        twin = _twin(binary, twin_candidates(src, compare, debug_path))
    finally:
        binary.close()
    summary = [
        f"wrote {dst}: {derived.split_count} split procedures ({derived.records} moved ranges), "
        f"{derived.rows} line rows from {'BAT + ' if derived.bolted else ''}"
        f"{derived.lines_from}",
        "  " + size_report(src, dst, derived, twin),
    ]
    return "\n".join(summary + [f"  note: {n}" for n in derived.notes])


def _annotate(args: argparse.Namespace) -> str:
    return annotate(args.input, args.output, args.prebolt, args.debug, args.compare)


# --- registration ----------------------------------------------------------------------------

_PROC_HELP = ("a procedure: linkage name, demangled name or qualified name without parameters, "
              "as bb break reads it")


def _no_demangle(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-demangle", action="store_true",
                        help="print linkage names (`_Z7processPKii`), as llvm-symbolizer's "
                             "option")


def add_cli(subparsers: Any) -> None:
    """Register `ranges`, `lines` and `annotate` on the `unsplit` argparse subparsers."""
    p = subparsers.add_parser("ranges", help="logical ranges of split procedures, in order")
    p.add_argument("binary", metavar="BINARY")
    p.add_argument("proc", metavar="PROC", nargs="?",
                   help=f"{_PROC_HELP} (default: every split procedure)")
    p.add_argument("--json", action="store_true",
                   help="a JSON list: procedure, linkage_name, entry, logical_size, ranges "
                        "(start, end)")
    _no_demangle(p)
    p.set_defaults(handler=_ranges)

    p = subparsers.add_parser("lines", help="line rows of split procedures (ESL, DWARF or BAT)")
    p.add_argument("binary", metavar="BINARY")
    p.add_argument("proc", metavar="PROC", nargs="?",
                   help=f"{_PROC_HELP} (default: every split procedure)")
    p.add_argument("--json", action="store_true",
                   help="a JSON list: procedure, linkage_name, address, file, path, line, "
                        "column, source (esl, dwarf or bat)")
    _no_demangle(p)
    p.set_defaults(handler=_lines)

    p = subparsers.add_parser(
        "annotate", help="write a copy with .split_info and .opt_table (ESL lines)"
    )
    p.add_argument("input", metavar="IN")
    p.add_argument("-o", "--output", required=True, metavar="OUT")
    p.add_argument("--input", dest="prebolt", metavar="PATH",
                   help="BOLTed IN: its pre-BOLT binary (default: searched as `bb input` does)")
    p.add_argument("--debug", metavar="PATH",
                   help="take DWARF lines from PATH (same build-id: the unstripped build)")
    p.add_argument("--compare", metavar="PATH",
                   help="report sizes against PATH, IN built with DWARF (default: "
                        "<dir>-dbg/<name>, then --debug)")
    p.set_defaults(handler=_annotate)
