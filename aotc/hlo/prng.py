"""Counter-based random bit generators built from HLO integer ops: Philox4x32-10, ThreeFry2x32.

One implementation serves TF's random ops (``philox_random.h``: the stateful and stateless
kernels) and XLA's ``rng-bit-generator`` (``prng.cc``, expanded by
``passes/rng_bit_generator.py``). Keys and counters are instructions, so a seed fed at run
time is scrambled and used at run time; constant ones fold away. A 128-bit Philox counter is a
pair of u64 scalars (low, high); block ``i`` of a stream is the one at ``counter + i``, with
the carry into the high half that TF's ``Skip`` and XLA's ``Uint128AddUint64`` both do.
"""

from __future__ import annotations

from collections.abc import Sequence

from aotc.hlo.builder import ComputationBuilder
from aotc.hlo.ir import ComparisonDirection, Instruction, Opcode
from aotc.hlo.shape import PrimitiveType, Shape

U32, U64 = PrimitiveType.U32, PrimitiveType.U64
PHILOX_MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
PHILOX_KEY_STEPS = (0x9E3779B9, 0xBB67AE85)
PHILOX_ROUNDS = 10
#: The fixed key TF's ``GenerateKey`` and XLA's ``ScramblePhiloxKey`` mix a seed pair with.
SCRAMBLE_KEY = (0x3EC8F720, 0x02461E29)
THREEFRY_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)
THREEFRY_PARITY = 0x1BD11BDA
MASK32 = 0xFFFFFFFF

Key = tuple[Instruction, Instruction]  # two u32 scalars
Counter = tuple[Instruction, Instruction]  # a 128-bit counter: u64 scalars, low then high


def splat(
    b: ComputationBuilder, value: int, dtype: PrimitiveType, dims: Sequence[int]
) -> Instruction:
    """A constant of ``dtype`` broadcast to ``dims``."""
    scalar = b.constant(value, dtype)
    return b.broadcast(scalar, dims, []) if dims else scalar


def widen(b: ComputationBuilder, x: Instruction, dims: Sequence[int]) -> Instruction:
    """Scalar ``x`` broadcast to ``dims`` (``x`` itself if it already has them)."""
    if tuple(x.array_shape.dims) == tuple(dims):
        return x
    return b.broadcast(x, dims, [])


def split_u64(b: ComputationBuilder, x: Instruction) -> tuple[Instruction, Instruction]:
    """The low and high u32 halves of u64 ``x``."""
    high = b.binary(Opcode.SHIFT_RIGHT_LOGICAL, x, splat(b, 32, U64, x.array_shape.dims))
    return b.convert(x, U32), b.convert(high, U32)  # convert keeps the low bits


def join_u64(b: ComputationBuilder, low: Instruction, high: Instruction) -> Instruction:
    """``low | high << 32`` as u64."""
    dims = low.array_shape.dims
    shifted = b.binary(Opcode.SHIFT_LEFT, b.convert(high, U64), splat(b, 32, U64, dims))
    return b.binary(Opcode.OR, b.convert(low, U64), shifted)


def add_u128(b: ComputationBuilder, counter: Counter, offsets: Instruction) -> Counter:
    """``counter + offsets`` (u64 ``offsets`` of any shape): the low and high u64 halves."""
    dims = offsets.array_shape.dims
    low = b.binary(Opcode.ADD, widen(b, counter[0], dims), offsets)
    carry = b.compare(low, offsets, ComparisonDirection.LT)
    high = widen(b, counter[1], dims)
    return low, b.select(carry, b.binary(Opcode.ADD, high, splat(b, 1, U64, dims)), high)


def philox(b: ComputationBuilder, words: Sequence[Instruction], key: Key) -> list[Instruction]:
    """Philox4x32-10 of four u32 counter words (arrays of one shape) under ``key``."""
    dims = words[0].array_shape.dims
    counter, (k0, k1) = list(words), key
    for _ in range(PHILOX_ROUNDS):
        hi0, lo0 = _multiply_wide(b, counter[0], PHILOX_MULTIPLIERS[0])
        hi1, lo1 = _multiply_wide(b, counter[2], PHILOX_MULTIPLIERS[1])
        counter = [
            _xor(b, _xor(b, hi1, counter[1]), widen(b, k0, dims)),
            lo1,
            _xor(b, _xor(b, hi0, counter[3]), widen(b, k1, dims)),
            lo0,
        ]
        k0 = b.binary(Opcode.ADD, k0, b.constant(PHILOX_KEY_STEPS[0], U32))
        k1 = b.binary(Opcode.ADD, k1, b.constant(PHILOX_KEY_STEPS[1], U32))
    return counter


