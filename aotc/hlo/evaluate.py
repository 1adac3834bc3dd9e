"""The numpy reference interpreter: the oracle every later stage is tested against.

Each opcode is evaluated by a small handler found through ``EVALUATORS``; results are cast back
to the instruction's element type and checked against its shape. Semantics follow XLA's
operation semantics and its reference evaluator (``xla/hlo/evaluator``), including the cases C
leaves undefined: integer ``x / 0 == -1`` (all ones when unsigned), ``INT_MIN / -1 == INT_MIN``,
``x % 0 == x``, ``INT_MIN % -1 == 0``; float -> int conversion truncates, saturates out-of-range
values and maps NaN to 0 (``xla/literal.cc``); floating-point maximum and minimum propagate NaN.
Integer arithmetic wraps. f16 math is done in f32 and rounded back, as XLA's evaluator does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Sequence
from functools import partial
from typing import Any

import numpy as np

from aotc.bfloat16 import is_bfloat16
from aotc.errors import HloError, ShapeError, UnsupportedError
from aotc.hlo.ir import (
    ELEMENTWISE,
    CompareAttrs,
    ComparisonDirection,
    ComparisonType,
    Computation,
    ConvAttrs,
    Dimensions,
    DotDims,
    DynamicSliceAttrs,
    FftAttrs,
    FftType,
    GatherAttrs,
    Instruction,
    IotaAttrs,
    Module,
    Opcode,
    PadAttrs,
    PadDim,
    ReducePrecisionAttrs,
    ReduceWindowAttrs,
    RngBitGeneratorAttrs,
    ScatterAttrs,
    SliceAttrs,
    SortAttrs,
    TopKAttrs,
    TupleIndex,
    Window,
    parameter_number,
)
from aotc.hlo.rng_bits import rng_bit_generator
from aotc.hlo.shape import AnyShape, PrimitiveType, Shape, TupleShape
from aotc.hlo.shape_inference import scatter_window_operand_dims
from aotc.registry import Registry

Value = Any  # an np.ndarray, or a tuple of values for tuple-shaped instructions
Handler = Callable[[Instruction, list[Value]], Value]
#: A computation being evaluated, or an instruction running called computations: it yields
#: the ``Steps`` of each computation it needs run and is sent their results (see ``_drive``).
Steps = Generator["Steps", Value, Value]

#: Per opcode but parameter (whose values ``_steps`` binds): how to compute its value. The
#: handler of an instruction that runs called computations returns its ``Steps``.
EVALUATORS: Registry[Opcode, Handler] = Registry("evaluator")
handles = EVALUATORS.register  # @handles(Opcode.ADD, ...) registers fn(inst, operand_values)


# ---- public API ------------------------------------------------------------------------------


def evaluate(module: Module, args: Sequence[np.ndarray]) -> list[np.ndarray] | np.ndarray:
    """Run the entry computation; a tuple-shaped root comes back as a list of its elements."""
    result = evaluate_computation(module.entry, args)
    if isinstance(result, tuple):
        return list(result)
    assert isinstance(result, np.ndarray)
    return result


def evaluate_computation(comp: Computation, args: Sequence[np.ndarray]) -> object:
    """Run one computation on ``args``; returns an ndarray, or a tuple for a tuple root.

    Results are fresh, writable arrays. The computation must be acyclic (verified).
    """
    with np.errstate(all="ignore"):
        return _private_copy(_run(comp, list(args), batched=False))


def _private_copy(value: Value) -> Value:
    if isinstance(value, tuple):
        return tuple(_private_copy(v) for v in value)
    return np.array(value, copy=True)


# ---- the interpreter loop --------------------------------------------------------------------


def _run(comp: Computation, args: list[Value], batched: bool) -> Value:
    """Evaluate ``comp`` in post order.

    ``batched`` evaluates a scalar computation (a reducer) on equally shaped arrays at once:
    every value then carries a batch shape that the instruction shapes do not mention.
    """
    return _drive(_steps(comp, args, batched))


def _drive(start: Steps) -> Value:
    """Run ``start`` and every computation it calls on an explicit stack: loops, calls and
    conditionals nest to any depth and iterate any number of times without recursion."""
    stack, value = [start], None
    while stack:
        try:
            callee = stack[-1].send(value)
        except StopIteration as done:
            stack.pop()
            value = done.value
            continue
        stack.append(callee)
        value = None
    return value


def _steps(comp: Computation, args: list[Value], batched: bool) -> Steps:
    params = comp.parameters
    if len(args) != len(params):
        raise ShapeError(
            f"evaluate: computation {comp.name} takes {len(params)} arguments, got {len(args)}"
        )
    values: dict[int, Value] = {}
    for inst in comp.post_order():
        if inst.opcode is Opcode.PARAMETER:
            value = _argument(comp, inst, args[parameter_number(inst)], batched)
        else:
            operands = _normalized(inst, [values[id(o)] for o in inst.operands])
            result = EVALUATORS[inst.opcode](inst, operands)
            if isinstance(result, Generator):
                result = yield result
            value = _fit(inst.shape, result, batched, f"{comp.name}/{inst.name}")
        values[id(inst)] = value
    return values[id(comp.root)]


def _call(comp: Computation, args: list[Value]) -> Steps:
    return _steps(comp, args, batched=False)


def _argument(comp: Computation, inst: Instruction, arg: Value, batched: bool) -> Value:
    where = f"{comp.name}/{inst.name} (parameter {parameter_number(inst)})"
    return _check_argument(inst.shape, arg, batched, where)


def _check_argument(shape: AnyShape, arg: Value, batched: bool, where: str) -> Value:
    if isinstance(shape, TupleShape):
        if not isinstance(arg, (tuple, list)) or len(arg) != len(shape.elements):
            raise ShapeError(f"evaluate: {where} expects a tuple {shape}, got {type(arg).__name__}")
        pairs = zip(shape.elements, arg, strict=True)
        return tuple(_check_argument(s, a, batched, where) for s, a in pairs)
    array = np.asarray(arg)
    if array.dtype != shape.dtype.numpy or (not batched and array.shape != shape.dims):
        got = f"{array.dtype}{list(array.shape)}"
        raise ShapeError(
            f"evaluate: {where} expects {shape}, got {got}; "
            "pass an array of exactly that dtype and shape"
        )
    return array


def _fit(shape: AnyShape, value: Value, batched: bool, where: str) -> Value:
    """Cast a handler's result to the declared element type and check its dimensions."""
    if isinstance(shape, TupleShape):
        if not isinstance(value, tuple) or len(value) != len(shape.elements):
            raise HloError(f"evaluate: {where}: produced {type(value).__name__}, declared {shape}")
        pairs = zip(shape.elements, value, strict=True)
        return tuple(_fit(s, v, batched, where) for s, v in pairs)
    array = np.asarray(value)
    if array.dtype != shape.dtype.numpy:
        array = array.astype(shape.dtype.numpy)
    if not batched and array.shape != shape.dims:
        raise HloError(f"evaluate: {where}: produced {list(array.shape)}, declared {shape}")
    return array


