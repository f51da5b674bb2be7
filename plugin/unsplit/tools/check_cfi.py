"""`unsplit check-cfi BINARY [--input PRE_BOLT] [--json]`: what is wrong or ambiguous in a
split binary's unwind information (unsplit.debug.cfi_check), in one report.

A summary line first, then a few examples of each kind (`--json`: every finding). Exit status
0 when nothing is found, 3 (EXIT_FOUND) when something is, 1 for bad input, 2 for usage.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from unsplit.debug import cfi_check
from unsplit.elf import cfi_table
from unsplit.index.module_index import ModuleIndex
from unsplit.session import Session
from unsplit.tools import EXIT_FOUND, Outcome

_EXAMPLES = 5


def _fde(f: cfi_check.Fde) -> dict[str, Any]:
    return {"section": f.section, "offset": f.offset, "start": f"{f.start:#x}",
            "end": f"{f.end:#x}"}


def _named(index: ModuleIndex, address: int) -> str:
    proc = index.procedure_at(address)
    frag = index.fragment_at(address)
    if proc is None or frag is None:
        return f"{address:#x}"
    return f"{address:#x} ({proc.name}" + ("" if frag.name == "hot" else f" [{frag.name}]") + ")"


def _run(args: argparse.Namespace) -> Outcome:
    index = Session().index(args.binary)
    table = cfi_table.table_for(index.binary)
    counts = {s.name: len(s.every_fde().starts) for s in table.sections}
    found = list(cfi_check.conflicts(index.binary))
    moved = index.moved_fragments()
    holes = list(cfi_check.uncovered(index, moved))
    mismatches: list[cfi_check.RuleMismatch] = []
    if args.input:
        input_binary = cfi_check.input_for_check(index, args.input)
        mismatches = list(cfi_check.rule_mismatches(index, moved, input_binary))
    shared = [c for c in found if c.kind == "shared-start"]
    overlaps = [c for c in found if c.kind == "overlap"]
    anything = bool(found or holes or mismatches)
    if args.json:
        record = {
            "binary": args.binary, "input": args.input, "found": anything,
            "fdes": counts, "moved_fragments": len(moved),
            "trusted_by": {name: table.why_trusted(name) for name in counts},
            "shared_start": [_conflict_json(c) for c in shared],
            "overlaps": [_conflict_json(c) for c in overlaps],
            "moved_without_fde": [{"fragment_start": f"{u.fragment.start:#x}",
                                   "fragment_end": f"{u.fragment.end:#x}",
                                   "procedure": u.fragment.procedure,
                                   "fragment": u.fragment.name, "from": f"{u.gap:#x}"}
                                  for u in holes],
            "rules_unlike_input": [
                {"address": f"{m.address:#x}", "input_address": f"{m.input_address:#x}",
                 "procedure": m.fragment.procedure, "fragment": m.fragment.name,
                 "rule": m.what, "output": m.output_rule, "input": m.input_rule}
                for m in mismatches],
        }
        return Outcome(json.dumps(record), EXIT_FOUND if anything else 0)
    lines = [_summary(args.binary, counts, len(moved), shared, overlaps, holes,
                      mismatches if args.input else None)]
    # Those whose rules differ first: where a debugger's choice of FDE matters.
    lines += _examples("FDEs sharing a start", _differing_first(shared),
                       lambda c: _conflict_text(index, c))
    lines += _examples("FDEs starting inside another", _differing_first(overlaps),
                       lambda c: _conflict_text(index, c))
    lines += _examples("moved fragments without an FDE", holes, lambda u: (
        f"{_named(index, u.fragment.start)}: nothing from {u.gap:#x} to "
        f"{u.fragment.end:#x}"))
    lines += _examples("rules unlike the input's", mismatches, lambda m: (
        f"{_named(index, m.address)}: {m.what} {m.output_rule}, the input's at "
        f"{m.input_address:#x} {m.input_rule}"))
    return Outcome("\n".join(lines), EXIT_FOUND if anything else 0)


def _summary(binary: str, counts: dict[str, int], moved: int,
             shared: list[cfi_check.Conflict], overlaps: list[cfi_check.Conflict],
             holes: list[cfi_check.Uncovered], mismatches: list[cfi_check.RuleMismatch] | None
             ) -> str:
    fdes = ", ".join(f"{n} FDEs in {name}" for name, n in counts.items()) or "no CFI"
    parts = []
    if shared:
        parts.append(f"{len(shared)} starts shared by several FDEs "
                     f"({sum(c.differ_at is not None for c in shared)} with different rules)")
    if overlaps:
        parts.append(f"{len(overlaps)} FDEs starting inside another "
                     f"({sum(c.differ_at is not None for c in overlaps)} with different rules)")
    if holes:
        parts.append(f"{len(holes)} of {moved} moved fragments without an FDE")
    if mismatches:
        parts.append(f"{len(mismatches)} rules of moved fragments unlike the input's")
    name = os.path.basename(binary)
    if not parts:
        checked = " and the input's rules" if mismatches is not None else ""
        return f"{name}: nothing found ({fdes}; {moved} moved fragments{checked} checked)"
    return f"{name}: " + "; ".join(parts) + f" ({fdes})"


def _examples(title: str, items: list[Any], text: Any) -> list[str]:
    if not items:
        return []
    out = [f"{title}:"] + [f"  {text(x)}" for x in items[:_EXAMPLES]]
    if len(items) > _EXAMPLES:
        out.append(f"  … and {len(items) - _EXAMPLES} more (--json lists all)")
    return out


def _differing_first(found: list[cfi_check.Conflict]) -> list[cfi_check.Conflict]:
    return sorted(found, key=lambda c: c.differ_at is None)


def _conflict_text(index: ModuleIndex, c: cfi_check.Conflict) -> str:
    fdes = ", ".join(f"{f.section}+{f.offset:#x} [{f.start:#x}, {f.end:#x})" for f in c.fdes)
    trusted = ("trusted: none" if c.trusted is None else
               f"trusted: {c.trusted.section}+{c.trusted.offset:#x}")
    rules = ("same rules where they overlap" if c.differ_at is None else
             f"rules differ from {c.differ_at:#x}")
    return f"{_named(index, c.address)}: {fdes}; {rules}; {trusted}"


def _conflict_json(c: cfi_check.Conflict) -> dict[str, Any]:
    return {"address": f"{c.address:#x}", "fdes": [_fde(f) for f in c.fdes],
            "trusted": None if c.trusted is None else _fde(c.trusted), "why": c.why,
            "rules_differ_at": None if c.differ_at is None else f"{c.differ_at:#x}"}


def add_cli(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "check-cfi", help="report ambiguous or missing unwind information of a split binary",
        description="FDEs that share a start or overlap (and which one unsplit trusts), moved "
                    "fragments without an FDE, and with --input each moved fragment's CFA and "
                    "return-address rules against the pre-BOLT input's. Exit status 3 when "
                    "anything is found, 0 when nothing is.")
    p.add_argument("binary", metavar="BINARY", help="the ELF file")
    p.add_argument("--input", metavar="PRE_BOLT", help="the pre-BOLT binary of a BOLTed BINARY")
    p.add_argument("--json", action="store_true", help="every finding, as one JSON object")
    p.set_defaults(handler=_run)
