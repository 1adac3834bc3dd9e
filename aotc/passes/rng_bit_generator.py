"""``rng-bit-generator`` expanded into integer ops, as XLA's ``RngBitGeneratorExpander``.

Codegen has no kernel for it: each one becomes the Philox or ThreeFry network of
``hlo/prng.py`` over an iota of counters, laid out as XLA's ``prng.cc`` lays its bits out
(``hlo/rng_bits.py`` states the semantics and is the evaluator's independent reference).
``rng_default`` is Philox, the algorithm XLA's CPU backend picks. A constant state folds the
whole expansion to a constant; a fed one computes it at run time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aotc.hlo.builder import ComputationBuilder
from aotc.hlo.ir import Instruction, Module, Opcode, RngBitGeneratorAttrs
from aotc.hlo.prng import (
    U32,
    U64,
    add_u128,
    join_u64,
    philox_stream,
    split_u64,
    threefry,
)
from aotc.hlo.rng_bits import split_dim
from aotc.hlo.shape import Shape
from aotc.passes.rewrite import RewriteContext, rewrite_module


def expand(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """The rewrite rule: an rng-bit-generator as the tuple (new state, bits) of integer ops."""
    if inst.opcode is not Opcode.RNG_BIT_GENERATOR:
        return None
    b, state = ctx.b, inst.operands[0]
    bits = inst.shape.elements[1]  # type: ignore[union-attr]
    assert isinstance(bits, Shape)
    if inst.attrs_as(RngBitGeneratorAttrs).philox:
        new_state, value = _philox(b, state, bits)
    else:
        new_state, value = _threefry(b, state, bits)
    return b.tuple([new_state, value])


def _element(b: ComputationBuilder, state: Instruction, i: int) -> Instruction:
    return b.reshape(b.slice(state, [i], [i + 1], [1]), ())


def _state(b: ComputationBuilder, parts: list[Instruction]) -> Instruction:
    return b.concatenate([b.reshape(p, (1,)) for p in parts], 0)


def _philox(
    b: ComputationBuilder, state: Instruction, bits: Shape
) -> tuple[Instruction, Instruction]:
    """XLA's ``PhiloxBitGenerator``: the counter is (state[1], state[0]) for a u64[2] state
    (the key doubles as its high half), (state[1], state[2]) for u64[3]."""
    key = _element(b, state, 0)
    size = state.array_shape.dims[0]
    counter = (_element(b, state, 1), key if size == 2 else _element(b, state, 2))
    count = math.prod(bits.dims)
    words = count * 2 if bits.dtype.byte_size == 8 else count
    stream = philox_stream(b, split_u64(b, key), counter, words)
    if bits.dtype.byte_size == 8:
        pairs = b.reshape(stream, (count, 2))
        low, high = (b.reshape(b.slice(pairs, [0, j], [count, j + 1]), (count,)) for j in (0, 1))
        value = join_u64(b, low, high)
    else:
        value = stream if bits.dtype is U32 else b.convert(stream, bits.dtype)
    blocks = b.constant(-(-words // 4), U64)
    low, high = add_u128(b, counter, blocks)
    tail = [low] if size == 2 else [low, high]
    return _state(b, [key, *tail]), b.reshape(value, bits.dims)


def _threefry(
    b: ComputationBuilder, state: Instruction, bits: Shape
) -> tuple[Instruction, Instruction]:
    """XLA's ``ThreeFryBitGenerator``: one 2x32 block per counter ``state[1] + i``; a 64-bit
    output joins the pair, narrower ones take both words along a split dimension."""
    key, start = _element(b, state, 0), _element(b, state, 1)
    dims = bits.dims
    half = list(dims)
    if bits.dtype.byte_size < 8:
        half = half or [1]
        split = split_dim(tuple(dims)) if dims else 0
        half[split] = -(-half[split] // 2)
    n = math.prod(half)
    counters = b.binary(Opcode.ADD, b.broadcast(start, (n,), []), b.iota(Shape(U64, (n,)), 0))
    x0, x1 = threefry(b, split_u64(b, counters), split_u64(b, key))
    if bits.dtype.byte_size == 8:
        value = b.reshape(join_u64(b, x0, x1), dims)
    elif not dims:  # a scalar keeps the first word of its pair
        value = b.reshape(x0, ())
    else:
        value = _merge_halves(b, x0, x1, half, split, dims)
    value = value if bits.dtype is U32 else b.convert(value, bits.dtype)
    advanced = b.binary(Opcode.ADD, start, b.constant(n, U64))
    return _state(b, [key, advanced]), value


def _merge_halves(
    b: ComputationBuilder,
    x0: Instruction,
    x1: Instruction,
    half: list[int],
    split: int,
    dims: tuple[int, ...],
) -> Instruction:
    """XLA's ``CombineShapePair``: the two words side by side along ``split``, cut to ``dims``."""
    unit = [*half[: split + 1], 1, *half[split + 1 :]]
    pair = b.concatenate([b.reshape(x0, unit), b.reshape(x1, unit)], split + 1)
    merged = [*half[:split], 2 * half[split], *half[split + 1 :]]
    value = b.reshape(pair, merged)
    if merged != list(dims):
        value = b.slice(value, [0] * len(dims), list(dims))
    return value


@dataclass(frozen=True)
class RngBitGeneratorExpander:
    """Expand every ``rng-bit-generator`` into the integer ops of its algorithm."""

    name: str = "rng-bit-generator-expander"

    def run(self, module: Module) -> bool:
        return rewrite_module(module, expand)
