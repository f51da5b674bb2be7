"""`bb break` in GDB: a group of ordinary GDB breakpoints, one per site the core resolves
(unsplit.debug.breakpoints), led by a head whose state (enable, condition, commands, delete)
every other follows; a group no loaded module has yet waits behind a placeholder ``catch load``
and gains sites as modules load. docs/architecture.md says why (GDB's Python cannot give one
breakpoint several addresses)."""

from __future__ import annotations

import os
import re
from array import array
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import gdb  # type: ignore[import-not-found, unused-ignore]
from unsplit.debug import breakpoints as policy
from unsplit.debug.breakpoints import BreakSpec, Site
from unsplit.elf.binary import Binary, FunctionSymbol
from unsplit.elf.derived import PerFile
from unsplit.errors import UnsplitError, UsageError
from unsplit.host import LoadedModule
from unsplit.index.inlines import inlined_only
from unsplit.render import breaks as break_text
from unsplit.render.breaks import BreakGroup, Placed
from unsplit.session import Session

from .host import GdbHost
from .report import report_internal

# What a group's head passes on to the rest of the group when the user changes it.
_MIRRORED = ("enabled", "silent", "thread", "task", "condition", "commands")

Key = tuple[str, int]  # (module path, file address)


@dataclass(eq=False, slots=True)
class Member:
    breakpoint: Any  # gdb.Breakpoint
    symbolic: bool  # set as *'SYMBOL'+OFFSET (GDB relocates it) rather than *ADDRESS
    address: int  # the runtime address it was set at
    # While its library is unloaded (between a program's exit and the next load), the
    # member is disabled, lest GDB try to insert it at `run`; this is the state to restore.
    parked: bool | None = None


@dataclass(eq=False, slots=True)
class Group:
    spec: BreakSpec
    text: str  # the location as the user wrote it, with its options
    head: Any  # gdb.Breakpoint: the first site's, or a `catch load` placeholder
    members: dict[Key, Member] = field(default_factory=dict)
    dropped: set[Key] = field(default_factory=set)  # deleted by the user: never made again
    placeholder: bool = False  # the head is a `catch load`, which GDB lists as a catchpoint
    told: set[str] = field(default_factory=set)  # modules said to have only inlined code of it
    # The head's own site where FILE:LINE's line moved away from it (a later module has the
    # line asked for): its location is disabled, its number still leads the group.
    resting: tuple[Key, Member] | None = None

    @property
    def number(self) -> int:
        return int(self.head.number)

    @property
    def kind(self) -> str:
        return "Catchpoint" if self.placeholder else "Breakpoint"


def _command_text(spec: BreakSpec) -> str:
    """The location and options, without what a regular expression would take as syntax."""
    return re.sub(r"[()\[\]{}\\|*?^$'\"]", "", spec.option_text())


def _new_breakpoint(location: str, command: str = "break") -> Any:
    """One user breakpoint at `location` (a linespec), made without GDB's chatter: we say
    where every location went in one message."""
    before = {b.number for b in gdb.breakpoints()}
    gdb.execute(f"{command} {location}", to_string=True)
    made = [b for b in gdb.breakpoints() if b.number not in before]
    if len(made) != 1:
        raise gdb.error(f"break {location} made {len(made)} breakpoints")
    return made[0]


def _symbol_for(session: Session, module: LoadedModule, address: int) -> tuple[str, int] | None:
    """A symbol of `module` and an offset that name file address `address`."""
    try:
        index = session.index(module.path)
    except UnsplitError:
        return None
    frag = index.fragment_at(address)
    found = None
    if frag is not None and frag.symbol:
        found = frag.symbol, address - frag.start
    else:
        functions, starts = _BY_ADDRESS(index.binary)
        i = bisect_right(starts, address) - 1
        if i >= 0 and address < functions[i].value + max(functions[i].size, 1):
            found = functions[i].name, address - functions[i].value
    # A name several units' static functions share: GDB re-sets `*'name'+off` (at `run`) to
    # whichever of them it finds first, so such a location is kept by address.
    if found is None or _NAME_COUNTS(index.binary)[found[0]] != 1:
        return None
    return found