def philox_blocks(
    b: ComputationBuilder, key: Key, counter: Counter, offsets: Instruction
) -> list[Instruction]:
    """The four words of the Philox blocks at ``counter + offsets`` (u64 ``offsets``)."""
    low, high = add_u128(b, counter, offsets)
    return philox(b, [*split_u64(b, low), *split_u64(b, high)], key)


def interleave(b: ComputationBuilder, words: Sequence[Instruction]) -> Instruction:
    """``out[..., len(words) * i + j] = words[j][..., i]``: each block's words in order."""
    dims = tuple(words[0].array_shape.dims)
    columns = [b.reshape(w, (*dims, 1)) for w in words]
    joined = b.concatenate(columns, len(dims))
    return b.reshape(joined, (*dims[:-1], dims[-1] * len(words)))


def philox_stream(b: ComputationBuilder, key: Key, counter: Counter, count: int) -> Instruction:
    """``u32[count]``: the words of blocks ``counter + 0, 1, ...`` in order (TF's
    ``FillPhiloxRandom`` and XLA's ``PhiloxRngBit32`` layout)."""
    blocks = max(1, -(-count // 4))
    words = philox_blocks(b, key, counter, b.iota(Shape(U64, (blocks,)), 0))
    return b.slice(interleave(b, words), [0], [count], [1])


def scramble(b: ComputationBuilder, seed0: Instruction, seed1: Instruction) -> tuple[Key, Counter]:
    """TF's ``GenerateKey`` (XLA's ``ScramblePhiloxKey``): the key and counter of u64 seeds:
    one Philox block of the seeds under ``SCRAMBLE_KEY`` gives the key (words 0, 1) and the
    counter's high half (words 2, 3)."""
    fixed = (b.constant(SCRAMBLE_KEY[0], U32), b.constant(SCRAMBLE_KEY[1], U32))
    mixed = philox(b, [*split_u64(b, seed0), *split_u64(b, seed1)], fixed)
    return (mixed[0], mixed[1]), (b.constant(0, U64), join_u64(b, mixed[2], mixed[3]))


def key_of(b: ComputationBuilder, key: Instruction) -> Key:
    """A u64 scalar key as Philox's or ThreeFry's two u32 key words."""
    return split_u64(b, key)


def threefry(
    b: ComputationBuilder, x: tuple[Instruction, Instruction], key: Key
) -> tuple[Instruction, Instruction]:
    """ThreeFry2x32 with 20 rounds, as XLA's ``ThreeFry2x32``: two u32 words (arrays of one
    shape) under a two-word key."""
    dims = x[0].array_shape.dims
    parity = b.constant(THREEFRY_PARITY, U32)
    ks = [key[0], key[1], _xor(b, _xor(b, parity, key[0]), key[1])]
    x0 = b.binary(Opcode.ADD, x[0], widen(b, ks[0], dims))
    x1 = b.binary(Opcode.ADD, x[1], widen(b, ks[1], dims))
    for step in range(5):
        rotations = THREEFRY_ROTATIONS[4 * (step % 2) : 4 * (step % 2) + 4]
        for r in rotations:
            x0 = b.binary(Opcode.ADD, x0, x1)
            x1 = _xor(b, x0, _rotate_left(b, x1, r))
        injected = b.binary(Opcode.ADD, ks[(step + 2) % 3], b.constant(step + 1, U32))
        x0 = b.binary(Opcode.ADD, x0, widen(b, ks[(step + 1) % 3], dims))
        x1 = b.binary(Opcode.ADD, x1, widen(b, injected, dims))
    return x0, x1


def _rotate_left(b: ComputationBuilder, v: Instruction, distance: int) -> Instruction:
    dims = v.array_shape.dims
    left = b.binary(Opcode.SHIFT_LEFT, v, splat(b, distance, U32, dims))
    right = b.binary(Opcode.SHIFT_RIGHT_LOGICAL, v, splat(b, 32 - distance, U32, dims))
    return b.binary(Opcode.OR, left, right)


def _xor(b: ComputationBuilder, x: Instruction, y: Instruction) -> Instruction:
    return b.binary(Opcode.XOR, x, y)


def _multiply_wide(
    b: ComputationBuilder, x: Instruction, multiplier: int
) -> tuple[Instruction, Instruction]:
    """The high and low 32 bits of the 64-bit product ``x * multiplier``."""
    product = b.binary(
        Opcode.MULTIPLY, b.convert(x, U64), splat(b, multiplier, U64, x.array_shape.dims)
    )
    low, high = split_u64(b, product)
    return high, low
