"""The section types and names by which a file says it holds a format, apart from its
decoder (a dozen dataclasses to make): a fragment source checks them first and imports the
decoder only for a file with the section, which a debugger session's start then skips.
The decoders re-export them. LLVM: llvm/include/llvm/BinaryFormat/ELF.h; MIP:
shared/seeds/machine-ir-profile-mip.txt."""

from __future__ import annotations

SHT_LLVM_BB_ADDR_MAP_V0 = 0x6FFF4C08
SHT_LLVM_BB_ADDR_MAP = 0x6FFF4C0A
BB_ADDR_MAP_SECTION = ".llvm_bb_addr_map"
BB_ADDR_MAP_TYPES = (SHT_LLVM_BB_ADDR_MAP, SHT_LLVM_BB_ADDR_MAP_V0)  # found by type, any name

SPLIT_INFO_SECTION = ".split_info"  # shared/specs/split-info-and-esl.md §1
ESL_SECTION = ".opt_table"  # §2

MIP_SECTION = "__llvm_mipmap"
MIP_RAW_SECTION = "__llvm_mipraw"
