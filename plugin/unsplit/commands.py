"""The `bb` commands, declared once as data; each adapter turns this table into native commands.

A command's `run(session, host, args)` returns the text to print and raises UnsplitError for a
user's mistake. :func:`dispatch` parses a raw argument string the way both debuggers pass it.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gettext
import json
import os
import shlex
from collections.abc import Callable, Iterator
from typing import NamedTuple, NoReturn

from unsplit.cache_dir import cache_root, keep_if_writable
from unsplit.debug.breakpoint_host import BreakpointHost
from unsplit.debug.stepping_host import SteppingHost
from unsplit.elf.binary import Binary
from unsplit.errors import AddressLookupError, BinaryError, UsageError
from unsplit.formats.dwarf_expr import registers_from_names
from unsplit.host import (
    DebugInfo,
    ExactFrames,
    FrameNaming,
    Host,
    LiveHost,
    LoadedModule,
    NativeFrames,
    SelectedFrame,
)
from unsplit.index.bolt import bat_translate, prebolt
from unsplit.index.inlines import module_frames
from unsplit.index.model.frame import Frame, as_numbered, at_return_address, lookup_pc
from unsplit.index.model.records import Location, Procedure
from unsplit.index.module_index import ModuleIndex
from unsplit.index.names.demangle import shown
from unsplit.render import inputs as input_text
from unsplit.render.frames import (
    blocks_text,
    bt_json,
    bt_report,
    frame_row,
    frame_text,
    frames_text,
    where_text,
)
from unsplit.session import Session


class HelpRequested(Exception):
    """`--help` was given: the text is the answer, not an error."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting the debugger."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(message or f"{self.prog}: exit {status}")

    def print_help(self, file: object = None) -> None:
        raise HelpRequested(self.format_help())


class _CommandFields(NamedTuple):
    name: str
    summary: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[Session, Host, argparse.Namespace], str]
    # What the host must provide beyond Host (unsplit.host's protocols), checked by dispatch.
    needs: tuple[type, ...] = ()


class Command(_CommandFields):
    """One `bb` command as data: each adapter makes its native command from it (a NamedTuple,
    not a dataclass, which would compile its methods as GDB starts; its own __dict__ holds the
    parser once made)."""

    def parser(self) -> argparse.ArgumentParser:
        """The command's parser, made once (building one costs more than a `bb next` should
        pay each time; parse_args leaves it as it was)."""
        return self._parser

    @functools.cached_property
    def _parser(self) -> argparse.ArgumentParser:
        p = _Parser(prog=f"bb {self.name}", description=self.summary, add_help=True)
        self.arguments(p)
        return p

    @property
    def help(self) -> str:
        with untranslated_messages():
            return self.parser().format_help()


@contextlib.contextmanager
def untranslated_messages() -> Iterator[None]:
    """argparse's messages as gettext would give them when it has no catalog to translate them
    with: the same text without gettext searching the locale directories for each string, which
    GDB paid at every start making the `bb` commands' help. Where a catalog exists argparse asks
    gettext as always. Nested in one that found no catalog it does not look again (an adapter
    making every command's help looks once)."""
    if argparse._ is _as_written:  # type: ignore[attr-defined]
        yield
        return
    domain = gettext.textdomain()
    if gettext.find(domain, gettext.bindtextdomain(domain)):
        yield
        return
    asked = argparse._, argparse.ngettext  # type: ignore[attr-defined]
    argparse._ = _as_written  # type: ignore[attr-defined]
    argparse.ngettext = _plural_as_written  # type: ignore[attr-defined]
    try:
        yield
    finally:
        argparse._, argparse.ngettext = asked  # type: ignore[attr-defined]


def _as_written(message: str) -> str:
    return message


def _plural_as_written(singular: str, plural: str, n: int) -> str:
    return singular if n == 1 else plural


HELP_VERSION = 1


