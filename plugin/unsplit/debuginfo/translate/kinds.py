"""Which attribute values hold code addresses, decided once per abbreviation declaration by
its forms (DWARF 5 §7.5.5 classes, §2.17 code addresses and ranges, §2.6 locations), and how a
declaration with DW_AT_low_pc and DW_AT_high_pc is turned into one with DW_AT_ranges without
changing the size of any DIE that uses it: DW_AT_low_pc becomes DW_AT_entry_pc (same form,
the entry's new address; a unit keeps DW_AT_low_pc, its base address) and DW_AT_high_pc
becomes DW_AT_ranges in DW_FORM_sec_offset (4 bytes: DW_FORM_data4's size), or, for an 8-byte
DW_AT_high_pc, DW_FORM_indirect naming DW_FORM_sec_offset in 4 bytes (a ULEB128 padded with
0x80 bytes, §7.6) then the 4-byte offset. No DIE moves, so no reference needs fixing."""

from __future__ import annotations

from typing import NamedTuple

from unsplit.formats.die_scan import Declaration, Unit

# §7.5.4 Table 7.5 (and GNU's, binutils include/dwarf2.def)
DW_AT_location, DW_AT_stmt_list, DW_AT_low_pc, DW_AT_high_pc = 0x02, 0x10, 0x11, 0x12
DW_AT_string_length, DW_AT_return_addr, DW_AT_data_member_location = 0x19, 0x2A, 0x38
DW_AT_frame_base, DW_AT_segment, DW_AT_static_link, DW_AT_use_location = 0x40, 0x46, 0x48, 0x4A
DW_AT_vtable_elem_location, DW_AT_entry_pc, DW_AT_ranges = 0x4D, 0x52, 0x55
DW_AT_str_offsets_base, DW_AT_addr_base, DW_AT_rnglists_base = 0x72, 0x73, 0x74
DW_AT_loclists_base, DW_AT_language, DW_AT_comp_dir = 0x8C, 0x13, 0x1B
DW_AT_call_value, DW_AT_call_pc, DW_AT_call_return_pc, DW_AT_call_target = 0x7E, 0x81, 0x7D, 0x83
DW_AT_call_target_clobbered, DW_AT_call_data_location, DW_AT_call_data_value = 0x84, 0x85, 0x86
DW_AT_GNU_call_site_value, DW_AT_GNU_call_site_data_value = 0x2111, 0x2112
DW_AT_GNU_call_site_target, DW_AT_GNU_call_site_target_clobbered = 0x2113, 0x2114
DW_AT_GNU_locviews = 0x2137
DW_TAG_compile_unit, DW_TAG_partial_unit, DW_TAG_type_unit = 0x11, 0x3C, 0x41
DW_TAG_skeleton_unit, DW_TAG_GNU_call_site = 0x4A, 0x4109
# §7.5.6 Table 7.6
DW_FORM_addr, DW_FORM_block2, DW_FORM_block4, DW_FORM_data2, DW_FORM_data4 = 1, 3, 4, 5, 6
DW_FORM_data8, DW_FORM_block, DW_FORM_block1, DW_FORM_data1, DW_FORM_udata = 7, 9, 0x0A, 0x0B, 0x0F
DW_FORM_ref_addr, DW_FORM_indirect, DW_FORM_sec_offset, DW_FORM_exprloc = 0x10, 0x16, 0x17, 0x18
DW_FORM_addrx, DW_FORM_loclistx, DW_FORM_rnglistx = 0x1B, 0x22, 0x23
DW_FORM_addrx1, DW_FORM_addrx2, DW_FORM_addrx3, DW_FORM_addrx4 = 0x29, 0x2A, 0x2B, 0x2C
DW_FORM_GNU_addr_index = 0x1F01
DW_FORM_strp, DW_FORM_line_strp = 0x0E, 0x1F
STRX_FORMS = frozenset((0x1A, 0x25, 0x26, 0x27, 0x28, 0x1F02))  # strx, strx1-4, GNU_str_index

ADDRESS_FORMS = frozenset((DW_FORM_addr, DW_FORM_addrx, DW_FORM_addrx1, DW_FORM_addrx2,
                           DW_FORM_addrx3, DW_FORM_addrx4))
ADDRX_WIDTH = {DW_FORM_addrx1: 1, DW_FORM_addrx2: 2, DW_FORM_addrx3: 3, DW_FORM_addrx4: 4}
BLOCK_FORMS = frozenset((DW_FORM_block1, DW_FORM_block2, DW_FORM_block4, DW_FORM_block,
                         DW_FORM_exprloc))
# Attributes of class loclist (a location list) or exprloc (one expression), §7.5.5.
LOCATIONS = frozenset((DW_AT_location, DW_AT_string_length, DW_AT_return_addr,
                       DW_AT_data_member_location, DW_AT_frame_base, DW_AT_segment,
                       DW_AT_static_link, DW_AT_use_location, DW_AT_vtable_elem_location))
# Attributes whose block is a DWARF expression (and may hold DW_OP_addr).
EXPRESSIONS = LOCATIONS | frozenset((
    DW_AT_call_value, DW_AT_call_target, DW_AT_call_target_clobbered, DW_AT_call_data_location,
    DW_AT_call_data_value, DW_AT_GNU_call_site_value, DW_AT_GNU_call_site_data_value,
    DW_AT_GNU_call_site_target, DW_AT_GNU_call_site_target_clobbered))
UNIT_TAGS = frozenset((DW_TAG_compile_unit, DW_TAG_partial_unit, DW_TAG_type_unit,
                       DW_TAG_skeleton_unit))

