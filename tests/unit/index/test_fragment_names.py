"""The one fragment-name grammar (index.model.records)
every source reads: what each splitter names the
pieces it moves, and the order those pieces had in the function as first laid out."""

from __future__ import annotations

import pytest
from unsplit.index.model.records import (
    FRAGMENT_NAME_IN_STRTAB,
    FragmentName,
    fragment_order,
    parse_fragment_name,
    split_fragment_name,
)


@pytest.mark.parametrize(
    ("symbol", "expected"),
    [
        ("foo.cold", FragmentName("foo", "cold", None)),  # GCC, clang's splitter, BOLT cdsplit
        ("foo.cold.3", FragmentName("foo", "cold", 3)),  # BOLT --split-functions
        ("foo.warm", FragmentName("foo", "warm", None)),  # BOLT cdsplit
        ("foo.__part.2", FragmentName("foo", "part", 2)),  # clang basic-block sections
        ("foo.part.0.cold", FragmentName("foo.part.0", "cold", None)),  # a clone's own piece
        ("foo.llvm.123.cold", FragmentName("foo.llvm.123", "cold", None)),  # ThinLTO local
        ("_ZN4llvm3fooEv.cold.12", FragmentName("_ZN4llvm3fooEv", "cold", 12)),
        ("foo.cold.cold", FragmentName("foo.cold", "cold", None)),  # the suffix is the last one
    ],
)
def test_fragment_names_are_read(symbol: str, expected: FragmentName) -> None:
    assert parse_fragment_name(symbol) == expected
    assert split_fragment_name(symbol) == (expected.base, expected.tag)
    assert FRAGMENT_NAME_IN_STRTAB.search(symbol.encode() + b"\0") is not None


@pytest.mark.parametrize(
    "symbol",
    ["foo", "foo.part.0", "foo.isra.0", "foo.constprop.1", "foo.llvm.123", "cold", ".cold",
     "foo.coldest", "foo.cold.x", "foo.warmup"],
)
def test_other_names_are_functions(symbol: str) -> None:
    """GCC's IPA clones and ThinLTO's promoted locals are functions of their own."""
    assert parse_fragment_name(symbol) is None
    assert split_fragment_name(symbol) is None


def test_tags_and_strtab_agree() -> None:
    """The string-table pre-check finds every name the grammar reads (never fewer)."""
    table = b"\0".join([b"main", b"foo.isra.0", b"bar.cold.1", b""])
    assert FRAGMENT_NAME_IN_STRTAB.search(table) is not None
    assert FRAGMENT_NAME_IN_STRTAB.search(b"main\0foo.isra.0\0foo.llvm.7\0") is None


def test_original_order() -> None:
    """hot, warm, part.N, cold, cold.0, cold.1, ... (BOLT's FragmentNum order; warm code sat
    before cold code), numbers compared as numbers, unknown tags last."""
    tags = ["cold.10", "other", "cold", "part.2", "warm", "cold.2", "hot", "part.1", "cold.0"]
    assert sorted(tags, key=fragment_order) == [
        "hot", "warm", "part.1", "part.2", "cold", "cold.0", "cold.2", "cold.10", "other"]
