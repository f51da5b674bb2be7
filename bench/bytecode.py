"""The environment that runs the plugin from compiled bytecode, as an installed package runs:
its modules compiled once into a private prefix. A shell with PYTHONDONTWRITEBYTECODE=1 (this
workplace's set it) would otherwise compile every module the plugin imports on every run
(0.15-0.3 s per figure, measured with bench/libllvm.py)."""

from __future__ import annotations

import functools
import os
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = str(ROOT / ".venv" / "bin" / "python")


@functools.cache
def _compiled() -> tuple[tuple[str, str], ...]:
    prefix = Path(tempfile.gettempdir()) / f"unsplit-bench-pyc-{os.getuid()}"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(prefix)
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "plugin" / "unsplit"),
                    str(ROOT / "gdb"), str(ROOT / "lldb")], env=env,
                   check=True, stdout=subprocess.DEVNULL)
    return tuple(env.items())


def bytecode_env(**extra: str) -> dict[str, str]:
    """os.environ without PYTHONDONTWRITEBYTECODE, PYTHONPYCACHEPREFIX naming the compiled
    plugin (compiled on the first call), and `extra`."""
    return {**dict(_compiled()), **extra}


def compile_checkout(tree: Path, *adapters: str) -> None:
    """Another checkout's plugin (and its `adapters`' folders: "gdb", "lldb") compiled into the
    same private prefix as this checkout's, so that a before/after comparison runs both from
    bytecode."""
    subprocess.run([PY, "-m", "compileall", "-q", str(tree / "plugin" / "unsplit"),
                    *(str(tree / a) for a in adapters)], env=bytecode_env(), check=True,
                   stdout=subprocess.DEVNULL)
