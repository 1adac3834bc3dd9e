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

from aotc.errors import UnsupportedError
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


@translates("Bitcast", note="numeric types but bool; little-endian byte order")
def bitcast(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    src, dst = x.array_shape.dtype, PrimitiveType.from_numpy(node.dtype_attr("type"))
    if PrimitiveType.PRED in (src, dst):
        raise UnsupportedError(f"Bitcast from {src.value} to {dst.value}: bool has no bit layout")
    if src is dst:
        return x
    # a width change adds or drops a last dimension, as XLA's bitcast-convert does (lowered
    # to shifts by passes/bitcast_width.py)
    return ctx.builder.bitcast_convert(x, dst)
