"""The abbreviation table, .debug_abbrev, DWARF 5 §7.5.3: each distinct (tag, has-children,
attribute/form list) once, numbered from 1; the table ends with a 0 code."""

from __future__ import annotations

from unsplit.formats.leb128 import encode_uleb128 as uleb

# Tags (§7.5.3, Table 7.3), attributes (§7.5.4, Table 7.5), forms (§7.5.6, Table 7.6).
DW_TAG_compile_unit = 0x11
DW_TAG_subprogram = 0x2E
DW_TAG_inlined_subroutine = 0x1D

DW_AT_name = 0x03
DW_AT_stmt_list = 0x10
DW_AT_low_pc = 0x11
DW_AT_high_pc = 0x12
DW_AT_language = 0x13
DW_AT_comp_dir = 0x1B
DW_AT_inline = 0x20
DW_AT_producer = 0x25
DW_AT_abstract_origin = 0x31
DW_AT_external = 0x3F
DW_AT_call_file = 0x58
DW_AT_call_line = 0x59
DW_AT_call_column = 0x57
DW_AT_ranges = 0x55
DW_AT_linkage_name = 0x6E

DW_FORM_addr = 0x01
DW_FORM_data2 = 0x05
DW_FORM_data4 = 0x06
DW_FORM_data8 = 0x07
DW_FORM_strp = 0x0E
DW_FORM_udata = 0x0F
DW_FORM_ref4 = 0x13
DW_FORM_sec_offset = 0x17
DW_FORM_flag_present = 0x19
DW_FORM_line_strp = 0x1F

Shape = tuple[int, bool, tuple[tuple[int, int], ...]]


class AbbrevTable:
    """Abbreviation codes by shape, shared by every unit of the file (one table at offset 0)."""

    def __init__(self) -> None:
        self._codes: dict[Shape, int] = {}
        self.data = bytearray()

    def code(self, tag: int, children: bool, attributes: tuple[tuple[int, int], ...]) -> int:
        shape = (tag, children, attributes)
        found = self._codes.get(shape)
        if found is None:
            found = len(self._codes) + 1
            self._codes[shape] = found
            self.data += uleb(found) + uleb(tag) + bytes([1 if children else 0])
            for attribute, form in attributes:
                self.data += uleb(attribute) + uleb(form)
            self.data += b"\0\0"
        return found

    def finish(self) -> bytes:
        return bytes(self.data) + b"\0"
