"""index.names (demangle, matching) against the demanglers the debuggers follow: c++filt
(libiberty, GDB's) and llvm-cxxfilt-22 (LLVM's, LLDB's and llvm-symbolizer's); and the CLI's
names on a core of the zoo's except.cpp stopped in `_Z7processPKii`'s fragment cold.2."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from unsplit.index.names import demangle as demangling
from unsplit.index.names.demangle import GNU, LLVM, available, demangle
from unsplit.index.names.matching import Query, matching, names_procedure, split

from ...conftest import ROOT, facts

LIBSTDCXX = Path("/usr/lib/x86_64-linux-gnu/libstdc++.so.6")
LIBLLVM = Path("/usr/lib/x86_64-linux-gnu/libLLVM.so.22.1")
SAMPLES = [
    "_Z7processPKii", "_Z3fooi.constprop.0", "_Z3fooi.cold", "_Z3fooi.isra.0.cold",
    "_ZN4llvm24ModuleInlinerWrapperPass3runERNS_6ModuleERNS_15AnalysisManagerIS1_JEEE",
    "_Z3fooIiEvT_", "_ZN12_GLOBAL__N_13fooEv", "_ZNKSt13runtime_error4whatEv",
    "_ZNSt6vectorIiSaIiEE9push_backERKi", "_ZN3FooC2Ev", "_ZN3FooD1Ev", "_ZplRK1AS1_",
    "_ZZ4mainENKUlvE_clEv", "_Znwm", "_ZN3foo3barE",
]
RUST_LEGACY = [
    "_ZN4core3ptr13drop_in_place17h0123456789abcdefE",
    "_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h1234567890abcdefE",
    "_ZN5alloc7raw_vec11finish_grow17h3f0ba2f71a2ff2a6E",
]


def _filter(tool: str, names: list[str]) -> list[str]:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} not installed")
    out = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True,
                         text=True, check=True).stdout
    return out.splitlines()


def _dynamic_cxx_names(path: Path) -> list[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", str(path)], capture_output=True,
                         text=True, check=True).stdout
    names = [ln.split()[-1].split("@")[0] for ln in out.splitlines() if ln.split()]
    return sorted({n for n in names if n.startswith("_Z")})


def test_the_demangler_is_there() -> None:
    assert available()  # libstdc++.so.6 is on every machine with gdb


@pytest.mark.parametrize(("style", "tool"), [(GNU, "c++filt"), (LLVM, "llvm-cxxfilt-22")])
def test_samples_as_the_oracles_demangle_them(style: str, tool: str) -> None:
    assert [demangle(n, style) for n in SAMPLES] == _filter(tool, SAMPLES)


@pytest.mark.parametrize(("style", "tool"), [(GNU, "c++filt"), (LLVM, "llvm-cxxfilt-22")])
def test_every_name_libstdcxx_exports(style: str, tool: str) -> None:
    """Thousands of real names: libstdc++'s own exports, templates and operators included."""
    if not LIBSTDCXX.exists():
        pytest.skip("no libstdc++.so.6")
    names = _dynamic_cxx_names(LIBSTDCXX)
    assert len(names) > 3000
    oracle = _filter(tool, names)
    differ = [(n, o, demangle(n, style)) for n, o in zip(names, oracle, strict=True)
              if demangle(n, style) != o]
    assert differ == []


@pytest.mark.parametrize(("style", "tool"), [(GNU, "c++filt"), (LLVM, "llvm-cxxfilt-22")])
def test_libllvm_exports_nearly_all_alike(style: str, tool: str) -> None:
    """50k names of a big C++ library (LLVM 22's own): the demanglers' versions differ on a
    few template signatures with `decltype` expressions; 99.5% must read the same."""
    if not LIBLLVM.exists():
        pytest.skip(f"no {LIBLLVM}")
    names = _dynamic_cxx_names(LIBLLVM)
    oracle = _filter(tool, names)
    same = sum(demangle(n, style) == o for n, o in zip(names, oracle, strict=True))
    assert len(names) > 20000 and same >= 0.995 * len(names)


def test_rust_legacy_names_lose_their_hash() -> None:
    """c++filt keeps the hash (it asks libiberty for verbose output); GDB and rustfilt drop it,
    as we do: the oracle is c++filt's text without its `::h<16 hex>`."""
    oracle = [re.sub(r"::h[0-9a-f]{16}$", "", o) for o in _filter("c++filt", RUST_LEGACY)]
    assert [demangle(n) for n in RUST_LEGACY] == oracle
    assert oracle[1] == "std::rt::lang_start::{{closure}}"


