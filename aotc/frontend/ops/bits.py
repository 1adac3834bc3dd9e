"""Bitwise TF ops: and/or/xor/invert, shifts, population count and Bitcast.

TF's CPU kernels (``cwise_ops.h``) clamp a shift amount into ``[0, bits - 1]`` to avoid C's
undefined behaviour: ``x << 40`` on int32 is ``x << 31``, a negative amount shifts by 0, and
a right shift of a signed type is arithmetic. XLA's shifts instead shift every bit out past
the width, so the amount is clamped first. ``Bitcast`` reinterprets bytes in host order
(little-endian on every target aotc emits for): a narrower type adds a last dimension of
``wide / narrow`` elements, a wider one removes such a dimension.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from aotc.errors import ShapeError, UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.math import binary_elementwise, unary_elementwise
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.ir import Instruction, Opcode
from aotc.hlo.shape import PrimitiveType

_INTEGERS = "integer types"


def _require_integer(node: Node, x: Instruction) -> PrimitiveType:
    dtype = x.array_shape.dtype
    if not dtype.is_integral:
        raise UnsupportedError(f"{node.op} needs an integer input, got {dtype.value}")
    return dtype


def _integer_binary(
    opcode: Opcode, ctx: TranslationContext, node: Node, a: Instruction, b: Instruction
) -> Instruction:
    _require_integer(node, a)
    return binary_elementwise(opcode, ctx, node, a, b)


for _tf_op, _opcode in {
    "BitwiseAnd": Opcode.AND,
    "BitwiseOr": Opcode.OR,
    "BitwiseXor": Opcode.XOR,
}.items():
    translates(_tf_op, note=f"{_INTEGERS}; numpy-style broadcasting")(
        partial(_integer_binary, _opcode)
    )


@translates("Invert", note=_INTEGERS)
def invert(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    _require_integer(node, x)
    return unary_elementwise(Opcode.NOT, ctx, node, x)


def _shift(
    left: bool, ctx: TranslationContext, node: Node, x: Instruction, y: Instruction
) -> Instruction:
    dtype = _require_integer(node, x)
    x, y = ctx.broadcast_operands(x, y)
    b = ctx.builder
    amount = b.clamp(ctx.scalar(0, dtype), y, ctx.scalar(dtype.byte_size * 8 - 1, dtype))
    if left:
        return b.binary(Opcode.SHIFT_LEFT, x, amount)
    right = Opcode.SHIFT_RIGHT_ARITHMETIC if dtype.is_signed_int else Opcode.SHIFT_RIGHT_LOGICAL
    return b.binary(right, x, amount)


_SHIFT_NOTE = f"{_INTEGERS}; the amount clamped to [0, bits - 1] as TF's kernel does"
translates("LeftShift", note=_SHIFT_NOTE)(partial(_shift, True))
translates("RightShift", note=f"{_SHIFT_NOTE}; arithmetic for signed types")(partial(_shift, False))


@translates("PopulationCount", note=f"{_INTEGERS}; uint8 result")
def population_count(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    _require_integer(node, x)
    return ctx.builder.convert(ctx.builder.unary(Opcode.POPCNT, x), PrimitiveType.U8)


# ---- Bitcast ---------------------------------------------------------------------------------


def _unsigned(width: int) -> PrimitiveType:
    return PrimitiveType.from_numpy(np.dtype(f"u{width}"))


def _as_unsigned(ctx: TranslationContext, x: Instruction) -> Instruction:
    dtype = x.array_shape.dtype
    unsigned = _unsigned(dtype.byte_size)
    return x if dtype is unsigned else ctx.builder.bitcast_convert(x, unsigned)


@translates("Bitcast", note="numeric types but bool; little-endian byte order")
def bitcast(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    src, dst = x.array_shape.dtype, PrimitiveType.from_numpy(node.dtype_attr("type"))
    if PrimitiveType.PRED in (src, dst):
        raise UnsupportedError(f"Bitcast from {src.value} to {dst.value}: bool has no bit layout")
    if src is dst:
        return x
    if src.byte_size == dst.byte_size:
        return ctx.builder.bitcast_convert(x, dst)
    if src.byte_size > dst.byte_size:
        parts = _split(ctx, _as_unsigned(ctx, x), dst.byte_size)
    else:
        parts = _join(ctx, node, _as_unsigned(ctx, x), dst.byte_size)
    return parts if parts.array_shape.dtype is dst else ctx.builder.bitcast_convert(parts, dst)


def _split(ctx: TranslationContext, wide: Instruction, width: int) -> Instruction:
    """Each element as its ``k`` narrower pieces along a new last dimension, low bytes first."""
    b, shape = ctx.builder, wide.array_shape
    k, dims = shape.dtype.byte_size // width, (*shape.dims, shape.dtype.byte_size // width)
    spread = b.broadcast(wide, dims, list(range(shape.rank)))
    offsets = np.arange(k, dtype=shape.dtype.numpy) * np.array(8 * width, shape.dtype.numpy)
    amounts = b.broadcast(b.constant(offsets), dims, [shape.rank])
    pieces = b.binary(Opcode.SHIFT_RIGHT_LOGICAL, spread, amounts)
    return b.convert(pieces, _unsigned(width))  # keeps the low bits


def _join(ctx: TranslationContext, node: Node, narrow: Instruction, width: int) -> Instruction:
    """The last dimension's ``k`` pieces (low bytes first) as one wider element."""
    b, shape = ctx.builder, narrow.array_shape
    k, wide = width // shape.dtype.byte_size, _unsigned(width)
    if not shape.dims or shape.dims[-1] != k:
        raise ShapeError(
            f"Bitcast to a {width}-byte type needs a last dimension of {k}, got {shape}"
        )
    rest = shape.dims[:-1]
    total: Instruction | None = None
    for j in range(k):
        starts, limits = [0] * len(rest) + [j], [*rest, j + 1]
        piece = b.convert(b.reshape(b.slice(narrow, starts, limits, [1] * shape.rank), rest), wide)
        moved = b.binary(Opcode.SHIFT_LEFT, piece, ctx.splat(8 * shape.dtype.byte_size * j, piece))
        total = moved if total is None else b.binary(Opcode.OR, total, moved)
    assert total is not None
    return total
