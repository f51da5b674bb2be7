"""LLDB's own frames, names, lines and variables in moved code: every split module without DWARF
gets unsplit's debug file (unsplit.debuginfo), or, where none can be made or LLDB takes a split
function as one span, the Breakpad file of its moved fragments' CFI and lines
(unsplit.debug.breakpad). LLDB finds kept files through ``target.debug-file-search-paths``;
:func:`sync` gives new ones before every command that looks past frame 0 (docs/architecture.md).
A module with DWARF is never given one. ``UNSPLIT_LLDB_CFI=0`` turns it all off."""

from __future__ import annotations

import filecmp
import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from unsplit.cache_dir import cache_root
from unsplit.debug import breakpad, breakpad_lines
from unsplit.debuginfo.cache import (
    TO_WRITE,
    Outcome,
    debug_file_for,
    max_code_bytes,
    names_only,
)
from unsplit.debuginfo.cache import cache_dir as debuginfo_dir
from unsplit.errors import UnsplitError
from unsplit.index.bolt import bat_translate
from unsplit.render.debuginfo import DebugInfoState, status_text

from . import capabilities, frame_source, names_first
from . import state as state_mod
from .report import report_internal

if TYPE_CHECKING:
    import lldb
    from unsplit.elf.binary import Binary
    from unsplit.index.module_index import ModuleIndex

HOOK_CLASS = "unsplit_lldb.CfiSymbolsHook"


def in_lldb_dap() -> bool:
    """Whether this LLDB is lldb-dap (an IDE's adapter) rather than the lldb command line."""
    try:
        return os.path.basename(os.readlink("/proc/self/exe")).startswith("lldb-dap")
    except OSError:
        return False


def _debuginfo_asked() -> bool | None:
    """What UNSPLIT_LLDB_DEBUGINFO asks (None: not set, the file unless LLDB cannot use it)."""
    env = os.environ.get("UNSPLIT_LLDB_DEBUGINFO")
    return None if env is None else env == "1"


@dataclass
class _Done:
    """Modules already looked at, by (path, UUID), with what was done (for `bb exact-frames`)."""

    seen: dict[tuple[str, str], str] = field(default_factory=dict)
    described: set[tuple[str, str]] = field(default_factory=set)  # asked for a DWARF file
    hooked: set[int] = field(default_factory=set)  # debugger ids with the hook or the overrides
    callbacks: list[Any] = field(default_factory=list)  # the override callbacks, kept alive
    span_noted: set[int] = field(default_factory=set)  # debugger ids told about split_function
    on: bool = os.environ.get("UNSPLIT_LLDB_CFI", "1") != "0"
    # The debug file, unless `bb debuginfo off` or UNSPLIT_LLDB_DEBUGINFO=0 (`asked`: what the
    # user chose, None by default) or this LLDB unwinds split functions as one span (`spans`:
    # None until probed), where only an explicit choice keeps it.
    asked: bool | None = field(default_factory=_debuginfo_asked)
    spans: bool | None = None

    @property
    def debuginfo(self) -> bool:
        if self.asked is not None:
            return self.asked
        return not self.spans


_DONE = _Done()


def enabled() -> bool:
    return _DONE.on


def _run(debugger: lldb.SBDebugger, command: str) -> tuple[bool, str]:
    import lldb

    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(command, result)
    return result.Succeeded(), (result.GetOutput() or "") + (result.GetError() or "")


def install(debugger: lldb.SBDebugger) -> list[str]:
    """At import: the search path, the stop hook (in LLDB's dummy target, which LLDB copies
    into every target made later, and in the targets that exist), and a first sync."""
    if not enabled():
        return []
    notes = []
    root = breakpad.cache_dir()
    ok, out = _run(debugger, "settings show target.debug-file-search-paths")
    if root not in out:
        ok, out = _run(debugger, f'settings append target.debug-file-search-paths "{root}"')
        if not ok:
            notes.append(f"unsplit: cannot add {root} to target.debug-file-search-paths: "
                         f"{out.strip()}")
    if int(debugger.GetID()) not in _DONE.hooked:
        _DONE.hooked.add(int(debugger.GetID()))
        if in_lldb_dap():
            targets = [debugger.GetTargetAtIndex(i) for i in range(debugger.GetNumTargets())]
            for target in [debugger.GetDummyTarget(), *targets]:
                _add_hook(debugger, target)
            if _DONE.asked is not False and names_first.enabled(True):
                names_first.watch(debugger, _names_first_file)
        else:
            notes += _add_overrides(debugger)
    for i in range(debugger.GetNumTargets()):
        notes += sync(debugger, debugger.GetTargetAtIndex(i))
    return notes


