"""Input projections out of recurrent loops (a step of ``while-simplify``).

An RNN step multiplies the input of step ``t`` by weights: ``dot(reshape(dynamic-slice(x, t,
0, ...)), W)``, where ``x`` (all the steps) and ``W`` do not change in the loop and ``t`` is a
loop counter. That dot becomes ``dynamic-slice(dot(x, W), t, 0, ...)``: the product of every
step is loop-invariant, so the loop-invariant code motion that runs next computes it once
before the loop, as one large GEMM instead of a small one per step, and only ``h @ U`` stays
in the loop: what the best RNN runtimes do. Row ``t`` of the product is the product of row
``t`` (the slice is full in every other dimension), and an index out of range is clamped the
same way in both forms, so the rewrite is exact whatever the index.
"""

from __future__ import annotations

import numpy as np

from aotc.hlo.builder import NameUniquer
from aotc.hlo.ir import DotDims, DynamicSliceAttrs, Instruction, Opcode, TupleIndex
from aotc.hlo.loop_analysis import counter_step
from aotc.hlo.shape import Shape
from aotc.hlo.shape_inference import infer_dot_shape
from aotc.passes.rewrite import insert_before, remove_dead, replace_all_uses
from aotc.passes.while_carry import CarriedLoop, invariant_instructions


def project_before_loop(loop: CarriedLoop, names: NameUniquer) -> bool:
    """Rewrite each dot of a counter-indexed row of an invariant value by invariant weights."""
    body = loop.body
    invariant = invariant_instructions(loop)
    changed = False
    dots = [i for i in body.instructions if i.opcode is Opcode.DOT]
    for dot in [d for d in dots if not d.attrs_as(DotDims).lhs_batch]:
        for side in (0, 1):
            row = _counter_row(loop, dot.operands[side], invariant)
            if row is not None and id(dot.operands[1 - side]) in invariant:
                _slice_of_product(loop, dot, side, row, names)
                changed = True
                break
    if changed:
        remove_dead(body)
    return changed


def _counter_row(
    loop: CarriedLoop, value: Instruction, invariant: dict[int, Instruction]
) -> Instruction | None:
    """The ``dynamic-slice`` when ``value`` is ``reshape(dynamic-slice(x, counter, ...))``, one
    whole row of an invariant ``x`` (of more than one row), with the leading 1 dropped."""
    if value.opcode is not Opcode.RESHAPE or value.operands[0].opcode is not Opcode.DYNAMIC_SLICE:
        return None
    row = value.operands[0]
    whole, index = row.operands[0], row.operands[1]
    dims = whole.array_shape.dims
    if id(whole) not in invariant or len(dims) < 2 or dims[0] < 2:
        return None
    if row.array_shape.dims != (1, *dims[1:]) or value.array_shape.dims != dims[1:]:
        return None
    return row if _is_counter(loop, index) else None


def _is_counter(loop: CarriedLoop, index: Instruction) -> bool:
    """Whether ``index`` is a carry element the body steps by a constant."""
    param = loop.body.parameters[0]
    if index.opcode is not Opcode.GET_TUPLE_ELEMENT or index.operands[0] is not param:
        return False
    return counter_step(loop.body, index.attrs_as(TupleIndex).index) is not None


def _slice_of_product(
    loop: CarriedLoop, dot: Instruction, side: int, row: Instruction, names: NameUniquer
) -> None:
    """Replace ``dot`` (its operand ``side`` reads ``row``) by a slice of the whole product."""
    whole, counter = row.operands[0], row.operands[1]
    dims = dot.attrs_as(DotDims)
    operands = [dot.operands[0], dot.operands[1]]
    operands[side] = whole
    wide = _widened(dims, side)
    shape = infer_dot_shape(operands[0].array_shape, operands[1].array_shape, wide)
    product = Instruction(names.get("dot"), Opcode.DOT, shape, operands, wide)
    at = 0 if side == 0 else operands[0].array_shape.rank - len(dims.lhs_contracting)
    zero = _zero(counter, names)
    starts = [counter if d == at else zero for d in range(shape.rank)]
    sizes = tuple(1 if d == at else n for d, n in enumerate(shape.dims))
    step_shape = Shape(shape.dtype, sizes)
    step = Instruction(
        names.get("dynamic-slice"), Opcode.DYNAMIC_SLICE, step_shape, [product, *starts],
        DynamicSliceAttrs(sizes),
    )  # fmt: skip
    result = Instruction(names.get("reshape"), Opcode.RESHAPE, dot.shape, [step])
    insert_before(loop.body, dot, [product, zero, step, result])
    replace_all_uses(loop.body, dot, result)


def _widened(dims: DotDims, side: int) -> DotDims:
    """The dimension numbers with operand ``side`` given a new leading (free) dimension."""
    lhs = tuple(d + (side == 0) for d in dims.lhs_contracting)
    rhs = tuple(d + (side == 1) for d in dims.rhs_contracting)
    return DotDims(lhs, rhs)


def _zero(like: Instruction, names: NameUniquer) -> Instruction:
    literal = np.zeros((), like.array_shape.dtype.numpy)
    return Instruction(names.get("constant"), Opcode.CONSTANT, like.shape, literal=literal)
