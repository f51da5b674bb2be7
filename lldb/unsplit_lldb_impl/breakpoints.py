"""`bb break` in LLDB: one native breakpoint whose locations a scripted resolver
(``breakpoint set -P unsplit_lldb.SplitResolver``) asks of the core
(unsplit.debug.breakpoints.resolve), module by module as LLDB searches; everything else
(list, disable, conditions, pending, load addresses) is LLDB's own."""

from __future__ import annotations

import json
import os
import re
from typing import Any

import lldb
from unsplit.debug import breakpoints as core
from unsplit.debug.breakpoints import BreakSpec, Site
from unsplit.errors import UnsplitError, UsageError
from unsplit.host import LoadedModule
from unsplit.render import breaks as break_text
from unsplit.render.breaks import BreakGroup, Placed
from unsplit.session import Session

from . import state as state_mod
from .report import report_internal

CLASS_NAME = "unsplit_lldb.SplitResolver"
_TRUE = ("1", "true", "yes", "on")


def _arg(extra_args: Any, key: str) -> str:
    value = extra_args.GetValueForKey(key) if extra_args is not None else None
    if value is None or not value.IsValid():
        return ""
    if value.GetType() == lldb.eStructuredDataTypeString:
        return str(value.GetStringValue(4096) or "")
    # `-k all_fragments -v 1` arrives as the integer 1 (LLDB reads values as JSON scalars).
    stream = lldb.SBStream()
    value.GetAsJSON(stream)
    return str(stream.GetData() or "")


class SplitResolver:
    """Scripted breakpoint resolver: the sites of one `bb break` location in every module.

    extra_args: ``location`` (PROC, PROC+OFFSET, PROC:%ID, FILE:LINE) and ``all_fragments``
    ("1" to stop at the start of every fragment of PROC).
    """

    def __init__(self, bkpt: Any, extra_args: Any, internal_dict: Any = None) -> None:
        self.bkpt = bkpt
        self.location = _arg(extra_args, "location")
        self.all_fragments = _arg(extra_args, "all_fragments").lower() in _TRUE
        self.spec: BreakSpec | None = None
        self.error = ""
        self.line: int | None = None  # FILE:LINE's line as last settled over every module
        self.resting: set[int] = set()  # ids of the locations disabled for another line's
        try:
            self.spec = core.parse(self.location, self.all_fragments)
        except UnsplitError as e:
            self.error = str(e)  # shown by `breakpoint list`: LLDB has no other channel here
        except Exception as e:  # a bug: said at once, and kept for `breakpoint list`
            self.error = self._report(e)

    def __get_depth__(self) -> int:
        return int(lldb.eSearchDepthModule)

    def get_short_help(self) -> str:
        text = f"unsplit: bb break {self.location}"
        if self.all_fragments:
            text += " --all-fragments"
        return text + (f" ({self.error})" if self.error else "")

    def __callback__(self, sym_ctx: Any) -> None:
        # Never raise: LLDB would print a traceback for every module it searches.
        try:
            self._resolve(sym_ctx.GetModule())
        except Exception as e:  # a bug: said at once, and kept for `breakpoint list`
            self.error = self._report(e)

    def _report(self, e: Exception) -> str:
        """Say the bug `e` once per debugger session (LLDB searches every module)."""
        debugger_id = self.bkpt.GetTarget().GetDebugger().GetID()
        return report_internal(e, state_mod.for_debugger(debugger_id).reported)

    def _resolve(self, module: lldb.SBModule) -> None:
        if self.spec is None or not module.IsValid():
            return
        path = module.GetFileSpec().fullpath
        if not path or not os.path.exists(path):
            return  # [vdso] and friends: no file to read
        target = self.bkpt.GetTarget()
        session = state_mod.for_debugger(target.GetDebugger().GetID()).session
        spec = self.spec
        if spec.file is not None:  # FILE:LINE's line is chosen over every module, as GDB's
            paths = [m.GetFileSpec().fullpath or "" for m in target.module_iter()]
            spec = core.settle(spec, (i for p in paths if (i := session.readable_index(p))))
            if self.line is not None and spec.settled_line != self.line:
                self._keep_only(session, spec)
            self.line = spec.settled_line
        try:
            sites = core.resolve(session.index(path), spec)
        except UnsplitError:
            return  # a module without what this spec needs (no bb map, unreadable file)
        seen: set[int] = set()
        for site in sites:
            if site.file_address in seen:
                continue
            seen.add(site.file_address)
            address = module.ResolveFileAddress(site.file_address)
            if address.IsValid():
                self.bkpt.AddLocation(address)
                self._wake(address)

    def _keep_only(self, session: Session, spec: BreakSpec) -> None:
        """The line moved (a module loaded now has the line asked for, as GDB re-sets its
        own `break`): disable the locations at the old line's sites. LLDB removes no location
        a resolver added; a location resting so is enabled again if the line comes back."""
        for i in range(self.bkpt.GetNumLocations()):
            location = self.bkpt.GetLocationAtIndex(i)
            address = location.GetAddress()
            path = address.GetModule().GetFileSpec().fullpath
            try:
                sites = core.resolve(session.index(path), spec) if path else []
            except UnsplitError:
                sites = []
            if location.IsEnabled() and int(address.GetFileAddress()) not in {
                    site.file_address for site in sites}:
                location.SetEnabled(False)
                self.resting.add(int(location.GetID()))

    def _wake(self, address: lldb.SBAddress) -> None:
        location = self.bkpt.FindLocationByAddress(address.GetLoadAddress(self.bkpt.GetTarget())) \
            if self.resting else None
        if location is not None and location.IsValid() and location.GetID() in self.resting:
            self.resting.discard(int(location.GetID()))
            location.SetEnabled(True)


