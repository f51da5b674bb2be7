"""`unsplit bbmap BINARY [--json]`: dump the LLVM basic-block address maps of a binary.

``--json`` prints exactly the list that ``llvm-readobj-22 --bb-addr-map --elf-output-style=JSON``
prints under its ``BBAddrMap`` key (shared/specs/llvm-bb-addr-map.md §11.3): same keys, values
and order, so that scripts written for one work with the other. readobj repeats the
``BBAddrMap`` key once per map section (one JSON object with duplicate keys); we print the
concatenation of those lists, which is what a reader that keeps every key sees.
That mode imitates LLVM 22's reader (§9.2): V0 sections are skipped, versions 0/1 and any
malformed section print nothing (readobj prints a warning on stderr; we return it separately).

The text dump reads every version (V0, 0–5) and keeps the functions before an error.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..binary import Binary
from ..formats import bb_addr_map as fmt
from ..sources.bb_addr_map import (
    FunctionSymbol,
    MapSection,
    decode_section,
    function_symbols,
    map_sections,
    symbol_at,
)

_METADATA_KEYS = (
    ("HasReturn", fmt.Metadata.HAS_RETURN),
    ("HasTailCall", fmt.Metadata.HAS_TAIL_CALL),
    ("IsEHPad", fmt.Metadata.IS_EH_PAD),
    ("CanFallThrough", fmt.Metadata.CAN_FALL_THROUGH),
    ("HasIndirectBranch", fmt.Metadata.HAS_INDIRECT_BRANCH),
)


def readobj(path: str) -> tuple[list[dict[str, Any]], list[str]]:
    """(the readobj-22 JSON ``BBAddrMap`` list, readobj's warnings in its wording)."""
    binary = Binary(path)
    try:
        is_rel = binary.elf["e_type"] == "ET_REL"
        symbols = function_symbols(binary)
        out: list[dict[str, Any]] = []
        warnings: list[str] = []
        for ms in map_sections(binary):
            if ms.sh_type != fmt.SHT_LLVM_BB_ADDR_MAP:
                continue  # LLVM 21+ do not look at V0 sections at all
            if ms.skip_silently:
                warnings.append(ms.unreadable or "")
                continue
            sm = decode_section(binary, ms, strict=True)
            if sm.error is not None:
                warnings.append(f"unable to dump {ms.description}: {sm.error.message}")
                continue
            for fm in sm.functions:
                out.append({"Function": _function_json(fm, ms, symbols, is_rel, warnings)})
        return out, warnings
    finally:
        binary.close()


def readobj_json(path: str) -> list[dict[str, Any]]:
    """What llvm-readobj-22 --bb-addr-map --elf-output-style=JSON prints under BBAddrMap."""
    return readobj(path)[0]


def _function_json(
    fm: fmt.FunctionMap, ms: MapSection, symbols: dict[int, list[FunctionSymbol]],
    is_rel: bool, warnings: list[str],
) -> dict[str, Any]:
    # readobj matches the symbol's section with sh_link only in relocatable files.
    sym = symbol_at(symbols, fm.address, ms.link if is_rel else None)
    if sym is None:
        warnings.append(f"could not identify function symbol for address (0x{fm.address:X}) "
                        f"in {ms.description}")
    ranges = []
    for rng in fm.ranges:
        entries = []
        for e in rng.entries:
            d: dict[str, Any] = {"ID": e.id, "Offset": e.offset}
            if e.callsite_offsets:
                d["Callsite End Offsets"] = list(e.callsite_offsets)
            if fm.features & fmt.Feature.BB_HASH:
                d["Hash"] = e.hash or 0
            d["Size"] = e.size
            for key, bit in _METADATA_KEYS:
                d[key] = bool(e.metadata & bit)
            entries.append(d)
        ranges.append({"Base Address": rng.base_address, "BB Entries": entries})
    out: dict[str, Any] = {
        "At": fm.address, "Name": "<?>" if sym is None else sym.name, "BB Ranges": ranges}
    if fm.pgo is not None:
        out["PGO analyses"] = _pgo_json(fm.features, fm.pgo)
    return out


def _pgo_json(features: int, pgo: fmt.PGOAnalysis) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if features & fmt.Feature.FUNC_ENTRY_COUNT:
        out["FuncEntryCount"] = pgo.func_entry_count or 0
    if features & (fmt.Feature.BB_FREQ | fmt.Feature.BR_PROB):
        blocks = []
        post_link = bool(features & fmt.Feature.POST_LINK_CFG)
        for b in pgo.blocks:
            d: dict[str, Any] = {}
            if features & fmt.Feature.BB_FREQ:
                d["Frequency"] = b.frequency or 0
                if post_link:  # readobj prints it only together with the frequency (§7)
                    d["PostLink Frequency"] = b.post_link_frequency or 0
            if features & fmt.Feature.BR_PROB:
                succs = []
                for s in b.successors or ():
                    sd: dict[str, Any] = {"ID": s.id, "Probability": s.probability}
                    if post_link:
                        sd["PostLink Probability"] = s.post_link_frequency or 0
                    succs.append(sd)
                d["Successors"] = succs
            blocks.append(d)
        out["PGO BB entries"] = blocks
    return out


# --- text dump --------------------------------------------------------------------------------


def text(path: str) -> str:
    """A readable dump of every map section, every version, with relative frequencies."""
    binary = Binary(path)
    try:
        return "\n".join(_text_lines(binary))
    finally:
        binary.close()


def _text_lines(binary: Binary) -> list[str]:
    is_rel = binary.elf["e_type"] == "ET_REL"
    symbols = function_symbols(binary)
    lines: list[str] = []
    sections = map_sections(binary)
    if not sections:
        return [f"{binary.path}: no basic-block address map"]
    for ms in sections:
        sm = decode_section(binary, ms, strict=False)
        stale = ms.link_name == ".bolt.org.text"
        note = " (BOLT's copy of its input's map: stale)" if stale else ""
        lines.append(f"{ms.name} [{ms.index}] -> {ms.link_name or ms.link}: "
                     f"{len(sm.functions)} functions{note}")
        if ms.unreadable and ms.relocations is None:
            lines.append(f"  note: {ms.unreadable}")
        for fm in sm.functions:
            lines.extend(_function_text(fm, ms, symbols, is_rel))
        for err in sm.rejected:
            lines.append(f"  skipped a function record: {err}")
        if sm.error is not None:
            lines.append(f"  stopped: {sm.error}")
    return lines


def _function_text(
    fm: fmt.FunctionMap, ms: MapSection, symbols: dict[int, list[FunctionSymbol]], is_rel: bool
) -> list[str]:
    sym = symbol_at(symbols, fm.address, ms.link if is_rel else None)
    name = sym.name if sym is not None else "<?>"
    version = "V0" if fm.version is None else f"v{fm.version}"
    feats = fmt.Feature(fm.features)
    feat_names = ",".join(f.name.lower() for f in fmt.Feature if f in feats and f.name)
    head = f"{name} @ {fm.address:#x}  {version} features {fm.features:#x}"
    lines = [head + (f" ({feat_names})" if feat_names else "")]
    if fm.pgo is not None and fm.pgo.func_entry_count is not None:
        lines.append(f"  entry count {fm.pgo.func_entry_count}")
    pgo = fm.pgo.blocks if fm.pgo is not None else ()
    entry_freq = pgo[0].frequency if pgo else None
    # LLVM 21 wrote call *begin* offsets under version 3; 22 writes call ends (§3.3).
    cs_word = "calls@" if fm.version == 3 else "call ends@"
    k = 0
    for r, rng in enumerate(fm.ranges):
        lines.append(f"  range {r} @ {rng.base_address:#x}: {rng.num_blocks} blocks"
                     + ("" if rng.entries or not rng.num_blocks else " (entries omitted)"))
        for e in rng.entries:
            start = rng.base_address + e.offset
            parts = [f"    BB{e.id:<4} [{start:#x}, {start + e.size:#x})"]
            if e.flags:
                parts.append(" ".join(e.flags))
            if e.callsite_offsets:
                parts.append(cs_word + ",".join(f"{c:#x}" for c in e.callsite_offsets))
            if e.hash is not None:
                parts.append(f"hash {e.hash:#018x}")
            if k < len(pgo):
                p = pgo[k]
                if p.frequency is not None:
                    rel = p.frequency / entry_freq if entry_freq else 0.0
                    parts.append(f"freq {rel:.4g}")
                if p.successors:
                    parts.append("-> " + ", ".join(
                        f"BB{s.id} {100 * s.probability / fmt.PROBABILITY_ONE:.2f}%"
                        for s in p.successors))
            lines.append("  ".join(parts))
            k += 1
    return lines


# --- command line -----------------------------------------------------------------------------


def _run(args: argparse.Namespace) -> str:
    if args.json:
        return json.dumps(readobj_json(args.binary), indent=2)
    return text(args.binary)


def add_cli(subparsers: Any) -> None:
    """Register `bbmap` on the `unsplit` argparse subparsers; its handler returns the text."""
    p = subparsers.add_parser(
        "bbmap", help="dump LLVM basic-block address maps (.llvm_bb_addr_map)",
        description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("binary", metavar="BINARY", help="the ELF file")
    p.add_argument("--json", action="store_true",
                   help="print llvm-readobj-22's JSON BBAddrMap list, exactly")
    p.set_defaults(handler=_run)
