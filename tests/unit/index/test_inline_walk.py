"""The walk from a subprogram to the inlined call covering an address (index/inlines.py) on DIE
trees that damaged sibling links make: a loop is one DecodeError, deep nesting is walked. The
fuzzer's dwarf_info target (seed 1) found the recursive walk raising RecursionError."""

from __future__ import annotations

from typing import Any

import pytest
from unsplit.errors import DecodeError
from unsplit.index.inlines import _child_at


class _Die:
    def __init__(self, offset: int) -> None:
        self.offset = offset


Kids = dict[int, list[tuple[Any, bool, list[tuple[int, int]]]]]


def _walk(kids: Kids, top: _Die, address: int) -> Any:
    return _child_at(top, address, 0, lambda die, _base: kids.get(die.offset, []))


def test_a_tree_that_loops_back_is_a_decode_error() -> None:
    a, b = _Die(0x10), _Die(0x20)
    kids: Kids = {0x10: [(b, False, [])], 0x20: [(a, False, [])]}
    with pytest.raises(DecodeError, match="loops back"):
        _walk(kids, a, 0x400)


def test_scopes_nested_deeper_than_the_python_stack_are_walked() -> None:
    dies = [_Die(k) for k in range(5000)]
    kids: Kids = {k: [(dies[k + 1], False, [(0x400, 0x500)])] for k in range(4999)}
    call = _Die(99999)
    kids[4999] = [(_Die(88888), True, [(0x500, 0x600)]), (call, True, [(0x400, 0x500)])]
    assert _walk(kids, dies[0], 0x480) is call
    assert _walk(kids, dies[0], 0x380) is None


def test_the_first_covering_call_in_die_order() -> None:
    scope, first, second = _Die(1), _Die(2), _Die(3)
    top = _Die(0)
    kids: Kids = {0: [(scope, False, []), (second, True, [(0, 0x100)])],
                  1: [(first, True, [(0, 0x100)])]}
    assert _walk(kids, top, 0x10) is first