# LLDB's commands that unwind past a thread's innermost frame (`bt`, `up`, `down`, `finish`, `n`,
# `s`, `ni`, `si` and `thread return` are aliases of these), and `script` (the SB API's frames;
# `scripting run` in LLDB 19 and 22, which run no override of the alias): the CFI must be there
# first.
UNWINDING_COMMANDS = ("thread backtrace", "frame select", "thread step-out", "thread step-over",
                      "thread step-in", "thread step-inst", "thread step-inst-over",
                      "thread step-scripted", "thread until", "thread return", "scripting run")
# And those that read a module's symbol file before any stop (`b`, `run`, `image lookup`, `l`,
# `di` are aliases): the debug file must be there first, so that `breakpoint set -f FILE -l
# LINE` right after `target create` finds a line of moved code, and the first stop's frame
# has its procedure, line and source.
SYMBOL_COMMANDS = ("breakpoint set", "process launch", "process attach", "target modules lookup",
                   "disassemble", "source list")


def _add_overrides(debugger: lldb.SBDebugger) -> list[str]:
    """Have every command of UNWINDING_COMMANDS and SYMBOL_COMMANDS sync first (an override
    callback that lets the command run); returns one line for the commands that could not be
    hooked."""
    interpreter = debugger.GetCommandInterpreter()
    callback = _syncing(debugger)
    # `frame select` then shows the source of a frame that only the plugin has a line for.
    selecting = _syncing(debugger, frame_source.FrameSelect(debugger))
    _DONE.callbacks += [callback, selecting]
    missing = [c for c in (*UNWINDING_COMMANDS, *SYMBOL_COMMANDS)
               if not interpreter.SetCommandOverrideCallback(
                   c, selecting if c == "frame select" else callback)
               and not (c == "scripting run"  # an LLDB whose `script` is a command of its own
                        and interpreter.SetCommandOverrideCallback("script", callback))]
    return [f"unsplit: LLDB's {', '.join(missing)} may read moved fragments without unsplit's "
            "symbol file (no command override callback)"] if missing else []


def _syncing(debugger: lldb.SBDebugger, then: frame_source.FrameSelect | None = None) -> Any:
    def before_command(*words: str) -> bool:
        """Sync, then let LLDB run the command (False: not handled here) unless `then` ran
        it."""
        try:
            for note in sync(debugger, debugger.GetSelectedTarget()):
                print(note, file=sys.stderr)
            if then is not None:
                return then(*words)
        except Exception as e:  # an exception here would end up in LLDB's C++ caller
            report_internal(e, state_mod.for_debugger(debugger.GetID()).reported)
        return False

    return before_command


def sync_first(debugger: lldb.SBDebugger) -> None:
    """What the override of an unwinding command does before it runs, for a command of the
    plugin's own that runs one (`unsplit-bt`): once a symbol file is added, frames taken
    before it are stale, and LLDB crashes on a nested command given such a frame."""
    _syncing(debugger)()


def _add_hook(debugger: lldb.SBDebugger, target: lldb.SBTarget) -> None:
    if target == debugger.GetDummyTarget() and debugger.GetSelectedTarget().IsValid():
        return  # with a target selected, commands cannot reach the dummy one
    _run_on(debugger, target, f"target stop-hook add -P {HOOK_CLASS}")


def _modules(target: lldb.SBTarget, everything: bool) -> list[tuple[Any, list[int]]]:
    """The modules to look at, each with the file addresses of the threads' pcs in it: every
    module, or those that matter now. LLDB's guess (the assembly profiler) is only ever used
    for a thread's innermost frame (callers unwind with the `.eh_frame` at their call site), so
    at a stop only the modules holding some thread's pc need their CFI, and the executable; a
    process with hundreds of libraries never pays for indexing them all (and sync gives a
    library its file only once a pc is in its moved code)."""
    if everything:
        return [(m, []) for m in target.module_iter()]
    found: dict[str, tuple[Any, list[int]]] = {}
    exe = target.GetModuleAtIndex(0) if target.GetNumModules() else None
    if exe is not None and exe.IsValid():
        found[exe.GetFileSpec().fullpath] = (exe, [])
    process = target.GetProcess()
    if process.IsValid():
        for thread in process:
            frame = thread.GetFrameAtIndex(0)
            module = frame.GetModule()
            if module.IsValid():
                entry = found.setdefault(module.GetFileSpec().fullpath, (module, []))
                entry[1].append(frame.GetPCAddress().GetFileAddress())
    return list(found.values())


