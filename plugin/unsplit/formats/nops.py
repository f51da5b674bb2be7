"""Code that only serves a layout: no-operation padding, as the x86-64 (Intel SDM vol. 2B,
"NOP": 0x90 and 0F 1F /0 with its ModRM forms, with 66/2E prefixes) and AArch64 (Arm ARM C6.2,
NOP = 0xd503201f) toolchains emit it, and a direct unconditional jump (x86-64 EB/E9, AArch64
B). BOLT drops padding and jumps to what becomes the next block when it lays code out again,
so input bytes with no output place that are only those are no loss."""

from __future__ import annotations

import re

EM_X86_64, EM_AARCH64 = 62, 183
_AARCH64_NOP = bytes.fromhex("1f2003d5")


def layout_only(code: bytes, machine: int, before: bytes = b"") -> bool:
    """Whether `code` is nops (the end of a nop that starts in the last bytes of `before`
    counts) or one direct unconditional jump."""
    if _jump(code, machine):
        return True
    return any(all_nops(before[len(before) - k:] + code if k else code, machine)
               for k in range(min(len(before), 14) + 1))


def _jump(code: bytes, machine: int) -> bool:
    if machine == EM_AARCH64:
        return len(code) == 4 and code[3] >> 2 == 0b000101
    if machine == EM_X86_64:
        return (len(code) == 2 and code[0] == 0xEB) or (len(code) == 5 and code[0] == 0xE9)
    return False


def padding(code: bytes, machine: int) -> bool:
    """Whether `code` is what a linker or BOLT puts between functions: nops, zeros and int3
    in any mix (BOLT fills room it freed in a rewritten `.text` with zeros between nops)."""
    if machine != EM_X86_64:
        rest = code.strip(b"\0")
        return not rest or all_nops(rest, machine)
    return _X86_PADDING.fullmatch(code) is not None


def padding_end(code: bytes, machine: int, pos: int = 0, endpos: int | None = None) -> int:
    """Where the padding (as padding() takes it) that starts at `pos` of `code` ends, by
    `endpos`: where the code after a function's last instruction and its alignment starts."""
    end = len(code) if endpos is None else endpos
    if machine == EM_X86_64:
        found = _X86_PADDING.match(code, pos, end)
        return pos if found is None else found.end()
    step = 4 if machine == EM_AARCH64 else 1
    while pos < end:
        if code[pos] == 0:
            pos += 1
        elif machine == EM_AARCH64 and pos + 4 <= end and code[pos:pos + 4] == _AARCH64_NOP:
            pos += step
        else:
            break
    return pos


# What padding() takes on x86-64, as one expression (a stripped library's 142k gaps in a
# fraction of _x86_nop's loop): zero, int3, or up to 14 66/2E prefixes and 90 or 0F 1F /0
# with the ModRM forms _x86_nop reads (SIB after rm=4, disp8 after mod 1, disp32 after mod
# 2 or mod 0 rm=5). The repetition is greedy, not possessive: Python 3.11.2's `(?:…)*+` keeps
# the bytes of a last iteration that failed (`2E 0F 1F 48` matched 1 byte; 300,000 random
# strings of nop bytes: 3,201 ends unlike _x86_nop's, none with `*`). LLVM's 15-byte nop,
# of which BOLT's long padding is made, comes first as a literal: one of the others too,
# tried faster (docs/benchmarks.md, the libLLVM debug file's columns, 2026-11-27).
_X86_PADDING = re.compile(
    rb"(?:[\x00\xcc]|(?:\x66{6}\x2e\x0f\x1f\x84\x00{5})+"
    rb"|[\x66\x2e]{0,14}+(?:\x90|\x0f\x1f(?:[\x00-\x03\x06\x07\xc0-\xc7]|\x04."
    rb"|\x05.{4}|\x44..|[\x40-\x43\x45-\x47].|\x84.{5}|[\x80-\x83\x85-\x87].{4})))*",
    re.DOTALL)


def all_nops(code: bytes, machine: int) -> bool:
    """Whether `code` decodes, to its last byte, as no-operation instructions."""
    if machine == EM_AARCH64:
        return len(code) % 4 == 0 and code == _AARCH64_NOP * (len(code) // 4)
    if machine != EM_X86_64:
        return False
    pos, end = 0, len(code)
    while pos < end:
        size = _x86_nop(code, pos)
        if not size:
            return False
        pos += size
    return pos == end


def _x86_nop(code: bytes, pos: int) -> int:
    """The size of the nop at `pos`, or 0."""
    start, end = pos, len(code)
    while pos < end and code[pos] in (0x66, 0x2E) and pos - start < 14:
        pos += 1
    if pos < end and code[pos] == 0x90:
        return pos + 1 - start
    if pos + 2 >= end or code[pos] != 0x0F or code[pos + 1] != 0x1F:
        return 0
    modrm = code[pos + 2]
    mod, reg, rm = modrm >> 6, (modrm >> 3) & 7, modrm & 7
    if reg != 0:
        return 0
    pos += 3
    if mod != 3 and rm == 4:
        pos += 1  # SIB
    if mod == 1:
        pos += 1
    elif mod == 2 or (mod == 0 and rm == 5):
        pos += 4
    return pos - start if pos <= end else 0
