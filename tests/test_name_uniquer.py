"""Instruction naming: XLA's ``name``, ``name.1``, ... with no recursion per collision."""

import sys

from aotc.hlo.builder import NameUniquer


def test_names_are_unique_and_xla_shaped() -> None:
    names = NameUniquer()
    assert [names.get("add") for _ in range(3)] == ["add", "add.1", "add.2"]
    assert names.get("a/b:0") == "a_b_0"


def test_literal_suffixes_are_skipped_without_recursion() -> None:
    """DenseNet-sized graphs: thousands of names colliding with literal ``x.N`` names."""
    names = NameUniquer()
    taken = [names.get(f"conv.{i}") for i in range(1, 3 * sys.getrecursionlimit())]
    handed = [names.get("conv") for _ in range(len(taken) + 2)]
    assert len(set(taken + handed)) == len(taken) + len(handed)
    assert handed[:2] == ["conv", f"conv.{len(taken) + 1}"]