def _widen(x: np.ndarray) -> np.ndarray:
    """f16 is computed in f32 (and rounded back by ``_fit``), as XLA's evaluator does."""
    narrow = x.dtype == np.float16 or is_bfloat16(x.dtype)
    return x.astype(np.float32) if narrow else x


def _normalized(inst: Instruction, ops: list[Value]) -> list[Value]:
    """bf16 operands as f32 (XLA's float normalization; ``_fit`` rounds the result back), but
    where bits are reinterpreted or called computations expect bf16 parameters."""
    if inst.opcode is Opcode.BITCAST_CONVERT or inst.called:
        return ops
    return [o.astype(np.float32) if _is_bf16(o) else o for o in ops]


def _is_bf16(value: Value) -> bool:
    return isinstance(value, np.ndarray) and is_bfloat16(value.dtype)


def _dims(inst: Instruction) -> tuple[int, ...]:
    assert isinstance(inst.shape, Shape), f"{inst.name} has a tuple shape"
    return inst.shape.dims


def _dtype(inst: Instruction) -> np.dtype:
    assert isinstance(inst.shape, Shape), f"{inst.name} has a tuple shape"
    return inst.shape.dtype.numpy


# ---- leaves ----------------------------------------------------------------------------------


@handles(Opcode.CONSTANT)
def _constant(inst: Instruction, ops: list[Value]) -> Value:
    if inst.literal is None:
        raise HloError(f"evaluate: constant {inst.name} has no literal")
    return inst.literal


@handles(Opcode.IOTA)
def _iota(inst: Instruction, ops: list[Value]) -> Value:
    dim, dims = inst.attrs_as(IotaAttrs).iota_dimension, _dims(inst)
    ramp = np.arange(dims[dim], dtype=_dtype(inst))
    return np.broadcast_to(ramp.reshape([-1 if d == dim else 1 for d in range(len(dims))]), dims)


# ---- elementwise unary -----------------------------------------------------------------------


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return 1 / np.sqrt(x)


def _logistic(x: np.ndarray) -> np.ndarray:
    # exp(-|x|) never overflows; each branch is the accurate form for its sign of x.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _round_afz(x: np.ndarray) -> np.ndarray:
    # x - trunc(x) is exact, unlike floor(|x| + 0.5), which rounds 0.49999997f up to 1.
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


_ERF = np.frompyfunc(math.erf, 1, 1)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.asarray(_ERF(x.astype(np.float64)), dtype=np.float64)


_FLOAT_UNARY: dict[Opcode, Callable[[np.ndarray], np.ndarray]] = {
    Opcode.CEIL: np.ceil, Opcode.COSINE: np.cos, Opcode.ERF: _erf, Opcode.EXP: np.exp,
    Opcode.EXPM1: np.expm1, Opcode.FLOOR: np.floor, Opcode.LOG: np.log, Opcode.LOG1P: np.log1p,
    Opcode.LOGISTIC: _logistic, Opcode.ROUND_AFZ: _round_afz, Opcode.ROUND_EVEN: np.rint,
    Opcode.RSQRT: _rsqrt, Opcode.SINE: np.sin, Opcode.SQRT: np.sqrt, Opcode.TANH: np.tanh,
    Opcode.IS_FINITE: np.isfinite,
}  # fmt: skip


def _float_unary(
    fn: Callable[[np.ndarray], np.ndarray], inst: Instruction, ops: list[Value]
) -> Value:
    return fn(_widen(ops[0]))


for _opcode, _fn in _FLOAT_UNARY.items():
    handles(_opcode)(partial(_float_unary, _fn))


