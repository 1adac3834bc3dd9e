#!/usr/bin/env python
"""HLO text from JAX with FFTs and complex arithmetic (issue 13), under tests/data/hlo/.

    python tests/data/make_jax_fft_fixtures.py      # needs jax, jaxlib

``jax_fft.hlo`` and ``jax_fft.npz`` (written by ``hlo/make_hlo.py``'s ``save``): XLA's ``fft``
of every ``fft_type`` (``jnp.fft.rfft``/``irfft``/``fft``/``ifft``/``rfft2``/``fft2``, an odd
and a long length), ``complex``, ``real``, ``imag``, ``abs`` of c64 and c64 add, subtract,
multiply, negate and a c64 constant, with c64 parameters and results.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent / "hlo"))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from make_hlo import save  # noqa: E402

rng = np.random.default_rng(17)


def spectra(x, z, img, long):
    """Every fft_type, and the complex arithmetic an audio front end does around them."""
    spectrum = jnp.fft.rfft(x)
    w = jax.lax.complex(x[:, :8], x[:, 8:16])
    return (
        spectrum,
        jnp.fft.irfft(spectrum, n=16),
        jnp.fft.irfft(spectrum[:, :5], n=9),  # odd length
        jnp.fft.fft(z),
        jnp.fft.ifft(z),
        jnp.fft.fft2(z.reshape(3, 2, 4)),
        jnp.fft.rfft2(img),
        jnp.fft.irfft2(jnp.fft.rfft2(img), s=img.shape[-2:]),
        jnp.fft.rfft(long),  # long: split into shorter transforms
        jnp.abs(spectrum),
        jnp.real(z) - jnp.imag(z),
        z * w + (z - w) * jnp.complex64(0.5 - 1.5j),
        -z,
        jnp.abs(z * jnp.conj(z)),
    )


def main() -> None:
    x = rng.standard_normal([3, 16]).astype(np.float32)
    z = (rng.standard_normal([3, 8]) + 1j * rng.standard_normal([3, 8])).astype(np.complex64)
    img = rng.standard_normal([2, 6, 10]).astype(np.float32)
    long = rng.standard_normal([2, 2048]).astype(np.float32)
    args = [x, z, img, long]
    jitted = jax.jit(spectra)
    results = [np.asarray(r) for r in jitted(*args)]
    text = jitted.lower(*args).as_text(dialect="hlo")
    save("jax_fft", text, args, results)


if __name__ == "__main__":
    main()
