"""TF's random distributions (``random_distributions.h``) over a Philox stream, as HLO.

TF's ``FillPhiloxRandom`` hands a distribution the blocks of one ``PhiloxRandom`` (a key and a
128-bit counter) in order, so output element ``i`` of a 32-bit type reads word ``i`` of the
stream and a 64-bit one words ``2i, 2i + 1`` (low first):

- uniform floats: the low mantissa bits of the word(s) as the fraction of a number in [1, 2),
  minus one (``Uint32ToFloat``, ``Uint16ToHalf``, ``Uint16ToGfloat16``, ``Uint64ToDouble``),
  computed here exactly as ``mantissa * 2**-bits``;
- normals: Box-Muller pairs of two uniforms (``BoxMullerFloat``: u1 clamped to 1e-7, the
  angle ``2 * M_PI * u2`` computed in double as C++ promotes it), half and bfloat16 rounded
  from float, double from two double uniforms (``BoxMullerDouble``);
- truncated normals: a variable number of samples per output, so each group of 4 outputs (2
  for double) has its own 256 reserved blocks (``kReservedSamplesPerOutput``) and keeps the
  first 4 Box-Muller values with ``|x| < 2`` in order. The first 32 candidates of each group
  are computed: fewer than 4 of them inside (2, if double) has probability below 1e-34;
- integers: ``lo + bits % (hi - lo)`` in unsigned arithmetic, or the bits themselves.

The numbers are TF's bit for bit but where ``log``, ``sin`` and ``cos`` differ from glibc's
in the last place (a truncated normal within an ulp of 2 may then keep another sample).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from aotc.errors import UnsupportedError
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.ir import ComparisonDirection, DotDims, Instruction, Opcode
from aotc.hlo.prng import (
    U32,
    U64,
    Counter,
    Key,
    interleave,
    join_u64,
    philox_blocks,
    philox_stream,
    splat,
)
from aotc.hlo.shape import PrimitiveType, Shape

F16, BF16, F32, F64 = PrimitiveType.F16, PrimitiveType.BF16, PrimitiveType.F32, PrimitiveType.F64
_MANTISSA_BITS = {F16: 10, BF16: 7, F32: 23, F64: 52}
FLOAT_TYPES = tuple(_MANTISSA_BITS)
INT_TYPES = (PrimitiveType.S32, PrimitiveType.S64, PrimitiveType.U32, PrimitiveType.U64)
_UNSIGNED = {4: U32, 8: U64}
_RESERVED_PER_OUTPUT = 256
_CANDIDATES = 32
_TRUNCATE = 2.0


@dataclass(frozen=True)
class Philox:
    """TF's ``PhiloxRandom``: a key and a 128-bit counter, as instructions."""

    key: Key
    counter: Counter


def uniform(
    b: ComputationBuilder, gen: Philox, dtype: PrimitiveType, dims: tuple[int, ...]
) -> Instruction:
    """TF's ``UniformDistribution`` of a float ``dtype``: [0, 1)."""
    count = math.prod(dims)
    words = philox_stream(b, gen.key, gen.counter, count * _words_per_value(dtype))
    return b.reshape(b.slice(_unit(b, words, dtype), [0], [count], [1]), dims)


