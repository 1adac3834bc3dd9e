"""Helpers for tests that read like the IR: compare a module's printed text with expected text.

``assert_hlo_equal(module, expected)`` prints the module and compares it with ``expected`` after
normalising both: comments, layouts (``{1,0}``) and ``%`` sigils dropped, whitespace ignored
except between two words. ``...`` in ``expected`` matches any text (also across lines), so a
test can state just the lines it cares about; ``{...}`` therefore matches any constant. Without
an ``HloModule`` line in ``expected``, the module's header line is not compared.
"""

from __future__ import annotations

import re

from aotc.hlo.ir import Computation, Module
from aotc.hlo.text import print_computation, print_module

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_LAYOUT = re.compile(r"(?<=\])\{[\d,\s]*(?::[^{}]*)?\}")
_SIGIL = re.compile(r"%(?=[A-Za-z_])")
_SPACE_AROUND_PUNCT = re.compile(r"\s*([,(){}\[\]=:>])\s*")
_SPACE = re.compile(r"\s+")
_HEADER = re.compile(r"^\s*HloModule\b")


def normalize_hlo(text: str) -> str:
    """HLO text reduced to what matters for comparison (one line)."""
    text = _SIGIL.sub("", _LAYOUT.sub("", _COMMENT.sub(" ", text)))
    return _SPACE.sub(" ", _SPACE_AROUND_PUNCT.sub(r"\1", text)).strip()


def hlo_matches(actual: str, expected: str) -> bool:
    """Whether ``actual`` HLO text matches ``expected``, where ``...`` matches anything."""
    pieces = [re.escape(p.strip()) for p in normalize_hlo(expected).split("...")]
    return re.fullmatch(".*?".join(pieces), normalize_hlo(actual), re.S) is not None


def assert_hlo_equal(ir: Module | Computation, expected: str) -> None:
    """Assert that the printed ``ir`` matches ``expected`` (see the module docstring)."""
    if isinstance(ir, Computation):
        actual = print_computation(ir)
    else:
        actual = print_module(ir)
        if not _HEADER.match(expected):
            actual = actual.split("\n", 1)[1]
    if not hlo_matches(actual, expected):
        raise AssertionError(
            f"HLO differs.\n--- expected:\n{expected.strip()}\n--- actual:\n{actual.strip()}"
        )
