"""A small DWARF 5 writer for separate debug files (``unsplit debuginfo``).

One module per section, each citing the DWARF 5 specification (dwarfstd.org, 2017) by section
number: strings (.debug_str/.debug_line_str, §7.26), abbrev (.debug_abbrev, §7.5.3), info
(.debug_info, §7.5), line (.debug_line, §6.2), rnglists (.debug_rnglists, §7.28), aranges
(.debug_aranges, §6.1.2); elf writes them into an ELF file shaped like ``objcopy
--only-keep-debug`` output. Little-endian, 64-bit addresses, 32-bit DWARF only (what x86-64
and AArch64 Linux use). Plain bytearrays throughout: no object per line row.
"""