def helps() -> dict[str, str]:
    """Every command's help (Command.help) by name, kept under the cache root between
    sessions: GDB reads a command's help as the command is made, so each start built and
    formatted every parser for a `help` seldom typed. Kept by all the text depends on
    (Python's version, the width argparse wraps to, the files that declare the commands);
    made afresh where argparse has a catalog to translate it with, and when the kept file is
    absent, damaged or another key's (then written again; a read-only cache is no error)."""
    domain = gettext.textdomain()
    if gettext.find(domain, gettext.bindtextdomain(domain)):
        return {name: c.help for name, c in COMMANDS.items()}
    import sys
    import zlib

    files = sorted({str(sys.modules[c.arguments.__module__].__file__) for c in COMMANDS.values()}
                   | {__file__})
    stamps = []
    for path in files:
        try:
            st = os.stat(path)
        except OSError:  # not a file (a zip's member): nothing to tell a stale help by
            with untranslated_messages():
                return {name: c.help for name, c in COMMANDS.items()}
        stamps.append([path, st.st_size, st.st_mtime_ns])
    key = [sys.version, _width_from(), stamps]
    text = json.dumps(key)
    kept = os.path.join(cache_root(), f"help-v{HELP_VERSION}",
                        f"{zlib.crc32(text.encode()):08x}.json")
    try:
        with open(kept, encoding="utf-8") as f:
            found = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        found = None
    if isinstance(found, dict) and found.get("key") == key:
        made = found.get("help")
        if isinstance(made, dict) and sorted(made) == sorted(COMMANDS) and \
                all(isinstance(v, str) for v in made.values()):
            return made
    with untranslated_messages():  # (one look for the catalog, not one per command)
        made = {name: c.help for name, c in COMMANDS.items()}
    keep_if_writable(kept, json.dumps({"key": key, "help": made}).encode())
    return made


def _width_from() -> list[str | int | None]:
    """What the width argparse wraps to is made of (shutil.get_terminal_size, which a kept
    help need not import): $COLUMNS, and the columns of the terminal standard output is."""
    import sys

    out = sys.__stdout__
    try:
        columns = None if out is None else os.get_terminal_size(out.fileno()).columns
    except (ValueError, OSError):  # closed, detached, or not a terminal
        columns = None
    return [os.environ.get("COLUMNS"), columns]


# -- bb where -------------------------------------------------------------------------------

def _where_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("address", nargs="*",
                   help="address expressions (default: the selected frame's PC)")
    p.add_argument("--json", action="store_true", help="one JSON object per address")


def _addresses(host: Host, exprs: list[str]) -> list[int]:
    # Debugger expressions may contain spaces (`$pc + 4`): the whole line is one expression
    # unless each word parses as an address on its own.
    if not exprs:
        return [host.selected_pc()]
    try:
        return [host.evaluate_address(e) for e in exprs]
    except UsageError:
        if len(exprs) == 1:
            raise
        return [host.evaluate_address(" ".join(exprs))]


def _selected(session: Session, host: Host) -> tuple[int, Location | None]:
    """The selected frame's PC and where it is; a caller's PC is a return address, so its
    code is that of PC - 1 (the call), reported at PC."""
    pc = host.selected_pc()
    caller = isinstance(host, SelectedFrame) and host.selected_frame_is_caller()
    return pc, _locate_frame(session, host, pc, caller)


def _locate_frame(session: Session, host: Host, pc: int, caller: bool) -> Location | None:
    loc = session.locate(host, lookup_pc(pc, caller))
    return at_return_address(loc, pc) if loc is not None and caller else loc


def _where(session: Session, host: Host, args: argparse.Namespace) -> str:
    out = []
    style = session.demangling()
    if not args.address:
        pc, loc = _selected(session, host)
        return json.dumps(_json(loc, pc, style)) if args.json else where_text(loc, pc, style)
    for address in _addresses(host, args.address):
        loc = session.locate(host, address)
        if args.json:
            out.append(json.dumps(_json(loc, address, style)))
        else:
            out.append(where_text(loc, address, style))
    return "\n".join(out)


