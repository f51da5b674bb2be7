"""Shared by unit and end-to-end tests: the fixture zoo, built once and cached, and the
post-mortem fixtures."""

from __future__ import annotations

import builtins
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from .bolted_threads import bolted_threads as build_bolted_threads
from .postmortem import postmortem

# A Python error type named in a text meant for a user: a bug of ours dressed as a warning or an
# error (no user-facing text names one; what pyelftools raises is said in its own words).
PYTHON_ERROR = re.compile(r"\b(?:" + "|".join(sorted(
    name for name, value in vars(builtins).items() if isinstance(value, type)
    and issubclass(value, Exception) and name.endswith("Error"))) + r"|struct\.error)\b")

ROOT = Path(__file__).resolve().parents[1]

# The CFI symbol files the LLDB adapter writes (unsplit.debug.breakpad.cache_dir) go to a directory
# of this run, never to the user's ~/.cache; a test that needs an empty one sets its own.
os.environ.setdefault("UNSPLIT_CACHE", tempfile.mkdtemp(prefix="unsplit-test-cache-"))


@pytest.fixture(scope="session")
def zoo() -> dict[str, Any]:
    """fixtures/build/index.json after building whatever is missing (a no-op when cached)."""
    subprocess.run([sys.executable, str(ROOT / "fixtures" / "build.py")], cwd=ROOT, check=True,
                   capture_output=True)
    index = json.loads((ROOT / "fixtures" / "build" / "index.json").read_text())
    variants: dict[str, Any] = index["variants"]
    return variants


def facts(zoo: dict[str, Any], variant: str, program: str) -> dict[str, Any]:
    if variant not in zoo or program not in zoo[variant]["programs"]:
        pytest.fail(f"{variant}/{program} is not in the zoo (fixtures/build.py makes it)")
    entry = zoo[variant]["programs"][program]
    data: dict[str, Any] = json.loads((ROOT / entry["facts"]).read_text())
    data["_entry"] = entry
    return data


# The post-mortem fixtures of tests/postmortem.py (cores of programs built in the session),
# for the debuggers' tests and the CLI's alike.

@pytest.fixture(scope="module")
def mt(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return postmortem("mt", tmp_path_factory)


@pytest.fixture(scope="module")
def pie(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return postmortem("pie", tmp_path_factory)


@pytest.fixture(scope="module")
def bolted_threads(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """tests/bolted_threads.py: a BOLTed multi-threaded program whose crash is in an inlined
    callee in moved code, its input, its -dbg twin and a core."""
    return build_bolted_threads(tmp_path_factory)
