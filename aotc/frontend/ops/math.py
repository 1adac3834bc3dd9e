"""Elementwise math, casts and matrix multiplication."""

from __future__ import annotations

from functools import partial

from aotc.errors import UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.ir import DotDims, Instruction, Opcode
from aotc.hlo.shape import PrimitiveType


def binary_elementwise(
    opcode: Opcode, ctx: TranslationContext, node: Node, a: Instruction, b: Instruction
) -> Instruction:
    a, b = ctx.broadcast_operands(a, b)
    return ctx.builder.binary(opcode, a, b)


def unary_elementwise(
    opcode: Opcode, ctx: TranslationContext, node: Node, x: Instruction
) -> Instruction:
    return ctx.builder.unary(opcode, x)


def float_only(
    opcode: Opcode, ctx: TranslationContext, node: Node, *inputs: Instruction
) -> Instruction:
    """An op TF defines for floating-point types only (Sqrt, Exp, RealDiv, ...)."""
    dtype = inputs[0].array_shape.dtype
    if not dtype.is_float:
        raise UnsupportedError(f"{node.op} needs a floating-point input, got {dtype.value}")
    if len(inputs) == 1:
        return unary_elementwise(opcode, ctx, node, inputs[0])
    return binary_elementwise(opcode, ctx, node, *inputs)


_BINARY = {
    "Add": Opcode.ADD, "AddV2": Opcode.ADD, "Sub": Opcode.SUBTRACT, "Mul": Opcode.MULTIPLY,
    "Div": Opcode.DIVIDE, "Maximum": Opcode.MAXIMUM, "Minimum": Opcode.MINIMUM,
}  # fmt: skip
_FLOAT_ONLY = {
    "RealDiv": Opcode.DIVIDE, "Sqrt": Opcode.SQRT, "Rsqrt": Opcode.RSQRT, "Exp": Opcode.EXP,
    "Log": Opcode.LOG, "Tanh": Opcode.TANH, "Sigmoid": Opcode.LOGISTIC, "Erf": Opcode.ERF,
}  # fmt: skip
_UNARY = {"Neg": Opcode.NEGATE, "Abs": Opcode.ABS}

for _tf_op, _opcode in _BINARY.items():
    translates(_tf_op, note="numpy-style broadcasting")(partial(binary_elementwise, _opcode))
for _tf_op, _opcode in _FLOAT_ONLY.items():
    translates(_tf_op, note="floating-point types")(partial(float_only, _opcode))
for _tf_op, _opcode in _UNARY.items():
    translates(_tf_op)(partial(unary_elementwise, _opcode))


@translates("Square")
def square(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return ctx.builder.binary(Opcode.MULTIPLY, x, x)


@translates("Erfc", note="floating-point types; computed as 1 - erf(x)")
def erfc(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    erf = float_only(Opcode.ERF, ctx, node, x)
    return ctx.builder.binary(Opcode.SUBTRACT, ctx.splat(1, x), erf)


@translates("Cast", note="between float16/32/64, (u)int8-64 and bool")
def cast(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    dtype = PrimitiveType.from_numpy(node.attr("DstT"))
    if dtype == x.array_shape.dtype:
        return x
    return ctx.builder.convert(x, dtype)


@translates("MatMul", note="transpose_a, transpose_b")
def matmul(ctx: TranslationContext, node: Node, a: Instruction, b: Instruction) -> Instruction:
    lhs_contracting = 0 if node.attr("transpose_a", False) else 1
    rhs_contracting = 1 if node.attr("transpose_b", False) else 0
    return ctx.builder.dot(a, b, DotDims((lhs_contracting,), (rhs_contracting,)))
