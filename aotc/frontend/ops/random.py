"""TF's seeded random ops, computed with TF's own generator: Philox4x32-10.

TF's kernels (``random_ops.cc``, ``philox_random.h``) seed a Philox generator with the op's
``seed`` (the key) and ``seed2`` (the high half of the 128-bit counter); output element ``i``
takes word ``i % 4`` of the block at counter ``i // 4`` (``FillPhiloxRandom``). A float32
uniform is the low 23 bits of a word as the mantissa of a float in [1, 2), minus one
(``Uint32ToFloat``); a standard normal is a Box-Muller pair from two uniforms
(``BoxMullerFloat``, u1 clamped to 1e-7). Built from integer HLO ops, so the numbers are the
ones TF's first ``Session.run`` draws, bit for bit for the uniforms (the normals' log, sin and
cos may differ from TF's in the last place).

Determinism: the compiled function has no state, so every call returns those same numbers;
TF's stateful kernel would advance its generator on each run. ``seed = seed2 = 0`` asks TF for
a fresh random seed per process, which no ahead-of-time function can honour: it is an error.
"""

from __future__ import annotations

import math

from aotc.errors import UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.builder import ComputationBuilder
from aotc.hlo.ir import Instruction, Opcode
from aotc.hlo.shape import PrimitiveType, Shape

_U32, _U64, _F32 = PrimitiveType.U32, PrimitiveType.U64, PrimitiveType.F32
_MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
_KEY_STEPS = (0x9E3779B9, 0xBB67AE85)
_ROUNDS = 10
_MASK = 0xFFFFFFFF


def philox_words(b: ComputationBuilder, blocks: int, seed: int, seed2: int) -> Instruction:
    """``u32[blocks * 4]``: the four words of Philox4x32-10 at counters 0..blocks-1."""
    low = b.iota(Shape(_U32, (blocks,)), 0)

    def splat(value: int) -> Instruction:
        return b.broadcast(b.constant(value & _MASK, _U32), (blocks,), [])

    counter = [low, splat(0), splat(seed2), splat(seed2 >> 32)]
    key = [seed & _MASK, (seed >> 32) & _MASK]
    for _ in range(_ROUNDS):
        hi0, lo0 = _multiply_wide(b, counter[0], _MULTIPLIERS[0])
        hi1, lo1 = _multiply_wide(b, counter[2], _MULTIPLIERS[1])
        counter = [
            _xor(b, _xor(b, hi1, counter[1]), splat(key[0])),
            lo1,
            _xor(b, _xor(b, hi0, counter[3]), splat(key[1])),
            lo0,
        ]
        key = [(k + step) & _MASK for k, step in zip(key, _KEY_STEPS, strict=True)]
    columns = [b.reshape(word, (blocks, 1)) for word in counter]
    return b.reshape(b.concatenate(columns, 1), (blocks * 4,))


def _xor(b: ComputationBuilder, x: Instruction, y: Instruction) -> Instruction:
    return b.binary(Opcode.XOR, x, y)


def _multiply_wide(
    b: ComputationBuilder, x: Instruction, multiplier: int
) -> tuple[Instruction, Instruction]:
    """The high and low 32 bits of the 64-bit product ``x * multiplier``."""
    dims = x.array_shape.dims
    product = b.binary(
        Opcode.MULTIPLY, b.convert(x, _U64), b.broadcast(b.constant(multiplier, _U64), dims, [])
    )
    thirty_two = b.broadcast(b.constant(32, _U64), dims, [])
    high = b.binary(Opcode.SHIFT_RIGHT_LOGICAL, product, thirty_two)
    return b.convert(high, _U32), b.convert(product, _U32)  # convert keeps the low bits


