"""The files a debugger opens: one ELF file (sections, symbols, build-id), its DWARF line tables,
and a core file (memory, threads, mapped modules). Built on `formats/` and pyelftools; knows
nothing of procedures or fragments."""
