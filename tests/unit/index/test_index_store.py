"""The persistent index (unsplit.index.cache.store):
a hit gives the very answers a fresh build gives
(and the fixture facts say), a stale, damaged or foreign file is ignored with one line and
rebuilt, and writers racing on one file never let a reader see half of it."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from unsplit.elf.binary import Binary
from unsplit.formats import bat_scan
from unsplit.index import module_index as index_module
from unsplit.index.cache import store as index_store
from unsplit.index.cache.store import IndexStore
from unsplit.index.module_index import ModuleIndex

from ...conftest import ROOT, facts
from ..index.test_zoo_where import PROGRAMS, VARIANTS


def _store(tmp_path: Path) -> tuple[IndexStore, list[str]]:
    said: list[str] = []
    return IndexStore(str(tmp_path / "cache"), said.append), said


def _expected(f: dict[str, Any]) -> tuple[list[int], list[tuple[str, str, str | None]]]:
    """Addresses in every fragment of every split function, and what the facts call them."""
    addresses, expected = [], []
    for proc, info in f["split_functions"].items():
        for frag in info["fragments"]:
            for a in (int(frag["start"], 16), int(frag["end"], 16) - 1):
                addresses.append(a)
                expected.append((proc, frag["fragment"], frag["symbol"]))
    return addresses, expected


def _answers(index: ModuleIndex, addresses: list[int]) -> list[dict[str, Any]]:
    return [index.locate(a).to_json() for a in addresses]


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_a_hit_answers_as_a_fresh_build(zoo: dict[str, Any], tmp_path: Path, variant: str,
                                        program: str, monkeypatch: pytest.MonkeyPatch) -> None:
    f = facts(zoo, variant, program)
    path = str(ROOT / f["binary"])
    addresses, expected = _expected(f)
    store, said = _store(tmp_path)
    fresh = ModuleIndex(Binary(path))
    built = ModuleIndex(Binary(path), store)  # a miss: builds and writes
    assert store.load(Binary(path)) is not None
    # A hit reads no BAT note whole and walks no symbol table for names.
    monkeypatch.setattr(bat_scan, "scan", _forbidden)
    hit = ModuleIndex(Binary(path), store)
    want = _answers(fresh, addresses)
    assert _answers(built, addresses) == want
    assert _answers(hit, addresses) == want
    assert [(w["linkage_name"], w["fragment"], w["fragment_symbol"]) for w in want] == expected
    assert hit.sources_used == fresh.sources_used and hit.warnings == fresh.warnings
    for name in f["split_functions"]:
        assert hit.procedure(name).fragments == fresh.procedure(name).fragments
        assert hit.procedure(name).blocks == fresh.procedure(name).blocks
    assert [m.start for m in hit.moved_fragments()] == [m.start for m in fresh.moved_fragments()]
    assert said == []


def _forbidden(*args: object, **kwargs: object) -> None:
    raise AssertionError("the BAT note was scanned again on a cache hit")


def _bolted(zoo: dict[str, Any], tmp_path: Path) -> str:
    """A private copy of a BOLTed fixture (its mtime is the test's to change)."""
    f = facts(zoo, "bolt-all", "crash")
    copy = tmp_path / "crash"
    shutil.copy2(ROOT / f["binary"], copy)
    return str(copy)


def test_a_changed_file_is_rebuilt(zoo: dict[str, Any], tmp_path: Path) -> None:
    path = _bolted(zoo, tmp_path)
    store, said = _store(tmp_path)
    ModuleIndex(Binary(path), store)
    assert store.load(Binary(path)) is not None
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert store.load(Binary(path)) is None  # stale: silently rebuilt
    ModuleIndex(Binary(path), store)
    assert store.load(Binary(path)) is not None and said == []


def _damage(path: str, at: int, value: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(value)


@pytest.mark.parametrize("damage", ["magic", "version", "head", "array", "truncated"])
def test_a_damaged_or_foreign_file_is_ignored_and_rebuilt(
        zoo: dict[str, Any], tmp_path: Path, damage: str) -> None:
    path = _bolted(zoo, tmp_path)
    store, said = _store(tmp_path)
    want = _answers(ModuleIndex(Binary(path), store), _every_moved_start(path))
    cached = store.path_for(Binary(path))
    size = os.path.getsize(cached)
    if damage == "magic":
        _damage(cached, 0, b"NOTMINE!")
    elif damage == "version":
        _damage(cached, 8, struct.pack("<I", index_store.VERSION + 1))
    elif damage == "head":
        _damage(cached, 17, b"\xff\xfe")
    elif damage == "array":
        _damage(cached, size - 9, b"\x5a")
    else:
        os.truncate(cached, size - 24)
    index = ModuleIndex(Binary(path), store)
    assert len(said) == 1 and said[0].startswith("unsplit: ignoring the cached index ")
    assert cached in said[0] and "\n" not in said[0]
    assert {"magic": "bad magic", "version": "format version", "head": "JSON",
            "array": "checksum", "truncated": "past the end"}[damage] in said[0]
    assert _answers(index, _every_moved_start(path)) == want
    assert store.load(Binary(path)) is not None and len(said) == 1  # rewritten whole


def _every_moved_start(path: str) -> list[int]:
    return [f.start for f in ModuleIndex(Binary(path)).moved_fragments()]


def _write_many(path: str, root: str, rounds: int) -> None:
    """Rewrite the index again and again (a hit never writes: save is called directly)."""
    store = IndexStore(root, lambda text: sys.exit(text))
    ModuleIndex(Binary(path), store)
    binary = Binary(path)
    parts = store.load(binary)
    assert parts is not None
    for _ in range(rounds):
        store.save(binary, parts)


def test_two_writers_never_show_half_a_file(zoo: dict[str, Any], tmp_path: Path) -> None:
    path = _bolted(zoo, tmp_path)
    root = str(tmp_path / "cache")
    ctx = multiprocessing.get_context("fork")
    writers = [ctx.Process(target=_write_many, args=(path, root, 200)) for _ in range(2)]
    for w in writers:
        w.start()
    said: list[str] = []
    reader = IndexStore(root, said.append)
    hits = 0
    while any(w.is_alive() for w in writers):
        hits += reader.load(Binary(path)) is not None
    for w in writers:
        w.join()
        assert w.exitcode == 0
    assert said == [] and hits > 0 and reader.load(Binary(path)) is not None
    assert not [n for n in os.listdir(os.path.dirname(reader.path_for(Binary(path))))
                if not n.endswith(".idx")]  # no temporary file left behind


def _cli(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "unsplit", *args], capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT / "plugin"),
                                          "UNSPLIT_CACHE": str(cache)})


