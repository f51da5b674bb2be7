"""The section types and names by which a file says it holds a format, apart from the
decoders: a fragment source asks them first, and imports its decoder only when the file has
the section (a later debugger session on a file without one never imports it: each decoder
is a dozen dataclasses, ~10 ms of a session's start). The decoders re-export them.

LLVM: llvm/include/llvm/BinaryFormat/ELF.h (SHT_LLVM_BB_ADDR_MAP, _V0); MIP:
shared/seeds/machine-ir-profile-mip.txt (its map and raw sections).
"""

from __future__ import annotations

SHT_LLVM_BB_ADDR_MAP_V0 = 0x6FFF4C08
SHT_LLVM_BB_ADDR_MAP = 0x6FFF4C0A
BB_ADDR_MAP_SECTION = ".llvm_bb_addr_map"

MIP_SECTION = "__llvm_mipmap"
MIP_RAW_SECTION = "__llvm_mipraw"
