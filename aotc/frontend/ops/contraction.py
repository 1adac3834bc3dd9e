"""Contractions: MatMul, BatchMatMul (v1, V2, V3) and Einsum, each lowered to one ``dot``.

Einsum is lowered generally: repeated labels within an operand take a diagonal, labels only
one operand has and the output lacks are summed out first; then each label of a two-operand
einsum is a batch label (both operands and the output), a contracting label (both operands,
not the output), or free on one side. The operands are transposed to ``[batch, free,
contracting]`` / ``[batch, contracting, free]`` and collapsed to rank 3 (rank 2 without batch
labels), so the dot is always the canonical batched matrix product; its result is reshaped
back to one dimension per label and transposed to the output's label order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from aotc.errors import ShapeError, UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.reduction import reduce_dims
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.ir import ComparisonDirection, DotDims, Instruction, Opcode
from aotc.hlo.shape import PrimitiveType, Shape

Labels = tuple[str, ...]


@translates("MatMul", note="transpose_a, transpose_b")
def matmul(ctx: TranslationContext, node: Node, a: Instruction, b: Instruction) -> Instruction:
    lhs_contracting = 0 if node.bool_attr("transpose_a", False) else 1
    rhs_contracting = 1 if node.bool_attr("transpose_b", False) else 0
    return ctx.builder.dot(a, b, DotDims((lhs_contracting,), (rhs_contracting,)))


@translates(
    "BatchMatMul",
    "BatchMatMulV2",
    "BatchMatMulV3",
    note="adj_x, adj_y; batch dims broadcast numpy-style; V3's Tout",
)
def batch_matmul(
    ctx: TranslationContext, node: Node, x: Instruction, y: Instruction
) -> Instruction:
    x, y = (_convert_to_tout(ctx, node, v) for v in (x, y))
    xs, ys = x.array_shape, y.array_shape
    if xs.rank < 2 or ys.rank < 2:
        raise ShapeError(f"{node.op} needs inputs of rank >= 2, got {xs} and {ys}")
    try:
        batch = np.broadcast_shapes(xs.dims[:-2], ys.dims[:-2])
    except ValueError:
        raise ShapeError(f"batch dimensions of {xs} and {ys} do not broadcast") from None
    x = ctx.broadcast_to(x, (*batch, *xs.dims[-2:]))
    y = ctx.broadcast_to(y, (*batch, *ys.dims[-2:]))
    nb = len(batch)
    lhs_contracting = nb + (0 if node.bool_attr("adj_x", False) else 1)
    rhs_contracting = nb + (1 if node.bool_attr("adj_y", False) else 0)
    batch_dims = tuple(range(nb))
    dims = DotDims((lhs_contracting,), (rhs_contracting,), batch_dims, batch_dims)
    return ctx.builder.dot(x, y, dims)


def _convert_to_tout(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    """BatchMatMulV3 may multiply e.g. int8 inputs into an int32 result: widen first."""
    tout = node.dtype_attr("Tout", None)
    if tout is None:
        return x
    dtype = PrimitiveType.from_numpy(tout)
    return x if x.array_shape.dtype is dtype else ctx.builder.convert(x, dtype)


# ---- Einsum: parsing -------------------------------------------------------------------------


@dataclass(frozen=True)
class EinsumSpec:
    """An einsum equation with ellipses expanded: one label per dimension of each operand.

    An ellipsis becomes labels ``"...0"``, ``"...1"``, ..., aligned at the right across the
    operands as numpy broadcasting aligns dimensions.
    """

    inputs: tuple[Labels, ...]
    output: Labels


def parse_einsum(equation: str, ranks: Sequence[int]) -> EinsumSpec:
    """Parse ``equation`` for operands of ``ranks``; implicit output if there is no ``->``."""
    text = equation.replace(" ", "")
    left, arrow, right = text.partition("->")
    terms = left.split(",")
    if len(terms) != len(ranks):
        raise UnsupportedError(
            f"einsum equation '{equation}' has {len(terms)} operand(s), the node has {len(ranks)}"
        )
    ellipsis_ranks = [_ellipsis_rank(equation, t, r) for t, r in zip(terms, ranks, strict=True)]
    width = max(ellipsis_ranks, default=0)
    inputs = tuple(_expand(t, k, width) for t, k in zip(terms, ellipsis_ranks, strict=True))
    output = _expand(right, width, width) if arrow else _implicit_output(inputs)
    _check_output(equation, inputs, output)
    return EinsumSpec(inputs, output)


def _letters(term: str) -> str:
    return term.replace("...", "", 1)


def _ellipsis_rank(equation: str, term: str, rank: int) -> int:
    """How many dimensions the term's ellipsis stands for (0 without one)."""
    letters = _letters(term)
    if not letters.isascii() or not all(c.isalpha() for c in letters):
        raise UnsupportedError(f"einsum equation '{equation}': bad term '{term}'")
    if "..." not in term:
        if len(letters) != rank:
            raise ShapeError(f"einsum term '{term}' has {len(letters)} labels for rank {rank}")
        return 0
    if rank < len(letters):
        raise ShapeError(f"einsum term '{term}' has more labels than rank {rank}")
    return rank - len(letters)


