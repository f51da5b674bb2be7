"""Which DIEs of one compile unit have a given tag and attribute, read from .debug_info's bytes
without decoding any attribute's value (DWARF 5 §7.5: each DIE is an abbreviation code, then
its attributes in the forms its abbreviation lists).

Why by hand: the inline chains of `unsplit symbolize` and `unsplit debuginfo` need the
DW_TAG_subprogram DIEs that have code, which pyelftools finds only by parsing every DIE of the
unit into objects (docs/benchmarks.md: bench/realworld_cpp.py).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Mapping
from typing import NamedTuple

from unsplit.errors import DecodeError
from unsplit.formats.leb128 import read_uleb, skip_leb

SECTION = ".debug_info"
DW_TAG_subprogram = 0x2E
DW_AT_low_pc, DW_AT_ranges = 0x11, 0x55
DW_FORM_implicit_const, DW_FORM_indirect = 0x21, 0x16

# What skipping a form takes (§7.5.6, Table 7.6): a byte count, or one of these.
_ULEB, _SLEB, _STRING, _BLOCK1, _BLOCK2, _BLOCK4, _BLOCK, _INDIRECT = (-1, -2, -3, -4, -5, -6,
                                                                        -7, -8)
_ADDRESS, _OFFSET, _REF_ADDR = -20, -21, -22  # the unit's address size, offset size, ref_addr
_FORMS: dict[int, int] = {
    0x01: _ADDRESS, 0x03: _BLOCK2, 0x04: _BLOCK4, 0x05: 2, 0x06: 4, 0x07: 8, 0x08: _STRING,
    0x09: _BLOCK, 0x0A: _BLOCK1, 0x0B: 1, 0x0C: 1, 0x0D: _SLEB, 0x0E: _OFFSET, 0x0F: _ULEB,
    0x10: _REF_ADDR, 0x11: 1, 0x12: 2, 0x13: 4, 0x14: 8, 0x15: _ULEB, 0x16: _INDIRECT,
    0x17: _OFFSET, 0x18: _BLOCK, 0x19: 0, 0x1A: _ULEB, 0x1B: _ULEB, 0x1C: 4, 0x1D: _OFFSET,
    0x1E: 16, 0x1F: _OFFSET, 0x20: 8, 0x21: 0, 0x22: _ULEB, 0x23: _ULEB, 0x24: 8, 0x25: 1,
    0x26: 2, 0x27: 3, 0x28: 4, 0x29: 1, 0x2A: 2, 0x2B: 3, 0x2C: 4,
    0x1F01: _ULEB, 0x1F02: _ULEB, 0x1F20: _OFFSET, 0x1F21: _OFFSET,  # GNU addr/str index, alt
}


class Unit(NamedTuple):
    """What skipping a unit's DIEs needs to know of its header (§7.5.1)."""

    die_start: int  # offset in .debug_info of its first DIE
    end: int  # offset just past the unit
    version: int
    address_size: int
    offset_size: int  # 4 (32-bit DWARF) or 8


Abbrev = tuple[int, list[tuple[int, int]]]  # tag, (attribute, form) of each attribute


def abbreviations(data: bytes | memoryview, offset: int) -> dict[int, Abbrev]:
    """The abbreviation table at `offset` of .debug_abbrev (§7.5.3): code -> Abbrev."""
    out: dict[int, Abbrev] = {}
    pos, end = offset, len(data)
    while True:
        code, pos = read_uleb(data, pos, end, _ABBREV)
        if code == 0:
            return out
        tag, pos = read_uleb(data, pos, end, _ABBREV)
        pos += 1  # DW_CHILDREN_yes/no: the 0 code that ends a list of children says it
        specs = []
        while True:
            attribute, pos = read_uleb(data, pos, end, _ABBREV)
            form, pos = read_uleb(data, pos, end, _ABBREV)
            if attribute == 0 and form == 0:
                break
            if form == DW_FORM_implicit_const:
                pos = _skip(data, pos, _SLEB, _NO_UNIT, offset, end)
            specs.append((attribute, form))
        out[code] = (tag, specs)


