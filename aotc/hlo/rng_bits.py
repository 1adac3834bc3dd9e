"""XLA's ``rng-bit-generator`` in numpy: the evaluator's reference, written apart from the
HLO expansion that compiled code runs (``passes/rng_bit_generator.py``).

The state is ``u64[n]``; element 0 is the key. Philox (``rng_philox``, and ``rng_default`` as
XLA's CPU backend picks it) reads a 128-bit counter from the rest: ``(state[1], state[0])``
(low, high) for ``n == 2`` (the key doubles as the high half), ``(state[1], state[2])`` for
``n == 3``. 32-bit outputs take the words of blocks ``counter + 0, 1, ...`` in order, 64-bit
ones two words each (low first), narrower ones the low bits of a 32-bit output; the new state
is the key and the counter advanced by the blocks used (only its low half when ``n == 2``).
ThreeFry (``rng_three_fry``) counts in ``state[1]``: one 2x32 block per output pair, laid out
as XLA's ``SplitShapeIntoHalves`` splits the shape, and advances it by the blocks used.
"""

from __future__ import annotations

import numpy as np

from aotc.hlo.prng import (
    PHILOX_KEY_STEPS,
    PHILOX_MULTIPLIERS,
    PHILOX_ROUNDS,
    THREEFRY_PARITY,
    THREEFRY_ROTATIONS,
)

_M32 = np.uint64(0xFFFFFFFF)


def philox_words(counter: list[np.ndarray], key: tuple[int, int]) -> list[np.ndarray]:
    """Philox4x32-10 of four u32 arrays under a two-word key."""
    x = [c.astype(np.uint64) for c in counter]
    k0, k1 = key
    for _ in range(PHILOX_ROUNDS):
        p0 = x[0] * np.uint64(PHILOX_MULTIPLIERS[0])
        p1 = x[2] * np.uint64(PHILOX_MULTIPLIERS[1])
        x = [(p1 >> np.uint64(32)) ^ x[1] ^ np.uint64(k0), p1 & _M32,
             (p0 >> np.uint64(32)) ^ x[3] ^ np.uint64(k1), p0 & _M32]  # fmt: skip
        k0, k1 = (k0 + PHILOX_KEY_STEPS[0]) & 0xFFFFFFFF, (k1 + PHILOX_KEY_STEPS[1]) & 0xFFFFFFFF
    return [w.astype(np.uint32) for w in x]


def threefry_words(
    x0: np.ndarray, x1: np.ndarray, key: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """ThreeFry2x32-20 of two u32 arrays under a two-word key."""
    ks = [key[0], key[1], THREEFRY_PARITY ^ key[0] ^ key[1]]
    v0, v1 = (x0 + np.uint32(ks[0])).astype(np.uint32), (x1 + np.uint32(ks[1])).astype(np.uint32)
    for step in range(5):
        for r in THREEFRY_ROTATIONS[4 * (step % 2) : 4 * (step % 2) + 4]:
            v0 = v0 + v1
            v1 = v0 ^ ((v1 << np.uint32(r)) | (v1 >> np.uint32(32 - r)))
        v0 = v0 + np.uint32(ks[(step + 1) % 3])
        v1 = v1 + np.uint32((ks[(step + 2) % 3] + step + 1) & 0xFFFFFFFF)
    return v0, v1


def rng_bit_generator(
    algorithm: str, state: np.ndarray, dims: tuple[int, ...], dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """(new state, random bits of ``dims`` and unsigned ``dtype``) of XLA's rng-bit-generator."""
    if algorithm == "three_fry":
        return _threefry(state, dims, dtype)
    return _philox(state, dims, dtype)


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (x & _M32).astype(np.uint32), (x >> np.uint64(32)).astype(np.uint32)


def _philox(state: np.ndarray, dims: tuple[int, ...], dtype: np.dtype) -> tuple:
    count, width = int(np.prod(dims, dtype=np.int64)), np.dtype(dtype).itemsize
    words_needed = count * 2 if width == 8 else count
    blocks = -(-words_needed // 4)
    key = tuple(int(w) for w in _split(state[0]))
    low, high = (state[1], state[0]) if state.size == 2 else (state[1], state[2])
    offsets = np.arange(max(1, blocks), dtype=np.uint64)
    lows = low + offsets  # numpy wraps u64 addition
    highs = np.where(lows < offsets, high + np.uint64(1), high).astype(np.uint64)
    words = philox_words([*_split(lows), *_split(highs)], key)  # type: ignore[arg-type]
    flat = np.stack(words, axis=1).reshape(-1)[:words_needed]
    new_low = low + np.uint64(blocks)
    new_high = high + np.uint64(1) if new_low < low else high
    tail = [new_low] if state.size == 2 else [new_low, new_high]
    return np.array([state[0], *tail], np.uint64), _as_bits(flat, dims, dtype)


def _as_bits(words: np.ndarray, dims: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """u32 words as outputs of ``dtype``: two words (low first) per 64-bit output."""
    if np.dtype(dtype).itemsize == 8:
        wide = words[0::2].astype(np.uint64) | (words[1::2].astype(np.uint64) << np.uint64(32))
        return wide.reshape(dims)
    return words.astype(dtype).reshape(dims)  # the low bits of each word


def _threefry(state: np.ndarray, dims: tuple[int, ...], dtype: np.dtype) -> tuple:
    key = tuple(int(w) for w in _split(state[0]))
    dtype = np.dtype(dtype)
    if dtype.itemsize == 8:
        inputs = state[1] + np.arange(int(np.prod(dims, dtype=np.int64)), dtype=np.uint64)
        v0, v1 = threefry_words(*_split(inputs), key)  # type: ignore[arg-type]
        wide = v0.astype(np.uint64) | (v1.astype(np.uint64) << np.uint64(32))
        new = state[1] + np.uint64(inputs.size)
        return np.array([state[0], new], np.uint64), wide.view(dtype).reshape(dims)
    if not dims:  # XLA splits a scalar as a pair and keeps the first word
        v0, _ = threefry_words(*_split(state[1:2]), key)  # type: ignore[arg-type]
        bits = v0.reshape(()).astype(dtype)
        return np.array([state[0], state[1] + np.uint64(1)], np.uint64), bits
    split = split_dim(dims)
    half = list(dims)
    half[split] = -(-half[split] // 2)
    inputs = state[1] + np.arange(int(np.prod(half, dtype=np.int64)), dtype=np.uint64)
    v0, v1 = threefry_words(*_split(inputs), key)  # type: ignore[arg-type]
    pair = np.stack([v0.reshape(half), v1.reshape(half)], axis=split + 1)
    merged = pair.reshape([*half[:split], 2 * half[split], *half[split + 1 :]])
    bits = merged[tuple(slice(0, n) for n in dims)].astype(dtype)
    return np.array([state[0], state[1] + np.uint64(inputs.size)], np.uint64), bits


def split_dim(dims: tuple[int, ...]) -> int:
    """XLA's ``SplitShapeIntoHalves``: the first even dimension, else the first largest."""
    even = [d for d, n in enumerate(dims) if n % 2 == 0]
    return even[0] if even else max(range(len(dims)), key=lambda d: (dims[d], -d))