def _json(loc: Location | None, address: int, style: str | None) -> dict[str, object]:
    return loc.to_json(style) if loc else {"address": hex(address), "procedure": None}


# -- bb frame -------------------------------------------------------------------------------

def _frame_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print a JSON object")


def _frame(session: Session, host: Host, args: argparse.Namespace) -> str:
    pc, loc = _selected(session, host)
    if loc is None:
        return f"{pc:#x} is not in the code of any loaded module"
    level = host.selected_frame_level() if isinstance(host, SelectedFrame) else 0
    style = session.demangling()
    return json.dumps(loc.to_json(style)) if args.json else frame_text(level, loc, style=style)


# -- bb blocks ------------------------------------------------------------------------------

def _blocks_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("procedure", nargs="+",
                   help="a procedure name: linkage, demangled, or qualified without parameters")
    p.add_argument("--json", action="store_true", help="a JSON list of blocks")


def _blocks(session: Session, host: Host, args: argparse.Namespace) -> str:
    """Every procedure the name names (same-named statics of several units, overloads, other
    modules) gets its own table; each JSON row says whose block it is."""
    text = " ".join(args.procedure)
    found = session.find_procedures(host, text)
    if not found:
        raise AddressLookupError(f"no procedure named {text!r} in any loaded module")
    style = session.demangling()
    rows, tables = [], []
    left_out = session.originals_named(host, text)
    if left_out:
        from unsplit.render import breaks as break_text

        tables.append(break_text.originals_note(left_out, style))
    for module, proc in found:
        mine = _block_rows(module, proc, session.index(module.path))
        rows += mine
        name = shown(proc.name, style)
        if len(found) > 1:
            name += f" at {module.bias + proc.entry:#x}{_defined_in(session, host, module, proc)}"
        if mine:
            tables.append(blocks_text(name, mine))
        else:
            tables.append(
                f"{name}: no basic-block information (the binary has no bb address map, BAT "
                "or split_info for it); fragments: "
                + ", ".join(f"{f.name} {module.bias + f.start:#x}-{module.bias + f.end:#x}"
                            for f in proc.fragments))
    return json.dumps(rows) if args.json else "\n\n".join(tables)


def _block_rows(module: LoadedModule, proc: Procedure, index: ModuleIndex
                ) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for block in sorted(proc.blocks, key=lambda b: b.start):
        frag = proc.fragment_at(block.start)
        rows.append({
            "procedure": proc.name, "entry": hex(module.bias + proc.entry),
            "block": block.id, "fragment": frag.name if frag else None,
            "start": hex(module.bias + block.start), "end": hex(module.bias + block.end),
            "offset": index.offset_at(block.start), "flags": list(block.flags),
            "frequency": block.frequency,
            "successors": [{"block": b, "probability": p} for b, p in block.successors],
        })
    return rows


def _defined_in(session: Session, host: Host, module: LoadedModule, proc: Procedure) -> str:
    """` (FILE:LINE)` of the procedure's entry, to tell same-named ones apart; '' if unknown."""
    loc = session.locate(host, module.bias + proc.entry)
    if loc is None or loc.file is None:
        return ""
    return f" ({os.path.basename(loc.file)}:{loc.line})" if loc.line else \
        f" ({os.path.basename(loc.file)})"


# -- bb break -------------------------------------------------------------------------------

