"""What a split module is made of: the model (procedures, fragments, blocks, lines), the sources
that fill it from each on-disk format, the per-module index that answers "which procedure holds
this address", its persistent store, names and demangling, and the pre-BOLT input and its BAT
translation. Built on `elf/` and `formats/`; knows nothing of debugging policy or debuggers."""