def _expand(term: str, ellipsis_rank: int, width: int) -> Labels:
    before, dots, after = term.partition("...")
    if not dots:
        return tuple(term)
    middle = tuple(f"...{i}" for i in range(width - ellipsis_rank, width))
    return (*before, *middle, *after)


def _implicit_output(inputs: Sequence[Labels]) -> Labels:
    """numpy's rule: the ellipsis dims, then the labels used exactly once, sorted."""
    every = [label for labels in inputs for label in labels]
    dots = sorted({label for label in every if label.startswith("...")})
    once = sorted(label for label in set(every) if every.count(label) == 1 and len(label) == 1)
    return (*dots, *once)


def _check_output(equation: str, inputs: Sequence[Labels], output: Labels) -> None:
    known = {label for labels in inputs for label in labels}
    if len(set(output)) != len(output) or not set(output) <= known:
        raise UnsupportedError(
            f"einsum equation '{equation}': every output label must appear once, "
            "and in some operand"
        )


# ---- Einsum: lowering ------------------------------------------------------------------------


@dataclass(frozen=True)
class Labeled:
    """An operand and the label of each of its dimensions."""

    value: Instruction
    labels: Labels

    def size(self, label: str) -> int:
        return self.value.array_shape.dims[self.labels.index(label)]


@translates("Einsum", note="one or two operands; ellipsis, diagonals, sums, broadcast dims")
def einsum(ctx: TranslationContext, node: Node, *xs: Instruction) -> Instruction:
    if len(xs) not in (1, 2):
        raise UnsupportedError(f"Einsum with {len(xs)} operands; aotc supports 1 or 2")
    spec = parse_einsum(node.str_attr("equation"), [x.array_shape.rank for x in xs])
    operands = [Labeled(x, labels) for x, labels in zip(xs, spec.inputs, strict=True)]
    return lower_einsum(ctx, operands, spec.output)


def lower_einsum(
    ctx: TranslationContext, operands: Sequence[Labeled], output: Labels
) -> Instruction:
    """The einsum of one or two labeled operands, with the output's label order."""
    operands = _broadcast_labels(ctx, [_diagonal(ctx, x) for x in operands])
    operands = [_sum_private_labels(ctx, x, operands, output) for x in operands]
    result = operands[0] if len(operands) == 1 else _contract(ctx, operands, output)
    return _transpose_to(ctx, result, output).value


