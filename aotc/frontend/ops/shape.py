"""Shape queries and value-creating ops: Shape, Size, Rank, Fill, ZerosLike, OnesLike, Range.

Shapes are static, so the shape queries fold to constants; that is also what lets shape
arithmetic (Keras' ``Shape -> StridedSlice -> Pack -> Reshape``) feed a constant-only input.
"""

from __future__ import annotations

import math

import numpy as np

from aotc.errors import ShapeError, UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.array import constant_ints, reshape_if_needed
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.ir import Instruction, Opcode
from aotc.hlo.shape import PrimitiveType, Shape


def _out_type(node: Node) -> np.dtype:
    dtype = node.dtype_attr("out_type", np.dtype(np.int32))
    if dtype not in (np.int32, np.int64):
        raise UnsupportedError(f"out_type {dtype} is not supported; use int32 or int64")
    return dtype


@translates("Shape", note="folded to a constant; out_type int32 or int64")
def shape(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return ctx.builder.constant(np.array(x.array_shape.dims, dtype=_out_type(node)))


@translates("ShapeN", note="folded to constants; out_type int32 or int64")
def shape_n(ctx: TranslationContext, node: Node, *xs: Instruction) -> list[Instruction]:
    dtype = _out_type(node)
    return [ctx.builder.constant(np.array(x.array_shape.dims, dtype=dtype)) for x in xs]


@translates("Size", note="folded to a constant; out_type int32 or int64")
def size(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return ctx.builder.constant(np.array(x.array_shape.size, dtype=_out_type(node)))


@translates("Rank", note="folded to a constant")
def rank(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return ctx.builder.constant(np.array(x.array_shape.rank, dtype=np.int32))


@translates("Fill", note="constant dims; the value may be computed")
def fill(ctx: TranslationContext, node: Node, dims: Instruction, value: Instruction) -> Instruction:
    out = constant_ints(ctx, dims, "dims input")
    if any(d < 0 for d in out):
        raise ShapeError(f"Fill dims {out} must be non-negative")
    scalar = reshape_if_needed(ctx.builder, value, [])
    return ctx.builder.broadcast(scalar, out, []) if out else scalar


@translates("ZerosLike")
def zeros_like(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return ctx.splat(0, x)


@translates("OnesLike")
def ones_like(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return ctx.splat(1, x)


# Longer ranges stay symbolic (an iota scaled and shifted, as tf2xla lowers Range) instead of
# a constant: Range(0, 5e8) must not cost gigabytes of compile memory.
_LONGEST_CONSTANT_RANGE = 1 << 16


@translates("Range", note="constant start, limit and delta")
def range_op(
    ctx: TranslationContext, node: Node, start: Instruction, limit: Instruction, delta: Instruction
) -> Instruction:
    dtype = node.dtype_attr("Tidx", start.array_shape.dtype.numpy)
    first, stop, step = (
        ctx.constant_value(v, "Range input").reshape(()) for v in (start, limit, delta)
    )
    count = range_count(first, stop, step, dtype)
    if count <= _LONGEST_CONSTANT_RANGE:
        return ctx.builder.constant(range_values(first, stop, step, dtype))
    b, ptype = ctx.builder, PrimitiveType.from_numpy(dtype)
    steps = b.iota(Shape(ptype, (count,)), 0)
    scale, shift = (b.broadcast(b.constant(v, ptype), (count,), ()) for v in (step, first))
    return b.binary(Opcode.ADD, b.binary(Opcode.MULTIPLY, steps, scale), shift)


def range_count(start: np.ndarray, limit: np.ndarray, delta: np.ndarray, dtype: np.dtype) -> int:
    """TF's element count of Range(start, limit, delta); empty or endless ranges are errors."""
    finite = all(np.isfinite(v) for v in (start, limit, delta))
    if not finite or delta == 0 or (delta > 0 and start > limit) or (delta < 0 and start < limit):
        raise ShapeError(f"Range({start}, {limit}, {delta}) is empty or endless")
    if dtype.kind in "iu":
        return (abs(int(limit) - int(start)) + abs(int(delta)) - 1) // abs(int(delta))
    return math.ceil(abs((float(limit) - float(start)) / float(delta)))


def range_values(
    start: np.ndarray, limit: np.ndarray, delta: np.ndarray, dtype: np.dtype
) -> np.ndarray:
    """TF's Range: ``start + i * delta`` for ``i`` below TF's element count."""
    steps = np.arange(range_count(start, limit, delta, dtype), dtype=dtype)
    return (np.asarray(start, dtype) + steps * np.asarray(delta, dtype)).astype(dtype)
