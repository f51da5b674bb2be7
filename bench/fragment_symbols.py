"""How fragment symbols should be named in the debug file's symbol table: measured, not assumed.

For each zoo program given, `unsplit debuginfo` writes the debug file; this script makes two
variants of its `.symtab` in place (the same file otherwise) and asks, of each, with the
debug file read by plain debuggers (no plugin):

- `kept`: the module's symbols as they are (`transfer.cold.1`): what the plugin writes;
- `dropped`: fragment symbols made undefined (the file names moved code by DWARF alone);
- `renamed`: fragment symbols given their procedure's name (`transfer` at every fragment).

the questions: GDB 13 `break PROC` (locations), LLDB 22 `breakpoint set -n PROC` (locations),
llvm-symbolizer-22 at the crash pc (function name), LLDB's `image lookup -a` there, and where
LLDB puts `breakpoint set -n FRAGMENT_SYMBOL` (bytes past the fragment's start).
Run: `.venv/bin/python bench/fragment_symbols.py [VARIANT/PROGRAM …]` (zoo built)."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from elftools.elf.elffile import ELFFile

ROOT = Path(__file__).resolve().parents[1]
_SYM = struct.Struct("<IBBHQQ")
_FRAGMENT = re.compile(r"^(?P<base>.+?)\.(cold|warm)(\.\d+)?$")


def _variant(debug: bytes, how: str) -> bytes:
    """`debug` with its fragment symbols kept, dropped (undefined) or renamed to the base's."""
    if how == "kept":
        return debug
    data = bytearray(debug)
    with tempfile.TemporaryFile() as f:
        f.write(debug)
        f.seek(0)
        elf = ELFFile(f)
        symtab = elf.get_section_by_name(".symtab")
        offsets = {s.name: s["st_name"] for s in symtab.iter_symbols()}
        for i, sym in enumerate(symtab.iter_symbols()):
            m = _FRAGMENT.match(sym.name)
            if not m or sym["st_info"]["type"] != "STT_FUNC":
                continue
            at = symtab["sh_offset"] + i * _SYM.size
            name, info, other, shndx, value, size = _SYM.unpack_from(data, at)
            if how == "dropped":
                _SYM.pack_into(data, at, name, info, other, 0, 0, 0)
            elif m["base"] in offsets:
                _SYM.pack_into(data, at, offsets[m["base"]], info, other, shndx, value, size)
    return bytes(data)


def _run(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120).stdout


def _locations(text: str, several: str) -> int:
    """How many locations the first breakpoint got: "(N locations)", else 1 if it was set."""
    m = re.search(several, text)
    return int(m[1]) if m else int("Breakpoint 1" in text)


def measure(variant: str, program: str) -> dict[str, object]:
    facts = json.loads((ROOT / "fixtures" / "build" / variant / f"{program}.facts.json")
                       .read_text())
    binary = ROOT / facts["binary"]
    if "crash" in facts:  # the crash pc, else the first moved fragment's start
        key, pc = facts["crash"]["procedure"], int(facts["crash"]["link_pc"], 16)
    else:
        key = next(k for k, info in facts["split_functions"].items()
                   if any(g["fragment"] != "hot" for g in info["fragments"]))
        pc = -1
    frag = next(g for g in facts["split_functions"][key]["fragments"]
                if g["fragment"] != "hot" and (pc < 0 or int(g["start"], 16) <= pc
                                               < int(g["end"], 16)))
    pc = int(frag["start"], 16) if pc < 0 else pc
    proc = facts["split_functions"][key]["demangled"].split("(")[0]
    out: dict[str, object] = {"program": f"{variant}/{program}", "procedure": proc,
                              "pc": hex(pc), "fragment": frag["symbol"],
                              "fragments": len(facts["split_functions"][key]["fragments"])}
    with tempfile.TemporaryDirectory() as tmp:
        made = Path(tmp) / "made.debug"
        env = {**os.environ, "PYTHONPATH": str(ROOT / "plugin"), "UNSPLIT_CACHE": tmp}
        subprocess.run([sys.executable, "-m", "unsplit", "debuginfo", str(binary), "-o",
                        str(made)], check=True, capture_output=True, env=env)
        build_id = facts["build_id"]
        for how in ("kept", "dropped", "renamed"):
            folder = Path(tmp) / how
            debug = folder / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
            debug.parent.mkdir(parents=True)
            debug.write_bytes(_variant(made.read_bytes(), how))
            gdb = _run(["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off", "-iex",
                        f"set debug-file-directory {folder}", "-ex", f"break {proc}",
                        "-ex", "info breakpoints", str(binary)])
            lldb = _run(["lldb-22", "--no-lldbinit", "-b", "-o", f"target create {binary}",
                         "-o", f"target symbols add {debug}", "-o",
                         f"breakpoint set -n {proc}", "-o", f"image lookup -a {pc:#x}",
                         "-o", f"breakpoint set -n {frag['symbol']}"])
            at = re.search(r"Breakpoint 2: .*address = (0x[0-9a-f]+)", lldb)
            symbolizer = _run(["llvm-symbolizer-22", f"--obj={debug}", f"{pc:#x}"])
            out[how] = {
                "gdb_break_locations": _locations(gdb, r"Breakpoint 1 at .*\((\d+) locations"),
                "lldb_break_locations": _locations(lldb, r"Breakpoint 1: (\d+) locations"),
                "lldb_lookup": (re.findall(r"Summary: ([^\n]*)", lldb) or [""])[0],
                "llvm_symbolizer": symbolizer.splitlines()[0] if symbolizer else "",
                # LLDB's `breakpoint set -n FRAGMENT_SYMBOL`: bytes past the fragment's start
                # (None: no location)
                "lldb_break_fragment": None if at is None else
                int(at[1], 16) - int(frag["start"], 16),
            }
    return out


def main() -> None:
    cases = sys.argv[1:] or ["bolt-all/crash", "bolt-cdsplit/crash", "gcc-pgo-nodebug/crash"]
    for case in cases:
        variant, program = case.split("/")
        print(json.dumps(measure(variant, program), indent=1))


if __name__ == "__main__":
    main()
