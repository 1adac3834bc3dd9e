"""Reductions: Sum, Mean, Prod, Max, Min, All, Any, ArgMax, ArgMin.

Axes come from a constant input (a Const or any feed-independent subgraph); negative axes
count from the end, repeated axes count once and an empty axes list leaves the input as is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial

import numpy as np

from aotc.errors import ShapeError, UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.ir import ComparisonDirection, Computation, Instruction, Opcode
from aotc.hlo.shape import PrimitiveType, Shape

Scalar = float | int | bool


def lowest(dtype: PrimitiveType) -> Scalar:
    """The identity of ``maximum`` over ``dtype``: -inf, the smallest integer, or false."""
    if dtype.is_float:
        return -math.inf
    return False if dtype is PrimitiveType.PRED else int(np.iinfo(dtype.numpy).min)


def highest(dtype: PrimitiveType) -> Scalar:
    """The identity of ``minimum`` over ``dtype``: inf, the largest integer, or true."""
    if dtype.is_float:
        return math.inf
    return True if dtype is PrimitiveType.PRED else int(np.iinfo(dtype.numpy).max)


def reduce_dims(
    ctx: TranslationContext, x: Instruction, opcode: Opcode, init: Scalar, dims: Sequence[int]
) -> Instruction:
    """``x`` reduced over ``dims`` with the scalar op ``opcode`` starting from ``init``."""
    dtype = x.array_shape.dtype
    reducer = ctx.module.reducer(opcode, dtype)
    return ctx.builder.reduce([x], [ctx.scalar(init, dtype)], dims, reducer)


def reduction_axes(ctx: TranslationContext, x: Instruction, axes: Instruction) -> list[int]:
    """The constant axes input as sorted, distinct, non-negative dimensions of ``x``."""
    values = ctx.constant_value(axes, "axes input (input 1)").reshape(-1)
    rank = x.array_shape.rank
    result = set()
    for axis in (int(a) for a in values):
        if not -rank <= axis < max(rank, 1):
            raise ShapeError(f"axis {axis} is out of range for {x.shape}")
        result.add(axis % rank if rank else 0)
    return sorted(result) if rank else []


def _keep_dims(
    ctx: TranslationContext, node: Node, source: Shape, dims: Sequence[int], y: Instruction
) -> Instruction:
    if not node.bool_attr("keep_dims", False):
        return y
    kept = [1 if d in dims else n for d, n in enumerate(source.dims)]
    return ctx.builder.reshape(y, kept)


_REDUCERS = {
    "Sum": (Opcode.ADD, lambda dtype: 0),
    "Prod": (Opcode.MULTIPLY, lambda dtype: 1),
    "Max": (Opcode.MAXIMUM, lowest),
    "Min": (Opcode.MINIMUM, highest),
    "All": (Opcode.AND, lambda dtype: True),
    "Any": (Opcode.OR, lambda dtype: False),
}


def reduction(
    tf_op: str, ctx: TranslationContext, node: Node, x: Instruction, axes: Instruction
) -> Instruction:
    opcode, identity = _REDUCERS[tf_op]
    dims = reduction_axes(ctx, x, axes)
    if not dims:
        return x
    shape = x.array_shape
    if tf_op == "Sum" and shape.dtype is PrimitiveType.BF16:  # TF sums bfloat16 in float32
        wide = reduce_dims(ctx, ctx.builder.convert(x, PrimitiveType.F32), opcode, 0, dims)
        return _keep_dims(ctx, node, shape, dims, ctx.builder.convert(wide, shape.dtype))
    return _keep_dims(
        ctx, node, shape, dims, reduce_dims(ctx, x, opcode, identity(shape.dtype), dims)
    )


for _tf_op in _REDUCERS:
    translates(_tf_op, note="keep_dims; constant axes, negative or empty")(
        partial(reduction, _tf_op)
    )


# TF's Mean sums narrow types in a wider one (its reduction_ops.h CASTING_SPECIALIZATION), so
# e.g. the mean of uint8 pixels does not wrap.
_MEAN_ACCUMULATOR = {
    **dict.fromkeys((PrimitiveType.S8, PrimitiveType.S16, PrimitiveType.S32), PrimitiveType.S64),
    **dict.fromkeys((PrimitiveType.U8, PrimitiveType.U16, PrimitiveType.U32), PrimitiveType.U64),
    PrimitiveType.F16: PrimitiveType.F32,
    PrimitiveType.BF16: PrimitiveType.F32,
}


@translates("Mean", note="keep_dims; constant axes; integer means truncate, as TF")
def mean(ctx: TranslationContext, node: Node, x: Instruction, axes: Instruction) -> Instruction:
    dims = reduction_axes(ctx, x, axes)
    if not dims:
        return x
    shape, b = x.array_shape, ctx.builder
    wide = _MEAN_ACCUMULATOR.get(shape.dtype, shape.dtype)
    total = reduce_dims(ctx, x if wide is shape.dtype else b.convert(x, wide), Opcode.ADD, 0, dims)
    count = math.prod(shape.dims[d] for d in dims)
    # Dividing by the count (not multiplying by 1/count) is what TF does, and for integers
    # it truncates toward zero as TF's integer mean does.
    averaged = b.binary(Opcode.DIVIDE, total, ctx.splat(count, total))
    if wide is not shape.dtype:
        averaged = b.convert(averaged, shape.dtype)
    return _keep_dims(ctx, node, shape, dims, averaged)


# ---- ArgMax / ArgMin -------------------------------------------------------------------------

_INDEX_TYPES = (PrimitiveType.S32, PrimitiveType.S64)


def arg_reducer(
    module: ModuleBuilder,
    direction: ComparisonDirection,
    dtype: PrimitiveType,
    index_type: PrimitiveType,
) -> Computation:
    """``(value, index), (value, index) -> (value, index)``: the pair whose value compares
    ``direction`` (GT for argmax) against the other's; the smaller index on ties.

    NaN loses to every number (TF's CPU kernel skips NaNs; an all-NaN row gives index 0), so
    the reducer picks by one total order: any reduction order gives the same result.
    """
    kind = "argmax" if direction is ComparisonDirection.GT else "argmin"

    def make(b: ComputationBuilder) -> Instruction:
        a, a_index = b.parameter(0, Shape(dtype), "lhs"), b.parameter(1, Shape(index_type), "lhs_i")
        c, c_index = b.parameter(2, Shape(dtype), "rhs"), b.parameter(3, Shape(index_type), "rhs_i")
        beats, ties = _beats_and_ties(b, a, c, direction)
        first = b.compare(a_index, c_index, ComparisonDirection.LT)
        take_a = b.binary(Opcode.OR, beats, b.binary(Opcode.AND, ties, first))
        return b.tuple([b.select(take_a, a, c), b.select(take_a, a_index, c_index)])

    key = (kind, dtype, index_type)
    return module.cached_computation(key, f"{kind}_{dtype.value}_{index_type.value}", make)


def _beats_and_ties(
    b: ComputationBuilder, a: Instruction, c: Instruction, direction: ComparisonDirection
) -> tuple[Instruction, Instruction]:
    beats = b.compare(a, c, direction)  # false when either is NaN
    ties = b.compare(a, c, ComparisonDirection.EQ)
    if not a.array_shape.dtype.is_float:
        return beats, ties
    a_nan = b.compare(a, a, ComparisonDirection.NE)
    c_nan = b.compare(c, c, ComparisonDirection.NE)
    beats = b.binary(Opcode.OR, beats, b.binary(Opcode.AND, c_nan, b.unary(Opcode.NOT, a_nan)))
    return beats, b.binary(Opcode.OR, ties, b.binary(Opcode.AND, a_nan, c_nan))


def arg_reduction(
    direction: ComparisonDirection,
    ctx: TranslationContext,
    node: Node,
    x: Instruction,
    axis: Instruction,
) -> Instruction:
    index_type = PrimitiveType.from_numpy(node.dtype_attr("output_type", np.dtype(np.int64)))
    if index_type not in _INDEX_TYPES:
        raise UnsupportedError(
            f"attribute output_type={index_type.numpy.name} is not supported; use int32 or int64"
        )
    shape = x.array_shape
    axes = reduction_axes(ctx, x, axis)
    if len(axes) != 1 or shape.rank == 0:
        raise ShapeError(f"{node.op} needs one axis of an input of rank >= 1, got {axes}")
    worst = lowest if direction is ComparisonDirection.GT else highest
    inits = [ctx.scalar(worst(shape.dtype), shape.dtype), ctx.scalar(0, index_type)]
    indices = ctx.builder.iota(Shape(index_type, shape.dims), axes[0])
    reducer = arg_reducer(ctx.module, direction, shape.dtype, index_type)
    pairs = ctx.builder.reduce([x, indices], inits, axes, reducer)
    return ctx.builder.get_tuple_element(pairs, 1)


_ARG_NOTE = "constant axis; output_type int32 or int64; ties give the first index, NaN is skipped"
translates("ArgMax", note=_ARG_NOTE)(partial(arg_reduction, ComparisonDirection.GT))
translates("ArgMin", note=_ARG_NOTE)(partial(arg_reduction, ComparisonDirection.LT))
