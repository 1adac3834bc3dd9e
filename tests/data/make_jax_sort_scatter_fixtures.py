#!/usr/bin/env python
"""HLO text from JAX with sort, topk and scatter (issue 13), under tests/data/hlo/.

    python tests/data/make_jax_sort_scatter_fixtures.py      # needs jax, jaxlib

Each fixture is ``jax_<name>.hlo`` (``jax.jit(f).lower(*args).as_text(dialect="hlo")``) and
``jax_<name>.npz`` (``arg0..`` the arguments, ``result0..`` what JAX computed), as written by
``hlo/make_hlo.py``. The inputs have ties (sorts must be stable, top-k must prefer the lower
index), both zeros and infinities, repeated scatter indices (folded in order) and indices
out of bounds (negative ones JAX wraps; past the end, XLA drops the update window).
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


def with_ties(*shape: int) -> np.ndarray:
    """Small integers as floats (many ties), a few infinities and negative zeros."""
    x = rng.integers(-4, 5, shape).astype(np.float32)
    x[rng.random(shape) < 0.1] = np.inf
    x[rng.random(shape) < 0.1] = -np.inf
    x[(x == 0) & (rng.random(shape) < 0.5)] = -0.0
    return x


def sort(x, y):
    """jnp.sort along both axes, argsort (a sort of the values with an iota), descending, and
    a two-operand lax.sort keyed on the first."""
    return (
        jnp.sort(x, axis=0),
        jnp.sort(x, axis=1),
        jnp.argsort(x, axis=1),
        jnp.argsort(-x, axis=0, stable=True),
        *lax.sort((y, x[:, : y.shape[1]]), dimension=1, num_keys=1),
    )


def top_k(x):
    """lax.top_k of a small and of a large k (JAX prints XLA's ``topk`` op)."""
    values, indices = lax.top_k(x, 3)
    all_values, all_indices = lax.top_k(x, x.shape[-1])
    return values, indices, all_values, all_indices


def scatter(x, i, u, r):
    """``.at[]`` updates: add (repeated and out-of-range indices), set, max, min, mul; a 2-D
    index; and lax.scatter_add of whole windows, one of which does not fit."""
    dn = lax.ScatterDimensionNumbers(
        update_window_dims=(1, 2), inserted_window_dims=(), scatter_dims_to_operand_dims=(0, 1)
    )
    windows = lax.scatter_add(
        x, r, jnp.ones((r.shape[0], 2, 2), x.dtype), dn, mode=lax.GatherScatterMode.FILL_OR_DROP
    )
    return (
        x.at[i].add(u),
        x.at[i].set(u),
        x.at[i].max(u),
        x.at[i].min(u),
        x.at[i].multiply(u),
        x.at[i, i % 3].add(u[:, 0]),
        windows,
    )


def scatter_batched(x, i, u):
    """A vmapped ``.at[].add``: JAX prints a scatter with batching dims."""
    return jax.vmap(lambda a, j, v: a.at[j].add(v))(x, i, u)


def main() -> None:
    x = with_ties(5, 6)
    y = np.array([[3, 1, 2, 0], [0, 1, 3, 2], [2, 3, 0, 1], [1, 0, 2, 3], [3, 2, 1, 0]], np.int32)
    i = np.array([1, 4, 1, -1, 7, 0, 1], np.int32)  # -1 is 4 for JAX; 7 is out of range
    u = rng.standard_normal((7, 6)).astype(np.float32)
    r = np.array([[0, 0], [4, 1], [2, 5], [3, 4], [1, 1]], np.int32)  # [4, 1], [2, 5] do not fit
    fixtures = [
        ("sort", sort, [x, y]),
        ("top_k", top_k, [with_ties(4, 40)]),
        ("scatter", scatter, [rng.standard_normal((5, 6)).astype(np.float32), i, u, r]),
        (
            "scatter_batched",
            scatter_batched,
            [x, rng.integers(0, 6, (5, 4)).astype(np.int32), u[:5, :4]],
        ),
    ]
    for name, f, args in fixtures:
        jitted = jax.jit(f)
        out = jitted(*args)
        results = [np.asarray(v) for v in (out if isinstance(out, tuple) else [out])]
        text = jitted.lower(*args).as_text(dialect="hlo")
        save(f"jax_{name}", text, [np.asarray(a) for a in args], results)


if __name__ == "__main__":
    main()