def _no_pc_in_moved_code(debugger: lldb.SBDebugger, path: str, pcs: list[int]) -> bool:
    """Whether none of `pcs` (file addresses) is in moved code of the module at `path`: then
    LLDB unwinds every frame of the module right without the CFI file (callers use the
    `.eh_frame` at their call site), and the file waits for a stop that needs it (a BOLTed
    libLLVM's is 76 MB of text, found by a digest of the library; docs/benchmarks.md)."""
    index = state_mod.for_debugger(debugger.GetID()).session.index(path)
    return not any(index.locate(pc, lines=False, blocks=False).in_moved_code for pc in pcs)


def sync(debugger: lldb.SBDebugger, target: lldb.SBTarget, everything: bool = False) -> list[str]:
    """Give each new module of `target` that needs one its CFI symbol file (of those that
    matter now, see _modules; all of them with `everything`); returns warnings, and what a
    new module's pre-BOLT input needs said (Session.input_notes). Cheap when nothing is new
    (one look per module per session)."""
    if not target.IsValid():
        return []
    names_first.settle(debugger)  # the writers it started are the stop's to give
    session = state_mod.for_debugger(debugger.GetID()).session
    described: list[str] = []
    if enabled() and _DONE.debuginfo:  # first: a module's index may come from its file's writer
        _describe(debugger, target, described)
    notes = [line for m in target.module_iter()  # a BOLTed module without its input, once
             for line in session.input_notes(m.GetFileSpec().fullpath or "")]
    notes += described
    if not enabled():
        return notes
    exe = target.GetModuleAtIndex(0) if target.GetNumModules() else None
    for module, pcs in _modules(target, everything):
        path = module.GetFileSpec().fullpath or ""
        key = (path, module.GetUUIDString() or "")
        if not path or key in _DONE.seen:
            continue
        try:
            if pcs and module != exe and _no_pc_in_moved_code(debugger, path, pcs):
                continue  # looked at again at the next stop
            _DONE.seen[key] = _give(debugger, target, module, path, notes)
        except (OSError, UnsplitError) as e:  # never stops the debugger
            _DONE.seen[key] = f"not given: {e}"
            notes.append(f"unsplit: CFI for LLDB's unwinder not given to {path}: {e}")
    return notes


def _describe(debugger: lldb.SBDebugger, target: lldb.SBTarget, notes: list[str]) -> None:
    """Debuginfo on: each module not looked at yet gets unsplit's DWARF file now, not once a
    thread's pc is in its moved code as the CFI file does: an IDE names every frame from the
    module's symbol file, a caller in a cold fragment too (park <- work.cold in a library
    loaded by dlopen()). Each module is asked once; one the file does not fit (DWARF of its own,
    not split, too big to write in a session) is left to the CFI file."""
    for module in target.module_iter():
        path = module.GetFileSpec().fullpath or ""
        key = (path, module.GetUUIDString() or "")
        if not path or key in _DONE.seen or key in _DONE.described:
            continue
        _DONE.described.add(key)
        try:
            given = _give_dwarf(debugger, target, module, path)
        except (OSError, UnsplitError) as e:  # never stops the debugger
            given = f"not given: {e}"
            notes.append(f"unsplit: debug file not given to {path}: {e}")
        if given is not None:
            _DONE.seen[key] = given


def _give_dwarf(debugger: lldb.SBDebugger, target: lldb.SBTarget, module: lldb.SBModule,
                path: str) -> str | None:
    """unsplit's debug file rather than the Breakpad file (a module has one symbol file in
    LLDB): every client gets the procedure, its lines and variables, and LLDB's unwinder the
    fragments' CFI (.debug_frame). None: not for this module, or not for this LLDB."""
    symbol_file = module.GetSymbolFileSpec().fullpath or ""
    root = breakpad.cache_dir()
    if not os.path.isfile(path):
        return None
    found = symbol_file.startswith(root + os.sep)  # LLDB read it from the cache itself
    if symbol_file and not found and os.path.realpath(symbol_file) != os.path.realpath(path):
        return None  # a debug file of its own (the CFI pass says so)
    st = state_mod.for_debugger(debugger.GetID())
    binary = st.session.indexes.binary(path)
    if names_first.wanted(target, in_lldb_dap()):
        later = _names_first(debugger, target, module, binary, symbol_file, root)
        if later is not None:
            return later
    outcome = debug_file_for(path, st.session.indexes, max_code=max_code_bytes())
    if outcome.path is None:
        return None
    given = _give_dwarf_file(debugger, target, binary, outcome.path, found, symbol_file, root)
    if _DONE.asked is None and _takes_spans(debugger, module, path):
        return None  # the CFI pass gives it the Breakpad file instead
    return given


