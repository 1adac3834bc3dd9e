#!/usr/bin/env python
"""Fit the coefficients of mathlib's f32 erf: erf(x) = x P(x^2) / Q(x^2), x clamped to +-3.95,
and measure it (or TensorFlow's erf) on every float of [0.25, 4).

Needs numpy and scipy (``scipy.special.erf`` as the float64 reference)::

    python tools/fit_erf.py            # fit, nudge, print the tuples and their errors
    python tools/fit_erf.py --refine   # nudge mathlib's current coefficients further
    python tools/fit_erf.py --measure  # mathlib's current coefficients only

1. Loeb's linearization: least squares on ``x P(s) - erf(x) Q(s)`` (Q's constant term 1),
   weighted by ``1 / (erf(x) Q_previous(s))`` for relative error, with Lawson's reweighting
   towards the minimax fit, at Chebyshev-spaced points of [0, 3.95].
2. The coefficients rounded to float32, then P's and Q's (but Q's 1) nudged one float32 ulp
   at a time while that lowers the worst ULP error of the float32 evaluation over every float
   of [0.25, 4) (where the error peaks; erf is odd and so is the evaluation), with FMA and
   with a separate multiply and add (both code paths mathlib emits). Trials are scored on the
   floats within 1.5 ULP of the current worst and kept only if the exhaustive measure agrees.

mathlib's coefficients are ``--refine``'s from an earlier fit's (5.92 ULP with FMA, 6.13
without). TensorFlow's own float erf, on the same floats: 7.44 ULP
(Eigen, ``tf.math.erf``), 6.71 (XLA, ``jit_compile``); mathlib's bound is 7.

The evaluation is the exact float32 operation sequence ``mathlib._erf_f32`` emits. A sample,
however dense, is not enough: the nudge overfits whatever points it is scored on (an earlier
fit measured 5.06 / 5.14 ULP on ~900K points and is 6.07 / 6.39 on every float).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from scipy.special import erf

F32 = np.float32
CLAMP = 3.95
NUMERATOR_TERMS, DENOMINATOR_TERMS = 7, 5
Coefficients = list[float]
# every float of [0.25, 4): the binades where erf's error peaks (below, every 97th float: 3.76 ULP)
LOW_BITS, HIGH_BITS = 0x3E800000, 0x40800000
CHUNK = 1 << 22


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
    """float32 ``fma(a, b, c)``, rounded once: the float64 product of two floats is exact (48
    significant bits), the float64 sum is rounded to odd (round to nearest, then, when inexact
    by TwoSum's error term, the odd neighbour towards the exact sum), and a value rounded to
    odd with 53 >= 24 + 2 bits rounds to float32 as the exact value would (Boldo-Melquiond)."""
    product = a.astype(np.float64) * b
    addend = c.astype(np.float64)
    total = product + addend
    virtual = total - product
    error = (product - (total - virtual)) + (addend - virtual)
    even = (total.view(np.int64) & 1) == 0
    towards = np.where(error > 0, np.inf, -np.inf)
    total = np.where((error != 0) & even, np.nextafter(total, towards), total)
    return total.astype(F32)


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


def every_float(low: int = LOW_BITS, high: int = HIGH_BITS) -> Iterator[np.ndarray]:
    """The floats with bit patterns in [low, high), CHUNK at a time."""
    for start in range(low, high, CHUNK):
        yield np.arange(start, min(start + CHUNK, high), dtype=np.uint32).view(F32)


def ulp_errors(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ULP error, absolute error) of float32 results ``y`` against erf(x) in float64."""
    exact = erf(x.astype(np.float64))
    absolute = np.abs(y.astype(np.float64) - exact)
    return absolute / np.spacing(np.abs(exact.astype(F32))).astype(np.float64), absolute


Erf = Callable[[np.ndarray], np.ndarray]


def measure(function: Erf, chunks: Callable[[], Iterator[np.ndarray]] = every_float) -> dict:
    """Worst ULP error (and where), worst absolute error, and how many floats exceed 6 ULP."""
    worst = {"ulp": 0.0, "at": 0.0, "abs": 0.0, "over_6": 0}
    for x in chunks():
        ulps, absolute = ulp_errors(x, function(x))
        i = int(np.argmax(ulps))
        if ulps[i] > worst["ulp"]:
            worst["ulp"], worst["at"] = float(ulps[i]), float(x[i])
        worst["abs"] = max(worst["abs"], float(absolute.max()))
        worst["over_6"] += int((ulps > 6).sum())
    return worst


def mathlib_erf(p: Coefficients, q: Coefficients, fused: bool) -> Erf:
    return lambda x: evaluate(x, p, q, fused)


def worst_ulp(p: Coefficients, q: Coefficients, x: np.ndarray | None = None) -> float:
    """max over (with FMA, without) of the worst ULP error over ``x`` (default: every float)."""
    if x is None:
        return max(measure(mathlib_erf(p, q, fused))["ulp"] for fused in (True, False))
    return max(float(ulp_errors(x, evaluate(x, p, q, f))[0].max()) for f in (True, False))


def near_worst(p: Coefficients, q: Coefficients, margin: float = 1.5) -> np.ndarray:
    """The floats whose error, with or without FMA, is within ``margin`` ULP of the worst."""
    best = worst_ulp(p, q)
    kept = []
    for x in every_float():
        ulps = np.maximum(*(ulp_errors(x, evaluate(x, p, q, f))[0] for f in (True, False)))
        kept.append(x[ulps > best - margin])
    return np.concatenate(kept)


def nudge(p: Coefficients, q: Coefficients, rounds: int = 3) -> tuple[Coefficients, Coefficients]:
    """Single-ulp steps of P's and Q's coefficients (Q's constant 1 stays) that lower the
    exhaustive max(worst_ulp)."""
    best = worst_ulp(p, q)
    for _ in range(rounds):
        candidates = near_worst(p, q)
        for which, index in [(0, i) for i in range(len(p))] + [(1, i) for i in range(len(q) - 1)]:
            for direction in (np.inf, -np.inf):
                trial = [list(p), list(q)]
                trial[which][index] = float(np.nextafter(F32(trial[which][index]), F32(direction)))
                if worst_ulp(*trial, candidates) >= best:
                    continue
                score = worst_ulp(*trial)
                if score < best:
                    best, (p, q) = score, (trial[0], trial[1])
                    print(
                        f"  {'PQ'[which]}[{index}] {direction:+} ulp: {score:.3f} ULP", flush=True
                    )
    return p, q


def report(p: Coefficients, q: Coefficients) -> None:
    for fused in (True, False):
        worst = measure(mathlib_erf(p, q, fused))
        label = "with FMA" if fused else "separate multiply and add"
        print(
            f"{label}: {worst['ulp']:.2f} ULP at x = {F32(worst['at'])!r}, "
            f"{worst['abs']:.2g} absolute, {worst['over_6']} floats over 6 ULP"
        )


def mathlib_coefficients() -> tuple[Coefficients, Coefficients]:
    """P and Q as aotc/codegen/mathlib.py has them (read from the source: no llvmlite needed)."""
    tree = ast.parse((Path(__file__).parents[1] / "aotc/codegen/mathlib.py").read_text())
    values = {
        node.targets[0].id: list(ast.literal_eval(node.value))
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
        if node.targets[0].id in ("_ERF_NUMERATOR", "_ERF_DENOMINATOR")
    }
    return values["_ERF_NUMERATOR"], values["_ERF_DENOMINATOR"]


def main() -> None:
    if "--measure" in sys.argv:
        p, q = mathlib_coefficients()
    else:
        p, q = nudge(*(mathlib_coefficients() if "--refine" in sys.argv else fit()))
        print("_ERF_NUMERATOR =", tuple(p))
        print("_ERF_DENOMINATOR =", tuple(q))
    report(p, q)


if __name__ == "__main__":
    main()
