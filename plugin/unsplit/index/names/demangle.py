"""Procedure names as debuggers show them: Itanium C++ and legacy Rust names demangled by the
system's libstdc++ ``abi::__cxa_demangle`` (what GDB and c++filt use), one name at a time when
first shown, then kept. Two wordings: GNU (GDB, c++filt: ``f(int) [clone .constprop.0]``) and
LLVM (LLDB, llvm-symbolizer: ``f(int) (.constprop.0)``). Rust v0 names are left as they are."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ctypes

# ctypes is imported when the first C++ name is demangled: a C program's session never needs
# it (docs/benchmarks.md, later GDB sessions).

GNU = "gnu"
LLVM = "llvm"
STYLES = (GNU, LLVM)


class _Cxa:
    """``__cxa_demangle`` and ``free`` from the process's C++ runtime, loaded once."""

    def __init__(self) -> None:
        import ctypes

        self.demangle: Any = None
        self.free: Any = None
        try:
            lib = _libstdcxx()
            fn = getattr(lib, "__cxa_demangle")  # not lib.__…: name mangling in a class
            free = ctypes.CDLL(None).free
        except (OSError, AttributeError):
            return
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                       ctypes.POINTER(ctypes.c_int)]
        free.argtypes = [ctypes.c_void_p]
        free.restype = None
        self.demangle, self.free = fn, free

    def __call__(self, name: str) -> str | None:
        if self.demangle is None:
            return None
        import ctypes

        status = ctypes.c_int(0)
        ptr = self.demangle(name.encode("utf-8", "surrogateescape"), None, None,
                            ctypes.byref(status))
        if status.value != 0 or not ptr:
            return None
        try:
            return ctypes.string_at(ptr).decode("utf-8", "replace")
        finally:
            self.free(ptr)


def _libstdcxx() -> ctypes.CDLL:
    """libstdc++ by its soname (the same since GCC 3.4), else wherever find_library says: its
    search runs `ldconfig -p` in a subprocess, a cost a warm `unsplit symbolize` would feel."""
    import ctypes

    try:
        return ctypes.CDLL("libstdc++.so.6")
    except OSError:
        import ctypes.util

        return ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so.6")


@lru_cache(maxsize=1)
def _cxa() -> _Cxa:
    """libstdc++'s demangler, loaded once per process (the library is the process's)."""
    return _Cxa()


def available() -> bool:
    """Can C++ names be demangled here (libstdc++ loadable)?"""
    return _cxa().demangle is not None


_CLONE = re.compile(r" \[clone (\.[^\]]+)\]")
_CLONES = re.compile(r"(?: \[clone \.[^\]]+\])+")


@lru_cache(maxsize=1 << 16)
def demangle(name: str, style: str = GNU) -> str:
    """`name` as the debugger of `style` shows it; a name that is not mangled (C, a v0 Rust
    name, garbage) comes back unchanged. Pure (the same name and style give the same text,
    whatever the session), so one bounded cache serves the whole process."""
    if not name.startswith("_Z"):
        return name
    rust = _rust_legacy(name)
    if rust is not None:
        return rust
    text = _cxa()(name)
    if text is None:
        return name
    if style == GNU:
        return _gnu_wording(text)
    # LLVM's demangler leaves transaction clones (GCC's -fgnu-tm) mangled.
    return name if name.startswith("_ZGT") else _llvm_wording(text)


# __cxa_demangle abbreviates the standard substitutions Ss/Si/So/Sd (`std::istream`) where GDB
# and c++filt, which ask libiberty for verbose output, spell the template out.
_ABBREVIATIONS = {
    "string": "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
    "istream": "std::basic_istream<char, std::char_traits<char> >",
    "ostream": "std::basic_ostream<char, std::char_traits<char> >",
    "iostream": "std::basic_iostream<char, std::char_traits<char> >",
}
_ABBREVIATED = re.compile(r"(?<![\w:])std::(string|istream|ostream|iostream)(?![\w])(>?)")
_LAMBDA = re.compile(r"\{lambda\(([^{}]*)\)#(\d+)\}")
_UNNAMED = re.compile(r"\{unnamed type#(\d+)\}")
_OPERATOR_TEMPLATE = re.compile(r"(operator(?:<<|>>|<|>)) <")