class Declaration(NamedTuple):
    """One abbreviation declaration (§7.5.3) and where each of its attribute specifications
    lies in .debug_abbrev (a writer that patches the table in place needs them)."""

    code: int
    tag: int
    children: bool
    specs: tuple[tuple[int, int], ...]  # (attribute, form)
    spec_at: tuple[int, ...]  # offset of each specification's attribute code


def declarations(data: bytes | memoryview, offset: int) -> dict[int, Declaration]:
    """The abbreviation table at `offset` of .debug_abbrev, with the place of every
    specification; DecodeError where it does not parse."""
    out: dict[int, Declaration] = {}
    for decl in each_declaration(data, offset):
        if decl.code in out:
            raise DecodeError(_ABBREV, offset, f"abbreviation {decl.code} declared twice")
        out[decl.code] = decl
    return out


def each_declaration(data: bytes | memoryview, offset: int) -> Iterator[Declaration]:
    """The declarations of the abbreviation table at `offset`, in table order, read as they
    are asked for (a caller after one code stops there); DecodeError where it does not parse."""
    pos, end = offset, len(data)
    while True:
        code, pos = read_uleb(data, pos, end, _ABBREV)
        if code == 0:
            return
        tag, pos = read_uleb(data, pos, end, _ABBREV)
        if pos >= end:
            raise DecodeError(_ABBREV, pos, "the table runs past the end of the section")
        children = data[pos] != 0
        pos += 1
        specs, at = [], []
        while True:
            where = pos
            attribute, pos = read_uleb(data, pos, end, _ABBREV)
            form, pos = read_uleb(data, pos, end, _ABBREV)
            if attribute == 0 and form == 0:
                break
            if form == DW_FORM_implicit_const:
                pos = _skip(data, pos, _SLEB, _NO_UNIT, offset, end)
            specs.append((attribute, form))
            at.append(where)
        yield Declaration(code, tag, children, tuple(specs), tuple(at))


_SITE = 1 << 24  # a plan step at or above it records a site of kind (step - _SITE)
_LISTED = 0xFFFF  # sites() looks codes up to this in lists (clang and GCC number from 1)


class Sites(NamedTuple):
    """Attribute values a caller asked for, in DIE order: where each value starts in the
    section, what kind the caller gave it, and the offset of its DIE (three flat arrays)."""

    positions: array[int]
    kinds: array[int]
    dies: array[int]


