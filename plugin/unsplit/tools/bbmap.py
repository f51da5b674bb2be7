"""`unsplit bbmap BINARY [--json]`: the LLVM basic-block address maps of a binary. ``--json`` prints
exactly what ``llvm-readobj-22 --bb-addr-map --elf-output-style=JSON`` prints under
``BBAddrMap`` (its lists concatenated), reading as LLVM 22 does; the text dump reads every
version and keeps the functions before an error."""

from __future__ import annotations

import argparse
import io
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from typing import Any, TextIO

from unsplit.elf.binary import Binary
from unsplit.errors import DecodeError
from unsplit.formats import bb_addr_map as fmt
from unsplit.formats import bb_addr_map_flat as flat
from unsplit.index.sources.bb_addr_map import (
    FunctionSymbol,
    MapSection,
    decode_section,
    function_symbols,
    map_sections,
    symbol_at,
)

SPOOL_IN_MEMORY = 16 << 20  # a section's JSON beyond this goes to a temporary file
COPY_CHUNK = 1 << 20

_METADATA_KEYS = (
    ("HasReturn", fmt.Metadata.HAS_RETURN),
    ("HasTailCall", fmt.Metadata.HAS_TAIL_CALL),
    ("IsEHPad", fmt.Metadata.IS_EH_PAD),
    ("CanFallThrough", fmt.Metadata.CAN_FALL_THROUGH),
    ("HasIndirectBranch", fmt.Metadata.HAS_INDIRECT_BRANCH),
)


def write_readobj_json(path: str, out: TextIO) -> list[str]:
    """Write the readobj-22 JSON ``BBAddrMap`` list to `out` as each function is decoded;
    returns readobj's warnings in its wording.

    Memory stays that of one function (a clang-size map prints hundreds of MB of JSON): the
    fast reader (formats.bb_addr_map_flat) yields one function at a time, and its text goes to
    a spool file until the section's end, since LLVM prints nothing of a section with an error
    anywhere (§9.2); then the spool is copied out. One function per line, readobj's compact JSON.
    """
    binary = Binary(path)
    try:
        is_rel = binary.elf["e_type"] == "ET_REL"
        symbols = function_symbols(binary)
        warnings: list[str] = []
        separator = "["
        for ms in map_sections(binary):
            if ms.sh_type != fmt.SHT_LLVM_BB_ADDR_MAP:
                continue  # LLVM 21+ do not look at V0 sections at all
            if ms.skip_silently:
                warnings.append(ms.unreadable or "")
                continue
            if ms.unreadable is not None:
                warnings.append(f"unable to dump {ms.description}: {ms.unreadable}")
                continue
            said: list[str] = []
            before = separator
            with tempfile.SpooledTemporaryFile(SPOOL_IN_MEMORY, mode="w+") as spool:
                try:
                    for fn in flat.iter_functions(ms.data, ms.description,
                                                  **_decode_args(binary, ms)):
                        spool.write(separator + _function_json(fn, ms, symbols, is_rel, said))
                        separator = ",\n"
                except DecodeError as e:
                    warnings.append(f"unable to dump {ms.description}: {e.message}")
                    separator = before  # nothing of this section is printed
                    continue
                warnings += said
                spool.seek(0)
                shutil.copyfileobj(spool, out, COPY_CHUNK)
        out.write("[]\n" if separator == "[" else "]\n")
        return warnings
    finally:
        binary.close()


def readobj(path: str) -> tuple[list[dict[str, Any]], list[str]]:
    """(the readobj-22 JSON ``BBAddrMap`` list, readobj's warnings in its wording): what
    :func:`write_readobj_json` writes, read back."""
    buffer = io.StringIO()
    warnings = write_readobj_json(path, buffer)
    return json.loads(buffer.getvalue()), warnings


def readobj_json(path: str) -> list[dict[str, Any]]:
    """What llvm-readobj-22 --bb-addr-map --elf-output-style=JSON prints under BBAddrMap."""
    return readobj(path)[0]


def _decode_args(binary: Binary, ms: MapSection) -> dict[str, Any]:
    elf = binary.elf
    return {"sh_type": ms.sh_type, "address_size": 8 if elf.elfclass == 64 else 4,
            "little_endian": elf.little_endian, "relocations": ms.relocations}


_FLAGS = [",".join(f'"{key}":{"true" if md & bit else "false"}' for key, bit in _METADATA_KEYS)
          for md in range(fmt.Metadata.HAS_INDIRECT_BRANCH * 2)]
_ENTRY = '{"ID":%d,"Offset":%d,"Size":%d,%s}'
_PLAIN = re.compile(r'[^"\\\x00-\x1f\x7f-\U0010ffff]*')  # needs no JSON escape