def _sign(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind != "f":
        return np.sign(x)
    # XLA: NaN stays NaN and zeros keep their sign.
    return np.where(np.isnan(x), x, np.copysign((x != 0).astype(x.dtype), x))


_OTHER_UNARY: dict[Opcode, Callable[[np.ndarray], np.ndarray]] = {
    Opcode.ABS: np.abs,  # wraps: abs(INT_MIN) == INT_MIN
    Opcode.NEGATE: np.negative,  # wraps
    Opcode.NOT: np.invert,  # logical for pred, bitwise for integers
    Opcode.SIGN: _sign,
    Opcode.COPY: np.copy,
    Opcode.REAL: np.real,
    Opcode.IMAG: np.imag,  # of a real array: zeros
}

for _opcode, _fn in _OTHER_UNARY.items():
    handles(_opcode)(partial(_float_unary, _fn))


@handles(Opcode.CONVERT)
def _convert(inst: Instruction, ops: list[Value]) -> Value:
    x, dtype = ops[0], _dtype(inst)
    if dtype == np.bool_:
        return x != 0
    if x.dtype.kind == "f" and dtype.kind in "iu":
        return _float_to_int(x, dtype)
    return x.astype(dtype)


def _float_to_int(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Truncate toward zero, saturate out-of-range values, NaN -> 0 (XLA's literal.cc)."""
    info = np.iinfo(dtype)
    t = np.trunc(x.astype(np.float64))  # f16/f32/f64 are exact in f64
    too_big, too_small = t >= float(int(info.max) + 1), t < float(info.min)
    out = np.asarray(np.where(too_big | too_small | np.isnan(t), 0, t)).astype(dtype)
    out[too_big] = info.max
    out[too_small] = info.min
    return out


# ---- bit operations --------------------------------------------------------------------------


def _unsigned(x: np.ndarray) -> np.ndarray:
    """The same bits as the unsigned integer type of ``x``'s width."""
    x = np.asarray(x)
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


@handles(Opcode.BITCAST_CONVERT)
def _bitcast_convert(inst: Instruction, ops: list[Value]) -> Value:
    # numpy's view of a C-ordered array splits and joins the last dimension little-endian
    return np.ascontiguousarray(ops[0]).view(_dtype(inst)).reshape(_dims(inst))


@handles(Opcode.RNG_BIT_GENERATOR)
def _rng_bit_generator(inst: Instruction, ops: list[Value]) -> Value:
    bits = inst.shape.elements[1]  # type: ignore[union-attr]
    assert isinstance(bits, Shape)
    algorithm = "three_fry" if not inst.attrs_as(RngBitGeneratorAttrs).philox else "philox"
    return rng_bit_generator(algorithm, ops[0], bits.dims, bits.dtype.numpy)


@handles(Opcode.POPCNT)
def _popcnt(inst: Instruction, ops: list[Value]) -> Value:
    return np.bitwise_count(_unsigned(ops[0]))  # of the bits: numpy counts |x| for signed x


@handles(Opcode.CLZ)
def _count_leading_zeros(inst: Instruction, ops: list[Value]) -> Value:
    bits = _unsigned(ops[0]).astype(np.uint64)
    length = np.zeros(bits.shape, np.int64)
    for step in (32, 16, 8, 4, 2, 1):  # binary search for the highest set bit
        high = bits >= np.uint64(1 << step)
        length += np.where(high, step, 0)
        bits = np.where(high, bits >> np.uint64(step), bits)
    return ops[0].dtype.itemsize * 8 - length - (bits > 0)


def _shift(kind: Opcode, inst: Instruction, ops: list[Value]) -> Value:
    """XLA's shifts: the amount is read as unsigned; one of at least the width shifts every
    bit out (0, or the sign bit everywhere for an arithmetic right shift)."""
    x, width = np.asarray(ops[0]), ops[0].dtype.itemsize * 8
    amount = _unsigned(ops[1])
    big = amount >= width
    safe = np.where(big, 0, amount).astype(amount.dtype)
    if kind is Opcode.SHIFT_RIGHT_ARITHMETIC:
        signed = x.view(np.dtype(f"i{x.dtype.itemsize}"))
        out = np.where(big, signed >> (width - 1), signed >> safe.astype(signed.dtype))
    else:
        moved = _unsigned(x) << safe if kind is Opcode.SHIFT_LEFT else _unsigned(x) >> safe
        out = np.where(big, 0, moved).astype(amount.dtype)
    return np.asarray(out).view(x.dtype)


for _opcode in (Opcode.SHIFT_LEFT, Opcode.SHIFT_RIGHT_LOGICAL, Opcode.SHIFT_RIGHT_ARITHMETIC):
    handles(_opcode)(partial(_shift, _opcode))


@handles(Opcode.REDUCE_PRECISION)
def _reduce_precision(inst: Instruction, ops: list[Value]) -> Value:
    """XLA's rounding to fewer mantissa bits (to nearest, ties to even) and clamping to a
    narrower exponent range (overflow to inf, underflow to zero), on the bits of ``x``."""
    attrs, x = inst.attrs_as(ReducePrecisionAttrs), np.asarray(ops[0])
    exponent_bits, mantissa_bits = PrimitiveType.from_numpy(x.dtype).float_bits
    bits, width = _unsigned(x).copy(), x.dtype.itemsize * 8
    one = bits.dtype.type(1)
    if attrs.mantissa_bits < mantissa_bits:
        shift = mantissa_bits - attrs.mantissa_bits
        last = one << shift
        bias = ((bits & last) >> shift) + ((last >> one) - one)
        bits = (bits + bias) & ~(last - one)
    if attrs.exponent_bits < exponent_bits:
        exponent_mask = ((one << exponent_bits) - one) << mantissa_bits
        bias, reduced_bias = (1 << (exponent_bits - 1)) - 1, (1 << (attrs.exponent_bits - 1)) - 1
        exponent, signed_zero = bits & exponent_mask, bits & (one << (width - 1))
        overflows = exponent > bits.dtype.type((bias + reduced_bias) << mantissa_bits)
        underflows = exponent <= bits.dtype.type((bias - reduced_bias) << mantissa_bits)
        bits = np.where(overflows, signed_zero | exponent_mask, bits)
        bits = np.where(underflows & ~overflows, signed_zero, bits)
    out = np.asarray(bits).view(x.dtype)
    return np.where(np.isnan(x), x, out) if attrs.mantissa_bits > 0 else out


# ---- elementwise binary ----------------------------------------------------------------------


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "fc":
        return np.divide(a, b)
    zero, overflow = b == 0, _int_min_by_minus_one(a, b)
    safe = np.where(zero | overflow, 1, b)
    quotient = (a - np.fmod(a, safe)) // safe  # exact, so floor division truncates
    return np.where(zero, np.iinfo(a.dtype).max if a.dtype.kind == "u" else -1, quotient)


def _remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return np.fmod(a, b)  # C fmod: the sign of the dividend
    zero = b == 0
    safe = np.where(zero | _int_min_by_minus_one(a, b), 1, b)
    return np.where(zero, a, np.fmod(a, safe))


def _int_min_by_minus_one(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind != "i":
        return np.zeros(np.shape(a), dtype=bool)
    return (a == np.iinfo(a.dtype).min) & (b == -1)


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        x, y = _widen(a), _widen(b)
        result = np.power(x, y)  # C pow: pow(1, y) == pow(x, 0) == 1, even NaN
        # C (and XLA, which calls it) gives pow(-inf, y) = +inf for y > 0 not an integer,
        # where numpy gives NaN.
        return np.where((x == -np.inf) & (y > 0) & (np.floor(y) != y), np.inf, result)
    if a.dtype == np.bool_:
        return a | ~b
    return _integer_power(a, b)


def _integer_power(base: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """Wrapping exponentiation by squaring; a negative exponent gives ``base == 1 ? 1 : 0``."""
    acc, square, e = np.ones_like(base), np.array(base), np.where(exponent < 0, 0, exponent)
    while np.any(e != 0):
        acc = np.where(e & 1, acc * square, acc)
        square, e = square * square, e >> 1
    return np.where(exponent < 0, base == 1, acc)


_COMPARE: dict[ComparisonDirection, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    ComparisonDirection.EQ: np.equal, ComparisonDirection.NE: np.not_equal,
    ComparisonDirection.LT: np.less, ComparisonDirection.LE: np.less_equal,
    ComparisonDirection.GT: np.greater, ComparisonDirection.GE: np.greater_equal,
}  # fmt: skip


@handles(Opcode.COMPARE)
def _compare(inst: Instruction, ops: list[Value]) -> Value:
    attrs, (a, b) = inst.attrs_as(CompareAttrs), ops
    if attrs.type is ComparisonType.TOTALORDER:
        a, b = total_order_keys(a), total_order_keys(b)
    return _COMPARE[attrs.direction](a, b)  # IEEE for NaN unless TOTALORDER


def total_order_keys(x: np.ndarray) -> np.ndarray:
    """Integers that order as XLA's total order orders ``x``: for floats -NaN < -inf < ...
    < -0 < +0 < ... < inf < NaN (sign-magnitude bits made two's complement); other types
    are their own keys (pred as u8)."""
    if x.dtype == np.bool_:
        return x.astype(np.uint8)
    if x.dtype.kind != "f":
        return x
    bits = np.ascontiguousarray(x).view(np.dtype(f"i{x.dtype.itemsize}"))
    return np.where(bits < 0, bits ^ np.iinfo(bits.dtype).max, bits)


_BINARY: dict[Opcode, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    Opcode.ADD: np.add, Opcode.SUBTRACT: np.subtract, Opcode.MULTIPLY: np.multiply,
    Opcode.DIVIDE: _divide, Opcode.REMAINDER: _remainder, Opcode.POWER: _power,
    Opcode.MAXIMUM: np.maximum, Opcode.MINIMUM: np.minimum,  # both propagate NaN, as XLA
    Opcode.AND: np.bitwise_and, Opcode.OR: np.bitwise_or, Opcode.XOR: np.bitwise_xor,
    Opcode.ATAN2: lambda y, x: np.arctan2(_widen(y), _widen(x)),
}  # fmt: skip


def _binary(
    fn: Callable[[np.ndarray, np.ndarray], np.ndarray], inst: Instruction, ops: list[Value]
) -> Value:
    return fn(ops[0], ops[1])


for _opcode, _fn2 in _BINARY.items():
    handles(_opcode)(partial(_binary, _fn2))


@handles(Opcode.COMPLEX)
def _complex(inst: Instruction, ops: list[Value]) -> Value:
    z = np.empty(ops[0].shape, _dtype(inst))
    z.real, z.imag = ops
    return z


# ---- Fourier transforms ----------------------------------------------------------------------

_FFT: dict[FftType, Callable[..., np.ndarray]] = {
    FftType.FFT: np.fft.fftn,
    FftType.IFFT: np.fft.ifftn,  # scaled by 1 / prod(fft_length), as XLA's
    FftType.RFFT: np.fft.rfftn,
    FftType.IRFFT: np.fft.irfftn,  # the imaginary parts of the 0 and n/2 bins are ignored
}


@handles(Opcode.FFT)
def _fft(inst: Instruction, ops: list[Value]) -> Value:
    """numpy.fft in double precision (``_fit`` rounds to the declared type)."""
    attrs = inst.attrs_as(FftAttrs)
    x, lengths = ops[0], attrs.fft_length
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    return _FFT[attrs.fft_type](wide, s=lengths, axes=axes)


# ---- elementwise ternary ---------------------------------------------------------------------


@handles(Opcode.SELECT)
def _select(inst: Instruction, ops: list[Value]) -> Value:
    return np.where(ops[0], ops[1], ops[2])


@handles(Opcode.CLAMP)
def _clamp(inst: Instruction, ops: list[Value]) -> Value:
    low, x, high = ops
    return np.minimum(high, np.maximum(x, low))  # NaN in any operand propagates, as in XLA


# ---- data movement ---------------------------------------------------------------------------


@handles(Opcode.BITCAST)
def _bitcast(inst: Instruction, ops: list[Value]) -> Value:
    raw = np.ascontiguousarray(ops[0]).tobytes()
    return np.frombuffer(raw, dtype=_dtype(inst)).reshape(_dims(inst))


@handles(Opcode.BROADCAST)
def _broadcast(inst: Instruction, ops: list[Value]) -> Value:
    x, mapping, dims = ops[0], inst.attrs_as(Dimensions).dimensions, _dims(inst)
    order = sorted(range(len(mapping)), key=lambda i: mapping[i])
    shape = [1] * len(dims)
    for i in order:
        shape[mapping[i]] = x.shape[i]
    return np.broadcast_to(np.transpose(x, order).reshape(shape), dims)


@handles(Opcode.CONCATENATE)
def _concatenate(inst: Instruction, ops: list[Value]) -> Value:
    return np.concatenate(ops, axis=inst.attrs_as(Dimensions).dimensions[0])


@handles(Opcode.PAD)
def _pad_handler(inst: Instruction, ops: list[Value]) -> Value:
    return pad(ops[0], ops[1], inst.attrs_as(PadAttrs).dims)


def pad(x: np.ndarray, value: np.ndarray | float, dims: Sequence[PadDim]) -> np.ndarray:
    """XLA's pad: ``interior`` values between elements, then ``low``/``high`` at the edges,
    where a negative ``low``/``high`` crops instead."""
    dilated = [n + max(n - 1, 0) * p.interior for n, p in zip(x.shape, dims, strict=True)]
    lows = [max(p.low, 0) for p in dims]
    full = [lo + n + max(p.high, 0) for lo, n, p in zip(lows, dilated, dims, strict=True)]
    out = np.full(full, value, dtype=x.dtype)
    spread = zip(lows, dilated, dims, strict=True)
    out[tuple(slice(lo, lo + n, p.interior + 1) for lo, n, p in spread)] = x
    crop = zip(full, dims, strict=True)
    return out[tuple(slice(max(-p.low, 0), f - max(-p.high, 0)) for f, p in crop)]


@handles(Opcode.GATHER)
def _gather_handler(inst: Instruction, ops: list[Value]) -> Value:
    return gather(ops[0], ops[1], inst.attrs_as(GatherAttrs))


def gather(operand: np.ndarray, indices: np.ndarray, g: GatherAttrs) -> np.ndarray:
    """XLA's gather; start indices are clamped so that every slice lies inside the operand."""
    starts = _gather_starts(operand, indices, g)
    rank, batch_rank = operand.ndim, starts.ndim - 1
    offsets = np.moveaxis(np.indices(g.slice_sizes, dtype=np.int64), 0, -1)  # slice + [rank]
    full = starts.reshape((*starts.shape[:-1], *[1] * rank, rank)) + offsets
    values = operand[tuple(np.moveaxis(full, -1, 0))]  # batch dims + slice dims
    dropped = {*g.collapsed_slice_dims, *g.operand_batching_dims}
    kept = [n for d, n in enumerate(g.slice_sizes) if d not in dropped]
    values = values.reshape((*starts.shape[:-1], *kept))  # dropped dims have size 1
    batch_axes = iter(range(batch_rank))
    source = [
        batch_rank + g.offset_dims.index(d) if d in g.offset_dims else next(batch_axes)
        for d in range(values.ndim)
    ]
    return np.transpose(values, source)


def _gather_starts(operand: np.ndarray, indices: np.ndarray, g: GatherAttrs) -> np.ndarray:
    """Per batch position, the clamped start of its slice in every operand dim."""
    ivd = g.index_vector_dim
    if ivd == indices.ndim:
        indices = indices[..., np.newaxis]
    vectors = np.moveaxis(indices, ivd, -1).astype(np.int64)
    batch = vectors.shape[:-1]
    starts = np.zeros((*batch, operand.ndim), dtype=np.int64)
    for k, d in enumerate(g.start_index_map):
        starts[..., d] = vectors[..., k]
    for o, i in zip(g.operand_batching_dims, g.start_indices_batching_dims, strict=True):
        axis = i if i < ivd else i - 1
        ramp = np.arange(batch[axis]).reshape([-1 if a == axis else 1 for a in range(len(batch))])
        starts[..., o] = ramp
    limits = np.array(operand.shape, dtype=np.int64) - np.array(g.slice_sizes, dtype=np.int64)
    return np.clip(starts, 0, limits)


def _clamped_starts(
    dims: Sequence[int], sizes: Sequence[int], indices: Sequence[np.ndarray]
) -> list[slice]:
    """XLA's dynamic slicing: each start is clamped so that the slice lies inside."""
    starts = [
        min(max(int(i), 0), n - size) for i, n, size in zip(indices, dims, sizes, strict=True)
    ]
    return [slice(start, start + size) for start, size in zip(starts, sizes, strict=True)]


@handles(Opcode.DYNAMIC_SLICE)
def _dynamic_slice(inst: Instruction, ops: list[Value]) -> Value:
    x, *indices = ops
    sizes = inst.attrs_as(DynamicSliceAttrs).sizes
    return x[tuple(_clamped_starts(x.shape, sizes, indices))]


@handles(Opcode.DYNAMIC_UPDATE_SLICE)
def _dynamic_update_slice(inst: Instruction, ops: list[Value]) -> Value:
    x, update, *indices = ops
    out = np.array(x, copy=True)
    out[tuple(_clamped_starts(x.shape, update.shape, indices))] = update
    return out


@handles(Opcode.RESHAPE)
def _reshape(inst: Instruction, ops: list[Value]) -> Value:
    return np.reshape(ops[0], _dims(inst))  # row-major


@handles(Opcode.REVERSE)
def _reverse(inst: Instruction, ops: list[Value]) -> Value:
    dims = inst.attrs_as(Dimensions).dimensions
    return np.flip(ops[0], axis=tuple(dims)) if dims else ops[0]


@handles(Opcode.SLICE)
def _slice(inst: Instruction, ops: list[Value]) -> Value:
    a = inst.attrs_as(SliceAttrs)
    return ops[0][tuple(slice(*s) for s in zip(a.starts, a.limits, a.strides, strict=True))]


@handles(Opcode.TRANSPOSE)
def _transpose(inst: Instruction, ops: list[Value]) -> Value:
    return np.transpose(ops[0], inst.attrs_as(Dimensions).dimensions)


# ---- dot and convolution ---------------------------------------------------------------------


@handles(Opcode.DOT)
def _dot(inst: Instruction, ops: list[Value]) -> Value:
    d = inst.attrs_as(DotDims)
    lhs, rhs = _widen(ops[0]), _widen(ops[1])
    lhs_free = [i for i in range(lhs.ndim) if i not in (*d.lhs_batch, *d.lhs_contracting)]
    rhs_free = [i for i in range(rhs.ndim) if i not in (*d.rhs_batch, *d.rhs_contracting)]
    sizes = [[lhs.shape[i] for i in dims] for dims in (d.lhs_batch, lhs_free, d.lhs_contracting)]
    rhs_free_sizes = [rhs.shape[i] for i in rhs_free]
    batch, m, k, n = (math.prod(s) for s in (*sizes, rhs_free_sizes))
    lhs3 = np.transpose(lhs, [*d.lhs_batch, *lhs_free, *d.lhs_contracting]).reshape(batch, m, k)
    rhs3 = np.transpose(rhs, [*d.rhs_batch, *d.rhs_contracting, *rhs_free]).reshape(batch, k, n)
    return np.matmul(lhs3, rhs3).reshape(*sizes[0], *sizes[1], *rhs_free_sizes)


def _window_slices(
    offsets: Sequence[int], window: Window, out_dims: Sequence[int]
) -> tuple[slice, ...]:
    """For one window offset, the strided slice of the padded base that every output reads."""
    per_dim = zip(offsets, window.dims, out_dims, strict=True)
    return tuple(
        slice(k * w.rhs_dilation, k * w.rhs_dilation + (o - 1) * w.stride + 1, w.stride)
        for k, w, o in per_dim
    )


def _base_padding(window: Window) -> list[PadDim]:
    return [PadDim(w.pad_low, w.pad_high, w.lhs_dilation - 1) for w in window.dims]


@handles(Opcode.CONVOLUTION)
def _convolution(inst: Instruction, ops: list[Value]) -> Value:
    attrs = inst.attrs_as(ConvAttrs)
    d, window, groups = attrs.dims, attrs.window, attrs.feature_group_count
    if attrs.batch_group_count != 1:
        raise UnsupportedError(
            f"evaluate: {inst.name}: batch_group_count {attrs.batch_group_count} is not supported"
        )
    out_spatial = [_dims(inst)[i] for i in d.output_spatial]
    x = np.transpose(_widen(ops[0]), [d.input_batch, d.input_feature, *d.input_spatial])
    w = np.transpose(
        _widen(ops[1]), [d.kernel_output_feature, d.kernel_input_feature, *d.kernel_spatial]
    )
    x = pad(x, 0, [PadDim(0, 0), PadDim(0, 0), *_base_padding(window)])
    (batch, _), (out_features, in_per_group) = x.shape[:2], w.shape[:2]
    points = math.prod(out_spatial)
    kernel = w.reshape(groups, out_features // groups, in_per_group, *w.shape[2:])
    acc = np.zeros((batch, groups, out_features // groups, points), dtype=x.dtype)
    for offsets in np.ndindex(*w.shape[2:]) if points else ():
        patch = x[(slice(None), slice(None), *_window_slices(offsets, window, out_spatial))]
        patch = patch.reshape(batch, groups, in_per_group, points)
        acc += np.matmul(kernel[(..., *offsets)], patch)
    result = acc.reshape(batch, out_features, *out_spatial)
    source = [0] * result.ndim  # result axis order is batch, feature, spatial...
    for axis, dim in enumerate((d.output_batch, d.output_feature, *d.output_spatial)):
        source[dim] = axis
    return np.transpose(result, source)


# ---- reductions ------------------------------------------------------------------------------

_REDUCER_UFUNCS: dict[Opcode, np.ufunc] = {
    Opcode.ADD: np.add, Opcode.MULTIPLY: np.multiply, Opcode.MAXIMUM: np.maximum,
    Opcode.MINIMUM: np.minimum, Opcode.AND: np.bitwise_and, Opcode.OR: np.bitwise_or,
}  # fmt: skip
# Instructions a scalar computation may contain and still be evaluated on whole arrays at once.
_VECTORIZABLE = ELEMENTWISE | {
    Opcode.PARAMETER,
    Opcode.CONSTANT,
    Opcode.TUPLE,
    Opcode.GET_TUPLE_ELEMENT,
}


def simple_reducer(comp: Computation) -> np.ufunc | None:
    """The ufunc when ``comp`` is ``(a, b) -> op(a, b)`` for a commutative ``op``, else None."""
    params, root = comp.parameters, comp.root
    if len(params) != 2 or root.opcode not in _REDUCER_UFUNCS or len(comp.post_order()) != 3:
        return None
    if sorted(map(id, root.operands)) != sorted(map(id, params)):
        return None
    return _REDUCER_UFUNCS[root.opcode]


def apply_elementwise(comp: Computation, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Apply the scalar computation ``comp`` at every index of equally shaped ``arrays``."""
    shape = arrays[0].shape
    if all(i.opcode in _VECTORIZABLE for i in comp.post_order()):
        flat = [np.asarray(a).reshape(-1) for a in arrays]
        out = _run(comp, flat, batched=True)
        return [np.broadcast_to(o, flat[0].shape).reshape(shape) for o in _as_list(out)]
    results: list[np.ndarray] | None = None
    for index in np.ndindex(*shape):  # slow, general: one interpreter run per element
        out = _as_list(_run(comp, [np.asarray(a[index]) for a in arrays], batched=False))
        if results is None:
            results = [np.empty(shape, dtype=o.dtype) for o in out]
        for result, o in zip(results, out, strict=True):
            result[index] = o
    if results is None:  # no elements: the result types come from the computation
        return [np.empty(shape, dtype=s.dtype.numpy) for s in _scalar_shapes(comp.root.shape)]
    return results


def _as_list(value: Value) -> list[np.ndarray]:
    return list(value) if isinstance(value, tuple) else [value]


def _scalar_shapes(shape: AnyShape) -> list[Shape]:
    return (
        [s for s in shape.elements if isinstance(s, Shape)]
        if isinstance(shape, TupleShape)
        else [shape]
    )


def _split_variadic(ops: list[Value]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    half = len(ops) // 2
    return ops[:half], ops[half:]


@handles(Opcode.REDUCE)
def _reduce(inst: Instruction, ops: list[Value]) -> Value:
    xs, inits = _split_variadic(ops)
    dims, comp = tuple(inst.attrs_as(Dimensions).dimensions), inst.called[0]
    ufunc = simple_reducer(comp) if len(xs) == 1 else None
    if ufunc is not None:
        x = _widen(xs[0])
        return ufunc.reduce(x, axis=dims, dtype=x.dtype, initial=inits[0].astype(x.dtype)[()])
    results = _reduce_generic(comp, xs, inits, dims)
    return results[0] if len(results) == 1 else tuple(results)


def _reduce_generic(
    comp: Computation, xs: list[np.ndarray], inits: list[np.ndarray], dims: tuple[int, ...]
) -> list[np.ndarray]:
    """Fold the reduced elements into the init values one at a time, in index order (as XLA's
    HloEvaluator and aotc's kernels do), vectorized over the kept elements. The order matters
    for reducers that are not associative."""
    kept = [d for d in range(xs[0].ndim) if d not in dims]
    kept_dims = [xs[0].shape[d] for d in kept]
    rows, count = math.prod(kept_dims), math.prod(xs[0].shape[d] for d in dims)
    cols = [np.transpose(x, [*kept, *dims]).reshape(rows, count) for x in xs]
    acc = [np.broadcast_to(init, (rows,)) for init in inits]
    for k in range(count):
        acc = apply_elementwise(comp, acc + [c[:, k] for c in cols])
    return [a.reshape(kept_dims) for a in acc]


@handles(Opcode.REDUCE_WINDOW)
def _reduce_window(inst: Instruction, ops: list[Value]) -> Value:
    xs, inits = _split_variadic(ops)
    window, comp = inst.attrs_as(ReduceWindowAttrs).window, inst.called[0]
    out_dims = _scalar_shapes(inst.shape)[0].dims
    ufunc = simple_reducer(comp) if len(xs) == 1 else None
    padding = _base_padding(window)
    padded = [pad(x, init, padding) for x, init in zip(xs, inits, strict=True)]
    acc = [np.broadcast_to(init, out_dims) for init in inits]
    if ufunc is not None:  # a generic reducer takes its declared types, unwidened
        padded, acc = [_widen(padded[0])], [_widen(acc[0])]
    for offsets in np.ndindex(*[w.size for w in window.dims]) if math.prod(out_dims) else ():
        values = [p[_window_slices(offsets, window, out_dims)] for p in padded]
        acc = [ufunc(acc[0], values[0])] if ufunc else apply_elementwise(comp, acc + values)
    return acc[0] if len(acc) == 1 else tuple(acc)


# ---- sorting, selecting and scattering ------------------------------------------------------


@handles(Opcode.SORT)
def _sort(inst: Instruction, ops: list[Value]) -> Value:
    """Sort the operands together along the dimension, by the comparator (stable, also when
    ``is_stable`` is false: any order of equivalent elements is XLA's)."""
    dim = inst.attrs_as(SortAttrs).dimension
    moved = [np.moveaxis(x, dim, -1) for x in ops]
    rows = [m.reshape(-1, m.shape[-1]) for m in moved]
    comp = inst.called[0]
    order = stable_sort_order(lambda a, b: _less(comp, rows, a, b), *rows[0].shape)
    out = [
        np.moveaxis(np.take_along_axis(r, order, 1).reshape(m.shape), -1, dim)
        for r, m in zip(rows, moved, strict=True)
    ]
    return out[0] if len(out) == 1 else tuple(out)


def _less(comp: Computation, rows: list[np.ndarray], a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The comparator on the elements at positions ``a`` and ``b`` of each row."""
    args = [np.take_along_axis(r, i, 1) for r in rows for i in (a, b)]
    return np.asarray(apply_elementwise(comp, args)[0], dtype=bool)


def stable_sort_order(
    less: Callable[[np.ndarray, np.ndarray], np.ndarray], rows: int, n: int
) -> np.ndarray:
    """Per row, the positions of its elements in stable sorted order under ``less``.

    A bottom-up merge sort whose merges are vectorized over all rows and runs: an element of
    the left run moves past the elements of the right run less than it, one of the right run
    past those of the left run it is not less than, each count found by a binary search.
    O(n log^2 n) comparator evaluations, each on whole arrays.
    """
    order = np.broadcast_to(np.arange(n), (rows, n)).copy()
    pos, width = np.arange(n), 1
    while width < n:
        start = pos // (2 * width) * (2 * width)
        left = pos - start < width
        other = np.where(left, start + width, start)
        count = np.where(left, np.clip(n - start - width, 0, width), width)
        lo, hi = np.zeros((rows, n), np.int64), np.broadcast_to(count, (rows, n)).copy()
        while np.any(lo < hi):
            mid = (lo + hi) // 2
            theirs = np.take_along_axis(order, np.minimum(other + mid, n - 1), 1)
            right_less = less(np.where(left, theirs, order), np.where(left, order, theirs))
            after = np.where(left, right_less, ~right_less)  # the element goes after theirs
            active = lo < hi
            lo, hi = np.where(active & after, mid + 1, lo), np.where(active & ~after, mid, hi)
        target = pos + lo - np.where(left, 0, width)  # its offset in its run, plus lo
        order = _placed(order, target)
        width *= 2
    return order


def _placed(order: np.ndarray, target: np.ndarray) -> np.ndarray:
    if not np.array_equal(
        np.sort(target, axis=1), np.broadcast_to(np.arange(order.shape[1]), order.shape)
    ):
        raise HloError("evaluate: the sort comparator is not a strict weak order")
    placed = np.empty_like(order)
    np.put_along_axis(placed, target, order, 1)
    return placed


@handles(Opcode.TOPK)
def _topk(inst: Instruction, ops: list[Value]) -> Value:
    """The k largest (or smallest) of the last dimension in XLA's total order, ties by index."""
    attrs, x = inst.attrs_as(TopKAttrs), ops[0]
    keys = total_order_keys(x)
    order = np.argsort(~keys if attrs.largest else keys, axis=-1, kind="stable")[..., : attrs.k]
    return np.take_along_axis(x, order, -1), order.astype(np.int32)


@handles(Opcode.SCATTER)
def _scatter(inst: Instruction, ops: list[Value]) -> Value:
    n = len(ops) // 2
    outs = [np.array(x, copy=True) for x in ops[:n]]
    scatter(outs, ops[n], ops[n + 1 :], inst.attrs_as(ScatterAttrs), inst.called[0])
    return outs[0] if n == 1 else tuple(outs)


def scatter(
    outs: list[np.ndarray],
    indices: np.ndarray,
    updates: Sequence[np.ndarray],
    s: ScatterAttrs,
    comp: Computation,
) -> None:
    """XLA's scatter into ``outs``, in place: one update window at a time, in row-major order
    of the updates' scatter dims (so repeated indices fold in that order); a window not
    wholly inside the operand is skipped, as XLA's CPU and GPU backends skip it."""
    rank, dims = outs[0].ndim, np.array(outs[0].shape, dtype=np.int64)
    window_dims = s.update_window_dims
    scatter_dims = [d for d in range(updates[0].ndim) if d not in window_dims]
    sizes = np.ones(rank, dtype=np.int64)
    sizes[scatter_window_operand_dims(rank, s)] = [updates[0].shape[d] for d in window_dims]
    vectors = _index_vectors(indices, s.index_vector_dim)
    for at in np.ndindex(*[updates[0].shape[d] for d in scatter_dims]):
        start = _scatter_start(vectors[at], at, rank, s)
        if np.any(start < 0) or np.any(start > dims - sizes):
            continue
        window = tuple(slice(a, a + z) for a, z in zip(start, sizes, strict=True))
        picks = dict(zip(scatter_dims, at, strict=True))
        where = tuple(picks.get(d, slice(None)) for d in range(updates[0].ndim))
        current = [o[window].reshape(updates[0][where].shape) for o in outs]
        new = apply_elementwise(comp, current + [u[where] for u in updates])
        for o, v in zip(outs, new, strict=True):
            o[window] = v.reshape(o[window].shape)


def _index_vectors(indices: np.ndarray, ivd: int) -> np.ndarray:
    """The indices with the index vector dim last (an implicit one of size 1 added), as i64."""
    if ivd == indices.ndim:
        indices = indices[..., np.newaxis]
    return np.moveaxis(indices, ivd, -1).astype(np.int64)


def _scatter_start(
    vector: np.ndarray, at: tuple[int, ...], rank: int, s: ScatterAttrs
) -> np.ndarray:
    """The operand index an update window starts at."""
    start = np.zeros(rank, dtype=np.int64)
    start[list(s.scatter_dims_to_operand_dims)] = vector
    ivd = s.index_vector_dim
    for o, i in zip(s.input_batching_dims, s.scatter_indices_batching_dims, strict=True):
        start[o] = at[i if i < ivd else i - 1]
    return start


# ---- structure -------------------------------------------------------------------------------


@handles(Opcode.FUSION, Opcode.CALL)
def _call_handler(inst: Instruction, ops: list[Value]) -> Steps:
    return (yield _call(inst.called[0], ops))


@handles(Opcode.WHILE)
def _while(inst: Instruction, ops: list[Value]) -> Steps:
    condition, body = inst.called
    carry = ops[0]
    while (yield _call(condition, [carry])):
        carry = yield _call(body, [carry])
    return carry


@handles(Opcode.CONDITIONAL)
def _conditional(inst: Instruction, ops: list[Value]) -> Steps:
    """A pred selects branch 0 when true, else 1; an index out of range the last branch."""
    selector, *operands = ops
    last = len(inst.called) - 1
    if selector.dtype == np.bool_:
        branch = 0 if selector else 1
    else:
        branch = int(selector) if 0 <= int(selector) <= last else last
    return (yield _call(inst.called[branch], [operands[branch]]))


@handles(Opcode.TUPLE)
def _tuple(inst: Instruction, ops: list[Value]) -> Value:
    return tuple(ops)


@handles(Opcode.GET_TUPLE_ELEMENT)
def _get_tuple_element(inst: Instruction, ops: list[Value]) -> Value:
    return ops[0][inst.attrs_as(TupleIndex).index]
