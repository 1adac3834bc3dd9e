#!/usr/bin/env python
"""Write the XLA-printed HLO corpus in tests/data/hlo/xla/ (needs jax and jaxlib; aotc needs
neither).

    python tests/data/hlo/xla/make_xla_corpus.py

For every program NAME: ``NAME.hlo`` is the module XLA's CPU compiler printed after its own
optimizations (``jax.jit(f).lower(*args).compile().as_text()``: fusions of every kind,
``%`` sigils, computation signatures, layouts, ``metadata``, ``backend_config``, the stack-frame
tables, ``/*index=N*/`` comments on long operand lists), and ``NAME.npz`` holds ``arg0, ...``
(the entry parameters' values) and ``result0, ...`` (what XLA computed, one per element of the
result tuple, or one for a non-tuple root). The hand-written files beside them (``*.hlo``
without an ``.npz``) cover what XLA prints that this compiler path does not: see README.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent


def save(name: str, fn: Callable, *args: np.ndarray) -> None:
    import jax

    compiled = jax.jit(fn).lower(*args).compile()
    text = compiled.as_text()
    # File tables name the generating machine's paths: keep only the script's name.
    text = re.sub(r'"[^"\n]*/(make_xla_corpus\.py|site-packages/[^"\n]*)"', r'"\1"', text)
    (OUT / f"{name}.hlo").write_text(text)
    results = compiled(*args)
    results = list(results) if isinstance(results, (tuple, list)) else [results]
    arrays = {f"arg{i}": a for i, a in enumerate(args)}
    arrays |= {f"result{i}": np.asarray(r) for i, r in enumerate(results)}
    np.savez(OUT / f"{name}.npz", **arrays)
    print(name, {k: (v.dtype, v.shape) for k, v in arrays.items()})


def main() -> None:
    import jax
    import jax.numpy as jnp
    from jax import lax

    rng = np.random.default_rng(13)

    def f32(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    def mlp(x, w1, b1, w2):
        return jax.nn.softmax(jax.nn.gelu(x @ w1 + b1) @ w2, axis=-1)

    def convnet(x, k):
        y = lax.conv_general_dilated(
            x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
        y = jax.nn.relu(y)
        return lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def layer_norm(x, g, b):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) * lax.rsqrt(var + 1e-5) * g + b

    def transposes(x, y):  # XLA picks layouts for these: copies and bitcasts between them
        return (x.T @ y).T + jnp.transpose(x.reshape(4, 2, 6), (2, 0, 1)).reshape(6, 8).T[:5, :]

    def gather(table, idx):
        return jnp.take(table, idx, axis=0) * 2.0

    def fori(x):
        return lax.fori_loop(0, 5, lambda i, v: jnp.sin(v) + i.astype(jnp.float32), x)

    def cond(p, x):
        return lax.cond(p > 0, lambda v: jnp.exp(v), lambda v: -v, x)

    def scan_rnn(xs, w, h0):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, h.sum()

        return lax.scan(step, h0, xs)

    def many_results(x):  # a long result tuple: /*index=N*/ comments
        return tuple(x * k + k for k in range(8))

    def integers(a, b):
        return jnp.where(a > b, a - b, (a * 3) // jnp.maximum(b, 1)), jnp.clip(a, -3, 3) % 5

    def slicing(x):
        padded = jnp.pad(x, ((1, 2), (0, 3)))
        return jnp.concatenate([padded[::2], padded[1::2]], axis=1), lax.dynamic_slice(
            x, (1, 2), (2, 3)
        )

    def sort_top(x):  # sort (comparator computations) and variadic reduce
        return jnp.sort(x, axis=-1), jnp.argmax(x, axis=-1)

    def cumulative(x):
        return jnp.cumsum(x, axis=0), jnp.cumprod(x, axis=1)

    save("mlp", mlp, f32(2, 8), f32(8, 16), f32(16), f32(16, 4))
    save("convnet", convnet, f32(1, 8, 8, 3), f32(3, 3, 3, 4))
    save("layer_norm", layer_norm, f32(4, 32), f32(32), f32(32))
    save("transposes", transposes, f32(8, 6), f32(8, 5))
    save("gather", gather, f32(10, 4), np.array([3, 0, 9, 3], np.int32))
    save("fori_loop", fori, f32(3, 4))
    save("cond", cond, np.float32(1.0), f32(5))
    save("scan_rnn", scan_rnn, f32(6, 4), f32(4, 4), f32(4))
    save("many_results", many_results, f32(3))
    ints = [rng.integers(-9, 9, (4, 4)).astype(np.int32) for _ in range(2)]
    save("integers", integers, *ints)
    save("slicing", slicing, f32(5, 6))
    save("sort_argmax", sort_top, f32(3, 7))
    save("cumulative", cumulative, f32(6, 3))

    def solve(a, b):  # LAPACK through custom-call: an opcode aotc lacks (checks the error)
        return jnp.linalg.solve(a @ a.T + 4 * jnp.eye(4), b)

    save("linalg_solve", solve, f32(4, 4), f32(4, 2))
    print("jax", jax.__version__)


if __name__ == "__main__":
    main()