def uniform_floats(b: ComputationBuilder, words: Instruction) -> Instruction:
    """TF's ``Uint32ToFloat``: the low 23 bits as a mantissa in [1, 2), minus one: [0, 1)."""
    dims = words.array_shape.dims

    def splat(value: int | float, dtype: PrimitiveType) -> Instruction:
        return b.broadcast(b.constant(value, dtype), dims, [])

    mantissa = b.binary(Opcode.AND, words, splat(0x7FFFFF, _U32))
    one_to_two = b.bitcast_convert(b.binary(Opcode.OR, mantissa, splat(0x3F800000, _U32)), _F32)
    return b.binary(Opcode.SUBTRACT, one_to_two, splat(1.0, _F32))


def _seeds(node: Node) -> tuple[int, int]:
    seed, seed2 = node.int_attr("seed", 0), node.int_attr("seed2", 0)
    if seed == 0 and seed2 == 0:
        raise UnsupportedError(
            f"{node.op} has seed = seed2 = 0, so TensorFlow draws a new random seed every run; "
            "give it a seed (tf.random.set_seed, or the op's seed) to compile it"
        )
    return seed % (1 << 64), seed2 % (1 << 64)


def _shape(ctx: TranslationContext, node: Node, shape: Instruction) -> tuple[int, ...]:
    dtype = PrimitiveType.from_numpy(node.dtype_attr("dtype"))
    if dtype is not _F32:
        raise UnsupportedError(f"{node.op} with dtype {dtype.value}: only float32 is supported")
    dims = ctx.constant_value(shape, "shape input (input 0)").reshape(-1)
    return tuple(int(d) for d in dims)


def _samples(ctx: TranslationContext, node: Node, count: int) -> Instruction:
    """``u32[count]`` words, as TF's ``FillPhiloxRandom`` hands them to a distribution."""
    seed, seed2 = _seeds(node)
    words = philox_words(ctx.builder, max(1, math.ceil(count / 4)), seed, seed2)
    return ctx.builder.slice(words, [0], [count], [1])


@translates("RandomUniform", note="float32; a nonzero seed or seed2; TF's Philox numbers")
def random_uniform(ctx: TranslationContext, node: Node, shape: Instruction) -> Instruction:
    dims = _shape(ctx, node, shape)
    uniform = uniform_floats(ctx.builder, _samples(ctx, node, math.prod(dims)))
    return ctx.builder.reshape(uniform, dims)


@translates("RandomStandardNormal", note="float32; a nonzero seed or seed2; TF's Box-Muller")
def random_standard_normal(ctx: TranslationContext, node: Node, shape: Instruction) -> Instruction:
    dims = _shape(ctx, node, shape)
    count = math.prod(dims)
    pairs = max(1, math.ceil(count / 2))
    b = ctx.builder
    uniform = b.reshape(uniform_floats(b, _samples(ctx, node, 2 * pairs)), (pairs, 2))
    u1 = b.reshape(b.slice(uniform, [0, 0], [pairs, 1], [1, 1]), (pairs,))
    u2 = b.reshape(b.slice(uniform, [0, 1], [pairs, 2], [1, 1]), (pairs,))

    def splat(value: float) -> Instruction:
        return b.broadcast(b.constant(value, _F32), (pairs,), [])

    u1 = b.binary(Opcode.MAXIMUM, u1, splat(1e-7))  # TF's epsilon keeps log(u1) finite
    radius = b.unary(Opcode.SQRT, b.binary(Opcode.MULTIPLY, splat(-2.0), b.unary(Opcode.LOG, u1)))
    angle = b.binary(Opcode.MULTIPLY, splat(2.0 * math.pi), u2)
    sin = b.binary(Opcode.MULTIPLY, b.unary(Opcode.SINE, angle), radius)
    cos = b.binary(Opcode.MULTIPLY, b.unary(Opcode.COSINE, angle), radius)
    both = b.concatenate([b.reshape(sin, (pairs, 1)), b.reshape(cos, (pairs, 1))], 1)
    flat = b.slice(b.reshape(both, (2 * pairs,)), [0], [count], [1])
    return b.reshape(flat, dims)
