#!/usr/bin/env python
"""Write the HLO-text fixtures under tests/data/hlo/ (needs JAX or TensorFlow; aotc needs neither).

    python tests/data/hlo/make_hlo.py jax     # jax, jaxlib
    python tests/data/hlo/make_hlo.py tf       # tensorflow

For every fixture NAME: ``NAME.hlo`` is the HLO text the framework printed (JAX:
``jax.jit(f).lower(*args).as_text(dialect="hlo")``; TF:
``tf.function(jit_compile=True).experimental_get_compiler_ir(*args)(stage="hlo")``) and
``NAME.npz`` holds ``arg0, ...`` (the entry parameters' values) and ``result0, ...`` (what the
framework computed, one per element of the result tuple, or one for a non-tuple root).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")


def save(name: str, text: str, args: list[np.ndarray], results: list[np.ndarray]) -> None:
    # Metadata names the generating machine's site-packages: keep only the package-relative part.
    text = re.sub(r'source_file="[^"]*?site-packages/', 'source_file="', text)
    (OUT / f"{name}.hlo").write_text(text)
    arrays = {f"arg{i}": a for i, a in enumerate(args)}
    arrays |= {f"result{i}": np.asarray(r) for i, r in enumerate(results)}
    np.savez(OUT / f"{name}.npz", **arrays)
    print(name, {k: (v.dtype, v.shape) for k, v in arrays.items()})


def make_jax() -> None:
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(21)
    w = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)

    def mlp(x, w, b):  # one result: a non-tuple root
        return jax.nn.softmax(jnp.tanh(x @ w + b) * 2.0, axis=-1)

    def two(x, y):  # two results: a tuple root
        return jnp.maximum(x, y) - jnp.exp(-y), (x * y).sum(axis=1)

    x = rng.standard_normal((4, 8)).astype(np.float32)
    lowered = jax.jit(mlp).lower(x, w, b)
    save("jax_mlp", lowered.as_text(dialect="hlo"), [x, w, b], [jax.jit(mlp)(x, w, b)])
    p, q = (rng.standard_normal((3, 5)).astype(np.float32) for _ in range(2))
    text = jax.jit(two).lower(p, q).as_text(dialect="hlo")
    save("jax_two", text, [p, q], list(jax.jit(two)(p, q)))


def make_tf() -> None:
    import tensorflow as tf

    rng = np.random.default_rng(31)
    w = rng.standard_normal((3, 2)).astype(np.float32)  # TF elides constants over 8 elements

    @tf.function(jit_compile=True)
    def dense(x):  # a constant inside the function becomes an HLO constant, not a parameter
        return tf.nn.relu(tf.matmul(x, tf.constant(w)) + 0.5), tf.reduce_sum(x, axis=1)

    x = rng.standard_normal((2, 3)).astype(np.float32)
    text = dense.experimental_get_compiler_ir(tf.constant(x))(stage="hlo")
    save("tf_dense", text, [x], [r.numpy() for r in dense(tf.constant(x))])


if __name__ == "__main__":
    {"jax": make_jax, "tf": make_tf}[sys.argv[1]]()