# How many function symbols of a binary bear each name, and the symbols in address order, made
# once per file (a `bb break` may ask for hundreds of sites of a binary with 100k functions).
_NAME_COUNTS = PerFile(lambda binary: Counter(f.name for f in binary.functions))


def _by_address(binary: Binary) -> tuple[list[FunctionSymbol], array[int]]:
    functions = sorted(binary.functions, key=lambda f: f.value)
    return functions, array("Q", (f.value for f in functions))


_BY_ADDRESS = PerFile(_by_address)


def _is_executable(module: LoadedModule) -> bool:
    space = gdb.current_progspace()
    exe = None if space is None else space.filename
    return exe is not None and os.path.realpath(exe) == os.path.realpath(module.path)


def _set_at(session: Session, module: LoadedModule, site: Site) -> Member:
    runtime = module.bias + site.file_address
    # Only in the executable: in a library GDB re-sets `*'sym'+off` when the library is gone
    # (the program exited) and, failing with "No symbol", disables the breakpoint for good.
    named = _symbol_for(session, module, site.file_address) if _is_executable(module) else None
    if named is not None and "'" not in named[0]:
        name, offset = named
        bp = _new_breakpoint(f"*'{name}'+{offset:#x}")
        # Another module (or a second local symbol) may have the same name: keep the
        # symbolic form only when GDB found exactly our address.
        if [int(loc.address) for loc in bp.locations] == [runtime]:
            return Member(bp, True, runtime)
        bp.delete()
    return Member(_new_breakpoint(f"*{runtime:#x}"), False, runtime)


def _copy_settings(group: Group, target: Member) -> None:
    """Give `target` the settings of its group's head; says what could not be copied."""
    head = group.head
    head_member = next((m for m in group.members.values() if m.breakpoint is head), None)
    bp = target.breakpoint
    for attr in _MIRRORED:
        try:
            value = getattr(head, attr)
            if attr == "enabled":
                if head_member is not None and head_member.parked is not None:
                    value = head_member.parked
                if target.parked is not None:
                    target.parked = value
                    continue
            if getattr(bp, attr) != value:
                setattr(bp, attr, value)
        except (gdb.error, RuntimeError, AttributeError, TypeError) as e:
            gdb.write(f"unsplit: breakpoint {bp.number}: cannot copy {attr} of breakpoint "
                      f"{head.number}: {e}\n", gdb.STDERR)