def _break_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("location", nargs="*",
                   help="PROC, PROC+OFFSET, PROC:%%ID (basic block) or FILE:LINE; PROC as "
                        "linkage name, demangled name or qualified name without parameters")
    p.add_argument("--list", action="store_true",
                   help="list every bb breakpoint's locations: procedure, fragment, original "
                        "offset, block and line")
    p.add_argument("-a", "--all-fragments", action="store_true",
                   help="with PROC: also stop at the first instruction of every other fragment")
    p.add_argument("--pending", action="store_true",
                   help="set it even if no loaded module has the location yet (a library "
                        "that loads later)")
    p.add_argument("-c", "--condition", metavar="EXPR",
                   help="stop only when EXPR (in the debugger's own language) is true; every "
                        "location gets it")


def _break(session: Session, host: Host, args: argparse.Namespace) -> str:
    from unsplit.render import breaks as break_text  # (bb break's text, with its policy)

    if args.list:
        if args.location:
            raise UsageError("bb break --list takes no location")
        assert isinstance(host, BreakpointHost)  # dispatch checked Command.needs
        return break_text.list_text(session, host.bb_breakpoints())
    from unsplit.debug import breakpoints  # the policy, first imported by the first bb break

    spec = breakpoints.parse(" ".join(args.location), args.all_fragments)
    if args.condition is not None and args.condition.strip():
        from dataclasses import replace  # BreakSpec's module imported it already

        spec = replace(spec, condition=args.condition.strip())
    sites = session.resolve_breakpoint(host, spec)
    if not sites and not args.pending:
        raise AddressLookupError(f"bb break: {spec.text}: not found in any loaded module; "
                                 "nothing set (--pending to set it for a library loaded later)")
    assert isinstance(host, BreakpointHost)
    made = host.create_breakpoint(spec, sites)
    left_out = [] if spec.procedure is None else session.originals_named(host, spec.procedure)
    return made + ("\n" + break_text.originals_note(left_out, session.demangling())
                   if left_out else "")


# -- bb bt ----------------------------------------------------------------------------------

def _thread_args(json_help: str) -> Callable[[argparse.ArgumentParser], None]:
    """--json and --all-threads, as `bb bt` and `bb frames` take them."""

    def arguments(p: argparse.ArgumentParser) -> None:
        p.add_argument("--json", action="store_true", help=json_help)
        p.add_argument("--all-threads", action="store_true",
                       help="every thread (default: the selected one)")

    return arguments


def _threads(host: Host, args: argparse.Namespace, command: str) -> list[int | None]:
    """The threads a command covers: None stands for the selected one."""
    threads: list[int | None] = [None]
    if args.all_threads and isinstance(host, NativeFrames):
        threads = list(host.thread_numbers())
    if not threads:
        raise UsageError(f"bb {command}: no threads (no process or core file)")
    return threads


def _bt(session: Session, host: Host, args: argparse.Namespace) -> str:
    # Frame 0's registers are the debugger's own (they are the thread's); every caller comes
    # from the CFI, so a frame the debugger invents or skips shows up in the comparison.
    from unsplit.debug import unwind  # (the CFI's modules: only `bb bt` and `bb frames` ask)

    assert isinstance(host, LiveHost)
    threads = _threads(host, args, "bt")
    style = session.demangling()
    texts, objects = [], []
    for thread in threads:
        registers = registers_from_names(host.frame0_registers(thread))
        frames = unwind.backtrace(host.modules(), registers, host.read_memory, session.index)
        native: list[int] | None = host.native_frame_pcs(thread)
        diff = [] if native is None else unwind.compare(native, frames, style)
        frames = _numbered_as_native(session, host, frames, native,
                                     host.native_frame_numbers(thread))
        if args.json:
            objects.append({"thread": thread, "frames": [bt_json(f, style) for f in frames],
                            "native_pcs": None if native is None else [hex(p) for p in native],
                            "differences": diff})
            continue
        text = bt_report(frames, None if native is None else diff, style)
        texts.append(text if thread is None else f"thread {thread}:\n{text}")
    if args.json:
        return json.dumps(objects if args.all_threads else objects[0])
    return "\n\n".join(texts)