def create(target: lldb.SBTarget, spec: BreakSpec, sites: list[tuple[LoadedModule, Site]],
           session: Session) -> str:
    """Make the breakpoint; returns what `breakpoint set` says (`Breakpoint 1: 2 locations.`,
    or where its one location is, named by the procedure as written)."""
    if not target.IsValid():
        raise UsageError("bb break: no target")
    args = lldb.SBStructuredData()
    # The keys a user gives `breakpoint set -P unsplit_lldb.SplitResolver -k KEY -v VALUE`.
    error = args.SetFromJSON(json.dumps({"location": spec.text,
                                         "all_fragments": "1" if spec.all_fragments else "0"}))
    if not error.Success():
        raise UsageError(f"bb break: {error.GetCString()}")
    bkpt = target.BreakpointCreateFromScript(CLASS_NAME, args, lldb.SBFileSpecList(),
                                             lldb.SBFileSpecList(), False)
    if not bkpt.IsValid():
        raise UsageError(f"bb break: LLDB did not create a breakpoint for {spec.text}")
    if spec.condition:
        bkpt.SetCondition(spec.condition)  # LLDB checks it at each stop, as `-c` does
    count = int(bkpt.GetNumLocations())
    if count != 1 or not sites:
        return break_text.lldb_created(bkpt.GetID(), count, 0, None)
    mod, site = sites[0]
    loc = break_text.locate(session, mod.path, site.file_address, mod.bias)
    return break_text.lldb_created(bkpt.GetID(), 1, _shown_address(bkpt.GetLocationAtIndex(0)),
                                   loc, session.demangling())


def _shown_address(location: Any) -> int:
    """A location's address as `breakpoint set` shows it: loaded, else the file address."""
    load = int(location.GetLoadAddress())
    if load != lldb.LLDB_INVALID_ADDRESS:
        return load
    return int(location.GetAddress().GetFileAddress())


_OURS = re.compile(r"^SBBreakpoint: id = \d+, unsplit: bb break (?P<text>.+?)(?: \(.*\))?$")


def listing(target: lldb.SBTarget) -> list[BreakGroup]:
    """Every breakpoint of `target` that SplitResolver resolves (`bb break`, or `breakpoint set
    -P unsplit_lldb.SplitResolver`), known by the short help it gives LLDB's description."""
    out = []
    for bkpt in target.breakpoint_iter():
        stream = lldb.SBStream()
        bkpt.GetDescription(stream, False)
        m = _OURS.match(str(stream.GetData() or "").strip())
        if m is None:
            continue
        placed = []
        for i in range(bkpt.GetNumLocations()):
            location = bkpt.GetLocationAtIndex(i)
            address = location.GetAddress()
            path = address.GetModule().GetFileSpec().fullpath
            if not path:
                continue
            file_address = int(address.GetFileAddress())
            load = int(location.GetLoadAddress())
            bias = load - file_address if load != lldb.LLDB_INVALID_ADDRESS else 0
            placed.append(Placed(f"{bkpt.GetID()}.{location.GetID()}", path, file_address, bias,
                                 bool(bkpt.IsEnabled() and location.IsEnabled())))
        out.append(BreakGroup(int(bkpt.GetID()), m["text"], tuple(placed)))
    return out
