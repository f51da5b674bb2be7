"""What is said of a BOLTed module's pre-BOLT input (unsplit.index.bolt.prebolt): at load, once per
module, and by `bb input`. Without the input, BOLTed code has names and offsets but no line."""

from __future__ import annotations

import os

# Every way an input is found, in prebolt's search order (said with "not found").
WAYS = ("put the input beside it or in input/ there, add its path to UNSPLIT_INPUT_PATH, "
        "install it under /usr/lib/debug/.build-id, serve it by debuginfod (DEBUGINFOD_URLS), "
        "or give it with `bb input PATH --module {module}`")


def not_found(module: str, input_build_id: bytes | None) -> str:
    """The one line a split module gets at load when its input is nowhere."""
    name = os.path.basename(module)
    wanted = f" (build-id {input_build_id.hex()})" if input_build_id else ""
    return (f"unsplit: {name}: its pre-BOLT input{wanted} was not found, so its BOLTed code "
            f"has no source lines: {WAYS.format(module=name)}")


def given_at_load(module: str, path: str) -> str:
    return f"unsplit: {os.path.basename(module)}: pre-BOLT input {path} (bb input)"


def refused_at_load(module: str, reason: str) -> str:
    return f"unsplit: {os.path.basename(module)}: bb input refused: {reason}"


def pending(path: str, module: str | None, output_build_id: bytes | None) -> str:
    """`bb input PATH` for a module not loaded yet."""
    which = module if module is not None else (
        f"the module with build-id {output_build_id.hex() if output_build_id else '?'}")
    return f"{which} is not loaded: {path} will be its pre-BOLT input when it loads"


def refused_hint(reason: str) -> str:
    """`bb input PATH` refused for the executable: the file may be a library's input."""
    return f"{reason} (a library's input: bb input PATH --module NAME, also before it loads)"
