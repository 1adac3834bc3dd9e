"""The integer literals of a kernel's text that may become arguments: its comparisons' operands.

``variants`` merges kernels whose text is the same but for these (a GEMM tile with another
reduction length, a loop over other rows) into one function taking them as arguments. A
literal is taken only where an argument of its value means the same and costs about as much:
an operand of a scalar integer ``icmp`` (a loop bound, a bounds check: a register instead of
an immediate; LLVM no longer unrolls a loop whose trip count becomes an argument, which
measured no slower on the bundled benchmark models).

Other positions where a runtime value would mean the same are left in the text that must be
alike because of what they cost: strides and offsets (operands of ``add``/``mul``/``shl``,
``getelementptr`` indices) fold into addressing modes and strength reduction when constant,
and as arguments made MobileNetV2 25 % and the U-Net 8 % slower (register-tiled kernels keep
one pointer per row instead of one base and immediate offsets); loop starts (``phi``,
``store`` of integers) hide trip counts. Positions where a runtime value would not mean the
same never are: types and vector widths, alignments, attributes, ``alloca`` sizes, vector
constants (shuffle masks, splats), lane indices, struct field indices, ``switch`` cases,
intrinsic immediates, the divisors of ``udiv``/``sdiv``/``urem``/``srem`` (a constant
division is a multiply, a runtime one 20-40 cycles), float literals. ``i1`` literals are
printed ``true``/``false`` and never taken.

Typed pointers (``[N x i8]*``, how llvmlite prints a pointer to a global of that type: the
packed weights of kernels at other shapes differ in size) are all ``ptr`` to LLVM, and are
read as such.
"""

from __future__ import annotations

import re

#: Stands for a literal taken out of the text.
MARK = "\x04"

_TYPED_POINTER = re.compile(r"\[\d+ x i8\]\*")
#: A scalar integer comparison (not of ``i1``: its literals are ``true`` and ``false``) of two
#: plain operands, a name or a decimal literal each.
_COMPARE = re.compile(
    r'^(  %"(?:[^"\\]|\\.)*" = icmp [a-z]+ (i(?:[2-9]|[1-9]\d+)) )'
    r'(-?\d+|%"(?:[^"\\]|\\.)*"), (-?\d+|%"(?:[^"\\]|\\.)*")$'
)


class LiteralReader:
    """Takes the literals that may become arguments out of functions' lines, remembering each
    line it read: the members of a family share most of their lines, and a survivor is read
    again to be written."""

    def __init__(self) -> None:
        self._read: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {}

    def take(self, lines: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
        """``lines`` (of a function's body) with each such literal set to ``MARK`` and its
        typed pointers written ``ptr``, and those literals as (type, text) in order."""
        masked: list[str] = []
        taken: list[tuple[str, str]] = []
        for line in lines:
            known = self._read.get(line)
            if known is None:
                known = self._read[line] = _take(line)
            masked.append(known[0])
            taken += known[1]
        return masked, taken


def _take(line: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    if "i8]*" in line:
        line = _TYPED_POINTER.sub("ptr", line)
    match = _COMPARE.match(line) if "= icmp " in line else None
    if match is None:
        return line, ()
    head, ty = match.group(1), match.group(2)
    operands = [match.group(3), match.group(4)]
    taken = tuple((ty, op) for op in operands if op[0] != "%")
    masked = [op if op[0] == "%" else MARK for op in operands]
    return head + ", ".join(masked), taken
