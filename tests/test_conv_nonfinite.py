"""Convolution padding and base-dilation holes are zeros multiplied in (XLA's, TensorFlow's and
the evaluator's semantics): an infinite weight next to them gives NaN (``0 * inf``), on every
kernel path: the implicit GEMM, the direct loop kernel (generic layouts, fused), the depthwise
kernel, the sub-pixel split of transposed convolutions; with constant and run-time weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import aotc
from aotc.codegen.kernels.conv_direct import direct_conv
from aotc.codegen.kernels.conv_gemm import conv_gemm
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import ConvAttrs, Opcode
from aotc.hlo.text import parse_module
from aotc.passes import PipelineOptions, default_pipeline

RNG = np.random.default_rng(7)


def _weights(shape: tuple[int, ...], nonfinite: bool) -> np.ndarray:
    w = RNG.standard_normal(shape).astype(np.float32)
    if nonfinite:
        flat = w.reshape(-1)
        flat[0], flat[len(flat) // 2], flat[-1] = np.inf, -np.inf, np.nan
    return w


def _literal(w: np.ndarray) -> str:
    text = np.array2string(w, separator=", ", threshold=10**6, floatmode="unique")
    return text.replace("[", "{").replace("]", "}")


def _module(x: str, w: np.ndarray, attrs: str, out: str, runtime_weights: bool) -> str:
    shape = "f32[" + ",".join(map(str, w.shape)) + "]"
    kernel = (
        f"  w = {shape} parameter(1)"
        if runtime_weights
        else f"  w = {shape} constant({_literal(w)})"
    )
    return (
        "HloModule conv\nENTRY main {\n"
        f"  x = {x} parameter(0)\n{kernel}\n"
        f"  c = {out} convolution(x, w), {attrs}\n"
        f"  ROOT r = ({out}) tuple(c)\n}}\n"
    )


CASES = {
    # NHWC, one group: the implicit GEMM
    "gemm_same_padding": ("f32[1,5,5,16]", (3, 3, 16, 16), "f32[1,5,5,16]",
                          "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"),
    "gemm_strided": ("f32[1,6,6,16]", (3, 3, 16, 16), "f32[1,3,3,16]",
                     "window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"),
    # few input features, run-time weights: the direct kernel (conv_direct.py), whose top and
    # bottom rows of taps fall off the input
    "direct_few_features": ("f32[1,5,5,3]", (3, 3, 3, 8), "f32[1,5,5,8]",
                            "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"),
    # another layout: the direct loop kernel; depthwise: the depthwise kernel
    "loops_nchw": ("f32[1,2,5,5]", (3, 2, 3, 3), "f32[1,3,3,3]",
                   "window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01"),
    "depthwise": ("f32[1,5,5,4]", (3, 3, 1, 4), "f32[1,5,5,4]",
                  "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, "
                  "feature_group_count=4"),
    # base (lhs) dilation: a transposed convolution
    "transposed": ("f32[1,3,3,2]", (3, 3, 2, 3), "f32[1,6,6,3]",
                   "window={size=3x3 pad=1_2x1_2 lhs_dilate=2x2}, dim_labels=b01f_01io->b01f"),
    "transposed_loops": ("f32[1,2,3,3]", (3, 2, 3, 3), "f32[1,3,6,6]",
                         "window={size=3x3 pad=1_2x1_2 lhs_dilate=2x2}, "
                         "dim_labels=bf01_oi01->bf01"),
}  # fmt: skip


def _assert_same(got: np.ndarray, want: np.ndarray) -> None:
    """Equal NaN positions, equal infinities, finite values close."""
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("runtime_weights", [False, True], ids=["constant", "runtime"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_nonfinite_weights_next_to_zeros_match_the_evaluator(
    case: str, runtime_weights: bool, tmp_path: Path
) -> None:
    x_shape, w_shape, out, attrs = CASES[case]
    w = _weights(w_shape, nonfinite=True)
    text = _module(x_shape, w, attrs, out, runtime_weights)
    module = parse_module(text)
    x = RNG.standard_normal(module.entry.parameters[0].array_shape.dims).astype(np.float32)
    args = [x, w] if runtime_weights else [x]
    (want,) = evaluate(module, args)
    assert np.isnan(want).any()  # the case does put an infinity next to a zero
    conv = module.entry.root.operands[0]
    assert (conv_gemm(conv) is not None) == case.startswith("gemm")
    if runtime_weights:
        assert (direct_conv(conv) is not None) == case.startswith("direct")
    path = tmp_path / "conv.hlo"
    path.write_text(text)
    _assert_same(aotc.compile(path, cache=False)(*args), want)


def test_finite_constant_weights_keep_the_fast_paths() -> None:
    """Finite weights: transposed convolutions are still split (no dilated form remains)."""
    x_shape, w_shape, out, attrs = CASES["transposed"]
    module = parse_module(_module(x_shape, _weights(w_shape, False), attrs, out, False))
    default_pipeline(PipelineOptions()).run(module)
    convs = [
        i for c in module.computations for i in c.instructions if i.opcode is Opcode.CONVOLUTION
    ]
    assert convs and all(
        w.lhs_dilation == 1 for c in convs for w in c.attrs_as(ConvAttrs).window.dims
    )
