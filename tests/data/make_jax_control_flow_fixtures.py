#!/usr/bin/env python
"""HLO text from JAX with control flow and calls (issue 11), under tests/data/hlo/.

    python tests/data/make_jax_control_flow_fixtures.py      # needs jax, jaxlib

Each fixture is ``jax_<name>.hlo`` (``jax.jit(f).lower(*args).as_text(dialect="hlo")``) and
``jax_<name>.npz`` (``arg0..`` the arguments, ``result0..`` what JAX computed), as written by
``hlo/make_hlo.py``. Weights are closed over, so they are HLO constants, as in a trained model.
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

rng = np.random.default_rng(11)


def normal(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def fori_loop(x):
    """A constant trip count: JAX's counter compared with a constant."""

    def body(i, c):
        return c * 0.9 + jnp.sin(c) * i.astype(jnp.float32)

    return lax.fori_loop(0, 7, body, x)


def while_loop(x):
    """A data-dependent trip count: halve until the squared norm is small; count the steps."""

    def cond(c):
        return jnp.sum(c[0] * c[0]) > 1e-3

    return lax.while_loop(cond, lambda c: (c[0] * 0.5, c[1] + 1), (x, 0))


W_RNN, U_RNN, B_RNN = normal(3, 5, scale=0.5), normal(5, 5, scale=0.5), normal(5)


def scan_rnn(xs, h0):
    """An Elman RNN over the time axis: final state and every state."""

    def step(h, x):
        h = jnp.tanh(x @ W_RNN + h @ U_RNN + B_RNN)
        return h, h

    return lax.scan(step, h0, jnp.swapaxes(xs, 0, 1))


def cond(x):
    """Both branches taken in one run: the predicates have opposite signs."""

    def on_true(v):
        return jnp.sin(v) * 2.0

    def on_false(v):
        return jnp.cos(v) - 1.0

    s = jnp.sum(x)
    return lax.cond(s > 0, on_true, on_false, x), lax.cond(s <= 0, on_true, on_false, x)


def switch(i, x):
    """Three branches; JAX clamps the index, so ``i - 2`` and ``i + 5`` pick the ends."""
    branches = [lambda v: v + 1.0, lambda v: v * v, lambda v: jnp.exp(-v)]
    return tuple(lax.switch(k, branches, x) for k in (i, i - 2, i + 5))


W1, B1, W2, B2 = normal(6, 8), normal(8), normal(8, 4), normal(4)


@jax.jit
def dense(x, w, b):
    return jax.nn.gelu(x @ w + b)


def nested_jit(x):
    """A model of inner jitted helpers: each becomes a ``call`` of its own computation."""
    h = dense(x, W1, B1)
    logits = jax.nn.relu(h) @ W2 + B2
    return jax.nn.softmax(logits, axis=-1), jnp.argmax(logits, axis=-1)


def dynamic_slice(x, i, j):
    """Indices past the end are clamped by XLA: ``i`` is one past the last full window."""
    window = lax.dynamic_slice(x, (i, j), (3, 2))
    updated = lax.dynamic_update_slice(x, window * 10.0, (j, i))
    return window, updated


def main() -> None:
    x34 = normal(3, 4)
    fixtures = [
        ("fori_loop", fori_loop, [x34]),
        ("while_loop", while_loop, [normal(4, 3)]),
        ("scan_rnn", scan_rnn, [normal(2, 6, 3), normal(2, 5)]),
        ("cond", cond, [x34]),
        ("switch", switch, [np.int32(1), x34]),
        ("nested_jit", nested_jit, [normal(2, 6)]),
        ("dynamic_slice", dynamic_slice, [normal(5, 4), np.int32(3), np.int32(1)]),
    ]
    for name, f, args in fixtures:
        jitted = jax.jit(f)
        results = jitted(*args)
        results = list(results) if isinstance(results, tuple) else [results]
        text = jitted.lower(*args).as_text(dialect="hlo")
        save(f"jax_{name}", text, [np.asarray(a) for a in args], results)


if __name__ == "__main__":
    main()
