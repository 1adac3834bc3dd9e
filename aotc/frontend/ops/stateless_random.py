"""TF's stateless random ops: Philox streams from a seed, or a key and counter, as HLO.

``tf.random.stateless_*`` turn a seed pair into a key and counter (``GenerateKey``: one
Philox block of the seeds under a fixed key, ``hlo/prng.py``'s ``scramble``), then draw with
the distributions of ``random_dists.py``. The V1 ops take the seed; the V2 ops a u64 key and a
u64[2] counter (``StatelessRandomGetKeyCounter`` makes them from a seed) and an algorithm.
Seeds, keys and counters are ordinary inputs: a fed seed (dropout or augmentation noise)
is scrambled and drawn from at run time, a constant one folds to a constant.

Algorithms: Philox (1), and auto-select (3), which TF's CPU kernels run as Philox. ThreeFry
(2) is refused, as TF's CPU kernels refuse it; so is an algorithm that is not a constant.
"""

from __future__ import annotations

from aotc.errors import UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.array import constant_ints
from aotc.frontend.ops.random import float_dtype, int_range, output_dims
from aotc.frontend.ops.random_dists import (
    INT_TYPES,
    Philox,
    check_dtype,
    full_int,
    normal,
    truncated_normal,
    uniform,
    uniform_int,
)
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.builder import ComputationBuilder
from aotc.hlo.ir import Instruction
from aotc.hlo.prng import U64, join_u64, scramble, split_u64
from aotc.hlo.shape import PrimitiveType

PHILOX, THREEFRY, AUTO_SELECT = 1, 2, 3
_V1 = "a seed input (constant or fed); TF's Philox numbers"
_V2 = "a key and counter (constant or fed), alg Philox or auto-select; TF's Philox numbers"


def _element(b: ComputationBuilder, x: Instruction, i: int) -> Instruction:
    return b.reshape(b.slice(x, [i], [i + 1], [1]), ())


def _as_u64(b: ComputationBuilder, x: Instruction) -> Instruction:
    """A seed element as TF reads it: int32 sign-extended, then the 64 bits as unsigned."""
    dtype = x.array_shape.dtype
    if dtype.byte_size < 8:
        x = b.convert(x, PrimitiveType.S64)
    return x if x.array_shape.dtype is U64 else b.bitcast_convert(x, U64)


def _from_seed(ctx: TranslationContext, seed: Instruction) -> Philox:
    """TF's ``GenerateKey`` of a ``[2]`` int32 or int64 seed."""
    b = ctx.builder
    if seed.array_shape.dims != (2,):
        raise UnsupportedError(f"the seed must have shape [2], got {seed.array_shape}")
    key, counter = scramble(b, _as_u64(b, _element(b, seed, 0)), _as_u64(b, _element(b, seed, 1)))
    return Philox(key, counter)


def _from_key_counter(
    ctx: TranslationContext, node: Node, key: Instruction, counter: Instruction, alg: Instruction
) -> Philox:
    """The generator of a V2 op: key ``u64[1]``, counter ``u64[2]`` (low, high), Philox."""
    algorithm = constant_ints(ctx, alg, "alg input (input 3)")[0]
    if algorithm == THREEFRY:
        raise UnsupportedError(
            f"{node.op} with the ThreeFry algorithm: TensorFlow's CPU kernels refuse it "
            "(Unsupported algorithm id: 2) and aotc computes TF's CPU numbers; use Philox"
        )
    if algorithm not in (PHILOX, AUTO_SELECT):
        raise UnsupportedError(f"{node.op} with algorithm {algorithm}: not a TF RNG algorithm")
    b = ctx.builder
    if key.array_shape.dims != (1,) or counter.array_shape.dims[0] < 2:
        raise UnsupportedError(
            f"Philox needs a key of shape [1] and a counter of shape [2], got "
            f"{key.array_shape} and {counter.array_shape}"
        )
    words = split_u64(b, _element(b, key, 0))
    return Philox(words, (_element(b, counter, 0), _element(b, counter, 1)))


@translates("StatelessRandomGetKeyCounter", note="Philox (TF's CPU algorithm)")
def get_key_counter(ctx: TranslationContext, node: Node, seed: Instruction) -> list[Instruction]:
    return _key_counter(ctx, seed)


def _key_counter(ctx: TranslationContext, seed: Instruction) -> list[Instruction]:
    """TF's key ``u64[1]`` and counter ``u64[2]`` of a seed (``GetKeyCounter``)."""
    b, gen = ctx.builder, _from_seed(ctx, seed)
    key = b.reshape(join_u64(b, gen.key[0], gen.key[1]), (1,))
    counter = b.concatenate([b.reshape(c, (1,)) for c in gen.counter], 0)
    return [key, counter]


@translates("StatelessRandomGetKeyCounterAlg", note="Philox (TF's CPU algorithm)")
def get_key_counter_alg(
    ctx: TranslationContext, node: Node, seed: Instruction
) -> list[Instruction]:
    return [*_key_counter(ctx, seed), ctx.scalar(PHILOX, PrimitiveType.S32)]


@translates("StatelessRandomGetAlg", note="Philox, as on TF's CPU")
def get_alg(ctx: TranslationContext, node: Node) -> Instruction:
    return ctx.scalar(PHILOX, PrimitiveType.S32)


