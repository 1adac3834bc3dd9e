#!/usr/bin/env python
"""HLO text from JAX's random numbers (issue 13), under tests/data/hlo/.

    python tests/data/make_jax_rng_fixtures.py      # needs jax, jaxlib

Written by ``hlo/make_hlo.py``'s ``save``, each with the numbers XLA's CPU backend computed:

- ``jax_rng_bit_generator``: ``lax.rng_bit_generator`` (XLA's ``rng-bit-generator``) with
  each algorithm (``rng_default``, ``rng_philox``, ``rng_three_fry``), output types u8 to u64,
  shapes with and without an even dimension, and a scalar; the key is fed (u32[4], which JAX
  bitcasts to a u64[2] state), so the generator runs in the compiled code.
- ``jax_rng_rbg``: ``jax.random`` under the ``rbg`` PRNG implementation (its bits come from
  ``rng-bit-generator``): uniform, normal and a split key, from a fed key.
- ``jax_rng_threefry``: ``jax.random`` with its default ThreeFry keys, which JAX builds from
  ordinary integer ops (shifts, adds, xors): uniform, normal, randint, bernoulli, a split, and
  a dropout mask on a fed input.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent / "hlo"))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from make_hlo import save  # noqa: E402

ALG = lax.RandomAlgorithm


def bit_generator(key):
    outs = []
    for alg in (ALG.RNG_DEFAULT, ALG.RNG_PHILOX, ALG.RNG_THREE_FRY):
        for shape, dtype in [
            ((3, 5), jnp.uint32),
            ((7,), jnp.uint64),
            ((2, 3), jnp.uint8),
            ((5, 3), jnp.uint16),
            ((4, 6), jnp.uint32),
            ((), jnp.uint32),
        ]:
            state, bits = lax.rng_bit_generator(key, shape, dtype=dtype, algorithm=alg)
            outs += [state, bits]
    return outs


def rbg(key_data):
    key = jax.random.wrap_key_data(key_data, impl="rbg")
    a, b = jax.random.split(key)
    return [
        jax.random.uniform(a, (4, 5)),
        jax.random.normal(b, (6,)),
        jax.random.bits(key, (3,), jnp.uint32),
    ]


def threefry(seed, x):
    key = jax.random.key(seed)
    k1, k2, k3 = jax.random.split(key, 3)
    keep = jax.random.bernoulli(k3, 0.75, x.shape)
    return [
        jax.random.uniform(k1, (3, 4)),
        jax.random.normal(k2, (5,)),
        jax.random.randint(k1, (6,), 0, 10),
        jnp.where(keep, x / 0.75, 0.0),
        jax.random.bits(key, (2, 3), jnp.uint32),
    ]


def write(name: str, fn, args: list[np.ndarray]) -> None:
    jitted = jax.jit(fn)
    results = [np.asarray(r) for r in jitted(*args)]
    text = jitted.lower(*args).as_text(dialect="hlo")
    save(name, text, args, results)


def main() -> None:
    key = np.array([0x12345678, 0x9ABCDEF0, 0xFFFFFFFF, 7], np.uint32)  # a carry into the high half
    jax.config.update("jax_enable_x64", True)  # for the u64 outputs; the others stay 32-bit
    write("jax_rng_bit_generator", bit_generator, [key])
    jax.config.update("jax_enable_x64", False)
    write("jax_rng_rbg", rbg, [np.array([1, 2, 3, 4], np.uint32)])
    x = np.random.default_rng(13).standard_normal([4, 8]).astype(np.float32)
    write("jax_rng_threefry", threefry, [np.array(42, np.uint32), x])


if __name__ == "__main__":
    main()
