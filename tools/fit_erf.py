#!/usr/bin/env python
"""Fit the coefficients of mathlib's f32 erf: erf(x) = x P(x^2) / Q(x^2), x clamped to +-3.95.

Needs numpy and scipy (``scipy.special.erf`` as the float64 reference)::

    python tools/fit_erf.py

1. Loeb's linearization: least squares on ``x P(s) - erf(x) Q(s)`` (Q's constant term 1),
   weighted by ``1 / (erf(x) Q_previous(s))`` for relative error, with Lawson's reweighting
   towards the minimax fit, at Chebyshev-spaced points of [0, 3.95].
2. The coefficients rounded to float32, then P's nudged one float32 ulp at a time while that
   lowers the worst ULP error of the float32 evaluation, with FMA and
   with a separate multiply and add (both code paths mathlib emits).

Prints the tuples to paste into ``aotc/codegen/mathlib.py`` and the errors they give.
"""

from __future__ import annotations

import numpy as np
from scipy.special import erf

F32 = np.float32
CLAMP = 3.95
NUMERATOR_TERMS, DENOMINATOR_TERMS = 7, 5
Coefficients = list[float]


def fit(iterations: int = 60, points: int = 6000) -> tuple[Coefficients, Coefficients]:
    """P and Q, highest coefficient first, from the weighted linearized fit."""
    x = 0.5 * CLAMP * (1 - np.cos(np.pi * np.linspace(0, 1, points)))[1:]
    s, fx = x * x, erf(x)
    q, lawson = np.ones_like(x), np.ones_like(x) / len(x)
    powers = s[:, None] ** np.arange(max(NUMERATOR_TERMS, DENOMINATOR_TERMS))
    for _ in range(iterations):
        a = np.hstack(
            [
                x[:, None] * powers[:, :NUMERATOR_TERMS],
                -fx[:, None] * powers[:, 1:DENOMINATOR_TERMS],
            ]
        )
        weight = np.sqrt(lawson) / (fx * q)
        solution = np.linalg.lstsq(a * weight[:, None], fx * weight, rcond=None)[0]
        p_coefficients = solution[:NUMERATOR_TERMS]
        q_coefficients = np.concatenate([[1.0], solution[NUMERATOR_TERMS:]])
        q = np.polynomial.polynomial.polyval(s, q_coefficients)
        error = np.abs(x * np.polynomial.polynomial.polyval(s, p_coefficients) / q - fx) / fx
        lawson = lawson * error / np.sum(lawson * error)
    return _f32(p_coefficients[::-1]), _f32(q_coefficients[::-1])


def _f32(values: np.ndarray) -> Coefficients:
    return [float(F32(v)) for v in values]


def _fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return (a.astype(np.float64) * b + c).astype(F32)  # the float64 product of floats is exact


def _mul_add(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return ((a * b).astype(F32) + c).astype(F32)


def evaluate(x: np.ndarray, p: Coefficients, q: Coefficients, fused: bool) -> np.ndarray:
    """mathlib's float32 evaluation: clamp, Horner in s = x^2, one division, result clamp."""
    step = _fma if fused else _mul_add
    xc = np.clip(x, -CLAMP, CLAMP).astype(F32)
    s = (xc * xc).astype(F32)

    def horner(cs: Coefficients) -> np.ndarray:
        r = np.full_like(s, F32(cs[0]))
        for c in cs[1:]:
            r = step(r, s, np.full_like(s, F32(c)))
        return r

    return np.clip((xc * horner(p)).astype(F32) / horner(q), -1, 1).astype(F32)


SWEEP = np.concatenate(
    [
        np.linspace(0, 5, 2**19, dtype=F32),
        np.linspace(0, 1, 2**17, dtype=F32),
        np.random.default_rng(1).uniform(0, 4, 2**18).astype(F32),
    ]
)
EXACT = erf(SWEEP.astype(np.float64))
ULP = np.spacing(np.abs(EXACT.astype(F32))).astype(np.float64)


def worst_ulp(p: Coefficients, q: Coefficients) -> tuple[float, float]:
    """(with FMA, without) worst ULP error over the sweep."""
    errors = (
        np.abs(evaluate(SWEEP, p, q, f).astype(np.float64) - EXACT) / ULP for f in (True, False)
    )
    return tuple(float(e.max()) for e in errors)  # type: ignore[return-value]


def nudge(p: Coefficients, q: Coefficients, rounds: int = 3) -> tuple[Coefficients, Coefficients]:
    """Single-ulp steps of P's coefficients that lower max(worst_ulp)."""
    best = max(worst_ulp(p, q))
    for _ in range(rounds):
        for which, index in [(0, i) for i in range(len(p))]:
            for direction in (np.inf, -np.inf):
                trial = [list(p), list(q)]
                trial[which][index] = float(np.nextafter(F32(trial[which][index]), F32(direction)))
                score = max(worst_ulp(*trial))
                if score < best:
                    best, (p, q) = score, (trial[0], trial[1])
    return p, q


def main() -> None:
    p, q = nudge(*fit())
    print("_ERF_NUMERATOR =", tuple(p))
    print("_ERF_DENOMINATOR =", tuple(q))
    fused, separate = worst_ulp(p, q)
    print(f"worst ULP: {fused:.2f} with FMA, {separate:.2f} with a separate multiply and add")


if __name__ == "__main__":
    main()