def _function_json(fn: flat.FlatFunction, ms: MapSection,
                   symbols: dict[int, list[FunctionSymbol]], is_rel: bool,
                   warnings: list[str]) -> str:
    """One ``{"Function": …}`` object, keys in readobj's order (§11.3)."""
    # readobj matches the symbol's section with sh_link only in relocatable files.
    sym = symbol_at(symbols, fn.address, ms.link if is_rel else None)
    if sym is None:
        warnings.append(f"could not identify function symbol for address (0x{fn.address:X}) "
                        f"in {ms.description}")
    name = "<?>" if sym is None else sym.name
    quoted = f'"{name}"' if _PLAIN.fullmatch(name) else json.dumps(name)
    ranges = ",".join(f'{{"Base Address":{r.base_address},"BB Entries":[{_entries(r)}]}}'
                      for r in fn.ranges)
    text = f'{{"Function":{{"At":{fn.address},"Name":{quoted},"BB Ranges":[{ranges}]'
    if fn.pgo is not None:
        text += f',"PGO analyses":{_pgo_json(fn.features, fn.pgo)}'
    return text + "}}"


def _entries(r: flat.FlatRange) -> str:
    if r.callsites is None and r.hashes is None:
        return ",".join([_ENTRY % t for t in zip(r.ids, r.offsets, r.sizes,
                                                  map(_FLAGS.__getitem__, r.metadata),
                                                  strict=True)])
    out = []
    for k, (bid, offset, size, md) in enumerate(zip(r.ids, r.offsets, r.sizes, r.metadata,
                                                    strict=True)):
        d = f'{{"ID":{bid},"Offset":{offset},'
        if r.callsites is not None and r.callsites[k]:
            d += f'"Callsite End Offsets":[{",".join(map(str, r.callsites[k]))}],'
        if r.hashes is not None:
            d += f'"Hash":{r.hashes[k]},'
        out.append(f'{d}"Size":{size},{_FLAGS[md]}}}')
    return ",".join(out)


# Plain ints: IntFlag arithmetic costs an enum construction per operation.
_FEC = int(fmt.Feature.FUNC_ENTRY_COUNT)
_PGO_TABLES = int(fmt.Feature.BB_FREQ | fmt.Feature.BR_PROB)
_POST_LINK = int(fmt.Feature.POST_LINK_CFG)
_SUCCESSOR = '{"ID":%d,"Probability":%d}'
_BLOCK = '{"Frequency":%d,"Successors":[%s]}'
_ONE = _SUCCESSOR
_TWO = f"{_SUCCESSOR},{_SUCCESSOR}"
_SUCCESSOR_POST_LINK = '{"ID":%d,"Probability":%d,"PostLink Probability":%d}'


def _successors(s: Sequence[int]) -> str:
    n = len(s)
    if n == 0:
        return ""
    if n == 2:
        return _ONE % (s[0], s[1])
    if n == 4:
        return _TWO % (s[0], s[1], s[2], s[3])
    return ",".join(map(_SUCCESSOR.__mod__, zip(s[0::2], s[1::2], strict=True)))


def _pgo_json(features: int, pgo: flat.FlatPGO) -> str:
    parts = []
    if features & _FEC:
        parts.append(f'"FuncEntryCount":{pgo.func_entry_count or 0}')
    if features & _PGO_TABLES:
        freqs, post, succs = pgo.frequencies, pgo.post_link_frequencies, pgo.successors
        if freqs is not None and succs is not None and post is None:  # the usual layout
            blocks = ",".join([_BLOCK % (k, _successors(s)) for k, s in zip(freqs, succs,
                                                                             strict=True)])
            parts.append(f'"PGO BB entries":[{blocks}]')
            return "{" + ",".join(parts) + "}"
        fields: list[list[str]] = [[] for _ in (freqs if freqs is not None else succs or ())]
        if freqs is not None:
            if post is not None:  # readobj prints it only together with the frequency (§7)
                for f, k, p in zip(fields, freqs, post, strict=True):
                    f.append(f'"Frequency":{k},"PostLink Frequency":{p}')
            else:
                for f, k in zip(fields, freqs, strict=True):
                    f.append(f'"Frequency":{k}')
        if succs is not None:
            if features & _POST_LINK:
                for f, s in zip(fields, succs, strict=True):
                    items = map(_SUCCESSOR_POST_LINK.__mod__, zip(s[0::3], s[1::3], s[2::3],
                                                                  strict=True))
                    f.append(f'"Successors":[{",".join(items)}]')
            else:
                for f, s in zip(fields, succs, strict=True):
                    items = map(_SUCCESSOR.__mod__, zip(s[0::2], s[1::2], strict=True))
                    f.append(f'"Successors":[{",".join(items)}]')
        blocks = ",".join(["{" + ",".join(f) + "}" for f in fields])
        parts.append(f'"PGO BB entries":[{blocks}]')
    return "{" + ",".join(parts) + "}"


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
        write_readobj_json(args.binary, sys.stdout)
        return ""
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
