"""Which procedures a name a user types means, as GDB's `break` reads it: a linkage name, a
demangled one, or a qualified name without parameters matching in every scope and overload
(GDB's `symbol-matching wild`). Only names whose mangled text holds the identifier are
demangled."""

from __future__ import annotations

import re
from collections.abc import Iterable

from unsplit.index.names.demangle import GNU, demangle

_CLONE = re.compile(r" \[clone [^\]]+\]")
# A copy of a function that GCC or LLVM made (ipa-cp, ipa-sra, partial inlining, LTO, ThinLTO,
# function specialization) has the function's own name in DWARF, and debuggers show that:
# C's `foo.constprop.0` is `foo`; LLVM's demangler (LLDB's) writes `foo(int) (.isra.0)`.
_C_CLONE = re.compile(r"(?:\.(?:constprop|isra|part|lto_priv|llvm|specialized|localalias|clone)"
                      r"(?:\.\d+)?)+$")
_LLVM_CLONE = re.compile(r"(?: \(\.[^()]*\))+$")
_QUALIFIERS = (" const", " volatile", " &&", " &", " noexcept")
_OPERATOR = re.compile(r"(?<![\w$])operator\b")
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")


def _open_paren(text: str) -> int:
    """Index of the "(" that matches the ")" ending `text` (-1 if unbalanced)."""
    depth = 0
    for k in range(len(text) - 1, -1, -1):
        if text[k] == ")":
            depth += 1
        elif text[k] == "(":
            depth -= 1
            if depth == 0:
                return k
    return -1


def split(demangled: str) -> tuple[str, str | None]:
    """(qualified name, parameter list or None) of a demangled name: ``void ns::f<int>(int)
    const [clone .cold]`` gives (``ns::f<int>``, ``(int) const``), C's ``f.constprop.0``
    (``f``, None): a clone's suffix is no part of the name."""
    text = _C_CLONE.sub("", _LLVM_CLONE.sub("", _CLONE.sub("", demangled).strip()))
    params = None
    body = text
    while True:  # qualifiers after the parameter list
        tail = next((q for q in _QUALIFIERS if body.endswith(q)), None)
        if tail is None:
            break
        body = body[:-len(tail)]
    if body.endswith(")"):
        k = _open_paren(body)
        if k > 0:
            params = text[k:]
            body = body[:k]
    op = _OPERATOR.search(body)
    end = op.start() if op else len(body)
    depth, start = 0, 0
    for k, c in enumerate(body[:end]):  # the return type of a template ends at a space
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
        elif c == " " and depth == 0:
            start = k + 1
    return body[start:], params


def _scopes(qualified: str) -> list[str]:
    """``a::b<c::d>::f`` -> [a, b<c::d>, f] (whitespace dropped)."""
    out, depth, start = [], 0, 0
    text = "".join(qualified.split())
    k = 0
    while k < len(text):
        c = text[k]
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
        elif c == ":" and depth == 0 and text.startswith("::", k):
            out.append(text[start:k])
            start = k + 2
            k += 1
        k += 1
    out.append(text[start:])
    return out


def _untemplated(scope: str) -> str:
    k = scope.find("<")
    return scope if k <= 0 or scope.startswith("operator") else scope[:k]


class Query:
    """A name as the user typed it, ready to be compared with linkage names."""

    def __init__(self, text: str) -> None:
        self.text = text.strip()
        qualified, params = split(self.text) if "(" in self.text else (self.text, None)
        self.scopes = _scopes(qualified)
        self.params = None if params is None else "".join(params.split())
        last = self.scopes[-1].lstrip("~")
        ident = _IDENTIFIER.match(last)
        # Itanium writes an identifier as <length><text>; operators have codes instead.
        self.token = None if ident is None or ident[0].startswith("operator") else \
            f"{len(ident[0])}{ident[0]}"

    def may_match(self, linkage: str) -> bool:
        """A cheap test on the mangled text: False means it cannot match."""
        if linkage == self.text:
            return True
        if not linkage.startswith("_Z"):
            return len(self.scopes) == 1 and self.params is None and \
                _C_CLONE.sub("", linkage) == self.scopes[0]
        return self.token is None or self.token in linkage

    def matches(self, linkage: str) -> bool:
        if linkage == self.text:
            return True
        if not self.may_match(linkage):
            return False
        qualified, params = split(demangle(linkage, GNU))
        if self.params is not None and (params is None or
                                        "".join(params.split()) != self.params):
            return False
        scopes = _scopes(qualified)
        n = len(self.scopes)
        if n > len(scopes):
            return False
        tail = scopes[-n:]
        if tail == self.scopes:
            return True
        return "<" not in self.scopes[-1] and tail[:-1] == self.scopes[:-1] and \
            _untemplated(tail[-1]) == self.scopes[-1]


def matching(linkage_names: Iterable[str], text: str) -> list[str]:
    """Every linkage name `text` names, in the order given; an exact linkage name alone when
    there is one (GDB's `break _Z7processPKii` sets one location)."""
    query = Query(text)
    names = list(linkage_names)
    if text.strip() in names and text.strip().startswith("_Z"):
        return [text.strip()]
    return [n for n in names if query.matches(n)]


def names_procedure(shown: str, linkage: str) -> bool:
    """Does a debugger's frame name `shown` (``process``, ``process(int const*, int)``,
    ``_Z7processPKii``) name the procedure `linkage`? Used to tell a procedure's own frame
    from that of a function inlined into it."""
    if shown == linkage:
        return True
    if not linkage.startswith("_Z"):
        return shown == _C_CLONE.sub("", linkage)
    demangled = demangle(linkage, GNU)
    return shown == demangled or "".join(shown.split()) == \
        "".join(split(demangled)[0].split())
