"""unsplit's GDB adapter (GDB 13+): the ``bb`` commands, the ``unsplit`` frame filter, the stop
printer, breakpoints, steps, debug files and the unwinder (docs/architecture.md lists the
modules). :func:`register` is idempotent: the state lives in this module, imported once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gdb  # type: ignore[import-not-found, unused-ignore]
from unsplit.index.names.demangle import GNU
from unsplit.session import Session

from . import capabilities, commands, frame_hooks
from .debuginfo import DebugInfoLoader, install_hooks, register_missing_debug_handler
from .host import GdbHost
from .locator import Locator
from .step_report import StepReporter
from .stop import StopPrinter

if TYPE_CHECKING:
    from unsplit.debug.breakpoints import BreakSpec, Site
    from unsplit.host import LoadedModule
    from unsplit.render.breaks import BreakGroup

    from .breakpoints import Breakpoints


class LazyBreakpoints:
    """The `bb break` groups (breakpoints.Breakpoints), made by the first `bb break`: a
    session that sets none never imports them. Their event handlers are connected at load, in
    their place among the others, and do nothing while there are none."""

    def __init__(self, session: Session, host: GdbHost) -> None:
        self._session = session
        self._host = host
        self.made: Breakpoints | None = None

    def _made(self) -> Breakpoints:
        if self.made is None:
            from .breakpoints import Breakpoints

            self.made = Breakpoints(self._session, self._host)
        return self.made

    def create(self, spec: BreakSpec, sites: list[tuple[LoadedModule, Site]]) -> str:
        return self._made().create(spec, sites)

    def listing(self) -> list[BreakGroup]:
        return [] if self.made is None else self.made.listing()

    def on_new_objfile(self, event: Any) -> None:
        if self.made is not None:
            self.made.on_new_objfile(event)

    def on_free_objfile(self, event: Any) -> None:
        if self.made is not None:
            self.made.on_free_objfile(event)

    def on_modified(self, bp: Any) -> None:
        if self.made is not None:
            self.made.on_modified(bp)

    def on_deleted(self, bp: Any) -> None:
        if self.made is not None:
            self.made.on_deleted(bp)

    def flush(self, _: object = None) -> None:
        if self.made is not None:
            self.made.flush()


class Plugin:
    """What register() made, kept for the session (the hooks reach it through plugin())."""

    __slots__ = (
        "breakpoints",
        "commands",
        "debuginfo",
        "host",
        "locator",
        "session",
        "stop_printer",
    )

    def __init__(self, session: Session, host: GdbHost, locator: Locator,
                 stop_printer: StopPrinter, commands: list[Any], breakpoints: LazyBreakpoints,
                 debuginfo: DebugInfoLoader) -> None:
        self.session = session
        self.host = host
        self.locator = locator
        self.stop_printer = stop_printer
        self.commands = commands
        self.breakpoints = breakpoints
        self.debuginfo = debuginfo


_plugin: Plugin | None = None


def demangling() -> str | None:
    """GDB's `print demangle` (on: names as libiberty demangles them, GDB's own demangler)."""
    try:
        return GNU if gdb.parameter("print demangle") else None
    except (gdb.error, RuntimeError):
        return GNU


def _set_frame_naming(flag: bool) -> None:
    if capabilities.has_frame_filters(gdb):
        from . import frames

        frames.set_enabled(flag)
    if _plugin is not None:
        _plugin.stop_printer.enabled = flag


def register() -> Plugin:
    """Install everything once; later calls return the existing plugin."""
    global _plugin
    if _plugin is not None:
        return _plugin
    session = Session(demangling)
    host = GdbHost()
    host.naming_switch = _set_frame_naming
    locator = Locator(session, host)
    host.step_reporter = StepReporter(locator)
    breaks = LazyBreakpoints(session, host)
    host.breakpoint_maker = breaks.create
    host.breakpoint_lister = breaks.listing
    loader = DebugInfoLoader(session.indexes, session.namer.describe)
    stop_printer = StopPrinter(locator, loader.after_core)
    plugin = Plugin(session, host, locator, stop_printer, commands.register(session, host),
                    breaks, loader)
    for note in capabilities.missing_notes(gdb):
        print(note)
    if capabilities.has_frame_filters(gdb):  # frames.py subclasses gdb.FrameDecorator
        from . import frames

        frames.install(locator)
    if capabilities.has_unwinders(gdb):  # unwinder.py subclasses gdb.unwinder.Unwinder
        from . import unwinder

        unwinder.install(session, host)
        host.exact_switch = unwinder.set_enabled
    for registry in ("new_objfile", "clear_objfiles", "free_objfile", "exited"):
        events = getattr(gdb.events, registry, None)  # free_objfile is GDB 13+
        if events is not None:
            events.connect(host.invalidate)
    gdb.events.new_objfile.connect(breaks.on_new_objfile)  # after host.invalidate
    gdb.events.new_objfile.connect(lambda event: _say_input(session, event.new_objfile))
    for objfile in gdb.objfiles():
        _say_input(session, objfile)
    host.debuginfo_switch = loader.set_enabled
    register_missing_debug_handler(loader)  # GDB >= 15: asked before "No debugging symbols"
    gdb.events.new_objfile.connect(loader.on_new_objfile)  # older GDBs, and files loaded before
    gdb.events.new_thread.connect(loader.on_new_thread)  # a live process waits for its files
    gdb.events.stop.connect(loader.poll)
    gdb.events.before_prompt.connect(loader.poll)
    if loader.enabled:
        for objfile in gdb.objfiles():  # the program may be loaded before the plugin
            loader.load(objfile)
    if hasattr(gdb.events, "free_objfile"):
        gdb.events.free_objfile.connect(breaks.on_free_objfile)
    gdb.events.breakpoint_modified.connect(breaks.on_modified)
    gdb.events.breakpoint_deleted.connect(breaks.on_deleted)
    gdb.events.stop.connect(stop_printer.on_stop)
    gdb.events.before_prompt.connect(stop_printer.on_prompt)
    gdb.events.before_prompt.connect(breaks.flush)
    for warning in [*frame_hooks.install(), *install_hooks()]:
        gdb.write(warning + "\n", gdb.STDERR)
    _plugin = plugin
    return plugin


def _say_input(session: Session, objfile: Any) -> None:
    """A BOLTed module without its pre-BOLT input (or with one `bb input` named ahead) is
    said once, as it loads (Session.input_notes)."""
    name = getattr(objfile, "filename", None)
    if name and objfile.owner is None:
        for line in session.input_notes(name):
            gdb.write(line + "\n")


def after_frame_command() -> None:
    """What frame_hooks' post-hooks run (StopPrinter.on_frame_command never raises: a hook
    that fails would stop the user's scripts)."""
    if _plugin is not None:
        _plugin.stop_printer.on_frame_command()


def before_command(wait: bool) -> None:
    """What the pre-hooks of debuginfo.HOOKED_COMMANDS run: a debug file made meanwhile is
    loaded, and with `wait` one being written is waited for (neither ever raises)."""
    if _plugin is not None:
        if wait:
            _plugin.debuginfo.wait()
        else:
            _plugin.debuginfo.poll(hook=True)


def plugin() -> Plugin | None:
    return _plugin