def normal(
    b: ComputationBuilder, gen: Philox, dtype: PrimitiveType, dims: tuple[int, ...]
) -> Instruction:
    """TF's ``NormalDistribution`` of a float ``dtype``."""
    count = math.prod(dims)
    pairs = max(1, -(-count // 2))
    words = philox_stream(b, gen.key, gen.counter, 2 * pairs * _words_per_value(dtype))
    values = b.slice(_box_muller(b, words, dtype), [0], [count], [1])
    return b.reshape(_narrow(b, values, dtype), dims)


def truncated_normal(
    mb: ModuleBuilder,
    b: ComputationBuilder,
    gen: Philox,
    dtype: PrimitiveType,
    dims: tuple[int, ...],
) -> Instruction:
    """TF's ``TruncatedNormalDistribution`` filled as ``FillPhiloxRandomTask`` does."""
    group = 2 if dtype is F64 else 4
    count = math.prod(dims)
    groups = max(1, -(-count // group))
    blocks = _CANDIDATES * _words_per_value(dtype) // 4
    skip = group * _RESERVED_PER_OUTPUT // 4
    offsets = b.binary(
        Opcode.ADD,
        b.binary(
            Opcode.MULTIPLY,
            b.iota(Shape(U64, (groups, blocks)), 0),
            splat(b, skip, U64, (groups, blocks)),
        ),
        b.iota(Shape(U64, (groups, blocks)), 1),
    )
    words = interleave(b, philox_blocks(b, gen.key, gen.counter, offsets))
    kept = _first_inside(mb, b, _box_muller(b, words, dtype), group)
    flat = b.slice(b.reshape(kept, (groups * group,)), [0], [count], [1])
    return b.reshape(_narrow(b, flat, dtype), dims)


def uniform_int(
    b: ComputationBuilder,
    gen: Philox,
    dtype: PrimitiveType,
    dims: tuple[int, ...],
    lo: int,
    hi: int,
) -> Instruction:
    """TF's integer ``UniformDistribution``: ``lo + bits % (hi - lo)``, wrapping."""
    unsigned = _UNSIGNED[dtype.byte_size]
    mask = (1 << (8 * dtype.byte_size)) - 1
    bits = _int_bits(b, gen, unsigned, math.prod(dims))
    n = bits.array_shape.dims
    offset = b.binary(Opcode.REMAINDER, bits, splat(b, (hi - lo) & mask, unsigned, n))
    value = b.binary(Opcode.ADD, offset, splat(b, lo & mask, unsigned, n))
    return b.reshape(_retype(b, value, dtype), dims)


def full_int(
    b: ComputationBuilder, gen: Philox, dtype: PrimitiveType, dims: tuple[int, ...]
) -> Instruction:
    """TF's ``UniformFullIntDistribution``: the bits themselves."""
    bits = _int_bits(b, gen, _UNSIGNED[dtype.byte_size], math.prod(dims))
    return b.reshape(_retype(b, bits, dtype), dims)


def check_dtype(op: str, dtype: PrimitiveType, allowed: tuple[PrimitiveType, ...]) -> None:
    if dtype not in allowed:
        names = ", ".join(t.value for t in allowed)
        raise UnsupportedError(f"{op} with dtype {dtype.value}: aotc supports {names}")


# ---- pieces -----------------------------------------------------------------------------------


def _words_per_value(dtype: PrimitiveType) -> int:
    return 2 if dtype.byte_size == 8 else 1


def _retype(b: ComputationBuilder, x: Instruction, dtype: PrimitiveType) -> Instruction:
    return x if x.array_shape.dtype is dtype else b.bitcast_convert(x, dtype)


def _narrow(b: ComputationBuilder, x: Instruction, dtype: PrimitiveType) -> Instruction:
    """Float values computed in float rounded to half or bfloat16 (TF's ``Eigen::half(f)``)."""
    return x if x.array_shape.dtype is dtype else b.convert(x, dtype)


def _columns(b: ComputationBuilder, x: Instruction, n: int) -> list[Instruction]:
    """``x[..., j::n]`` for each j < n, along the last dimension."""
    dims = tuple(x.array_shape.dims)
    grouped = b.reshape(x, (*dims[:-1], dims[-1] // n, n))
    lead = [0] * (len(dims) - 1)
    limits = [*dims[:-1], dims[-1] // n]
    return [
        b.reshape(b.slice(grouped, [*lead, 0, j], [*limits, j + 1]), (*dims[:-1], dims[-1] // n))
        for j in range(n)
    ]


def _unit(b: ComputationBuilder, words: Instruction, dtype: PrimitiveType) -> Instruction:
    """Uniforms in [0, 1) of ``dtype`` from the last dimension's words (two per double)."""
    bits = _MANTISSA_BITS[dtype]
    if dtype is F64:
        high, low = _columns(b, words, 2)  # TF: (x0 & 0xfffff) << 32 | x1
        masked = b.binary(Opcode.AND, high, splat(b, 0xFFFFF, U32, high.array_shape.dims))
        mantissa, compute = b.convert(join_u64(b, low, masked), F64), F64
    else:
        masked = b.binary(Opcode.AND, words, splat(b, (1 << bits) - 1, U32, words.array_shape.dims))
        mantissa, compute = b.convert(masked, F32), F32
    scale = b.broadcast(b.constant(2.0**-bits, compute), mantissa.array_shape.dims, [])
    return _narrow(b, b.binary(Opcode.MULTIPLY, mantissa, scale), dtype)


def _box_muller(b: ComputationBuilder, words: Instruction, dtype: PrimitiveType) -> Instruction:
    """Normals from the last dimension's words: one per word (two per double's four words),
    in ``dtype``'s compute type (float for half and bfloat16)."""
    compute = F64 if dtype is F64 else F32
    u1, u2 = _columns(b, _unit(b, words, compute), 2)
    dims = u1.array_shape.dims

    def const(value: float, dtype: PrimitiveType = compute) -> Instruction:
        return b.broadcast(b.constant(value, dtype), dims, [])

    u1 = b.binary(Opcode.MAXIMUM, u1, const(1e-7))  # TF's epsilon keeps log(u1) finite
    angle = b.binary(Opcode.MULTIPLY, const(2.0 * math.pi, F64), b.convert(u2, F64))
    angle = b.convert(angle, compute)  # float v1 = 2.0f * M_PI * u: a double product
    radius = b.unary(Opcode.SQRT, b.binary(Opcode.MULTIPLY, const(-2.0), b.unary(Opcode.LOG, u1)))
    sin = b.binary(Opcode.MULTIPLY, b.unary(Opcode.SINE, angle), radius)
    cos = b.binary(Opcode.MULTIPLY, b.unary(Opcode.COSINE, angle), radius)
    return interleave(b, [sin, cos])


def _first_inside(
    mb: ModuleBuilder, b: ComputationBuilder, values: Instruction, keep: int
) -> Instruction:
    """``[groups, keep]``: per row of ``values`` ([groups, n]), the first ``keep`` with
    ``|x| < 2``, in order (each one's rank among those inside is a prefix count: a dot with
    a strictly upper triangular matrix of ones)."""
    groups, n = values.array_shape.dims
    dtype = values.array_shape.dtype
    limit = b.broadcast(b.constant(_TRUNCATE, dtype), (groups, n), [])
    inside = b.compare(b.unary(Opcode.ABS, values), limit, ComparisonDirection.LT)
    ones = b.convert(inside, F32)
    before = b.constant(np.triu(np.ones((n, n), np.float32), 1))
    rank = b.dot(ones, before, DotDims((1,), (0,)))
    wide = (groups, keep, n)
    slot = b.convert(b.iota(Shape(F32, wide), 1), F32)
    chosen = b.binary(
        Opcode.AND,
        b.compare(b.broadcast(rank, wide, [0, 2]), slot, ComparisonDirection.EQ),
        b.broadcast(inside, wide, [0, 2]),
    )
    none = b.broadcast(b.constant(-np.inf, dtype), wide, [])
    picked = b.select(chosen, b.broadcast(values, wide, [0, 2]), none)
    init = b.constant(-np.inf, dtype)
    return b.reduce([picked], [init], [2], mb.reducer(Opcode.MAXIMUM, dtype))


def _int_bits(
    b: ComputationBuilder, gen: Philox, unsigned: PrimitiveType, count: int
) -> Instruction:
    """``count`` unsigned outputs: a word each, or two (low first) for 64 bits."""
    if unsigned is U32:
        return philox_stream(b, gen.key, gen.counter, count)
    words = philox_stream(b, gen.key, gen.counter, 2 * count)
    low, high = _columns(b, words, 2)
    return join_u64(b, low, high)