def sites(data: bytes | memoryview, unit: Unit, decls: Mapping[int, Declaration],
          kinds_of: Callable[[Declaration], list[int]]) -> Sites:
    """Every value of the unit's DIEs whose specification `kinds_of` gives a kind other than
    0 (it is asked once per declaration, for one kind per specification); DecodeError where
    the bytes do not parse. A DIE whose declaration asks for nothing is skipped by its
    forms, as offsets_with does."""
    plans: dict[int, list[int]] = {}
    for code, decl in decls.items():
        kinds = kinds_of(decl)
        plan: list[int] = []
        for (_, form), kind in zip(decl.specs, kinds, strict=True):
            if kind:
                plan.append(_SITE + kind)
            plan += _plan(unit, [form], code) or [0]
        plans[code] = _merged(plan) if any(kinds) else _plan(unit, [f for _, f in decl.specs],
                                                              code)
    # By code, in lists: the size of a DIE that asks for nothing and has no value of a
    # variable size (most types' and members'), else -1 and its plan; -2: no such code.
    top = min(max(plans, default=0), _LISTED) + 1
    fixed = [-2] * top
    steps_of: list[list[int]] = [[]] * top
    beyond: dict[int, list[int]] = {}  # codes past the lists (a damaged or odd table)
    for code, plan in plans.items():
        if code >= top:
            beyond[code] = plan
        elif not plan or (len(plan) == 1 and 0 <= plan[0] < _SITE):
            fixed[code] = plan[0] if plan else 0
        else:
            fixed[code], steps_of[code] = -1, plan
    found = Sites(array("Q"), array("H"), array("Q"))
    positions, kinds_out, dies = found.positions, found.kinds, found.dies
    site, uleb, block, skip = _SITE, _ULEB, _BLOCK, _skip  # (locals: read at every value)
    pos, end = unit.die_start, unit.end
    if end > len(data):
        raise DecodeError(SECTION, unit.die_start, "the unit runs past the end of the section")
    while pos < end:  # every read below is checked against `end`
        die = pos
        code = data[pos]
        pos += 1
        if code & 0x80:  # codes of two bytes inline: a unit of over 127 abbreviations
            if pos < end and data[pos] < 0x80:
                code = (code & 0x7F) | data[pos] << 7
                pos += 1
            else:
                code, pos = read_uleb(data, pos - 1, end, SECTION)
        if code == 0:
            continue
        size = fixed[code] if code < top else -2
        if size >= 0:
            pos += size
            continue
        steps = steps_of[code] if size == -1 else beyond.get(code)
        if steps is None:
            raise DecodeError(SECTION, die, f"no abbreviation {code} in the unit's table")
        for step in steps:
            if step >= site:
                positions.append(pos)
                kinds_out.append(step - site)
                dies.append(die)
            elif step >= 0:
                pos += step
            elif pos + 1 < end and (step == uleb or step == block):
                # a ULEB128 of one or two bytes and a block of under 128 bytes skipped here,
                # not by _skip: most of a clang unit's variable-size values (index forms,
                # location expressions)
                first = data[pos]
                if step == uleb:
                    if first < 0x80:
                        pos += 1
                    elif data[pos + 1] < 0x80:
                        pos += 2
                    else:
                        pos = skip(data, pos, step, unit, die, end)
                elif first < 0x80 and pos + 1 + first <= end:
                    pos += 1 + first
                else:
                    pos = skip(data, pos, step, unit, die, end)
            else:
                pos = skip(data, pos, step, unit, die, end)
    if pos > end:
        raise DecodeError(SECTION, end, "the last DIE runs past the end of its unit")
    return found


def _merged(plan: list[int]) -> list[int]:
    """Adjacent fixed skips added up (site markers and variable skips kept in place)."""
    out: list[int] = []
    for step in plan:
        if 0 <= step < _SITE and out and 0 <= out[-1] < _SITE:
            out[-1] += step
        elif step != 0:
            out.append(step)
    return out


def form_size(form: int, unit: Unit) -> int | None:
    """The size of a value of `form` in `unit` when it is fixed, else None (LEB128, strings,
    blocks, DW_FORM_indirect); DecodeError for a form DWARF 5 does not define."""
    kind = _FORMS.get(form)
    if kind is None:
        raise DecodeError(SECTION, unit.die_start, f"form {form:#x} unknown")
    if kind == _ADDRESS:
        return unit.address_size
    if kind == _OFFSET:
        return unit.offset_size
    if kind == _REF_ADDR:
        return unit.address_size if unit.version <= 2 else unit.offset_size
    return kind if kind >= 0 else None


def skip_value(data: bytes | memoryview, pos: int, form: int, unit: Unit) -> int:
    """The offset just past a value of `form` at `pos` (DecodeError past the data's end)."""
    end = len(data)
    for step in _plan(unit, [form], 0):
        pos = step + pos if step >= 0 else _skip(data, pos, step, unit, pos, end)
    if pos > end:
        raise DecodeError(SECTION, end, "a value runs past the end of the section")
    return pos