def _diagonal(ctx: TranslationContext, x: Labeled) -> Labeled:
    """Repeated labels within one operand ("ii->i") take the diagonal: mask, then sum."""
    b = ctx.builder
    for second, label in enumerate(x.labels):
        first = x.labels.index(label)
        if first == second:
            continue
        shape = Shape(PrimitiveType.S64, x.value.array_shape.dims)
        on_diagonal = b.compare(b.iota(shape, first), b.iota(shape, second), ComparisonDirection.EQ)
        masked = b.select(on_diagonal, x.value, ctx.splat(0, x.value))
        summed = reduce_dims(ctx, masked, Opcode.ADD, 0, [second])
        return _diagonal(ctx, Labeled(summed, x.labels[:second] + x.labels[second + 1 :]))
    return x


def _broadcast_labels(ctx: TranslationContext, operands: list[Labeled]) -> list[Labeled]:
    """A label of size 1 in one operand and n in the other stretches to n (ellipsis dims)."""
    if len(operands) == 1:
        return operands
    sizes: dict[str, int] = {}
    for x in operands:
        for label in x.labels:
            n, seen = x.size(label), sizes.setdefault(label, x.size(label))
            if 1 not in (n, seen) and n != seen:
                raise ShapeError(f"einsum label '{label}' has sizes {seen} and {n}")
            sizes[label] = n if seen == 1 else seen
    return [_stretch(ctx, x, [sizes[label] for label in x.labels]) for x in operands]


def _stretch(ctx: TranslationContext, x: Labeled, dims: list[int]) -> Labeled:
    return Labeled(ctx.broadcast_to(x.value, dims), x.labels)


def _sum_private_labels(
    ctx: TranslationContext, x: Labeled, operands: Sequence[Labeled], output: Labels
) -> Labeled:
    """Sum out the labels that neither the output nor another operand has."""
    elsewhere = {label for other in operands if other is not x for label in other.labels}
    needed = set(output) | elsewhere
    summed = [d for d, label in enumerate(x.labels) if label not in needed]
    if not summed:
        return x
    kept = tuple(label for label in x.labels if label in needed)
    return Labeled(reduce_dims(ctx, x.value, Opcode.ADD, 0, summed), kept)


def _contract(ctx: TranslationContext, pair: Sequence[Labeled], output: Labels) -> Labeled:
    lhs, rhs = pair
    shared = [label for label in lhs.labels if label in rhs.labels]
    batch = [label for label in shared if label in output]
    contracting = [label for label in shared if label not in output]
    lhs_free = [label for label in lhs.labels if label not in shared]
    rhs_free = [label for label in rhs.labels if label not in shared]
    lhs3 = _collapse(ctx, lhs, [batch, lhs_free, contracting])
    rhs3 = _collapse(ctx, rhs, [batch, contracting, rhs_free])
    dims = DotDims((2,), (1,), (0,), (0,)) if batch else DotDims((1,), (0,))
    product = ctx.builder.dot(lhs3, rhs3, dims)
    labels = (*batch, *lhs_free, *rhs_free)
    sizes = [lhs.size(label) if label in lhs.labels else rhs.size(label) for label in labels]
    return Labeled(_reshape(ctx, product, sizes), labels)


def _collapse(ctx: TranslationContext, x: Labeled, groups: Sequence[Sequence[str]]) -> Instruction:
    """Transpose ``x`` to the groups' label order and make each group one dimension; an empty
    batch group (the first) is dropped rather than made a dimension of size 1."""
    moved = _transpose_to(ctx, x, tuple(label for group in groups for label in group))
    kept = groups if groups[0] else groups[1:]
    sizes = [math.prod(x.size(label) for label in group) for group in kept]
    return _reshape(ctx, moved.value, sizes)


def _transpose_to(ctx: TranslationContext, x: Labeled, labels: Labels) -> Labeled:
    permutation = [x.labels.index(label) for label in labels]
    if permutation == list(range(len(permutation))):
        return x
    return Labeled(ctx.builder.transpose(x.value, permutation), labels)


def _reshape(ctx: TranslationContext, x: Instruction, dims: Sequence[int]) -> Instruction:
    return x if x.array_shape.dims == tuple(dims) else ctx.builder.reshape(x, dims)
