"""What a split module is made of, in layers (docs/architecture.md): names/, model/, bolt/,
sources/, cache/, and above them the module index itself (module_index, line_table, inlines,
code_lines, session_view). Built on elf/ and formats/; knows no debugging policy or debugger."""
