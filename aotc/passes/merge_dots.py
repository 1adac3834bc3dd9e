"""Merge dots that multiply one input by different constant weights into one dot.

Attention's query, key and value projections (and any other layers reading the same input)
are three GEMMs ``x @ Wq``, ``x @ Wk``, ``x @ Wv``. One GEMM ``x @ [Wq | Wk | Wv]`` packs ``x``
once, runs one wider tile loop and makes one call; each original dot becomes a ``slice`` of its
columns, which the fusion pass fuses into the consumers (bias adds, head transposes).

A dot takes part when it is unbatched, its rhs is a rank-2 constant, and its value is not
the start of an output fusion (its only user elementwise: a bias or activation epilogue that
runs in the GEMM's tile store, which a slice in between would forbid). Dots merge when they
read the same lhs with the same dimension numbers and element types.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from aotc.hlo.ir import Computation, DotDims, Instruction, Module, Opcode
from aotc.hlo.opcodes import ELEMENTWISE
from aotc.passes.rewrite import RewriteContext, nonfusion_computations, rewrite_module

GroupKey = tuple[object, ...]


@dataclass(frozen=True)
class MergeDots:
    """Dots of one lhs with constant rank-2 weights -> one dot of the concatenated weights
    and a slice per original dot."""

    name: ClassVar[str] = "merge-dots"

    def run(self, module: Module) -> bool:
        groups = {
            key: dots
            for comp in nonfusion_computations(module)
            for key, dots in _groups(comp).items()
            if len(dots) > 1
        }
        if not groups:
            return False
        member = {id(d): key for key, dots in groups.items() for d in dots}
        merged: dict[GroupKey, Instruction] = {}

        def rewrite(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
            key = member.get(id(inst))
            if key is None:
                return None
            if key not in merged:
                merged[key] = _merged_dot(ctx, groups[key])
            return _columns(ctx, merged[key], groups[key], inst)

        return rewrite_module(module, rewrite)


def _groups(comp: Computation) -> dict[GroupKey, list[Instruction]]:
    """The candidate dots of ``comp`` by what must be equal for them to merge."""
    users = comp.users()
    groups: dict[GroupKey, list[Instruction]] = defaultdict(list)
    for inst in comp.instructions:
        if _candidate(inst, users.get(id(inst), []), comp):
            lhs, rhs = inst.operands
            key = (id(comp), id(lhs), inst.attrs, rhs.array_shape.dtype, inst.array_shape.dtype)
            groups[key].append(inst)
    return groups


def _candidate(dot: Instruction, users: Sequence[Instruction], comp: Computation) -> bool:
    if dot.opcode is not Opcode.DOT or dot is comp.root:
        return False
    d = dot.attrs_as(DotDims)
    rhs = dot.operands[1]
    if d.lhs_batch or rhs.opcode is not Opcode.CONSTANT or rhs.literal is None:
        return False
    if rhs.array_shape.rank != 2 or len(d.rhs_contracting) != 1:
        return False
    return not (len(users) == 1 and users[0].opcode in ELEMENTWISE)


def _merged_dot(ctx: RewriteContext, dots: Sequence[Instruction]) -> Instruction:
    """``dot(x, concatenate(w...))`` along the weights' free (column) dimension."""
    d = dots[0].attrs_as(DotDims)
    free = 1 - d.rhs_contracting[0]
    weights = [np.asarray(dot.operands[1].literal) for dot in dots]
    columns = ctx.b.constant(
        np.concatenate(weights, axis=free), dots[0].operands[1].array_shape.dtype
    )
    return ctx.b.dot(dots[0].operands[0], columns, d)


def _columns(
    ctx: RewriteContext, merged: Instruction, dots: Sequence[Instruction], dot: Instruction
) -> Instruction:
    """``dot``'s columns of the merged result (the rhs free dimension is the last)."""
    start = 0
    for other in dots:
        if other is dot:
            break
        start += other.array_shape.dims[-1]
    dims = dot.array_shape.dims
    starts = [0] * (len(dims) - 1) + [start]
    limits = [*dims[:-1], start + dims[-1]]
    return ctx.b.slice(merged, starts, limits)