# What a value is, for the rewriter.
PAIR_LOW = 1  # DW_AT_low_pc of a declaration that also has DW_AT_high_pc
PAIR_HIGH = 2  # its DW_AT_high_pc, turned into DW_AT_ranges (see Kind.padded)
PAIR_HIGH_KEPT = 3  # a DW_AT_high_pc too small to hold an offset: the entry's range only
START = 4  # a code address where something begins (a label, DW_AT_entry_pc, DW_AT_call_pc)
END = 5  # a code address right after something (DW_AT_call_return_pc, GNU call sites)
RANGES = 6  # DW_AT_ranges as an offset
LOCLIST = 7  # a location list as an offset
EXPRESSION = 8  # a block holding a DWARF expression
STMT_LIST = 9  # DW_AT_stmt_list
INDIRECT = 10  # DW_FORM_indirect on an attribute that matters: not rewritten, counted
REF_ADDR = 11  # DW_FORM_ref_addr: an offset in .debug_info, moved when units are left out
LOCVIEWS = 12  # DW_AT_GNU_locviews: GCC's view numbers of the DIE's location list entries


class Kind(NamedTuple):
    """One (what, form) combination a unit's sites are tagged with."""

    what: int
    attribute: int
    form: int
    tag: int
    padded: bool = False  # PAIR_HIGH in 8 bytes: DW_FORM_indirect, 4 bytes of form, 4 of offset


class Kinds:
    """Numbers die_scan.sites tags values with, each standing for a Kind (shared by every unit
    of a file, so a declaration used by many units is classified once per unit version)."""

    def __init__(self) -> None:
        self.table: list[Kind] = [Kind(0, 0, 0, 0)]
        self._numbers: dict[Kind, int] = {}

    def number(self, kind: Kind) -> int:
        found = self._numbers.get(kind)
        if found is None:
            found = self._numbers[kind] = len(self.table)
            self.table.append(kind)
        return found

    def of(self, decl: Declaration, unit: Unit) -> list[int]:
        """One number per attribute specification of `decl` (0: nothing to rewrite)."""
        attributes = {a for a, _ in decl.specs}
        pair = DW_AT_low_pc in attributes and DW_AT_high_pc in attributes
        out = []
        for attribute, form in decl.specs:
            what = classify(decl.tag, attribute, form, unit.version, pair)
            padded = what == PAIR_HIGH and high_pc_size(form, unit) == 8
            out.append(self.number(Kind(what, attribute, form, decl.tag, padded)) if what else 0)
        return out


def classify(tag: int, attribute: int, form: int, version: int, pair: bool) -> int:
    """What the value of `attribute` in `form` is (0: nothing to rewrite)."""
    if form == DW_FORM_indirect:
        interesting = attribute in EXPRESSIONS or attribute in (
            DW_AT_low_pc, DW_AT_high_pc, DW_AT_entry_pc, DW_AT_call_pc, DW_AT_call_return_pc,
            DW_AT_ranges, DW_AT_stmt_list)
        return INDIRECT if interesting else 0
    if form == DW_FORM_ref_addr:
        return REF_ADDR
    if attribute == DW_AT_low_pc and form in ADDRESS_FORMS:
        if pair:
            return PAIR_LOW
        return END if tag == DW_TAG_GNU_call_site else START
    if attribute == DW_AT_high_pc and pair:
        return PAIR_HIGH if form in (DW_FORM_data4, DW_FORM_data8, DW_FORM_addr) else \
            PAIR_HIGH_KEPT
    if attribute in (DW_AT_entry_pc, DW_AT_call_pc) and form in ADDRESS_FORMS:
        return START
    if attribute == DW_AT_call_return_pc and form in ADDRESS_FORMS:
        return END
    if attribute == DW_AT_ranges and form in (DW_FORM_sec_offset, DW_FORM_data4,
                                              DW_FORM_data8):
        return RANGES
    if attribute in LOCATIONS and (form == DW_FORM_sec_offset or (
            version < 4 and form in (DW_FORM_data4, DW_FORM_data8)
            and attribute != DW_AT_data_member_location)):
        return LOCLIST
    if attribute in EXPRESSIONS and form in BLOCK_FORMS:
        return EXPRESSION
    if attribute == DW_AT_stmt_list:
        return STMT_LIST
    if attribute == DW_AT_GNU_locviews and form in (DW_FORM_sec_offset, DW_FORM_data4):
        return LOCVIEWS
    return 0


def high_pc_size(form: int, unit: Unit) -> int:
    return {DW_FORM_data4: 4, DW_FORM_data8: 8, DW_FORM_addr: unit.address_size}.get(form, 0)


def patch_declaration(abbrev: bytearray, decl: Declaration) -> None:
    """Rewrites `decl` in the copy `abbrev` of .debug_abbrev when it has DW_AT_low_pc and
    DW_AT_high_pc (see the module's docstring); each code is one byte, so it stays in place
    (a padded ULEB128 keeps its continuation bits)."""
    attributes = [a for a, _ in decl.specs]
    if DW_AT_low_pc not in attributes or DW_AT_high_pc not in attributes:
        return
    for (attribute, form), at in zip(decl.specs, decl.spec_at, strict=True):
        if attribute == DW_AT_low_pc and form in ADDRESS_FORMS and decl.tag not in UNIT_TAGS:
            _set(abbrev, at, DW_AT_entry_pc)
        elif attribute == DW_AT_high_pc and form in (DW_FORM_data4, DW_FORM_data8,
                                                     DW_FORM_addr):
            _set(abbrev, at, DW_AT_ranges)
            form_at = at + 1
            while abbrev[form_at - 1] & 0x80:
                form_at += 1
            _set(abbrev, form_at, DW_FORM_sec_offset if form == DW_FORM_data4
                 else DW_FORM_indirect)


def _set(data: bytearray, at: int, code: int) -> None:
    data[at] = (data[at] & 0x80) | code
