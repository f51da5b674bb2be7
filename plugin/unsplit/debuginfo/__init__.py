"""Synthesized debug info: what the index knows, written as a DWARF 5 separate debug file
(`synthesize`), the DWARF writer itself (`dwarf/`, one module per section) and the on-disk cache
the adapters hand to the debuggers (`cache`)."""
