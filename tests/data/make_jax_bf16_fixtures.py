#!/usr/bin/env python
"""HLO text from JAX in bfloat16 (issue 13), under tests/data/hlo/.

    python tests/data/make_jax_bf16_fixtures.py      # needs jax, jaxlib

``jax_bf16.hlo`` and ``jax_bf16.npz`` (written by ``hlo/make_hlo.py``'s ``save``): a small MLP
and a 1-D convolution whose weights and activations are bfloat16, a float32 input converted to
bf16 and back, conversions to float16 and int32, and ``lax.reduce_precision`` (XLA's
``reduce-precision``) to float16's and to an 8-bit format.
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

rng = np.random.default_rng(16)
BF16 = jnp.bfloat16


def weight(*shape: int, scale: float) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(BF16)


W1, B1, W2, B2 = (
    weight(12, 16, scale=0.3),
    weight(16, scale=0.1),
    weight(16, 4, scale=0.3),
    weight(4, scale=0.1),
)
K = weight(3, 2, 4, scale=0.5)  # width, in, out


def bf16_model(x, y):
    h = jax.nn.relu(x @ W1 + B1)
    logits = h @ W2 + B2
    probs = jax.nn.softmax(logits.astype(jnp.float32), axis=-1)
    seq = x.reshape(2, 6, 2)
    conv = lax.conv_general_dilated(seq, K, (1,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"))
    yb = y.astype(BF16)
    return (
        logits,
        probs,
        jnp.tanh(conv),
        (yb * yb + yb).astype(jnp.float32),
        yb.astype(jnp.float16),
        (yb * 100).astype(jnp.int32),
        lax.reduce_precision(y, exponent_bits=5, mantissa_bits=10),
        lax.reduce_precision(y, exponent_bits=4, mantissa_bits=3),
        jnp.sum(h, axis=1),
    )


def main() -> None:
    x = rng.standard_normal([2, 12]).astype(BF16)
    y = (rng.standard_normal([3, 7]) * 30).astype(np.float32)
    args = [x, y]
    jitted = jax.jit(bf16_model)
    results = [np.asarray(r) for r in jitted(*args)]
    text = jitted.lower(*args).as_text(dialect="hlo")
    save("jax_bf16", text, [np.asarray(a) for a in args], results)


if __name__ == "__main__":
    main()