def _names_first(debugger: lldb.SBDebugger, target: lldb.SBTarget, module: lldb.SBModule,
                 binary: Binary, symbol_file: str, root: str) -> str | None:
    """lldb-dap on a core, a BOLT output whose debug file can only name its procedures (no
    lines, no variables: names_only), has more code than a session describes at load, and is
    not kept: its names file now, its debug file once written (names_first.py). BOLT's only:
    its index is the expensive one (BAT's note), where a module of symbols alone is indexed
    here at once and found not split. None: not for this module, or no writer could start."""
    path = binary.path
    debug_file = _names_first_file(debugger, path)
    if debug_file is None:
        return None

    def then(made: Outcome) -> str:
        assert made.path is not None
        given = _give_dwarf_file(debugger, target, binary, made.path, False, symbol_file, root)
        if _DONE.asked is None and _takes_spans(debugger, module, path):
            given = _give(debugger, target, module, path, [])  # the CFI file, as at load
        _DONE.seen[(path, module.GetUUIDString() or "")] = given
        return given

    try:
        return names_first.give(debugger, target, path, debug_file,
                                lambda names: _add(debugger, target, names), then)
    except UnsplitError as e:  # no writer: the file is written here, as without
        print(f"{e}; writing it now", file=sys.stderr)
        return None


def _names_first_file(debugger: lldb.SBDebugger, path: str) -> str | None:
    """Where the debug file of the module at `path` goes if it takes names first (see
    _names_first; asked too while LLDB loads a core, names_first.watch), else None."""
    if not os.path.isfile(path):
        return None
    indexes = state_mod.for_debugger(debugger.GetID()).session.indexes
    binary = indexes.binary(path)
    if not bat_translate.has_bat(binary):
        return None
    outcome = debug_file_for(path, indexes, max_code=max_code_bytes(), write=False, index=False)
    code = sum(end - start for start, end in binary.text_address_ranges())
    if outcome.reason != TO_WRITE or outcome.path is None or code <= max_code_bytes() \
            or not names_only(binary):
        return None
    return outcome.path


def _takes_spans(debugger: lldb.SBDebugger, module: lldb.SBModule, path: str) -> bool:
    """Whether this LLDB takes a function in several DWARF ranges as one span (probed once,
    on the first module given the file whose split procedure the file describes): its bt
    then ends in moved code (LLDB 19), where the Breakpad CFI file unwinds right."""
    if _DONE.spans is None:
        index = state_mod.for_debugger(debugger.GetID()).session.index(path)
        found = capabilities.split_function(module, _moved_procedures(index))
        if found is None:
            return False
        _DONE.spans = not found[1]
    return bool(_DONE.spans)


def _give_dwarf_file(debugger: lldb.SBDebugger, target: lldb.SBTarget, binary: Binary, made: str,
                     found: bool, symbol_file: str, root: str) -> str:
    """Hand LLDB the debug file at `made` (found: LLDB read `symbol_file` from our cache)."""
    shared = not breakpad.alone_under_build_id(binary)  # a BOLT output's build-id
    if found and shared and _forget_by_build_id(binary, symbol_file, root):
        found = False  # another layout's file perhaps (an older cache's): never this one's
    if shared or not binary.build_id:
        # Kept by build-id and layout (debuginfo-vN/), where LLDB never looks by itself:
        # every BOLT output of one input has its build-id, so a file LLDB found by it
        # would be any layout's. Given explicitly, at each sync.
        _add(debugger, target, made)
        return f"given unsplit's DWARF: {made}"
    alias = breakpad.cache_path(binary.build_id, root)  # where LLDB looks by itself
    if found and symbol_file == alias and filecmp.cmp(alias, made, False):
        return f"given unsplit's DWARF (LLDB found it in the cache): {made}"
    _add(debugger, target, made)
    if not (os.path.isfile(alias) and filecmp.cmp(alias, made, False)):
        tmp = f"{alias}.tmp{os.getpid()}"
        os.makedirs(os.path.dirname(alias), exist_ok=True)
        shutil.copyfile(made, tmp)
        os.replace(tmp, alias)  # for LLDB to find next time, before any stop
    return f"given unsplit's DWARF: {made}"


