"""Simplifier rules for ``dot``: transposed operands folded into the dimension numbers."""

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


DOT_RULES: list[Rule] = [transposed_operands]