class Breakpoints:
    """Every `bb break` group of this GDB, kept in step with module loads and user edits."""

    def __init__(self, session: Session, host: GdbHost) -> None:
        self.session = session
        self.host = host
        self.groups: list[Group] = []
        self._mirroring = False
        self._doomed: list[Any] = []  # members of deleted groups, deleted at the next prompt

    # -- bb break -------------------------------------------------------------------------

    def create(self, spec: BreakSpec, sites: list[tuple[LoadedModule, Site]]) -> str:
        self.flush()
        text = _command_text(spec)
        if not sites:
            # Not a pending breakpoint: GDB re-parses those at every load and, once they have
            # a condition, disables them for failing to resolve. A catchpoint on a library name
            # no library has never stops, re-parses nothing, and `info breakpoints`, `disable`,
            # `delete` and `condition -force` handle it.
            head = _new_breakpoint(f"^unsplit: bb break {text}$", "catch load")
            self.groups.append(Group(spec, text, head, placeholder=True))
            if spec.condition:  # checked where the library's locations are made
                gdb.execute(f"condition -force {head.number} {spec.condition}", to_string=True)
            return break_text.gdb_pending(head.number, spec.text)
        group: Group | None = None
        for module, site in sites:
            member = _set_at(self.session, module, site)
            if group is None:
                group = Group(spec, text, member.breakpoint)
                self.groups.append(group)
            group.members[(module.path, site.file_address)] = member
        assert group is not None
        if spec.condition:
            self._condition(group, spec.condition)
        module, site = sites[0]
        loc = break_text.locate(self.session, module.path, site.file_address, module.bias)
        return break_text.gdb_created(group.number, spec.text, module.bias + site.file_address,
                                      len(group.members), loc)

    def _condition(self, group: Group, expression: str) -> None:
        """Every location gets the condition; one GDB cannot parse undoes the whole group."""
        try:
            for member in group.members.values():
                member.breakpoint.condition = expression
        except (gdb.error, RuntimeError) as e:
            for member in group.members.values():
                if member.breakpoint.is_valid():
                    member.breakpoint.delete()  # our deletion handler forgets the group
            if group in self.groups:
                self.groups.remove(group)
            raise UsageError(f"bb break: condition {expression!r}: {e}; nothing set") from None

    def listing(self) -> list[BreakGroup]:
        """Every group, for `bb break --list`: a location is named by its GDB number."""
        out = []
        for group in self.groups:
            if not group.head.is_valid():
                continue
            placed = []
            for (path, file_address), member in group.members.items():
                bp = member.breakpoint
                if bp.is_valid():
                    # GDB relocates a symbolic member itself (a PIE at `run`).
                    runtime = [int(loc.address) for loc in bp.locations] or [member.address]
                    placed.append(Placed(str(bp.number), path, file_address,
                                         runtime[0] - file_address, bool(bp.enabled)))
            out.append(BreakGroup(group.number, group.spec.option_text(), tuple(placed),
                                  group.kind))
        return out

    # -- module loads ---------------------------------------------------------------------

    def on_new_objfile(self, event: Any) -> None:
        try:
            if self.groups:
                self._refresh(getattr(event.new_objfile, "filename", None))
        except Exception as e:
            report_internal(e, once=True)

    def _refresh(self, loaded: str | None) -> None:
        """Add the sites a newly loaded module has; move address-only members whose module
        moved (symbolic ones GDB moves itself)."""
        modules = self.host.modules()
        for group in list(self.groups):
            if not group.head.is_valid():
                continue
            added: list[tuple[LoadedModule, Member]] = []
            # FILE:LINE's line is chosen over every module, the new one too (as GDB's own).
            spec, moved = group.spec, False
            if spec.file is not None:
                spec = policy.settle(spec, (i for m in modules
                                            if (i := self.session.readable_index(m.path))))
                moved, group.spec = spec.settled_line != group.spec.settled_line, spec
            if moved:  # every module's sites are another line's now
                self._keep_only(group, {m.path for m in modules},
                                {(m.path, site.file_address) for m in modules
                                 for site in self._sites(m, spec)})
            for module in modules:
                if loaded is not None and module.path != loaded and not moved:
                    continue
                try:
                    index = self.session.index(module.path)
                    sites = policy.resolve(index, spec)
                except UnsplitError:
                    continue
                if not sites and not group.members:
                    self._inlined_only(group, index)
                for site in sites:
                    key = (module.path, site.file_address)
                    member = group.members.get(key)
                    if key in group.dropped:
                        continue
                    if group.resting is not None and group.resting[0] == key:
                        member = group.members[key] = group.resting[1]
                        group.resting = None
                        self._set_location_enabled(member.breakpoint, True)
                    runtime = module.bias + site.file_address
                    if member is not None and (member.symbolic or member.address == runtime):
                        if member.parked is not None:
                            self._set_enabled(member.breakpoint, member.parked)
                            member.parked = None
                        continue
                    if member is not None:
                        del group.members[key]  # not the user's deletion: not dropped
                        if member.breakpoint.is_valid():
                            member.breakpoint.delete()
                    new = _set_at(self.session, module, site)
                    group.members[key] = new
                    self._mirror(group, [new])
                    if member is None:
                        added.append((module, new))
            if added:
                gdb.write(break_text.gdb_resolved(
                    group.kind, group.number, group.text,
                    [int(m.breakpoint.number) for _, m in added], added[0][0].path) + "\n")

    def _sites(self, module: LoadedModule, spec: BreakSpec) -> list[Site]:
        try:
            return policy.resolve(self.session.index(module.path), spec)
        except UnsplitError:
            return []

    def _keep_only(self, group: Group, loaded: set[str], sites: set[Key]) -> None:
        """Remove the group's locations in `loaded` modules at other sites than `sites` (not
        the user's deletion: not dropped); the head, whose number names the group, only has its
        location disabled. A module not loaded (parked members, a `run` again) keeps its own."""
        for key, member in list(group.members.items()):
            if key in sites or key[0] not in loaded:
                continue
            del group.members[key]
            if member.breakpoint is group.head:
                group.resting = key, member
                self._set_location_enabled(member.breakpoint, False)
            elif member.breakpoint.is_valid():
                member.breakpoint.delete()

    def _set_location_enabled(self, bp: Any, flag: bool) -> None:
        self._mirroring = True
        try:
            for location in bp.locations if bp.is_valid() else ():
                location.enabled = flag
        finally:
            self._mirroring = False

    def _inlined_only(self, group: Group, index: Any) -> None:
        """Say once per module when a pending `bb break NAME` names what the module has only
        inlined: no load will ever resolve it there."""
        spec, path = group.spec, index.binary.path
        if not group.placeholder or path in group.told or spec.procedure is None \
                or spec.offset is not None or spec.block is not None:
            return
        group.told.add(path)
        declared = inlined_only(index, spec.procedure)
        if declared is not None:
            gdb.write(break_text.gdb_inlined_only(group.number, group.text, spec.procedure,
                                                  path, declared) + "\n")

    # -- user edits -----------------------------------------------------------------------

    def _group_of(self, bp: Any) -> tuple[Group, Key | None] | None:
        """The group `bp` belongs to and its key there (None for a pending head)."""
        for group in self.groups:
            for key, member in group.members.items():
                if member.breakpoint is bp:
                    return group, key
            if group.head is bp:
                return group, None
        return None

    def on_modified(self, bp: Any) -> None:
        if self._mirroring:
            return
        try:
            found = self._group_of(bp)
            if found is None or found[0].head is not bp:
                return
            group = found[0]
            self._mirror(group, [m for m in group.members.values() if m.breakpoint is not bp])
        except Exception as e:
            report_internal(e, once=True)

    def _mirror(self, group: Group, targets: list[Member]) -> None:
        self._mirroring = True
        try:
            for member in targets:
                if member.breakpoint.is_valid():
                    _copy_settings(group, member)
        finally:
            self._mirroring = False

    def _set_enabled(self, bp: Any, flag: bool) -> None:
        """Enable or disable one breakpoint without passing it on to its group."""
        self._mirroring = True
        try:
            if bp.is_valid() and bp.enabled != flag:
                bp.enabled = flag
        finally:
            self._mirroring = False

    def on_free_objfile(self, event: Any) -> None:
        """A library is going (the program exited, `run` starts again): park its members."""
        try:
            path = getattr(event.objfile, "filename", None)
            if not path:
                return
            gone = os.path.realpath(path)
            for group in self.groups:
                for (module, _), member in group.members.items():
                    if member.symbolic or member.parked is not None \
                            or os.path.realpath(module) != gone \
                            or not member.breakpoint.is_valid():
                        continue
                    member.parked = bool(member.breakpoint.enabled)
                    self._set_enabled(member.breakpoint, False)
        except Exception as e:
            report_internal(e, once=True)

    def on_deleted(self, bp: Any) -> None:
        try:
            found = self._group_of(bp)
            if found is None:
                return
            group, key = found
            if group.head is not bp:
                if key is not None:
                    del group.members[key]
                    group.dropped.add(key)
                return
            self.groups.remove(group)
            # `delete` (all) walks GDB's breakpoint list while it notifies us, so deleting the
            # others now would free what it walks (GDB crashes); a posted event left pending at
            # exit crashes it too. Disable them now, which frees nothing, and delete them at
            # the next prompt (`flush`).
            for member in group.members.values():
                if member.breakpoint is not bp and member.breakpoint.is_valid():
                    self._set_enabled(member.breakpoint, False)
                    self._doomed.append(member.breakpoint)
        except Exception as e:
            report_internal(e, once=True)

    def flush(self, _: object = None) -> None:
        """Delete what a deleted head left behind (gdb.events.before_prompt)."""
        doomed, self._doomed = self._doomed, []
        for b in doomed:
            try:
                if b.is_valid():
                    b.delete()
            except Exception as e:
                report_internal(e, once=True)