def _give(debugger: lldb.SBDebugger, target: lldb.SBTarget, module: lldb.SBModule, path: str,
          notes: list[str]) -> str:
    symbol_file = module.GetSymbolFileSpec().fullpath or ""
    root = breakpad.cache_dir()
    if not os.path.isfile(path):
        return "no file"
    found = symbol_file.startswith(root + os.sep)  # LLDB read it from the cache itself
    ours = symbol_file.startswith(debuginfo_dir() + os.sep)  # replaced (an LLDB of spans)
    if symbol_file and not found and not ours and \
            os.path.realpath(symbol_file) != os.path.realpath(path):
        return f"has a debug file ({symbol_file}): LLDB unwinds with its ranges"
    st = state_mod.for_debugger(debugger.GetID())
    index = st.session.index(path)
    if index.binary.has_dwarf:  # LLDB's view: its symbol file is this file, DWARF or not
        return _dwarf_status(debugger, module, index, notes)
    shared = not breakpad.alone_under_build_id(index.binary)  # a BOLT output's build-id
    if found and shared and _forget_by_build_id(index.binary, symbol_file, root):
        found = False  # another layout's file perhaps (an older cache's): never this one's
    companion = index.binary.dwarf_binary  # a separate debug file LLDB did not load
    if found and companion is not None:
        # LLDB searches our cache before /usr/lib/debug: a debug file installed since the
        # CFI was cached must win. (The setting symbols.enable-external-lookup off is the
        # other way to get here; then the DWARF is what the user asked LLDB not to read.)
        _add(debugger, target, companion.path)
        return f"has a debug file ({companion.path}): given to LLDB instead of the cached CFI"
    if found and breakpad.made_from(symbol_file, index.binary):  # no CFI decoded at all
        return "given (LLDB found it in the cache)"
    uuid = module.GetUUIDString() or ""
    kept = breakpad.kept_path(index.binary, uuid, root) if companion is None else None
    if kept is not None and breakpad.made_from(kept, index.binary):  # an earlier session's
        _add(debugger, target, kept)
        return f"given: {kept}"
    text = breakpad.for_index(index, uuid, breakpad_lines.max_code_bytes())
    if text is None:
        return "no moved fragments with CFI"
    # never in front of a debug file LLDB would otherwise find, nor under a shared build-id
    if companion is None and breakpad.alone_under_build_id(index.binary):
        breakpad.save(index, text, uuid, root)  # for LLDB to find next time
    if kept is not None:  # a path LLDB has read no other text from (one per file and UUID)
        breakpad.write(kept, text)
        out = kept
    else:
        out = breakpad.pinned(text, root)  # a path LLDB has not read another text from
    _add(debugger, target, out)
    return f"given: {out}"


def _forget_by_build_id(binary: Binary, symbol_file: str, root: str) -> bool:
    """Remove our cache's file at `binary`'s build-id path if LLDB read `symbol_file` from
    there (an older plugin's DWARF or CFI file of a BOLT output): it may be another layout's,
    and LLDB would find it again in every later session. Whether it was there."""
    build_id = binary.build_id
    if not build_id or symbol_file != breakpad.cache_path(build_id, root):
        return False
    try:
        os.remove(symbol_file)
    except FileNotFoundError:
        pass
    return True


def _moved_procedures(index: ModuleIndex) -> Iterator[str]:
    """The names of the procedures with moved code, as asked for: the probe usually needs the
    first (listing every moved fragment of a BOLTed libLLVM first costs seconds)."""
    seen: set[str] = set()
    for start in index.moved_starts():
        proc = index.procedure_at(start)
        if proc is not None and proc.name not in seen:
            seen.add(proc.name)
            yield proc.name


