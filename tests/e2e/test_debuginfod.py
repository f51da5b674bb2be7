"""The fleet recipe (issue 16 item 4): a release pipeline publishes `unsplit debuginfo
--build-id-dir DIR` of its BOLTed binaries; a real elfutils `debuginfod -F DIR` serves them; PLAIN
gdb (no plugin) on a machine that has only the binary and a core names every frame of the crash
in moved code by its procedure, with the true line.

Oracles: the procedure chain gdb_probe.py recorded when the zoo was built (facts `crash`) and the
lines of the source's `BB:` markers; never unsplit's output."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, facts
from ..variants import DEBUG_FILE
from .debuginfod_server import debuginfod

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed"),
]

CHAIN = [("transfer", "crash site"), ("run", "run cold call"), ("main", "main cold call")]
PLUGIN = str(ROOT / "plugin")  # `python -m unsplit` of this checkout (no install needed)


def _plain_gdb_bt(binary: Path, core: Path, url: str | None, cache: Path) -> str:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cache), "DEBUGINFOD_CACHE_PATH": str(cache)}
    if url:
        env["DEBUGINFOD_URLS"] = url
    state = "on" if url else "off"
    out = subprocess.run(["gdb", "-nx", "-batch", "-iex", f"set debuginfod enabled {state}",
                          "-ex", "bt", str(binary), str(core)],
                         capture_output=True, text=True, timeout=120, env=env)
    return out.stdout + out.stderr


@pytest.mark.parametrize("variant", DEBUG_FILE)
def test_plain_gdb_names_bolted_core_frames_through_debuginfod(zoo: dict[str, Any],
                                                               variant: str,
                                                               tmp_path: Path) -> None:
    f = facts(zoo, variant, "crash")
    assert not f["has_debug_info"]
    binary, core = ROOT / f["binary"], ROOT / f["crash"]["core"]
    tree = tmp_path / "published"
    subprocess.run([sys.executable, "-m", "unsplit", "debuginfo", str(binary),
                    "--build-id-dir", str(tree)], check=True, capture_output=True, text=True,
                   env={"UNSPLIT_CACHE": str(tmp_path / "unsplit-cache"), "PATH": "/usr/bin",
                        "PYTHONPATH": PLUGIN})
    build_id = f["build_id"].removeprefix("0x")
    assert (tree / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug").is_file()

    before = _plain_gdb_bt(binary, core, None, tmp_path / "cache0")
    assert re.search(r"^#0 .* in transfer\.cold", before, re.M), before  # what gdb says alone

    markers = f["markers"]["crash.c"]
    with debuginfod(tree, tmp_path, [(build_id, "debuginfo")]) as url:
        after = _plain_gdb_bt(binary, core, url, tmp_path / "cache1")
    bt = after[after.rindex("#0 "):]  # GDB shows frame 0 once when the core loads, then the bt
    frames = re.findall(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+) \(.*?\) at (\S+):(\d+)$", bt,
                        re.M)
    assert [(int(n), name) for n, name, _, _ in frames[:3]] == \
        [(level, p) for level, (p, _) in enumerate(CHAIN)], after
    for (_, _, path, line), (_, marker) in zip(frames, CHAIN, strict=False):
        assert Path(path).name == "crash.c" and Path(path).is_file(), after
        assert int(line) == markers[marker], after
    assert ".cold" not in after


def test_plugin_fetches_the_pre_bolt_input_from_debuginfod(zoo: dict[str, Any], tmp_path: Path,
                                                           gdb: Any) -> None:
    """A BOLTed binary without DWARF, alone in its directory: its lines come from the pre-BOLT
    input's DWARF, which only a debuginfod server has (published under the input's own
    build-id, BOLT's output build-id with the last bit flipped)."""
    f = facts(zoo, "bolt-all", "crash")
    lonely = tmp_path / "deploy" / "crash"
    lonely.parent.mkdir()
    shutil.copy2(ROOT / f["binary"], lonely)
    published = tmp_path / "published"
    published.mkdir()
    shutil.copy2(ROOT / f["input"], published / "crash")
    in_id = f["input_build_id"].removeprefix("0x")
    assert in_id[:-1] == f["build_id"].removeprefix("0x")[:-1]
    pc, site = f["crash"]["pc"], f["markers"]["crash.c"]["crash site"]
    env = {"PATH": "/usr/bin:/bin", "UNSPLIT_CACHE": str(tmp_path / "unsplit-cache"),
           "HOME": str(tmp_path), "DEBUGINFOD_CACHE_PATH": str(tmp_path / "client-cache"),
           "PYTHONPATH": PLUGIN}

    def where(extra: dict[str, str]) -> str:
        out = subprocess.run([sys.executable, "-m", "unsplit", "where", "--exe", str(lonely), pc],
                             capture_output=True, text=True, env={**env, **extra}, timeout=120)
        return out.stdout + out.stderr

    assert "line      unknown" in where({})  # no input anywhere: no line
    with debuginfod(published, tmp_path, [(in_id, "executable")]) as url:
        said = where({"DEBUGINFOD_URLS": url})
        assert re.search(rf"^  line\s+crash\.c:{site}\b", said, re.M), said
        assert (tmp_path / "client-cache" / in_id / "executable").is_file()
        session = gdb(lonely, args=["crash"], env={
            **env, "DEBUGINFOD_URLS": url,
            "DEBUGINFOD_CACHE_PATH": str(tmp_path / "client-cache-gdb")})
        session.run()
        frame = session.command("bb where")
    assert re.search(rf"^  line\s+crash\.c:{site}\b", frame, re.M), frame