def _numbered_as_native(session: Session, host: Host, frames: list[Frame],
                        native: list[int] | None,
                        numbers: list[tuple[int, int]]) -> list[Frame]:
    """The CFI's frames numbered as the debugger's `bt` numbers its own, with a row for each
    inlined call it shows, while its frames are the CFI's (then 1 each)."""
    out: list[Frame] = []
    agree = native is not None and len(numbers) == len(native)
    caller = False
    for k, frame in enumerate(frames):
        number = len(out)
        count = 1
        if agree and native is not None and k < len(native) and native[k] == frame.pc \
                and numbers[k][0] == number:
            count = numbers[k][1]
        else:
            agree = False
        out.extend(_with_inlined(session, frame._replace(number=number), count,
                                 caller))
        caller = not _signal_frame(session, host, frame.pc)
    return out


# -- bb frames ------------------------------------------------------------------------------

def _frames(session: Session, host: Host, args: argparse.Namespace) -> str:
    # The debugger's own frames (concrete ones: an inlined call shares its frame's pc), each
    # named by the core; a caller's pc is a return address, named by its call at pc - 1.
    assert isinstance(host, LiveHost)
    threads = _threads(host, args, "frames")
    mismatch: dict[str, str | None] = {}
    tables = [(t, _frame_rows(session, host, host.native_frame_pcs(t), mismatch,
                              host.native_frame_numbers(t)))
              for t in threads]
    if args.json:
        if not args.all_threads:
            return json.dumps(tables[0][1])
        return json.dumps([{"thread": t, "frames": rows} for t, rows in tables])
    text = "\n\n".join(frames_text(rows, t) for t, rows in tables)
    # What weakens the table, one line each: a module whose image in memory is another file.
    warnings = [f"warning: {path}: {m}" for path, m in mismatch.items() if m]
    if all(r["module"] is None for _, rows in tables for r in rows):
        warnings.append("warning: no frame is in a loaded module (is the executable loaded, "
                        "and is the core its own?)")
    return "\n".join([text, *warnings])


def _frame_rows(session: Session, host: Host, pcs: list[int], mismatch: dict[str, str | None],
                numbers: list[tuple[int, int]] | None = None) -> list[dict[str, object]]:
    """One row per frame of the debugger's `bt`; `numbers`: for each concrete frame (`pcs`),
    the debugger's number of its innermost frame and how many it shows (else 0, 1, 2…)."""
    rows: list[dict[str, object]] = []
    style = session.demangling()
    caller = False  # frame 0, and a frame a signal interrupted, stopped at their pc
    if numbers is None or len(numbers) != len(pcs):
        numbers = [(k, 1) for k in range(len(pcs))]
    for (number, count), pc in zip(numbers, pcs, strict=True):
        found = session.module_of(host, lookup_pc(pc, caller))
        if found is not None and found[0].path not in mismatch:
            mismatch[found[0].path] = session.image_mismatch(found[0])
        loc = None if found is None or mismatch[found[0].path] else \
            _locate_frame(session, host, pc, caller)
        frame = Frame(number, pc, None if found is None else found[0].path,
                      0 if found is None else found[0].bias, loc)
        shown_frames = _with_inlined(session, frame, count, caller)
        caller = not _signal_frame(session, host, pc)
        for k, f in enumerate(shown_frames):
            rows.append({**frame_row(f, style, session.source_lines),
                         "inlined_frame": k + 1 < len(shown_frames)})
    return rows


def _with_inlined(session: Session, frame: Frame, count: int, caller: bool) -> list[Frame]:
    """`frame` as the debugger's `count` frames: its inlined calls (DWARF's), then itself."""
    if count <= 1 or frame.module is None or frame.location is None:
        return [frame]
    chain = module_frames(session.index(frame.module)).frames(
        lookup_pc(frame.pc, caller) - frame.bias)
    return as_numbered(frame, chain, count)