def _dwarf_status(debugger: lldb.SBDebugger, module: lldb.SBModule, index: ModuleIndex,
                  notes: list[str]) -> str:
    """What LLDB does with a module's own DWARF; the first module whose split functions LLDB
    cannot unwind (capabilities.split_function) gets a note, once per debugger."""
    found = capabilities.split_function(module, _moved_procedures(index))
    if found is None or found[1]:
        return "has DWARF: LLDB unwinds with its ranges"
    if int(debugger.GetID()) not in _DONE.span_noted:
        _DONE.span_noted.add(int(debugger.GetID()))
        notes.append(capabilities.split_functions_note(found[0]))
    return ("has DWARF that gives functions several ranges, which this LLDB unwinds as one "
            "span: its bt may end in any part but the lowest (`bb bt` shows every frame)")


def _add(debugger: lldb.SBDebugger, target: lldb.SBTarget, path: str) -> None:
    ok, message = _run_on(debugger, target, f'target symbols add "{path}"')
    if not ok:
        raise UnsplitError(message.strip().splitlines()[0] if message.strip() else "failed")


def _run_on(debugger: lldb.SBDebugger, target: lldb.SBTarget, command: str) -> tuple[bool, str]:
    """`command` with `target` selected (`target symbols add` acts on the selected one)."""
    selected = debugger.GetSelectedTarget()
    switch = selected.IsValid() and selected != target
    if switch:
        debugger.SetSelectedTarget(target)
    try:
        return _run(debugger, command)
    finally:
        if switch:
            debugger.SetSelectedTarget(selected)


def set_enabled(debugger: lldb.SBDebugger, target: lldb.SBTarget, flag: bool | None) -> str:
    """`bb exact-frames [on|off]`: give modules their CFI from now on (on), or stop (off);
    with no argument, the state and what each module got."""
    if flag is not None:
        _DONE.on = flag
        if flag:
            install(debugger)
    if _DONE.on and target.IsValid():
        sync(debugger, target, everything=True)  # the status says what each module got
    lines = [("exact frames on: LLDB unwinds moved fragments with their CFI (unsplit's debug "
              "file's .debug_frame, or a Breakpad symbol file, per split module without DWARF, "
              "cached in " + cache_root() + ")")
             if _DONE.on else
             ("exact frames off: modules loaded from now on keep LLDB's own unwinding (those "
              "already given their CFI keep it until the target is made again)")]
    mine = {m.GetFileSpec().fullpath for m in target.module_iter()} if target.IsValid() else set()
    lines += [f"  {os.path.basename(path)}: {what}"
              for (path, _), what in sorted(_DONE.seen.items()) if path in mine]
    return "\n".join(lines)


def set_debuginfo(debugger: lldb.SBDebugger, target: lldb.SBTarget, flag: bool | None) -> str:
    """`bb debuginfo [on|off|status]`: modules looked at from now on get unsplit's DWARF (on)
    or the CFI file alone (off)."""
    if flag is not None:
        _DONE.asked = flag
        if flag and _DONE.on and target.IsValid():
            _DONE.seen.clear()  # look at every module again, this time for the DWARF file
            _DONE.described.clear()
            sync(debugger, target, everything=True)
    given = [(os.path.basename(path), what.split(": ", 1)[1])
             for (path, _), what in sorted(_DONE.seen.items())
             if what.startswith(("given unsplit's DWARF", "given unsplit's names file"))]
    spans = _DONE.asked is None and _DONE.spans
    state = DebugInfoState(_DONE.debuginfo,
                           otherwise="unsplit's CFI file (exact frames), not its debug file" + (
                               " (this LLDB takes a function in several ranges as one span, "
                               "and unwinds moved code right with that file only: "
                               "`bb debuginfo on` gives the debug file anyway)" if spans else ""),
                           kept="files already given stay until the target is made again",
                           inactive=None if _DONE.on else "bb exact-frames is off")
    return status_text(state, given, turned_off=flag is False)


class CfiSymbolsHook:
    """The stop hook (lldb-dap): modules loaded since the last stop get their CFI symbol file
    before anyone looks at the stop's frames. Never raises into LLDB; never stops the stop."""

    def __init__(self, target: lldb.SBTarget, extra_args: Any,
                 internal_dict: dict[str, Any]) -> None:
        self.target = target

    def handle_stop(self, exe_ctx: lldb.SBExecutionContext, stream: Any) -> bool:
        target = exe_ctx.GetTarget()
        try:
            for note in sync(target.GetDebugger(), target):
                stream.Print(note + "\n")
        except Exception as e:  # the session always survives
            said = state_mod.for_debugger(target.GetDebugger().GetID()).reported
            report_internal(e, said, stream.Print)
        return True
