#!/usr/bin/env python
"""HLO text from JAX with multi-head attention (issue 15), under tests/data/hlo/.

    python tests/data/make_jax_attention_fixtures.py      # needs jax, jaxlib

``jax_attention.hlo`` (``jax.jit(f).lower(*args).as_text(dialect="hlo")``) and
``jax_attention.npz`` (``arg0..`` the arguments, ``result0`` what JAX computed), as written
by ``hlo/make_hlo.py``. JAX's form differs from TF's: the heads are batch dimensions 0 and 2
of the einsums, the value product is ``dot(V, P)`` (P the rhs), the scale a division, the
mask a ``where`` on a boolean argument, and the softmax's max ``max(reduce_max(x), -inf)``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent / "hlo"))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from make_hlo import save  # noqa: E402

rng = np.random.default_rng(15)


def attention(x, wq, wk, wv, mask):
    """Self-attention of 4 heads of 8 over [2, 16, 32] with a key mask (a row all masked)."""
    b, s, d = x.shape
    heads = 4
    q, k, v = ((x @ w).reshape(b, s, heads, d // heads) for w in (wq, wk, wv))
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(d // heads).astype(x.dtype)
    scores = jnp.where(mask[:, None, :, :], scores, -1e9)
    p = jax.nn.softmax(scores, axis=-1)
    return jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, s, d)


def main() -> None:
    x = rng.standard_normal((2, 16, 32)).astype(np.float32)
    ws = [(rng.standard_normal((32, 32)) * 0.2).astype(np.float32) for _ in range(3)]
    mask = rng.random((2, 16, 16)) > 0.3
    mask[1, 3, :] = False  # every key masked: -1e9 everywhere, uniform weights
    args = [x, *ws, mask]
    text = jax.jit(attention).lower(*args).as_text(dialect="hlo")
    save("jax_attention", text, args, [jax.jit(attention)(*args)])


if __name__ == "__main__":
    main()
