"""Resize lowering (``frontend/ops/image.py``): gathers + lerps vs TF's per-pixel formulas.

The reference is a direct numpy transcription of TF's kernels (one output pixel at a time);
the lowering is checked with the evaluator over many size / flag combinations, and compiled
and run from C once (the gathers fuse with the lerps into one loop).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from codegen_testing import run_and_compare

from aotc.frontend.ops.image import bilinear_taps, nearest_taps, resample_axis
from aotc.hlo.builder import ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import Module
from aotc.hlo.shape import PrimitiveType, Shape

RNG = np.random.default_rng(3)
FLAGS = [(False, False), (True, False), (False, True)]  # (align_corners, half_pixel_centers)
SIZES = [(4, 8), (5, 7), (7, 5), (8, 4), (6, 6), (3, 9), (1, 4), (4, 1), (16, 32)]


def _scale(n: int, m: int, align: bool) -> float:
    return (n - 1) / (m - 1) if align and m > 1 else n / m


def tf_bilinear(x: np.ndarray, out: tuple[int, int], align: bool, half: bool) -> np.ndarray:
    """TF's ResizeBilinear, one output pixel at a time, in float32."""
    _, h, w, _ = x.shape
    sy, sx = (np.float32(_scale(n, m, align)) for n, m in zip((h, w), out, strict=True))
    result = np.zeros((x.shape[0], *out, x.shape[3]), np.float32)
    for oy in range(out[0]):
        fy = (np.float32(oy) + np.float32(0.5)) * sy - np.float32(0.5) if half else oy * sy
        y0, y1, ly = max(math.floor(fy), 0), min(math.ceil(fy), h - 1), fy - np.floor(fy)
        for ox in range(out[1]):
            fx = (np.float32(ox) + np.float32(0.5)) * sx - np.float32(0.5) if half else ox * sx
            x0, x1, lx = max(math.floor(fx), 0), min(math.ceil(fx), w - 1), fx - np.floor(fx)
            top = x[:, y0, x0] + (x[:, y0, x1] - x[:, y0, x0]) * lx
            bottom = x[:, y1, x0] + (x[:, y1, x1] - x[:, y1, x0]) * lx
            result[:, oy, ox] = top + (bottom - top) * ly
    return result


def tf_nearest(x: np.ndarray, out: tuple[int, int], align: bool, half: bool) -> np.ndarray:
    """TF's ResizeNearestNeighbor, one output pixel at a time."""
    _, h, w, _ = x.shape

    def source(o: int, n: int, m: int) -> int:
        s = np.float32(_scale(n, m, align))
        pos = (np.float32(o) + np.float32(0.5)) * s if half else np.float32(o) * s
        i = min(int(np.floor(pos + np.float32(0.5)) if align else np.floor(pos)), n - 1)
        return max(i, 0) if half else i

    rows = [source(o, h, out[0]) for o in range(out[0])]
    cols = [source(o, w, out[1]) for o in range(out[1])]
    return x[:, rows][:, :, cols]


def _module(shape: tuple[int, ...], out: tuple[int, int], align: bool, half: bool, taps) -> Module:
    mb = ModuleBuilder("resize")
    b = mb.computation("main")
    x = b.parameter(0, Shape(PrimitiveType.F32, shape), "x")
    y = x
    for axis in (2, 1):
        y = resample_axis(b, y, axis, taps(shape[axis], out[axis - 1], align, half))
    return mb.build(b.build(b.tuple([y])))


@pytest.mark.parametrize("align,half", FLAGS)
@pytest.mark.parametrize("sizes", SIZES)
def test_bilinear_and_nearest_match_tf_formulas(
    sizes: tuple[int, int], align: bool, half: bool
) -> None:
    n, m = sizes
    x = RNG.standard_normal((1, n, m + 1, 3)).astype(np.float32)
    out = (m, n + 1)
    for taps, reference in ((bilinear_taps, tf_bilinear), (nearest_taps, tf_nearest)):
        (got,) = evaluate(_module(x.shape, out, align, half, taps), [x])
        np.testing.assert_allclose(got, reference(x, out, align, half), rtol=0, atol=1e-5)


def test_compiled_resize_matches_the_evaluator() -> None:
    x = RNG.standard_normal((2, 8, 6, 20)).astype(np.float32)
    module = _module(x.shape, (16, 9), False, True, bilinear_taps)
    run_and_compare(module, [x])