def _signal_frame(session: Session, host: Host, pc: int) -> bool:
    """Is the frame at `pc` a signal trampoline (its FDE says "S")? Then its caller was
    interrupted at its pc rather than calling."""
    found = session.module_of(host, pc)
    if found is None:
        return False
    from unsplit.debug import cfi

    mod, index = found
    return cfi.is_signal_frame(index.binary, pc - mod.bias)


# -- bb input -------------------------------------------------------------------------------

def _input_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", nargs="?", help="the pre-BOLT binary (omit to show what is in use)")
    p.add_argument("--module", help="the BOLTed module it belongs to, by path or file name, "
                   "loaded or not yet (a library dlopen() loads later; default: the loaded "
                   "module whose build-id is PATH's with BOLT's last bit flipped, else the "
                   "executable, else the module with that build-id when it loads)")


def _input(session: Session, host: Host, args: argparse.Namespace) -> str:
    modules = [m for m in host.modules() if m.path and os.path.isfile(m.path)]  # not [vdso]
    if args.module:
        modules = [m for m in modules if m.path == args.module
                   or os.path.basename(m.path) == args.module]
    if args.path is None:
        return _inputs_in_use(session, modules)
    path = os.path.expanduser(args.path)
    executable = False  # the module was chosen for want of another
    if not modules or not args.module:
        mine = _module_with_input(session, modules, path)
        if mine is None and (args.module or not modules):  # not loaded yet: when it loads
            named = session.name_input(path, args.module)
            return input_text.pending(path, named.module, named.build_id)
        executable = mine is None
        modules = [mine] if mine is not None else modules
    index = session.index(modules[0].path)
    try:
        found = session.set_input(index.binary, path)
    except BinaryError as e:
        if not executable:
            raise
        raise BinaryError(input_text.refused_hint(str(e))) from None
    return f"{index.binary.path}: pre-BOLT input {found.path if found else args.path}"


def _module_with_input(session: Session, modules: list[LoadedModule],
                       path: str) -> LoadedModule | None:
    """The loaded module `path` is the pre-BOLT input of, by build-id (BOLT flipped its last
    bit), if any."""
    candidate = Binary(path)
    wanted = prebolt.input_build_id(candidate.build_id or b"")
    candidate.close()
    if not wanted:
        return None
    return next((m for m in modules if session.indexes.binary(m.path).build_id == wanted), None)


def _inputs_in_use(session: Session, modules: list[LoadedModule]) -> str:
    lines = []
    for mod in modules:
        binary = session.index(mod.path).binary
        if bat_translate.has_bat(binary):
            found = prebolt.input_for(binary)
            lines.append(f"{mod.path}: pre-BOLT input "
                         + (found.path if found else "not found (bb input PATH)"))
    binaries = [session.indexes.binary(m.path) for m in modules]
    lines += [input_text.pending(n.path, n.module, n.build_id) for n in session.named_inputs
              if not any(n.names(b) for b in binaries)]
    return "\n".join(lines) or "no loaded module was optimized by BOLT"


# -- bb enable / disable ------------------------------------------------------------------

def _no_args(p: argparse.ArgumentParser) -> None:
    pass


def _set_enabled(flag: bool) -> Callable[[Session, Host, argparse.Namespace], str]:
    def run(session: Session, host: Host, args: argparse.Namespace) -> str:
        session.enabled = flag
        # A live adapter installs or restores its frame formats, and may have warnings.
        warnings = host.set_frame_naming(flag) if isinstance(host, FrameNaming) else []
        said = "unsplit frame naming " + ("enabled" if flag else "disabled (native formats)")
        return "\n".join([*warnings, said])

    return run


# -- bb exact-frames ------------------------------------------------------------------------

def _exact_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("state", nargs="?", choices=("on", "off"),
                   help="on (the default): the debugger unwinds moved fragments with their "
                   "CFI, so its own bt, frame select, up/down, finish and register read have "
                   "no invented frames; off: not for modules loaded from now on (no argument: "
                   "show the state)")