def test_cache_command(zoo: dict[str, Any], tmp_path: Path) -> None:
    path = _bolted(zoo, tmp_path)
    cache = tmp_path / "cli-cache"
    info = json.loads(_cli("cache", "info", "--json", path, cache=cache).stdout)
    assert info["cache"] == str(cache / f"index-v{index_store.VERSION}")
    assert info["info"][0]["cached"] is False
    warm = json.loads(_cli("cache", "warm", "--json", path, cache=cache).stdout)["warm"][0]
    assert warm["built"] and warm["cached"] and os.path.isfile(warm["index"])
    again = json.loads(_cli("cache", "warm", "--json", path, cache=cache).stdout)["warm"][0]
    assert not again["built"] and again["cached"]
    listing = json.loads(_cli("cache", "info", "--json", cache=cache).stdout)["info"]
    assert [e["index"] for e in listing] == [warm["index"]]
    text = _cli("cache", "clear", path, cache=cache).stdout
    assert text.strip() == f"{path}: removed {warm['index']}"
    assert not os.path.exists(warm["index"])
    bad = _cli("cache", "warm", str(tmp_path / "missing"), cache=cache)
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "no such file" in bad.stderr


def test_a_long_first_build_says_so_once(zoo: dict[str, Any], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Progress: a first build over the size that takes a second says one line; a hit, or a
    small module, says nothing. (The fixtures are small: the bar is lowered to their size.)"""
    path = _bolted(zoo, tmp_path)
    note = Binary(path).section(".note.bolt_bat")
    assert note is not None
    monkeypatch.setattr(index_module, "ANNOUNCE_BAT_BYTES", note["sh_size"])
    store, said = _store(tmp_path)
    heard: list[str] = []
    ModuleIndex(Binary(path), store, heard.append)
    assert heard == [f"unsplit: indexing crash ({note['sh_size'] / 1e6:.0f} MB BAT)…"]
    ModuleIndex(Binary(path), store, heard.append)  # from the cache: quick, nothing said
    assert len(heard) == 1 and said == []
    monkeypatch.setattr(index_module, "ANNOUNCE_BAT_BYTES", note["sh_size"] + 1)
    ModuleIndex(Binary(path), None, heard.append)
    assert len(heard) == 1
