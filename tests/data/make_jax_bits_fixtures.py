#!/usr/bin/env python
"""HLO text from JAX with bit operations (issue 13), under tests/data/hlo/.

    python tests/data/make_jax_bits_fixtures.py      # needs jax, jaxlib

``jax_bits.hlo`` and ``jax_bits.npz`` (written by ``hlo/make_hlo.py``'s ``save``): XLA's
``shift-left``, ``shift-right-logical``, ``shift-right-arithmetic`` (amounts past the width
and negative), ``popcnt``, ``count-leading-zeros`` and same-width ``bitcast-convert``, as JAX
lowers ``lax``'s bit ops, on several integer types.
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

rng = np.random.default_rng(13)


def bits(i, n, b, x, h):
    """Every bit op on s32 (amounts 0..40 and -1), u8, f32 and f16 bit patterns."""
    as_int = lax.bitcast_convert_type(x, np.int32)
    n = jnp.broadcast_to(n, i.shape)
    three, one = jnp.full(b.shape, 3, np.uint8), jnp.full(b.shape, 1, np.uint8)
    return (
        lax.shift_left(i, n),
        lax.shift_right_logical(i, n),
        lax.shift_right_arithmetic(i, n),
        lax.population_count(i),
        lax.clz(i),
        lax.shift_left(b, three),
        lax.shift_right_arithmetic(b, one),  # arithmetic on the signed view
        lax.population_count(b),
        lax.clz(b),
        as_int,
        lax.bitcast_convert_type(
            lax.bitwise_xor(as_int, jnp.full(x.shape, -(1 << 31), np.int32)), np.float32
        ),
        lax.clz(lax.bitcast_convert_type(h, np.uint16)),
    )


def main() -> None:
    i = rng.integers(-(2**31), 2**31, [4, 8], dtype=np.int64).astype(np.int32)
    i[0, :3] = [0, -1, np.iinfo(np.int32).min]
    n = np.array([0, 1, 5, 31, 32, 33, 40, -1], np.int32)
    b = rng.integers(0, 256, [16]).astype(np.uint8)
    b[0] = 0
    x = rng.standard_normal([3, 5]).astype(np.float32)
    h = rng.standard_normal([6]).astype(np.float16)
    args = [i, n, b, x, h]
    jitted = jax.jit(bits)
    results = [np.asarray(r) for r in jitted(*args)]
    text = jitted.lower(*args).as_text(dialect="hlo")
    save("jax_bits", text, args, results)


if __name__ == "__main__":
    main()
