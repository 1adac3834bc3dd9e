"""Per-opcode scalar semantics of elementwise HLO ops, as LLVM IR on register values.

Each entry of ``SCALAR_OPS`` takes the builder, the instruction (for its element types and
attributes) and the operands' element values, and returns the result's element value. The
semantics are XLA's: integer ops wrap; integer ``x / 0 = -1``, ``x % 0 = x``,
``INT_MIN / -1 = INT_MIN`` and ``INT_MIN % -1 = 0``; float max/min propagate nan; float ->
int conversion saturates and maps nan to 0; ``round-nearest-afz`` is ``llvm.round``.

libm exceptions: ``power``, ``atan2`` and ``remainder`` on floats become calls to the C
functions ``pow``/``atan2``/``fmod`` on doubles, so models using them must be linked with
``-lm``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from llvmlite import ir

from aotc.codegen import mathlib
from aotc.codegen.irtypes import (
    F32,
    F64,
    I32,
    call_intrinsic,
    declare,
    memory_type,
    register_type,
    round_to_bf16,
    scalar_constant,
)
from aotc.errors import CodegenError
from aotc.hlo.ir import (
    CompareAttrs,
    ComparisonDirection,
    ComparisonType,
    Instruction,
    Opcode,
    ReducePrecisionAttrs,
)
from aotc.hlo.shape import PrimitiveType

ScalarOp = Callable[[ir.IRBuilder, Instruction, Sequence[ir.Value]], ir.Value]
ValueOp = Callable[[ir.IRBuilder, Sequence[ir.Value]], ir.Value]


def operand_dtype(inst: Instruction, i: int = 0) -> PrimitiveType:
    return inst.operands[i].array_shape.dtype


def _const_like(value: ir.Value, number: float | int) -> ir.Constant:
    """``number`` in ``value``'s type, splat when it is a vector (the vector generators run
    these ops on whole vectors)."""
    ty = value.type
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [scalar_constant(ty.element, number).constant] * ty.count)
    return scalar_constant(ty, number)


def _by_kind(
    *,
    floating: ValueOp | None = None,
    signed: ValueOp | None = None,
    unsigned: ValueOp | None = None,
    pred: ValueOp | None = None,
    operand: int = 0,
) -> ScalarOp:
    """One ScalarOp choosing an implementation by the element type of operand ``operand``.

    ``unsigned`` defaults to ``signed``'s sibling where the two agree (wrapping arithmetic);
    ``pred`` defaults to ``unsigned``.
    """
    unsigned = unsigned or signed
    pred = pred or unsigned

    def apply(b: ir.IRBuilder, inst: Instruction, values: Sequence[ir.Value]) -> ir.Value:
        dtype = operand_dtype(inst, operand)
        impl = (
            floating
            if dtype.is_float
            else signed
            if dtype.is_signed_int
            else unsigned
            if dtype.is_unsigned_int
            else pred
        )
        if impl is None:
            raise CodegenError(
                f"{inst.opcode.value} %{inst.name} does not support {dtype.value} operands"
            )
        return impl(b, values)

    return apply


def _binary(method: str) -> ValueOp:
    return lambda b, v: getattr(b, method)(v[0], v[1])


def _identity(b: ir.IRBuilder, v: Sequence[ir.Value]) -> ir.Value:
    return v[0]


def _intrinsic(name: str) -> ValueOp:
    return lambda b, v: call_intrinsic(b, name, list(v))


def _math(name: str) -> ValueOp:
    return lambda b, v: mathlib.call(name, b, v[0])


def _libm(name: str) -> ValueOp:
    """A binary C math function of doubles (pow, atan2, fmod); narrower floats are widened
    first, which also rounds f32 results correctly in all but rare double-rounding cases."""

    def call(b: ir.IRBuilder, v: Sequence[ir.Value]) -> ir.Value:
        ty = v[0].type
        args = list(v) if ty == F64 else [b.fpext(x, F64) for x in v]
        result = b.call(declare(b.module, name, F64, [F64, F64]), args)
        return result if ty == F64 else b.fptrunc(result, ty)

    return call


# ---- unary -----------------------------------------------------------------------------------


def _int_abs(b: ir.IRBuilder, v: Sequence[ir.Value]) -> ir.Value:
    negative = b.icmp_signed("<", v[0], _const_like(v[0], 0))
    return b.select(negative, b.neg(v[0]), v[0])


def _is_finite(b: ir.IRBuilder, v: Sequence[ir.Value]) -> ir.Value:
    magnitude = call_intrinsic(b, "fabs", [v[0]])
    return b.fcmp_ordered("<", magnitude, _const_like(v[0], float("inf")))


def _not(b: ir.IRBuilder, v: Sequence[ir.Value]) -> ir.Value:
    return b.xor(v[0], _const_like(v[0], -1))


def _rsqrt(b: ir.IRBuilder, v: Sequence[ir.Value]) -> ir.Value:
    return b.fdiv(_const_like(v[0], 1.0), call_intrinsic(b, "sqrt", [v[0]]))


def _float_sign(b: ir.IRBuilder, v: Sequence[ir.Value]) -> ir.Value:
    x = v[0]
    keep = b.fcmp_unordered("==", x, _const_like(x, 0.0))  # +-0 and nan map to themselves
    return b.select(keep, x, call_intrinsic(b, "copysign", [_const_like(x, 1.0), x]))


def _signed_sign(b: ir.IRBuilder, v: Sequence[ir.Value]) -> ir.Value:
    x = v[0]
    positive = b.zext(b.icmp_signed(">", x, _const_like(x, 0)), x.type)
    negative = b.zext(b.icmp_signed("<", x, _const_like(x, 0)), x.type)
    return b.sub(positive, negative)


def _unsigned_sign(b: ir.IRBuilder, v: Sequence[ir.Value]) -> ir.Value:
    return b.zext(b.icmp_unsigned("!=", v[0], _const_like(v[0], 0)), v[0].type)


def _convert(b: ir.IRBuilder, inst: Instruction, values: Sequence[ir.Value]) -> ir.Value:
    return convert(b, values[0], operand_dtype(inst), inst.array_shape.dtype)


# ---- binary ----------------------------------------------------------------------------------


def _safe_divisor(b: ir.IRBuilder, x: ir.Value, y: ir.Value, signed: bool) -> ir.Value:
    """y, with the divisions LLVM leaves undefined (by 0, INT_MIN / -1) made harmless."""
    bad = b.icmp_unsigned("==", y, _const_like(y, 0))
    if signed:
        width = y.type.width
        overflow = b.and_(
            b.icmp_signed("==", x, _const_like(x, -(1 << (width - 1)))),
            b.icmp_signed("==", y, _const_like(y, -1)),
        )
        bad = b.or_(bad, overflow)
    return b.select(bad, _const_like(y, 1), y)


def _int_divide(signed: bool) -> ValueOp:
    def divide(b: ir.IRBuilder, v: Sequence[ir.Value]) -> ir.Value:
        x, y = v
        safe = _safe_divisor(b, x, y, signed)
        quotient = b.sdiv(x, safe) if signed else b.udiv(x, safe)
        return b.select(b.icmp_unsigned("==", y, _const_like(y, 0)), _const_like(x, -1), quotient)

    return divide


def _int_remainder(signed: bool) -> ValueOp:
    def remainder(b: ir.IRBuilder, v: Sequence[ir.Value]) -> ir.Value:
        x, y = v
        safe = _safe_divisor(b, x, y, signed)
        rest = b.srem(x, safe) if signed else b.urem(x, safe)
        return b.select(b.icmp_unsigned("==", y, _const_like(y, 0)), x, rest)

    return remainder


def _float_extremum(ordered_op: str) -> ValueOp:
    """max (``>=``) / min (``<=``) that return nan if either operand is nan.

    Against a constant that is not nan (ReLU6's 0 and 6) one compare and select suffice:
    ``x < c ? c : x`` is ``x >= c ? x : c`` for every x that is not nan, and nan for nan x.
    Half the IR of the general form, which LLVM does not shorten (its x86 code is one
    min/max instruction instead of two compares and blends).
    """
    beyond = {">=": "<", "<=": ">"}[ordered_op]

    def extremum(b: ir.IRBuilder, v: Sequence[ir.Value]) -> ir.Value:
        x, y = v
        if _never_nan(y):
            return b.select(b.fcmp_ordered(beyond, x, y), y, x)
        pick = b.select(b.fcmp_ordered(ordered_op, x, y), x, y)  # y when either is nan
        return pick if _never_nan(x) else b.select(b.fcmp_unordered("uno", x, x), x, pick)

    return extremum


def _never_nan(value: ir.Value) -> bool:
    """Whether ``value`` is a float constant, or a vector of them, without a nan."""
    if not isinstance(value, ir.Constant):
        return False
    parts = value.constant if isinstance(value.type, ir.VectorType) else [value]
    return isinstance(parts, list) and all(
        isinstance(p, ir.Constant) and isinstance(p.constant, float) and not math.isnan(p.constant)
        for p in parts
    )


def _int_extremum(op: str, signed: bool) -> ValueOp:
    def extremum(b: ir.IRBuilder, v: Sequence[ir.Value]) -> ir.Value:
        compare = b.icmp_signed if signed else b.icmp_unsigned
        return b.select(compare(op, v[0], v[1]), v[0], v[1])

    return extremum


def _int_power(signed: bool) -> ValueOp:
    """Exponentiation by squaring over every exponent bit (wraps like repeated multiply).

    A negative exponent gives 1 for base 1 and 0 otherwise, as XLA does.
    """

    def power(b: ir.IRBuilder, v: Sequence[ir.Value]) -> ir.Value:
        base, exponent = v
        one = _const_like(base, 1)
        acc: ir.Value = one
        rest = exponent
        for _ in range(base.type.width):
            odd = b.trunc(rest, ir.IntType(1))
            acc = b.select(odd, b.mul(acc, base), acc)
            base = b.mul(base, base)
            rest = b.lshr(rest, one)
        if not signed:
            return acc
        negative = b.icmp_signed("<", exponent, _const_like(exponent, 0))
        base_is_one = b.zext(b.icmp_signed("==", v[0], one), v[0].type)
        return b.select(negative, base_is_one, acc)

    return power


_FLOAT_PREDICATES = {
    ComparisonDirection.EQ: ("ordered", "=="), ComparisonDirection.NE: ("unordered", "!="),
    ComparisonDirection.LT: ("ordered", "<"), ComparisonDirection.LE: ("ordered", "<="),
    ComparisonDirection.GT: ("ordered", ">"), ComparisonDirection.GE: ("ordered", ">="),
}  # fmt: skip
_INT_PREDICATES = {
    ComparisonDirection.EQ: "==", ComparisonDirection.NE: "!=", ComparisonDirection.LT: "<",
    ComparisonDirection.LE: "<=", ComparisonDirection.GT: ">", ComparisonDirection.GE: ">=",
}  # fmt: skip


def _compare(b: ir.IRBuilder, inst: Instruction, values: Sequence[ir.Value]) -> ir.Value:
    attrs = inst.attrs_as(CompareAttrs)
    direction, (x, y) = attrs.direction, values
    dtype = operand_dtype(inst)
    if dtype.is_float and attrs.type is ComparisonType.TOTALORDER:
        return b.icmp_signed(
            _INT_PREDICATES[direction], total_order_key(b, x), total_order_key(b, y)
        )
    if dtype.is_float:
        kind, op = _FLOAT_PREDICATES[direction]
        fcmp = b.fcmp_ordered if kind == "ordered" else b.fcmp_unordered
        return fcmp(op, x, y)
    icmp = b.icmp_signed if dtype.is_signed_int else b.icmp_unsigned
    return icmp(_INT_PREDICATES[direction], x, y)


def total_order_key(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """A float's bits as a signed integer ordered as XLA's total order orders the floats:
    -NaN < -inf < ... < -0 < +0 < ... < inf < NaN (negative values' magnitude bits flipped)."""
    vector = isinstance(x.type, ir.VectorType)
    width = 8 * _float_width(x.type.element if vector else x.type)
    lanes = x.type.count if vector else 1

    def splat(value: int) -> ir.Constant:
        scalar = ir.Constant(ir.IntType(width), value)
        return (
            ir.Constant(ir.VectorType(scalar.type, lanes), [scalar] * lanes) if vector else scalar
        )

    bits = b.bitcast(x, splat(0).type)
    flipped = b.xor(bits, splat((1 << (width - 1)) - 1))
    return b.select(b.icmp_signed("<", bits, splat(0)), flipped, bits)


# ---- bit operations --------------------------------------------------------------------------


def _shift(opcode: Opcode) -> ValueOp:
    """XLA's shifts: an amount of at least the width (unsigned) shifts every bit out. LLVM's
    shift by that much is poison, which the select never picks (or the amount is clamped)."""

    def shift(b: ir.IRBuilder, v: Sequence[ir.Value]) -> ir.Value:
        x, amount = v
        width = x.type.width
        big = b.icmp_unsigned(">=", amount, _const_like(amount, width))
        if opcode is Opcode.SHIFT_RIGHT_ARITHMETIC:
            return b.ashr(x, b.select(big, _const_like(amount, width - 1), amount))
        moved = b.shl(x, amount) if opcode is Opcode.SHIFT_LEFT else b.lshr(x, amount)
        return b.select(big, _const_like(x, 0), moved)

    return shift


def _count_leading_zeros(b: ir.IRBuilder, v: Sequence[ir.Value]) -> ir.Value:
    zero_is_poison = ir.Constant(ir.IntType(1), 0)  # clz(0) is the width
    return call_intrinsic(b, "ctlz", [v[0], zero_is_poison], overloads=[v[0].type])


def _reduce_precision(b: ir.IRBuilder, inst: Instruction, values: Sequence[ir.Value]) -> ir.Value:
    """XLA's reduce-precision on the bits (the evaluator's ``_reduce_precision``, in IR); a
    bf16 is an f32 in the register, and rounding that is the same."""
    attrs, x = inst.attrs_as(ReducePrecisionAttrs), values[0]
    width = {"half": 16, "float": 32, "double": 64}[str(x.type)]
    exponent_bits, mantissa_bits = _WORKING_FLOAT[width].float_bits
    int_type = ir.IntType(width)
    bits = b.bitcast(x, int_type)

    def c(value: int) -> ir.Constant:
        return ir.Constant(int_type, value & ((1 << width) - 1))

    if attrs.mantissa_bits < mantissa_bits:
        shift = mantissa_bits - attrs.mantissa_bits
        last_bit = b.and_(b.lshr(bits, c(shift)), c(1))
        bias = b.add(last_bit, c((1 << (shift - 1)) - 1))
        bits = b.and_(b.add(bits, bias), c(~((1 << shift) - 1)))
    if attrs.exponent_bits < exponent_bits:
        exponent_mask = ((1 << exponent_bits) - 1) << mantissa_bits
        bias, reduced = (1 << (exponent_bits - 1)) - 1, (1 << (attrs.exponent_bits - 1)) - 1
        exponent = b.and_(bits, c(exponent_mask))
        signed_zero = b.and_(bits, c(1 << (width - 1)))
        overflows = b.icmp_unsigned(">", exponent, c((bias + reduced) << mantissa_bits))
        underflows = b.icmp_unsigned("<=", exponent, c((bias - reduced) << mantissa_bits))
        bits = b.select(underflows, signed_zero, bits)
        bits = b.select(overflows, b.or_(signed_zero, c(exponent_mask)), bits)
    result = b.bitcast(bits, x.type)
    if attrs.mantissa_bits > 0:  # a nan stays itself (its rounded bits could be inf or zero)
        result = b.select(b.fcmp_unordered("uno", x, x), x, result)
    return result


_WORKING_FLOAT = {16: PrimitiveType.F16, 32: PrimitiveType.F32, 64: PrimitiveType.F64}


def _bitcast_convert(b: ir.IRBuilder, inst: Instruction, values: Sequence[ir.Value]) -> ir.Value:
    """The bits as the other type; a bf16 (an f32 in a register) is the high half of them."""
    src, dst, value = operand_dtype(inst), inst.array_shape.dtype, values[0]
    if src is PrimitiveType.BF16:
        bits = b.lshr(b.bitcast(value, I32), ir.Constant(I32, 16))
        value = b.trunc(bits, memory_type(src))
    if dst is PrimitiveType.BF16:
        bits = b.zext(b.bitcast(value, memory_type(dst)), I32)
        return b.bitcast(b.shl(bits, ir.Constant(I32, 16)), F32)
    return b.bitcast(value, register_type(dst))


# ---- ternary ---------------------------------------------------------------------------------


def _select(b: ir.IRBuilder, inst: Instruction, values: Sequence[ir.Value]) -> ir.Value:
    return b.select(values[0], values[1], values[2])


def _clamp(b: ir.IRBuilder, inst: Instruction, values: Sequence[ir.Value]) -> ir.Value:
    """clamp(lo, x, hi) = min(max(x, lo), hi), with max/min of the element type."""
    low, x, high = values
    raised = SCALAR_OPS[Opcode.MAXIMUM](b, inst, [x, low])
    return SCALAR_OPS[Opcode.MINIMUM](b, inst, [raised, high])


# ---- convert ---------------------------------------------------------------------------------


def convert(b: ir.IRBuilder, value: ir.Value, src: PrimitiveType, dst: PrimitiveType) -> ir.Value:
    """Convert one element from ``src`` to ``dst`` with XLA's semantics."""
    target = register_type(dst)
    if src is dst:
        return value
    if src is PrimitiveType.BF16:  # already an f32 in the register
        return convert(b, value, PrimitiveType.F32, dst)
    if dst is PrimitiveType.BF16:
        return round_to_bf16(b, _to_f32_for_bf16(b, value, src))
    if dst is PrimitiveType.PRED:
        if src.is_float:
            return b.fcmp_unordered("!=", value, _const_like(value, 0.0))
        return b.icmp_unsigned("!=", value, _const_like(value, 0))
    if src.is_float:
        return _from_float(b, value, dst, target)
    if dst.is_float:
        signed = src.is_signed_int
        return b.sitofp(value, target) if signed else b.uitofp(value, target)
    return _int_to_int(b, value, src, target)


def _to_f32_for_bf16(b: ir.IRBuilder, value: ir.Value, src: PrimitiveType) -> ir.Value:
    """``value`` as an f32 that rounds to the bf16 nearest ``value`` itself: f64 and integers
    (through f64) are rounded to odd, so rounding to bf16 after it never rounds twice."""
    if not (src is PrimitiveType.F64 or src.is_integral):
        return convert(b, value, src, PrimitiveType.F32)  # exact: pred, f16, f32
    wide = convert(b, value, src, PrimitiveType.F64)
    nearest = b.fptrunc(wide, F32)
    back = b.fpext(nearest, F64)
    away = b.fcmp_ordered(">", call_intrinsic(b, "fabs", [back]), call_intrinsic(b, "fabs", [wide]))
    bits = b.bitcast(nearest, I32)
    toward_zero = b.select(away, b.sub(bits, ir.Constant(I32, 1)), bits)
    inexact = b.fcmp_ordered("!=", back, wide)  # false for nan: it stays as it is
    odd = b.select(inexact, b.or_(toward_zero, ir.Constant(I32, 1)), toward_zero)
    return b.bitcast(odd, F32)


def _from_float(b: ir.IRBuilder, value: ir.Value, dst: PrimitiveType, target: ir.Type) -> ir.Value:
    if dst.is_float:
        wider = dst.byte_size > _float_width(value.type)
        return b.fpext(value, target) if wider else b.fptrunc(value, target)
    if str(value.type) == "half":
        # Exact, and avoids LLVM's AVX512-FP16 lowering of fptosi.sat(half), which maps nan
        # to INT_MIN instead of 0.
        value = b.fpext(value, ir.FloatType())
    name = "fptosi.sat" if dst.is_signed_int else "fptoui.sat"
    return call_intrinsic(b, name, [value], overloads=[target, value.type], ret=target)


def _float_width(ty: ir.Type) -> int:
    return {"half": 2, "float": 4, "double": 8}[str(ty)]


def _int_to_int(b: ir.IRBuilder, value: ir.Value, src: PrimitiveType, target: ir.Type) -> ir.Value:
    width = value.type.width
    if target.width == width:
        return value
    if target.width < width:
        return b.trunc(value, target)
    return b.sext(value, target) if src.is_signed_int else b.zext(value, target)


# ---- the registry ----------------------------------------------------------------------------

SCALAR_OPS: dict[Opcode, ScalarOp] = {
    Opcode.ABS: _by_kind(floating=_intrinsic("fabs"), signed=_int_abs, unsigned=_identity),
    Opcode.CEIL: _by_kind(floating=_intrinsic("ceil"), signed=_identity),
    Opcode.CONVERT: _convert,
    Opcode.COPY: lambda b, inst, v: v[0],
    Opcode.FLOOR: _by_kind(floating=_intrinsic("floor"), signed=_identity),
    Opcode.IS_FINITE: _by_kind(floating=_is_finite),
    Opcode.NEGATE: _by_kind(floating=lambda b, v: b.fneg(v[0]), signed=lambda b, v: b.neg(v[0])),
    Opcode.NOT: _by_kind(signed=_not),
    Opcode.ROUND_AFZ: _by_kind(floating=_intrinsic("round"), signed=_identity),
    Opcode.ROUND_EVEN: _by_kind(floating=_intrinsic("roundeven"), signed=_identity),
    Opcode.RSQRT: _by_kind(floating=_rsqrt),
    Opcode.SIGN: _by_kind(floating=_float_sign, signed=_signed_sign, unsigned=_unsigned_sign),
    Opcode.SQRT: _by_kind(floating=_intrinsic("sqrt")),
    Opcode.ADD: _by_kind(floating=_binary("fadd"), signed=_binary("add")),
    Opcode.SUBTRACT: _by_kind(floating=_binary("fsub"), signed=_binary("sub")),
    Opcode.MULTIPLY: _by_kind(floating=_binary("fmul"), signed=_binary("mul")),
    Opcode.DIVIDE: _by_kind(floating=_binary("fdiv"), signed=_int_divide(True),
                            unsigned=_int_divide(False)),
    Opcode.REMAINDER: _by_kind(floating=_libm("fmod"), signed=_int_remainder(True),
                               unsigned=_int_remainder(False)),
    Opcode.MAXIMUM: _by_kind(floating=_float_extremum(">="), signed=_int_extremum(">", True),
                             unsigned=_int_extremum(">", False)),
    Opcode.MINIMUM: _by_kind(floating=_float_extremum("<="), signed=_int_extremum("<", True),
                             unsigned=_int_extremum("<", False)),
    Opcode.AND: _by_kind(signed=_binary("and_")),
    Opcode.OR: _by_kind(signed=_binary("or_")),
    Opcode.XOR: _by_kind(signed=_binary("xor")),
    Opcode.POWER: _by_kind(floating=_libm("pow"), signed=_int_power(True),
                           unsigned=_int_power(False)),
    Opcode.ATAN2: _by_kind(floating=_libm("atan2")),
    Opcode.BITCAST_CONVERT: _bitcast_convert,
    Opcode.REDUCE_PRECISION: _reduce_precision,
    Opcode.CLZ: _by_kind(signed=_count_leading_zeros),
    Opcode.POPCNT: _by_kind(signed=_intrinsic("ctpop")),
    Opcode.SHIFT_LEFT: _by_kind(signed=_shift(Opcode.SHIFT_LEFT)),
    Opcode.SHIFT_RIGHT_ARITHMETIC: _by_kind(signed=_shift(Opcode.SHIFT_RIGHT_ARITHMETIC)),
    Opcode.SHIFT_RIGHT_LOGICAL: _by_kind(signed=_shift(Opcode.SHIFT_RIGHT_LOGICAL)),
    Opcode.COMPARE: _compare,
    Opcode.SELECT: _select,
    Opcode.CLAMP: _clamp,
}  # fmt: skip

for _opcode, _name in {
    Opcode.COSINE: "cos", Opcode.SINE: "sin", Opcode.ERF: "erf", Opcode.EXP: "exp",
    Opcode.EXPM1: "expm1", Opcode.LOG: "log", Opcode.LOG1P: "log1p",
    Opcode.LOGISTIC: "logistic", Opcode.TANH: "tanh",
}.items():  # fmt: skip
    SCALAR_OPS[_opcode] = _by_kind(floating=_math(_name))


def emit_scalar(b: ir.IRBuilder, inst: Instruction, values: Sequence[ir.Value]) -> ir.Value:
    """The element value of elementwise ``inst`` given its operands' element values."""
    op = SCALAR_OPS.get(inst.opcode)
    if op is None:
        raise CodegenError(f"{inst.opcode.value} %{inst.name} is not an elementwise op")
    result = op(b, inst, values)
    if inst.array_shape.dtype is PrimitiveType.BF16 and inst.opcode not in _EXACT_BF16:
        return round_to_bf16(b, result)  # computed in f32: round as a bf16 op would
    return result


# Ops whose bf16 results are already bf16 values (they convert, or reinterpret bits).
_EXACT_BF16 = frozenset({Opcode.CONVERT, Opcode.BITCAST_CONVERT, Opcode.COPY, Opcode.SELECT})


__all__ = ["SCALAR_OPS", "ScalarOp", "convert", "emit_scalar", "operand_dtype"]
