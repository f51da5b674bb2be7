"""`unsplit ranges`, `unsplit lines` and `unsplit annotate`: the split-routine formats at work.

Specification: shared/specs/split-info-and-esl.md (§1 `.split_info`, §2-§3 `.opt_table` with
ESL programs); the JSON schemas are those of issue 5:

- ``ranges BINARY [PROC] [--json]``: each split procedure's logical ranges in original order,
  ``[{"procedure", "entry", "logical_size", "ranges": [{"start", "end"}]}]``, addresses as hex;
- ``lines BINARY [PROC] [--json]``: line rows in address order within each procedure,
  ``[{"procedure", "address", "file", "line", "column", "source"}]`` (source esl or dwarf);
- ``annotate IN -o OUT``: a copy of IN (never IN itself) with `.split_info` and `.opt_table`
  derived from what IN says: its fragments (``foo.cold`` symbols, bb address maps), the jump
  that reaches each moved fragment (found with llvm-objdump-22: it is the record's branch) and
  its DWARF lines, so that the copy debugs with true lines once its DWARF is stripped.

Handlers return the text to print; errors are UnsplitErrors, as everywhere in the core.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
from bisect import bisect_left
from typing import Any

from ..binary import Binary
from ..errors import AddressLookupError, UsageError
from ..formats import esl
from ..formats import split_info as si
from ..index import ModuleIndex
from ..lines import DwarfLines
from ..model import LineRow, Procedure
from ..sources import split_info as source

OBJCOPY = "llvm-objcopy-22"
OBJDUMP = "llvm-objdump-22"
EM_AARCH64 = "EM_AARCH64"


# --- ranges ----------------------------------------------------------------------------------


def _split_procedures(index: ModuleIndex, name: str | None) -> list[Procedure]:
    if name is not None:
        if name not in index.procedures:
            raise AddressLookupError(f"no procedure {name!r} in {index.binary.path}")
        return [index.procedures[name]]
    return sorted((p for p in index.procedures.values() if p.is_split), key=lambda p: p.entry)


def ranges_json(path: str, name: str | None = None) -> list[dict[str, Any]]:
    index = ModuleIndex(Binary(path))
    out = []
    for p in _split_procedures(index, name):
        frags = sorted(p.fragments, key=lambda f: f.logical_start)
        out.append(
            {
                "procedure": p.name,
                "entry": hex(p.entry),
                "logical_size": p.logical_size,
                "ranges": [{"start": hex(f.start), "end": hex(f.end)} for f in frags],
            }
        )
    return out


def _ranges(args: argparse.Namespace) -> str:
    data = ranges_json(args.binary, args.proc)
    if args.json:
        return json.dumps(data, indent=1)
    lines = []
    for p in data:
        lines.append(f"{p['procedure']}: entry {p['entry']}, logical size {p['logical_size']:#x}")
        offset = 0
        for r in p["ranges"]:
            lo, hi = int(r["start"], 16), int(r["end"], 16)
            lines.append(f"  +{offset:#06x}  [{lo:#x}, {hi:#x})  {hi - lo:#x} bytes")
            offset += hi - lo
    return "\n".join(lines) if lines else "no split procedures"


# --- lines -----------------------------------------------------------------------------------


def lines_json(path: str, name: str | None = None) -> list[dict[str, Any]]:
    binary = Binary(path)
    index = ModuleIndex(binary)
    info = source.line_info(binary)
    procs = {p.entry: p for p in _split_procedures(index, name)}
    if name is None:  # every procedure an ESL program describes, split or not
        for p in index.procedures.values():
            if p.entry in info.rows_by_procedure:
                procs.setdefault(p.entry, p)
    dwarf = DwarfLines(binary)
    out: list[dict[str, Any]] = []
    for entry in sorted(procs):
        p = procs[entry]
        rows = info.rows_by_procedure.get(entry)
        if rows is None:
            rows = [r for f in p.fragments for r in dwarf.rows_in(f.start, f.end)]
        for r in sorted(rows, key=lambda r: r.address):  # stable: the later row stays later
            out.append(
                {
                    "procedure": p.name,
                    "address": hex(r.address),
                    "file": r.file,
                    "line": r.line,
                    "column": r.column,
                    "source": r.source,
                }
            )
    return out


def _lines(args: argparse.Namespace) -> str:
    data = lines_json(args.binary, args.proc)
    if args.json:
        return json.dumps(data, indent=1)
    return "\n".join(
        f"{r['procedure']:<24} {r['address']:>12}  {r['file']}:{r['line']}:{r['column']}"
        f"  [{r['source']}]"
        for r in data
    )


# --- annotate --------------------------------------------------------------------------------

_INSN = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
_TARGET = re.compile(r"^(?:0x)?([0-9a-f]+)\b")


def _instructions(path: str) -> list[tuple[int, str, str]]:
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
    return out


def derive_records(
    procs: list[Procedure], insns: list[tuple[int, str, str]]
) -> tuple[list[si.SplitRecord], list[str]]:
    """One record per moved fragment: the first jump to its start from its procedure's code.

    The jump's address and length become branch_addr and branch_size, which places the moved
    code, logically, where control leaves for it (§1); GCC's cold code jumps back right after
    that branch, so this is also where it came from. Returns (records, notes).
    """
    addrs = [a for a, _, _ in insns]
    records, notes = [], []
    for p in procs:
        frags = sorted(p.fragments, key=lambda f: f.logical_start)
        for frag in frags[1:]:
            branch = None
            for other in frags:  # the hot part first: then earlier moved parts (nesting)
                if other is frag:
                    continue
                i = bisect_left(addrs, other.start)
                while i + 1 < len(insns) and insns[i][0] < other.end:
                    a, mnemonic, ops = insns[i]
                    t = _TARGET.match(ops)
                    if mnemonic.startswith(("j", "b")) and t and int(t[1], 16) == frag.start:
                        branch = (a, insns[i + 1][0] - a)
                        break
                    i += 1
                if branch:
                    break
            if branch is None:
                notes.append(f"{p.name}: no jump to {frag.symbol or hex(frag.start)}: left out")
                continue
            records.append(si.SplitRecord(branch[0], frag.start, frag.size, branch[1]))
    return records, notes


def derive_opt_table(
    binary: Binary, split: list[si.SplitProcedure], procs: list[Procedure]
) -> tuple[bytes, int]:
    """`.opt_table` with one ESL program per procedure that has DWARF lines; (bytes, rows)."""
    dwarf = DwarfLines(binary)
    if not dwarf.available:
        raise UsageError(f"{binary.path}: no DWARF lines to derive .opt_table from")
    unit = 4 if binary.elf["e_machine"] == EM_AARCH64 else 1
    by_entry = {sp.start: sp for sp in split}
    files: dict[str, int] = {}
    pending: list[tuple[int, list[esl.EslRow]]] = []
    for p in sorted(procs, key=lambda p: p.entry):
        sp = by_entry.get(p.entry)
        if sp is not None:
            spans = [(r.start, r.end, r.logical_start) for r in sp.ranges]
        else:
            hot = p.fragments[0]
            spans = [(hot.start, hot.end, 0)]
        rows = []
        for lo, hi, lstart in spans:
            found = dwarf.rows_in(lo, hi)
            if not found or found[0].address != lo:  # the row that covers the range's start
                first = dwarf.lookup(lo)
                found = [LineRow(lo, first.file, first.line, first.column)] if first else []
                found += dwarf.rows_in(lo, hi)
            for r in found:
                if r.line < 1:  # no line: the previous row goes on covering it
                    continue
                number = files.setdefault(r.file, len(files) + 1)
                rows.append(esl.EslRow(lstart + r.address - lo, number, r.line, r.column))
        if rows:
            rows.sort(key=lambda r: r.pc)
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


def annotate(src: str, dst: str) -> str:
    """Write DST: a copy of SRC with `.split_info` and `.opt_table`; returns a summary."""
    if os.path.exists(dst) and os.path.samefile(src, dst):
        raise UsageError("annotate writes a copy: OUT must not be IN")
    if shutil.which(OBJCOPY) is None:
        raise UsageError(f"annotate needs {OBJCOPY}")
    binary = Binary(src)
    if binary.section(si.SECTION) is not None or binary.section(esl.SECTION) is not None:
        raise UsageError(f"{src} already has {si.SECTION} or {esl.SECTION}")
    index = ModuleIndex(binary)
    split_procs = [p for p in index.procedures.values() if p.is_split]
    records, notes = derive_records(split_procs, _instructions(src))
    funcs = [(f.name, f.value, f.size) for f in binary.functions]
    split = si.sp_init(records, funcs)
    table, nrows = derive_opt_table(binary, split, list(index.procedures.values()))
    split_bytes = si.encode(records)
    with tempfile.TemporaryDirectory() as tmp:
        si_path, ot_path = os.path.join(tmp, "split_info"), os.path.join(tmp, "opt_table")
        with open(si_path, "wb") as f:
            f.write(split_bytes)
        with open(ot_path, "wb") as f:
            f.write(table)
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
    binary.close()
    summary = [
        f"wrote {dst}: {len(split)} split procedures ({len(records)} moved ranges), "
        f"{nrows} line rows",
        f"  {si.SECTION} {len(split_bytes)} bytes, {esl.SECTION} {len(table)} bytes; "
        f"file {os.path.getsize(dst)} bytes (input {os.path.getsize(src)})",
    ]
    return "\n".join(summary + [f"  note: {n}" for n in notes])


def _annotate(args: argparse.Namespace) -> str:
    return annotate(args.input, args.output)


# --- registration ----------------------------------------------------------------------------


def add_cli(subparsers: Any) -> None:
    """Register `ranges`, `lines` and `annotate` on the `unsplit` argparse subparsers."""
    p = subparsers.add_parser("ranges", help="logical ranges of split procedures, in order")
    p.add_argument("binary", metavar="BINARY")
    p.add_argument("proc", metavar="PROC", nargs="?", help="one procedure (default: all split)")
    p.add_argument("--json", action="store_true", help="a JSON list (issue 5 schema)")
    p.set_defaults(handler=_ranges)

    p = subparsers.add_parser("lines", help="line rows of split procedures (ESL, else DWARF)")
    p.add_argument("binary", metavar="BINARY")
    p.add_argument("proc", metavar="PROC", nargs="?", help="one procedure")
    p.add_argument("--json", action="store_true", help="a JSON list (issue 5 schema)")
    p.set_defaults(handler=_lines)

    p = subparsers.add_parser(
        "annotate", help="write a copy with .split_info and .opt_table (ESL lines)"
    )
    p.add_argument("input", metavar="IN")
    p.add_argument("-o", "--output", required=True, metavar="OUT")
    p.set_defaults(handler=_annotate)
