"""TF's seeded stateful random ops, computed with TF's own generator: Philox4x32-10.

TF's kernels (``random_ops.cc``, ``philox_random.h``) seed a Philox generator with the op's
``seed`` (the key) and ``seed2`` (the high half of the 128-bit counter), and draw from it with
the distributions of ``random_dists.py``: the numbers TF's first ``Session.run`` draws.

Determinism: the compiled function has no state, so every call returns those same numbers;
TF's stateful kernel would advance its generator on each run. ``seed = seed2 = 0`` asks TF for
a fresh random seed per process, which no ahead-of-time function can honour: it is an error.
"""

from __future__ import annotations

from aotc.errors import UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.array import constant_ints
from aotc.frontend.ops.random_dists import (
    FLOAT_TYPES,
    INT_TYPES,
    Philox,
    check_dtype,
    normal,
    truncated_normal,
    uniform,
    uniform_int,
)
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.ir import Instruction
from aotc.hlo.prng import U32, U64
from aotc.hlo.shape import PrimitiveType

_NOTE = "a nonzero seed or seed2; TF's Philox numbers"


def seeded(ctx: TranslationContext, node: Node) -> Philox:
    """The generator of a stateful op: key ``seed``, counter ``(0, seed2)``."""
    seed, seed2 = node.int_attr("seed", 0), node.int_attr("seed2", 0)
    if seed == 0 and seed2 == 0:
        raise UnsupportedError(
            f"{node.op} has seed = seed2 = 0, so TensorFlow draws a new random seed every run; "
            "give it a seed (tf.random.set_seed, or the op's seed) to compile it"
        )
    seed, seed2 = seed % (1 << 64), seed2 % (1 << 64)
    b = ctx.builder
    key = (b.constant(seed & 0xFFFFFFFF, U32), b.constant(seed >> 32, U32))
    return Philox(key, (b.constant(0, U64), b.constant(seed2, U64)))


def output_dims(ctx: TranslationContext, shape: Instruction) -> tuple[int, ...]:
    return tuple(constant_ints(ctx, shape, "shape input (input 0)"))


def float_dtype(node: Node) -> PrimitiveType:
    dtype = PrimitiveType.from_numpy(node.dtype_attr("dtype"))
    check_dtype(node.op, dtype, FLOAT_TYPES)
    return dtype


@translates("RandomUniform", note=f"half, bfloat16, float, double; {_NOTE}")
def random_uniform(ctx: TranslationContext, node: Node, shape: Instruction) -> Instruction:
    return uniform(ctx.builder, seeded(ctx, node), float_dtype(node), output_dims(ctx, shape))


@translates("RandomStandardNormal", note=f"half, bfloat16, float, double; {_NOTE}")
def random_standard_normal(ctx: TranslationContext, node: Node, shape: Instruction) -> Instruction:
    return normal(ctx.builder, seeded(ctx, node), float_dtype(node), output_dims(ctx, shape))


@translates("TruncatedNormal", note=f"half, bfloat16, float, double; {_NOTE}")
def random_truncated_normal(ctx: TranslationContext, node: Node, shape: Instruction) -> Instruction:
    dims = output_dims(ctx, shape)
    return truncated_normal(ctx.module, ctx.builder, seeded(ctx, node), float_dtype(node), dims)


@translates("RandomUniformInt", note=f"int32, int64; constant minval < maxval; {_NOTE}")
def random_uniform_int(
    ctx: TranslationContext, node: Node, shape: Instruction, lo: Instruction, hi: Instruction
) -> Instruction:
    dtype = PrimitiveType.from_numpy(node.dtype_attr("Tout"))
    check_dtype(node.op, dtype, INT_TYPES[:2])
    low, high = int_range(ctx, lo, hi)
    return uniform_int(ctx.builder, seeded(ctx, node), dtype, output_dims(ctx, shape), low, high)


def int_range(ctx: TranslationContext, lo: Instruction, hi: Instruction) -> tuple[int, int]:
    """Constant ``minval < maxval`` (TF's kernel checks it on every run)."""
    (low,), (high,) = constant_ints(ctx, lo, "minval input"), constant_ints(ctx, hi, "maxval input")
    if not low < high:
        raise UnsupportedError(f"needs minval < maxval, got minval = {low}, maxval = {high}")
    return low, high