@pytest.mark.parametrize("library", [Path("/lib/x86_64-linux-gnu/libc.so.6"), LIBSTDCXX])
def test_names_are_shown_without_symbol_versions(library: Path) -> None:
    """`pthread_cond_wait@@GLIBC_2.3.2` (how glibc's own .symtab spells a versioned
    definition) is shown `pthread_cond_wait`, in both styles and with demangling off: each
    name nm -D prints with its version reads as nm's --without-symbol-versions (then c++filt)."""
    if not library.exists():
        pytest.skip(f"no {library}")

    def nm(*options: str) -> list[str]:
        out = subprocess.run(["nm", "-D", "--defined-only", *options, str(library)],
                             capture_output=True, text=True, check=True).stdout
        return [line.split()[-1] for line in out.splitlines() if len(line.split()) == 3]

    versioned, bare = nm(), nm("--without-symbol-versions")
    assert len(versioned) == len(bare) and sum("@" in n for n in versioned) > 1000
    assert [demangling.shown(n, None) for n in versioned] == bare
    pairs = [(v, b) for v, b in zip(versioned, bare, strict=True) if "@" in v]
    assert [demangling.shown(v, GNU) for v, _ in pairs] == _filter("c++filt",
                                                                  [b for _, b in pairs])


def test_names_that_are_not_itanium_stay_as_they_are() -> None:
    for name in ("main", "transfer.cold", "_RNvCs1234_7mycrate3foo", "_Zbogus", "_Z", ""):
        assert demangle(name) == name
        assert demangle(name, LLVM) == name


@pytest.mark.parametrize(("demangled", "qualified", "params"), [
    ("process(int const*, int)", "process", "(int const*, int)"),
    ("void foo<int>(int)", "foo<int>", "(int)"),
    ("std::runtime_error::what() const", "std::runtime_error::what", "() const"),
    ("(anonymous namespace)::foo()", "(anonymous namespace)::foo", "()"),
    ("foo(int) [clone .constprop.0] [clone .cold]", "foo", "(int)"),
    # LLVM's demangler (llvm-cxxfilt-22 _Z3fooi.isra.0.constprop.1), and C's clones: the name
    # GCC's DWARF gives them is the function's (llvm-dwarfdump-22 on lz4's
    # LZ4IO_decompressSrcFile.constprop.0: DW_AT_name LZ4IO_decompressSrcFile)
    ("foo(int) (.isra.0.constprop.1)", "foo", "(int)"),
    ("LZ4IO_decompressSrcFile.constprop.0", "LZ4IO_decompressSrcFile", None),
    ("LZ4F_free.isra.0", "LZ4F_free", None),
    ("f.part.0.isra.0", "f", None),
    ("helper.llvm.7184519472683947623", "helper", None),
    ("operator+(A const&, A const&)", "operator+", "(A const&, A const&)"),
    ("operator new(unsigned long)", "operator new", "(unsigned long)"),
    ("core::ptr::drop_in_place", "core::ptr::drop_in_place", None),
])
def test_split(demangled: str, qualified: str, params: str | None) -> None:
    assert split(demangled) == (qualified, params)


def test_names_as_gdbs_break_reads_them() -> None:
    names = ["main", "_Z7processPKii", "_Z7processi", "_ZN2ns7processEv",
             "_ZNKSt13runtime_error4whatEv",
             "_ZN4llvm24ModuleInlinerWrapperPass3runERNS_6ModuleERNS_15AnalysisManagerIS1_JEEE",
             "_ZN4llvm4Pass3runEv", "_Z3fooIiEvT_", "_ZplRK1AS1_", "processor"]
    assert matching(names, "process") == ["_Z7processPKii", "_Z7processi", "_ZN2ns7processEv"]
    assert matching(names, "process(int const*, int)") == ["_Z7processPKii"]
    assert matching(names, "process(int)") == ["_Z7processi"]
    assert matching(names, "_Z7processPKii") == ["_Z7processPKii"]
    assert matching(names, "ns::process") == ["_ZN2ns7processEv"]
    assert matching(names, "llvm::ModuleInlinerWrapperPass::run") == [names[5]]
    assert matching(names, "run") == [names[5], names[6]]
    assert matching(names, "runtime_error::what") == ["_ZNKSt13runtime_error4whatEv"]
    assert matching(names, "std::runtime_error::what() const") == \
        ["_ZNKSt13runtime_error4whatEv"]
    assert matching(names, "foo") == ["_Z3fooIiEvT_"]
    assert matching(names, "foo<int>") == ["_Z3fooIiEvT_"]
    assert matching(names, "operator+") == ["_ZplRK1AS1_"]
    assert matching(["_Znwm", "_ZdlPv"], "operator new") == ["_Znwm"]
    assert matching(["_Znwm", "_ZdlPv"], "operator delete(void*)") == ["_ZdlPv"]
    assert matching(names, "main") == ["main"]
    assert matching(names, "proc") == []
    # GDB's `break scale` sets a location in the clone scale.constprop.0 too (its DWARF name)
    assert matching(["scale", "scale.constprop.0", "scaler"], "scale") == \
        ["scale", "scale.constprop.0"]
    assert Query("process").token == "7process"