@translates("StatelessRandomUniform", note=f"half, bfloat16, float, double; {_V1}")
def stateless_uniform(
    ctx: TranslationContext, node: Node, shape: Instruction, seed: Instruction
) -> Instruction:
    gen = _from_seed(ctx, seed)
    return uniform(ctx.builder, gen, float_dtype(node), output_dims(ctx, shape))


@translates("StatelessRandomNormal", note=f"half, bfloat16, float, double; {_V1}")
def stateless_normal(
    ctx: TranslationContext, node: Node, shape: Instruction, seed: Instruction
) -> Instruction:
    gen = _from_seed(ctx, seed)
    return normal(ctx.builder, gen, float_dtype(node), output_dims(ctx, shape))


@translates("StatelessTruncatedNormal", note=f"half, bfloat16, float, double; {_V1}")
def stateless_truncated_normal(
    ctx: TranslationContext, node: Node, shape: Instruction, seed: Instruction
) -> Instruction:
    gen, dims = _from_seed(ctx, seed), output_dims(ctx, shape)
    return truncated_normal(ctx.module, ctx.builder, gen, float_dtype(node), dims)


@translates("StatelessRandomUniformInt", note=f"int32, int64; constant minval < maxval; {_V1}")
def stateless_uniform_int(
    ctx: TranslationContext,
    node: Node,
    shape: Instruction,
    seed: Instruction,
    lo: Instruction,
    hi: Instruction,
) -> Instruction:
    return _uniform_int(ctx, node, _from_seed(ctx, seed), shape, lo, hi)


@translates("StatelessRandomUniformFullInt", note=f"int32, int64, uint32, uint64; {_V1}")
def stateless_full_int(
    ctx: TranslationContext, node: Node, shape: Instruction, seed: Instruction
) -> Instruction:
    return _full_int(ctx, node, _from_seed(ctx, seed), shape)


@translates("StatelessRandomUniformV2", note=f"half, bfloat16, float, double; {_V2}")
def stateless_uniform_v2(
    ctx: TranslationContext,
    node: Node,
    shape: Instruction,
    key: Instruction,
    counter: Instruction,
    alg: Instruction,
) -> Instruction:
    gen = _from_key_counter(ctx, node, key, counter, alg)
    return uniform(ctx.builder, gen, float_dtype(node), output_dims(ctx, shape))


@translates("StatelessRandomNormalV2", note=f"half, bfloat16, float, double; {_V2}")
def stateless_normal_v2(
    ctx: TranslationContext,
    node: Node,
    shape: Instruction,
    key: Instruction,
    counter: Instruction,
    alg: Instruction,
) -> Instruction:
    gen = _from_key_counter(ctx, node, key, counter, alg)
    return normal(ctx.builder, gen, float_dtype(node), output_dims(ctx, shape))


@translates("StatelessTruncatedNormalV2", note=f"half, bfloat16, float, double; {_V2}")
def stateless_truncated_normal_v2(
    ctx: TranslationContext,
    node: Node,
    shape: Instruction,
    key: Instruction,
    counter: Instruction,
    alg: Instruction,
) -> Instruction:
    gen, dims = _from_key_counter(ctx, node, key, counter, alg), output_dims(ctx, shape)
    return truncated_normal(ctx.module, ctx.builder, gen, float_dtype(node), dims)


@translates(
    "StatelessRandomUniformIntV2",
    note=f"int32, int64; constant minval < maxval; {_V2}",
)
def stateless_uniform_int_v2(
    ctx: TranslationContext,
    node: Node,
    shape: Instruction,
    key: Instruction,
    counter: Instruction,
    alg: Instruction,
    lo: Instruction,
    hi: Instruction,
) -> Instruction:
    gen = _from_key_counter(ctx, node, key, counter, alg)
    return _uniform_int(ctx, node, gen, shape, lo, hi)


@translates("StatelessRandomUniformFullIntV2", note=f"int32, int64, uint32, uint64; {_V2}")
def stateless_full_int_v2(
    ctx: TranslationContext,
    node: Node,
    shape: Instruction,
    key: Instruction,
    counter: Instruction,
    alg: Instruction,
) -> Instruction:
    return _full_int(ctx, node, _from_key_counter(ctx, node, key, counter, alg), shape)


def _int_dtype(node: Node) -> PrimitiveType:
    dtype = PrimitiveType.from_numpy(node.dtype_attr("dtype"))
    check_dtype(node.op, dtype, INT_TYPES)
    return dtype


def _uniform_int(
    ctx: TranslationContext,
    node: Node,
    gen: Philox,
    shape: Instruction,
    lo: Instruction,
    hi: Instruction,
) -> Instruction:
    dtype = PrimitiveType.from_numpy(node.dtype_attr("dtype"))
    check_dtype(node.op, dtype, INT_TYPES[:2])  # TF's CPU kernels: int32 and int64
    low, high = int_range(ctx, lo, hi)
    return uniform_int(ctx.builder, gen, dtype, output_dims(ctx, shape), low, high)


def _full_int(ctx: TranslationContext, node: Node, gen: Philox, shape: Instruction) -> Instruction:
    return full_int(ctx.builder, gen, _int_dtype(node), output_dims(ctx, shape))