def _exact(session: Session, host: Host, args: argparse.Namespace) -> str:
    assert isinstance(host, ExactFrames)
    return host.set_exact_frames(None if args.state is None else args.state == "on")


# -- bb debuginfo ----------------------------------------------------------------------------

def _debuginfo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("state", nargs="?", choices=("on", "off", "status"),
                   help="on (the default): every split module without DWARF gets unsplit's "
                   "debug file (unsplit debuginfo) as it loads, so the debugger's own bt, "
                   "list, info line and break FILE:LINE are right; off: not for modules "
                   "loaded from now on; status (or nothing): the state and the files given")


def _debuginfo(session: Session, host: Host, args: argparse.Namespace) -> str:
    assert isinstance(host, DebugInfo)
    return host.set_debuginfo(None if args.state in (None, "status") else args.state == "on")


# -- bb set -----------------------------------------------------------------------------------

def _set_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("option", choices=["verbose"],
                   help="verbose: step reports also give the fragment, original offset and "
                        "block (as `bb where` does)")
    p.add_argument("value", nargs="?", choices=["on", "off"], help="omit to show the value")


def _set(session: Session, host: Host, args: argparse.Namespace) -> str:
    if args.value is not None:
        session.verbose = args.value == "on"
    return f"verbose is {'on' if session.verbose else 'off'}"


# -- bb next / step / finish / until / advance / stepi (policy: unsplit.debug.stepping) -----------

def _step_args(p: argparse.ArgumentParser) -> None:
    pass


def _line_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("line", nargs="?", type=int,
                   help="a line of the procedure (default: the next line, never backwards)")


def _advance_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("line", type=int, help="a line of the procedure, in any of its fragments")


def _stepper(kind: str) -> Callable[[Session, Host, argparse.Namespace], str]:
    def run(session: Session, host: Host, args: argparse.Namespace) -> str:
        from unsplit.debug import stepping

        return stepping.run(session, host, kind, getattr(args, "line", None))

    return run


# What a host lacking a protocol is told, one line (`bb next: ...`).
NEEDS_SAID: dict[type, str] = {
    LiveHost: "needs a debugger with a process or a core file",
    BreakpointHost: "this debugger adapter cannot set breakpoints",
    SteppingHost: "this debugger adapter cannot step",
    ExactFrames: "needs a debugger",
    DebugInfo: "needs a debugger",
}

COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command("where", "Explain an address: logical procedure, fragment, original offset, "
                "block and source line.", _where_args, _where),
        Command("frame", "Show the selected frame as the procedure it belongs to.",
                _frame_args, _frame),
        Command("blocks", "List a procedure's basic blocks in address order, with fragment, "
                "ID, range, flags and frequency; a table for every procedure of that name.",
                _blocks_args, _blocks),
        Command("break", "Break in a procedure as written: its entry (and every fragment), "
                "an original offset, a basic block or a source line.", _break_args, _break,
                needs=(BreakpointHost,)),
        Command("bt", "Backtrace through the call frame information (.eh_frame) of each "
                "frame's fragment, and where the debugger's own frames differ.",
                _thread_args("frames with pc, cfa, registers and location, and the "
                             "differences"), _bt, needs=(LiveHost,)),
        Command("frames", "Every frame of the selected thread (or all): procedure, fragment, "
                "block, original offset, line and its source text.",
                _thread_args("a JSON list of frames (with --all-threads: of threads and "
                             "their frames)"), _frames, needs=(LiveHost,)),
        Command("input", "Name the pre-BOLT binary of a BOLTed module (found by build-id "
                "otherwise).", _input_args, _input),
        Command("enable", "Name frames in moved code by their procedure (bt, stop line).",
                _no_args, _set_enabled(True)),
        Command("disable", "Restore the debugger's own frame names and formats.",
                _no_args, _set_enabled(False)),
        Command("exact-frames", "on|off: the debugger unwinds moved fragments with their CFI, "
                "so its own frame list has no invented frames (LLDB; on by default).",
                _exact_args, _exact, needs=(ExactFrames,)),
        Command("debuginfo", "on|off|status: give split modules without DWARF unsplit's debug "
                "file, so the debugger's own commands name procedures and lines.",
                _debuginfo_args, _debuginfo, needs=(DebugInfo,)),
        Command("set", "Set an option of unsplit: `verbose on|off` (step reports also give "
                "fragment, original offset and block).", _set_args, _set),
        Command("next", "Step to the next line of the procedure, in any fragment, over calls.",
                _step_args, _stepper("next"), needs=(SteppingHost,)),
        Command("step", "Step to the next line of the procedure, in any fragment, into calls "
                "that have lines.", _step_args, _stepper("step"), needs=(SteppingHost,)),
        Command("finish", "Run until the procedure returns, from any of its fragments.",
                _step_args, _stepper("finish"), needs=(SteppingHost,)),
        Command("until", "Like next, but never stop at a line before this one (loops); "
                "with LINE: run to that line of the procedure.", _line_args, _stepper("until"),
                needs=(SteppingHost,)),
        Command("advance", "Run to LINE of the procedure, wherever its code lives (or until "
                "the procedure returns).", _advance_args, _stepper("advance"),
                needs=(SteppingHost,)),
        Command("stepi", "Execute one instruction; show its fragment, block and line.",
                _step_args, _stepper("stepi"), needs=(SteppingHost,)),
    )
}

PREFIX_HELP = (
    "unsplit: debug hot/cold split code as if it had never been split.\n\n"
    "Subcommands:\n"
    + "\n".join(f"  bb {c.name:<{max(map(len, COMMANDS))}} {c.summary}"
                for c in COMMANDS.values())
    + "\n\nType `bb COMMAND --help` for a command's options."
)


CAPABILITIES: tuple[type, ...] = tuple(dict.fromkeys(
    [need for command in COMMANDS.values() for need in command.needs] + [FrameNaming]))
"""Every protocol a `bb` command asks a host for (FrameNaming: `bb enable`/`disable`): what
each debugger adapter's host provides, checked as it loads."""


def check_capabilities(host_class: type) -> tuple[type, ...]:
    """CAPABILITIES, once `host_class` (a debugger adapter's host) is checked to have the
    methods of each: a TypeError naming what it lacks fails the adapter as it loads."""
    missing = [p.__name__ for p in CAPABILITIES if not issubclass(host_class, p)]
    if missing:
        raise TypeError(f"{host_class.__name__} lacks the methods of {', '.join(missing)}")
    return CAPABILITIES

RAW_QUOTES = {"where"}
"""Commands whose words are debugger expressions: quotes are the expression's own."""


def dispatch(session: Session, host: Host, name: str, argument: str) -> str:
    """Run `bb NAME ARGUMENT`; returns the text to print (help text for --help)."""
    command = COMMANDS.get(name)
    if command is None:
        raise UsageError(f"unknown bb command {name!r}; try: {', '.join(COMMANDS)}")
    try:
        # Address expressions keep their quotes: GDB needs 'transfer.cold'+4 quoted.
        words = shlex.split(argument, posix=name not in RAW_QUOTES)
    except ValueError as e:
        raise UsageError(f"bb {name}: {e}") from None
    try:
        args = command.parser().parse_args(words)
    except HelpRequested as h:
        return str(h)
    missing = [need for need in command.needs if not isinstance(host, need)]
    if missing:
        raise UsageError(f"bb {name}: {NEEDS_SAID.get(missing[0], 'not in this debugger')}")
    return command.run(session, host, args)


def complete(text: str) -> list[str]:
    """Subcommand names that start with `text` (tab completion in both debuggers)."""
    return [n for n in COMMANDS if n.startswith(text)]