def offsets_with(data: bytes | memoryview, unit: Unit, abbrevs: Mapping[int, Abbrev], tag: int,
                 having: frozenset[int]) -> list[int]:
    """Offsets of the unit's DIEs whose tag is `tag` and whose abbreviation lists an attribute
    in `having`, in order; DecodeError where the bytes do not parse."""
    plans = {code: (t == tag and any(a in having for a, _ in specs),
                    _plan(unit, [f for _, f in specs], code)) for code, (t, specs) in
             abbrevs.items()}
    out = []
    pos, end = unit.die_start, unit.end
    if end > len(data):
        raise DecodeError(SECTION, unit.die_start, "the unit runs past the end of the section")
    while pos < end:  # every read below is checked against `end`
        die = pos
        code = data[pos]
        pos += 1
        if code & 0x80:
            code, pos = read_uleb(data, pos - 1, end, SECTION)
        if code == 0:
            continue  # the end of a DIE's children
        plan = plans.get(code)
        if plan is None:
            raise DecodeError(SECTION, die, f"no abbreviation {code} in the unit's table")
        wanted, steps = plan
        if wanted:
            out.append(die)
        for step in steps:
            pos = step + pos if step >= 0 else _skip(data, pos, step, unit, die, end)
    if pos > end:
        raise DecodeError(SECTION, end, "the last DIE runs past the end of its unit")
    return out


def _plan(unit: Unit, forms: list[int], code: int) -> list[int]:
    """The steps that skip one DIE's attributes: consecutive fixed sizes added up."""
    steps: list[int] = []
    for form in forms:
        kind = _FORMS.get(form)
        if kind is None:
            raise DecodeError(SECTION, unit.die_start, f"abbreviation {code}: form {form:#x} "
                              "unknown")
        if kind == _ADDRESS:
            kind = unit.address_size
        elif kind == _OFFSET:
            kind = unit.offset_size
        elif kind == _REF_ADDR:
            kind = unit.address_size if unit.version <= 2 else unit.offset_size
        if kind >= 0 and steps and steps[-1] >= 0:
            steps[-1] += kind
        elif kind != 0:
            steps.append(kind)
    return steps


_NO_UNIT = Unit(0, 0, 5, 8, 4)
_ABBREV = ".debug_abbrev"


def _skip(data: bytes | memoryview, pos: int, kind: int, unit: Unit, die: int, end: int) -> int:
    """Past one attribute of a variable size that starts at `pos`; the bytes it reads must lie
    before `end` (a fixed size may take `pos` past it: the unit's end check says so)."""
    if pos >= end:
        raise DecodeError(SECTION, die, "a DIE runs past the end of its unit")
    if kind in (_ULEB, _SLEB):
        return skip_leb(data, pos, end, SECTION)
    if kind == _STRING:
        while data[pos]:
            pos += 1
            if pos >= end:
                raise DecodeError(SECTION, die, "a string runs past the end of its unit")
        return pos + 1
    if kind == _BLOCK1:
        return pos + 1 + data[pos]
    if kind == _BLOCK2:
        return pos + 2 + int.from_bytes(data[pos:pos + 2], "little")
    if kind == _BLOCK4:
        return pos + 4 + int.from_bytes(data[pos:pos + 4], "little")
    if kind == _BLOCK:
        size, pos = read_uleb(data, pos, end, SECTION)
        if size > end - pos:  # a length past 2^64 would not even fit the sites' arrays
            raise DecodeError(SECTION, die, f"a block of {size} bytes runs past the end of "
                              "its unit")
        return pos + size
    # DW_FORM_indirect: the form comes first, as a ULEB128
    form, pos = read_uleb(data, pos, end, SECTION)
    if form == DW_FORM_indirect:
        raise DecodeError(SECTION, die, "DW_FORM_indirect names DW_FORM_indirect")
    for step in _plan(unit, [form], 0):
        pos = step + pos if step >= 0 else _skip(data, pos, step, unit, die, end)
    return pos