def test_a_debuggers_frame_name_names_its_procedure() -> None:
    for shown in ("process", "process(int const*, int)", "_Z7processPKii"):
        assert names_procedure(shown, "_Z7processPKii")
    assert not names_procedure("parse", "_Z7processPKii")
    assert names_procedure("transfer", "transfer") and not names_procedure("run", "transfer")
    assert names_procedure("scale", "scale.constprop.0")
    assert not names_procedure("scal", "scale.constprop.0")


# -- the CLI on a core stopped in process's cold.2 ---------------------------------------------

def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "unsplit", *args], capture_output=True,
                          text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT / "plugin"), "PATH": "/usr/bin:/bin"})


@pytest.fixture(scope="module")
def cold_core(zoo: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[dict[str, Any], Path]:
    """bolt-all except, stopped by gdb at the first byte of process's cold.2, dumped."""
    if shutil.which("gdb") is None:
        pytest.skip("gdb not installed")
    f = facts(zoo, "bolt-all", "except")
    frag = next(fr for fr in f["split_functions"]["_Z7processPKii"]["fragments"]
                if fr["fragment"] == "cold.2")
    core = tmp_path_factory.mktemp("demangle") / "except.core"
    subprocess.run(["gdb", "-nx", "-q", "-batch", "-ex", f"break *{frag['start']}",
                    "-ex", "run throw", "-ex", f"gcore {core}", str(ROOT / f["binary"])],
                   capture_output=True, text=True, timeout=300, check=True)
    assert core.exists()
    return f, core


def test_cli_frames_demangles_and_no_demangle_does_not(
        cold_core: tuple[dict[str, Any], Path]) -> None:
    f, core = cold_core
    exe = str(ROOT / f["binary"])
    name = _filter("llvm-cxxfilt-22", ["_Z7processPKii"])[0]
    r = _cli("frames", str(core), "--exe", exe)
    assert r.returncode == 0, r.stderr
    frame0 = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("#0"))
    assert f"{name} [cold.2]" in frame0
    raw = _cli("frames", str(core), "--exe", exe, "--no-demangle").stdout
    assert "_Z7processPKii [cold.2]" in raw and name not in raw
    threads = json.loads(_cli("frames", str(core), "--exe", exe, "--json").stdout)["threads"]
    top = threads[0]["frames"][0]
    assert (top["procedure"], top["linkage_name"], top["fragment"]) == \
        (name, "_Z7processPKii", "cold.2")


def test_cli_where_text_demangles(zoo: dict[str, Any]) -> None:
    f = facts(zoo, "bolt-all", "except")
    frag = next(fr for fr in f["split_functions"]["_Z7processPKii"]["fragments"]
                if fr["fragment"] == "cold.2")
    name = _filter("llvm-cxxfilt-22", ["_Z7processPKii"])[0]
    out = _cli("where", "--exe", str(ROOT / f["binary"]), frag["start"]).stdout
    assert out.splitlines()[0] == f"{int(frag['start'], 16):#x} is in {name} [cold.2] (except)"
    raw = _cli("where", "--no-demangle", "--exe", str(ROOT / f["binary"]), frag["start"]).stdout
    assert raw.splitlines()[0].endswith("is in _Z7processPKii [cold.2] (except)")
    blocks = _cli("blocks", "--exe", str(ROOT / f["binary"]), "process").stdout
    assert blocks.splitlines()[0].startswith(f"{name}: ")