def _gnu_wording(text: str) -> str:
    # libiberty never writes `>>`: a `>` after a spelled-out template gets its space.
    return _ABBREVIATED.sub(lambda m: _ABBREVIATIONS[m[1]] + (" >" if m[2] else ""), text)


def _llvm_wording(text: str) -> str:
    """libiberty's text in LLVM's words: `f(int) (.cold)`, `A<B<int>>`, `'lambda'(int)`,
    `'lambda0'(int)` for the second, `'unnamed'`, `operator<<<T>`, `std::nullptr_t`."""
    text = _CLONES.sub(lambda m: " (" + "".join(_CLONE.findall(m[0])) + ")", text)
    text = _LAMBDA.sub(lambda m: f"'lambda{_ordinal(m[2])}'({m[1]})", text)
    text = _UNNAMED.sub(lambda m: f"'unnamed{_ordinal(m[1])}'", text)
    while "> >" in text:
        text = text.replace("> >", ">>")
    text = _OPERATOR_TEMPLATE.sub(r"\1<", text)
    return text.replace("decltype(nullptr)", "std::nullptr_t")


def _ordinal(number: str) -> str:
    """libiberty numbers from #1, LLVM from '' then 0, 1…"""
    n = int(number)
    return "" if n <= 1 else str(n - 2)


def shown(name: str, style: str | None) -> str:
    """`name` demangled in `style`, or as it is when `style` is None (demangling off); without
    a symbol version (`pthread_cond_wait@@GLIBC_2.3.2`, as glibc's own .symtab spells its
    versioned definitions, .symver): the version says which definition, not what it is."""
    name = unversioned(name)
    return name if style is None else demangle(name, style)


def unversioned(name: str) -> str:
    """`name` without an ELF symbol version (`@VERSION`, or `@@VERSION` for the default one);
    no mangling scheme puts an `@` in a name."""
    base, at, version = name.partition("@")
    return base if at and base and version.lstrip("@") else name


# -- Rust legacy (rustc's symbol_names/legacy.rs; rustc-demangle src/legacy.rs) ---------------

_HASH = re.compile(r"h[0-9a-f]{16}")
_ESCAPES = {"SP": "@", "BP": "*", "RF": "&", "LT": "<", "GT": ">", "LP": "(", "RP": ")",
            "C": ","}


def _rust_legacy(name: str) -> str | None:
    """A legacy Rust name without its hash, or None when `name` is not one: `_ZN`, length-
    prefixed components, `E`, the last component `h` + 16 hex digits (libiberty's test),
    and an optional `.llvm.N`-style suffix after the `E`."""
    if not name.startswith("_ZN") or "17h" not in name:  # the hash: 17 bytes, "h" first
        return None
    parts: list[str] = []
    i = 3
    while i < len(name) and name[i] != "E":
        j = i
        while j < len(name) and name[j].isdigit():
            j += 1
        if j == i:
            return None
        length = int(name[i:j])
        part = name[j:j + length]
        if len(part) != length or not part.isascii():
            return None
        parts.append(part)
        i = j + length
    if i >= len(name) or len(parts) < 2 or not _HASH.fullmatch(parts[-1]):
        return None
    return "::".join(_rust_component(p) for p in parts[:-1])


def _rust_component(part: str) -> str:
    if part.startswith("_$"):
        part = part[1:]
    out = []
    rest = part
    while rest:
        if rest.startswith(".."):
            out.append("::")
            rest = rest[2:]
        elif rest.startswith("$"):
            end = rest.find("$", 1)
            escape = rest[1:end] if end > 0 else ""
            char = _ESCAPES.get(escape) or _unicode_escape(escape)
            if end < 0 or char is None:
                break  # not an escape rustc writes: the rest is shown as it is
            out.append(char)
            rest = rest[end + 1:]
        else:
            cut = min((k for k in (rest.find("$"), rest.find("..")) if k > 0),
                      default=len(rest))
            out.append(rest[:cut])
            rest = rest[cut:]
    return "".join(out) + rest


def _unicode_escape(escape: str) -> str | None:
    digits = escape[1:]
    if not escape.startswith("u") or not digits or any(c not in "0123456789abcdef"
                                                      for c in digits):
        return None
    try:
        char = chr(int(digits, 16))
    except (ValueError, OverflowError):
        return None
    return None if not char.isprintable() else char
