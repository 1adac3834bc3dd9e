"""Elementwise math, comparisons, logic, selects and casts.

Every TF op here is built from existing HLO ops; where TF's semantics differ from the obvious
HLO op (floor division, Python-style modulo, banker's rounding, Softplus thresholds) the
translator spells out TF's formula.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from aotc.errors import ShapeError, UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.reduction import reduce_dims
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.ir import BINARY_ELEMENTWISE, ComparisonDirection, Instruction, Opcode
from aotc.hlo.shape import PrimitiveType

Direction = ComparisonDirection


def binary_elementwise(
    opcode: Opcode, ctx: TranslationContext, node: Node, a: Instruction, b: Instruction
) -> Instruction:
    a, b = ctx.broadcast_operands(a, b)
    return ctx.builder.binary(opcode, a, b)


def unary_elementwise(
    opcode: Opcode, ctx: TranslationContext, node: Node, x: Instruction
) -> Instruction:
    return ctx.builder.unary(opcode, x)


def require_float(node: Node, x: Instruction) -> None:
    """TF registers some ops for floating-point types only; say so instead of miscompiling."""
    dtype = x.array_shape.dtype
    if not dtype.is_float:
        raise UnsupportedError(f"{node.op} needs a floating-point input, got {dtype.value}")


def float_unary(opcode: Opcode, ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    """A unary op TF defines for floating-point types only (Sqrt, Exp, ...)."""
    require_float(node, x)
    return unary_elementwise(opcode, ctx, node, x)


def float_binary(
    opcode: Opcode, ctx: TranslationContext, node: Node, a: Instruction, b: Instruction
) -> Instruction:
    """A binary op TF defines for floating-point types only (RealDiv, ...)."""
    require_float(node, a)
    return binary_elementwise(opcode, ctx, node, a, b)


def compare(
    direction: ComparisonDirection,
    ctx: TranslationContext,
    node: Node,
    a: Instruction,
    b: Instruction,
) -> Instruction:
    a, b = ctx.broadcast_operands(a, b)
    return ctx.builder.compare(a, b, direction)


_BINARY = {
    "Add": Opcode.ADD, "AddV2": Opcode.ADD, "Sub": Opcode.SUBTRACT, "Mul": Opcode.MULTIPLY,
    "Div": Opcode.DIVIDE, "Maximum": Opcode.MAXIMUM, "Minimum": Opcode.MINIMUM,
    "Pow": Opcode.POWER, "LogicalAnd": Opcode.AND, "LogicalOr": Opcode.OR,
}  # fmt: skip
_FLOAT_ONLY = {
    "Sqrt": Opcode.SQRT, "Rsqrt": Opcode.RSQRT,
    "Log": Opcode.LOG, "Tanh": Opcode.TANH, "Sigmoid": Opcode.LOGISTIC, "Erf": Opcode.ERF,
    "Floor": Opcode.FLOOR, "Ceil": Opcode.CEIL, "Log1p": Opcode.LOG1P, "Expm1": Opcode.EXPM1,
    "Sin": Opcode.SINE, "Cos": Opcode.COSINE, "IsFinite": Opcode.IS_FINITE,
}  # fmt: skip
_UNARY = {"Neg": Opcode.NEGATE, "Abs": Opcode.ABS, "Sign": Opcode.SIGN, "LogicalNot": Opcode.NOT}
_COMPARISONS = {
    "Equal": Direction.EQ, "NotEqual": Direction.NE, "Less": Direction.LT,
    "LessEqual": Direction.LE, "Greater": Direction.GT, "GreaterEqual": Direction.GE,
}  # fmt: skip

for _tf_op, _opcode in _BINARY.items():
    translates(_tf_op, note="numpy-style broadcasting")(partial(binary_elementwise, _opcode))
for _tf_op, _opcode in _FLOAT_ONLY.items():
    rule = float_binary if _opcode in BINARY_ELEMENTWISE else float_unary
    translates(_tf_op, note="floating-point types")(partial(rule, _opcode))
for _tf_op, _opcode in _UNARY.items():
    translates(_tf_op)(partial(unary_elementwise, _opcode))
for _tf_op, _direction in _COMPARISONS.items():
    translates(_tf_op, note="numpy-style broadcasting")(partial(compare, _direction))


@translates("RealDiv", note="floating-point and complex types; numpy-style broadcasting")
def real_div(ctx: TranslationContext, node: Node, a: Instruction, b: Instruction) -> Instruction:
    if not a.array_shape.dtype.is_complex:
        require_float(node, a)
    return binary_elementwise(Opcode.DIVIDE, ctx, node, a, b)


@translates("Exp", note="floating-point and complex types")
def exp(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    if not x.array_shape.dtype.is_complex:
        require_float(node, x)
    return ctx.builder.unary(Opcode.EXP, x)


@translates("Square")
def square(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return ctx.builder.binary(Opcode.MULTIPLY, x, x)


@translates("SquaredDifference", note="numpy-style broadcasting")
def squared_difference(
    ctx: TranslationContext, node: Node, a: Instruction, b: Instruction
) -> Instruction:
    difference = binary_elementwise(Opcode.SUBTRACT, ctx, node, a, b)
    return ctx.builder.binary(Opcode.MULTIPLY, difference, difference)


@translates("AddN", note="inputs of one shape")
def add_n(
    ctx: TranslationContext, node: Node, first: Instruction, *rest: Instruction
) -> Instruction:
    total = first
    for x in rest:
        if x.array_shape != total.array_shape:
            raise ShapeError(f"AddN needs inputs of one shape, got {total.shape} and {x.shape}")
        total = ctx.builder.binary(Opcode.ADD, total, x)
    return total


@translates("Erfc", note="floating-point types; computed as 1 - erf(x)")
def erfc(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    erf = float_unary(Opcode.ERF, ctx, node, x)
    return ctx.builder.binary(Opcode.SUBTRACT, ctx.splat(1, x), erf)


@translates("Reciprocal", "Inv", note="1 / x (integer division for integers)")
def reciprocal(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return ctx.builder.binary(Opcode.DIVIDE, ctx.splat(1, x), x)


@translates("Round", note="round half to even, as TF; integers unchanged")
def round_half_even(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return ctx.builder.unary(Opcode.ROUND_EVEN, x) if x.array_shape.dtype.is_float else x


@translates("IsNan", note="floating-point types")
def is_nan(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    require_float(node, x)
    return ctx.builder.compare(x, x, Direction.NE)  # only NaN is unequal to itself


@translates("IsInf", note="floating-point types")
def is_inf(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    require_float(node, x)
    magnitude = ctx.builder.unary(Opcode.ABS, x)
    return ctx.builder.compare(magnitude, ctx.splat(float("inf"), x), Direction.EQ)


# ---- floor division and modulo ---------------------------------------------------------------


def _needs_floor_step(
    ctx: TranslationContext, remainder: Instruction, divisor: Instruction
) -> Instruction:
    """Where truncating division differs from floor division: a nonzero remainder whose sign
    differs from the divisor's (TF's ``google_floor_mod`` test)."""
    b = ctx.builder
    nonzero = b.compare(remainder, ctx.splat(0, remainder), Direction.NE)
    r_negative = b.compare(remainder, ctx.splat(0, remainder), Direction.LT)
    d_negative = b.compare(divisor, ctx.splat(0, divisor), Direction.LT)
    return b.binary(Opcode.AND, nonzero, b.binary(Opcode.XOR, r_negative, d_negative))


@translates("FloorDiv", note="floor(x / y) for floats, floor division for integers")
def floor_div(ctx: TranslationContext, node: Node, x: Instruction, y: Instruction) -> Instruction:
    b = ctx.builder
    x, y = ctx.broadcast_operands(x, y)
    quotient = b.binary(Opcode.DIVIDE, x, y)
    dtype = x.array_shape.dtype
    if dtype.is_float:
        return b.unary(Opcode.FLOOR, quotient)  # TF's google_floor_div_real
    if not dtype.is_signed_int:
        return quotient
    step = _needs_floor_step(ctx, b.binary(Opcode.REMAINDER, x, y), y)
    return b.select(step, b.binary(Opcode.SUBTRACT, quotient, ctx.splat(1, quotient)), quotient)


@translates("FloorMod", note="result has the divisor's sign (Python's %), ints and floats")
def floor_mod(ctx: TranslationContext, node: Node, x: Instruction, y: Instruction) -> Instruction:
    b = ctx.builder
    x, y = ctx.broadcast_operands(x, y)
    remainder = b.binary(Opcode.REMAINDER, x, y)
    if x.array_shape.dtype.is_unsigned_int:
        return remainder
    step = _needs_floor_step(ctx, remainder, y)
    return b.select(step, b.binary(Opcode.ADD, remainder, y), remainder)


# ---- activations -----------------------------------------------------------------------------


def _positive(ctx: TranslationContext, x: Instruction) -> Instruction:
    return ctx.builder.compare(x, ctx.splat(0, x), Direction.GT)


def _scaled(ctx: TranslationContext, x: Instruction, factor: float) -> Instruction:
    return ctx.builder.binary(Opcode.MULTIPLY, x, ctx.splat(factor, x))


@translates("LeakyRelu", note="alpha (any value: x > 0 ? x : alpha * x, as TF)")
def leaky_relu(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    alpha = node.float_attr("alpha", 0.2)
    return ctx.builder.select(_positive(ctx, x), x, _scaled(ctx, x, alpha))


@translates("Elu", note="floating-point types")
def elu(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    require_float(node, x)
    expm1 = ctx.builder.unary(Opcode.EXPM1, x)
    return ctx.builder.select(_positive(ctx, x), x, expm1)


_SELU_SCALE = 1.0507009873554804934193349852946
_SELU_ALPHA = 1.6732632423543772848170429916717


@translates("Selu", note="floating-point types")
def selu(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    require_float(node, x)
    negative = _scaled(ctx, ctx.builder.unary(Opcode.EXPM1, x), _SELU_SCALE * _SELU_ALPHA)
    return ctx.builder.select(_positive(ctx, x), _scaled(ctx, x, _SELU_SCALE), negative)


@translates("Softplus", note="floating-point types; TF's thresholds for large |x|")
def softplus(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    require_float(node, x)
    b = ctx.builder
    # Beyond these, softplus(x) equals x (above) or exp(x) (below) to machine precision, and
    # log1p(exp(x)) would overflow or lose everything: TF's kernel switches formulas there.
    threshold = float(np.log(np.finfo(x.array_shape.dtype.numpy).eps)) + 2.0
    exp = b.unary(Opcode.EXP, x)
    too_large = b.compare(x, ctx.splat(-threshold, x), Direction.GT)
    too_small = b.compare(x, ctx.splat(threshold, x), Direction.LT)
    small_or_mid = b.select(too_small, exp, b.unary(Opcode.LOG1P, exp))
    return b.select(too_large, x, small_or_mid)


@translates("Softsign", note="floating-point types")
def softsign(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    require_float(node, x)
    b = ctx.builder
    denominator = b.binary(Opcode.ADD, ctx.splat(1, x), b.unary(Opcode.ABS, x))
    return b.binary(Opcode.DIVIDE, x, denominator)


@translates("LogSoftmax", note="over the last dimension, floating-point types")
def log_softmax(ctx: TranslationContext, node: Node, logits: Instruction) -> Instruction:
    b = ctx.builder
    shape = logits.array_shape
    if shape.rank == 0 or not shape.dtype.is_float:
        raise UnsupportedError(f"LogSoftmax needs a floating-point input of rank >= 1, got {shape}")
    last, rows = shape.rank - 1, list(range(shape.rank - 1))

    def reduce_last(x: Instruction, opcode: Opcode, init: float) -> Instruction:
        return b.broadcast(reduce_dims(ctx, x, opcode, init, [last]), shape.dims, rows)

    # TF: shifted = x - max(x); shifted - log(sum(exp(shifted))).
    shifted = b.binary(Opcode.SUBTRACT, logits, reduce_last(logits, Opcode.MAXIMUM, -np.inf))
    total = reduce_last(b.unary(Opcode.EXP, shifted), Opcode.ADD, 0.0)
    return b.binary(Opcode.SUBTRACT, shifted, b.unary(Opcode.LOG, total))


@translates("ClipByValue", note="bounds scalar or of the input's shape; min(max) as TF")
def clip_by_value(
    ctx: TranslationContext, node: Node, x: Instruction, low: Instruction, high: Instruction
) -> Instruction:
    dims = x.array_shape.dims
    low, high = ctx.broadcast_to(low, dims), ctx.broadcast_to(high, dims)
    # TF computes max(min(x, high), low); XLA's clamp orders the two the other way round,
    # which differs when low > high.
    return ctx.builder.binary(Opcode.MAXIMUM, ctx.builder.binary(Opcode.MINIMUM, x, high), low)


# ---- selects and casts -----------------------------------------------------------------------


@translates("Select", note="condition of the inputs' shape, a scalar, or a vector picking rows")
def select(
    ctx: TranslationContext, node: Node, cond: Instruction, x: Instruction, y: Instruction
) -> Instruction:
    dims = x.array_shape.dims
    cond_dims = cond.array_shape.dims
    if len(cond_dims) == 1 and len(dims) > 1:
        if cond_dims[0] != dims[0]:
            raise ShapeError(f"a vector condition {cond.shape} must match dimension 0 of {x.shape}")
        cond = ctx.builder.broadcast(cond, dims, [0])  # TF1: a vector selects whole rows
    elif cond_dims != dims:
        cond = ctx.broadcast_to(cond, dims)
    return ctx.builder.select(cond, x, y)


@translates("SelectV2", note="numpy-style broadcasting of all three inputs")
def select_v2(
    ctx: TranslationContext, node: Node, cond: Instruction, x: Instruction, y: Instruction
) -> Instruction:
    cond, x, y = ctx.broadcast_operands(cond, x, y)
    return ctx.builder.select(cond, x, y)


@translates(
    "Cast",
    note="between bfloat16, float16/32/64, complex64/128, (u)int8-64 and bool; "
    "complex to real keeps the real part",
)
def cast(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    dtype = PrimitiveType.from_numpy(node.dtype_attr("DstT"))
    if x.array_shape.dtype.is_complex and not dtype.is_complex:
        x = ctx.builder.unary(Opcode.REAL, x)  # TF's static_cast of std::complex: re z
    if dtype == x.array_shape.dtype:
        return x
    return ctx.builder.convert(x, dtype)
