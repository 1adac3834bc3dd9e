"""Simplifier rules for ``dot``: transposed operands folded into the dimension numbers, weights
broadcast over batch dimensions unbatched, and reshapes that flatten the lhs rows moved after
the dot (so GEMM sees constant weights and its epilogue the bias and activation that follow)."""

from __future__ import annotations

from aotc.hlo.ir import Dimensions, DotDims, Instruction, Opcode
from aotc.passes.rewrite import RewriteContext, Rule


def _untransposed(
    operand: Instruction, batch: tuple[int, ...], contracting: tuple[int, ...]
) -> tuple[Instruction, tuple[int, ...], tuple[int, ...]] | None:
    """``(x, batch', contracting')`` for ``operand = transpose(x, perm)``, if the free
    dimensions keep their order through ``perm`` (a dot's result lists them in order)."""
    if operand.opcode is not Opcode.TRANSPOSE:
        return None
    perm = operand.attrs_as(Dimensions).dimensions
    free = [perm[d] for d in range(len(perm)) if d not in batch and d not in contracting]
    if free != sorted(free):
        return None
    return operand.operands[0], tuple(perm[d] for d in batch), tuple(perm[d] for d in contracting)


def transposed_operands(ctx: RewriteContext, dot: Instruction) -> Instruction | None:
    """``dot(transpose(a), transpose(b))`` -> ``dot(a, b)`` with remapped dimension numbers."""
    d = dot.attrs_as(DotDims)
    lhs = _untransposed(dot.operands[0], d.lhs_batch, d.lhs_contracting)
    rhs = _untransposed(dot.operands[1], d.rhs_batch, d.rhs_contracting)
    if lhs is None and rhs is None:
        return None
    a, lhs_batch, lhs_contracting = lhs or (dot.operands[0], d.lhs_batch, d.lhs_contracting)
    b, rhs_batch, rhs_contracting = rhs or (dot.operands[1], d.rhs_batch, d.rhs_contracting)
    dims = DotDims(lhs_contracting, rhs_contracting, lhs_batch, rhs_batch)
    return ctx.b.dot(a, b, dims)


def broadcast_rhs(ctx: RewriteContext, dot: Instruction) -> Instruction | None:
    """``dot(x, broadcast(w))`` over leading batch dimensions that only the broadcast adds ->
    ``dot(x, w)`` with x's batch dimensions free (einsum ``abc,cd->abd``): one GEMM on
    weights that can be packed at compile time, instead of one per batch on a copy.

    The result lists x's free dimensions in order, then w's; that is the batched result's
    order when the batch dimensions lead x and the broadcast keeps w's dimensions in order.
    """
    d = dot.attrs_as(DotDims)
    x, rhs = dot.operands
    nb = len(d.lhs_batch)
    if nb == 0 or rhs.opcode is not Opcode.BROADCAST or d.lhs_batch != tuple(range(nb)):
        return None
    kept = rhs.attrs_as(Dimensions).dimensions  # the rhs dimensions that come from w
    if (
        list(kept) != sorted(kept)
        or set(kept) & set(d.rhs_batch)
        or len(kept) + nb != rhs.array_shape.rank
    ):
        return None
    contracting = tuple(kept.index(c) for c in d.rhs_contracting)
    return ctx.b.dot(x, rhs.operands[0], DotDims(d.lhs_contracting, contracting))


def reshaped_lhs(ctx: RewriteContext, dot: Instruction) -> Instruction | None:
    """``dot(reshape(x), w)`` where the reshape only regroups x's rows (the dimensions before
    the trailing contracting ones) -> ``reshape(dot(x, w))``: row-major, the rows are the same
    elements in the same order. Keras' Dense on a rank-3 input flattens it this way, and the
    reshape between the dot and its bias would keep the bias out of the GEMM's epilogue."""
    d = dot.attrs_as(DotDims)
    lhs = dot.operands[0]
    if d.lhs_batch or lhs.opcode is not Opcode.RESHAPE:
        return None
    x = lhs.operands[0]
    c, rank = len(d.lhs_contracting), lhs.array_shape.rank
    if c == 0 or c >= x.array_shape.rank or d.lhs_contracting != tuple(range(rank - c, rank)):
        return None
    if x.array_shape.dims[-c:] != lhs.array_shape.dims[-c:]:
        return None
    contracting = tuple(range(x.array_shape.rank - c, x.array_shape.rank))
    flat = ctx.b.dot(x, dot.operands[1], DotDims(contracting, d.rhs_contracting))
    return ctx.b.reshape(flat, dot.array_shape.dims)


DOT_RULES: list[Rule] = [transposed_operands, broadcast_rhs, reshaped_lhs]
