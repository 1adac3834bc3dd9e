"""A convolution whose input is scaled per feature (squeeze-and-excitation) fuses the scale.

EfficientNet multiplies each block's depthwise output by per-channel factors (global pool ->
two small dense layers -> sigmoid) before the 1x1 projection. The fusion pass takes the
multiply and its broadcast into the projection's output fusion; the row-tiled kernel then
scales its packed weights once per call (``conv(x * s, W) = conv(x, s * W)``) where no tap
reads padding and its weights take at most 1 MiB, and other kernels (padding, larger weights) store
the scaled input to scratch first. Each case is compiled, run from C (both entry points and
pools of 2 and 3 threads) and compared with the evaluator, NaN and infinities included.
"""

from __future__ import annotations

import numpy as np
import pytest
from codegen_testing import compile_entry, run_and_compare
from hlo_programs import Body, build, labels, same, window
from mt_harness import run_multicore, split_every_kernel

from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import ConvAttrs, FusionAttrs, FusionKind, Instruction, Module, Opcode
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.jit import JitModel
from aotc.passes.fusion import Fusion

RNG = np.random.default_rng(37)
NHWC = labels("b01f_01io->b01f")
ONE = window((1,), (1,))


def f32(*dims: int) -> Shape:
    return Shape(PrimitiveType.F32, dims)


def weights(*dims: int) -> np.ndarray:
    return (RNG.standard_normal(dims) / np.sqrt(np.prod(dims[:-1]))).astype(np.float32)


def _scaled_conv(
    b: ComputationBuilder,
    x: Instruction,
    s: Instruction,
    w: np.ndarray,
    win: ConvAttrs,
    residual: Instruction | None = None,
) -> Instruction:
    """conv(x * broadcast(s), w) + bias (+ residual), ``s`` a factor per feature of ``x``."""
    dims = x.array_shape.dims
    features = s.array_shape.dims[-1]
    flat = b.reshape(s, [1, features]) if s.array_shape.rank == 4 else s
    mapped = [0, 3] if flat.array_shape.rank == 2 else [3]
    scaled = b.binary(Opcode.MULTIPLY, x, b.broadcast(flat, dims, mapped))
    conv = b.convolution(scaled, b.constant(w), win)
    out = conv.array_shape.dims
    biased = b.binary(Opcode.ADD, conv, b.broadcast(b.constant(weights(out[3])), out, [3]))
    return biased if residual is None else b.binary(Opcode.ADD, biased, residual)


def _body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
    x1, s1, x2, s2, residual, x3, x4, s4, x5, s5 = ps
    same3, one = ConvAttrs(window(same(3), same(3)), NHWC), ConvAttrs(ONE, NHWC)
    return [
        _scaled_conv(b, x1, b.unary(Opcode.LOGISTIC, s1), weights(1, 1, 24, 40), one),
        _scaled_conv(b, x2, s2, weights(1, 1, 20, 16), one, residual),
        _scaled_conv(b, x3, s2, weights(3, 3, 20, 24), same3),  # padding: the input to scratch
        _scaled_conv(b, x4, s4, weights(1, 1, 640, 520), one),  # 1.3 MB: the input to scratch
        _scaled_conv(b, x5, s5, weights(1, 1, 1040, 520), one),  # a GEMM
    ]  # fmt: skip


SHAPES = [
    f32(1, 9, 13, 24), f32(1, 1, 1, 24),  # MobileNet-like SE: s = sigmoid(...) [1,1,1,C]
    f32(2, 7, 11, 20), f32(20),  # batch 2, one factor per feature for both images
    f32(2, 7, 11, 16),  # the residual
    f32(1, 6, 7, 20),
    f32(1, 4, 5, 640), f32(1, 1, 1, 640),
    f32(1, 3, 4, 1040), f32(1, 1, 1, 1040),
]  # fmt: skip


def _fused(shapes: list[Shape], body: Body) -> Module:
    module = build(shapes, body)
    assert Fusion().run(module)
    return module


def _scaled(module: Module) -> list[Instruction]:
    """The entry's output fusions whose convolution reads a multiply."""
    found = []
    for inst in module.entry.instructions:
        plan = inst.attrs_as(FusionAttrs).plan if inst.opcode is Opcode.FUSION else None
        dot = plan.dot if plan is not None and plan.kind is FusionKind.OUTPUT else None
        if dot is not None and dot.operands[0].opcode is Opcode.MULTIPLY:
            found.append(inst)
    return found


@pytest.fixture
def split_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    split_every_kernel(monkeypatch)


def _inputs(shapes: list[Shape]) -> list[np.ndarray]:
    return [RNG.standard_normal(s.dims).astype(np.float32) for s in shapes]


def test_scaled_inputs_match_the_evaluator(split_everything: None) -> None:
    module = _fused(SHAPES, _body)
    assert len(_scaled(module)) == 5
    fusions = [i for i in module.entry.instructions if i.opcode is Opcode.FUSION]
    assert not [f for f in fusions if f.called[0].root.opcode is Opcode.MULTIPLY]
    inputs = _inputs(SHAPES)
    ir_text = run_and_compare(module, inputs, rtol=2e-5)
    assert "rs.body" in ir_text  # weights scaled in place of the input
    reference, pooled = run_multicore(compile_entry(module, "m"), inputs, (2, 3))
    for threads, results in pooled.items():
        for k, (got, want) in enumerate(zip(results, reference, strict=True)):
            assert got.tobytes() == want.tobytes(), f"result {k}, pool of {threads}"


def test_a_scale_per_image_stays_a_multiply() -> None:
    """Factors per (image, feature) cannot move into shared weights: the plan declines."""

    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
        x, s = ps
        return [_scaled_conv(b, x, s, weights(1, 1, 8, 16), ConvAttrs(ONE, NHWC))]

    module = _fused([f32(2, 5, 6, 8), f32(2, 8)], body)
    assert not _scaled(module)
    inputs = _inputs([f32(2, 5, 6, 8), f32(2, 8)])
    run_and_compare(module, inputs, rtol=2e-5)


def test_non_finite_factors_give_the_evaluators_nan() -> None:
    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
        x, s = ps
        same3 = ConvAttrs(window(same(3), same(3)), NHWC)
        return [
            _scaled_conv(b, x, s, weights(1, 1, 16, 24), ConvAttrs(ONE, NHWC)),
            _scaled_conv(b, x, s, weights(3, 3, 16, 24), same3),
        ]

    shapes = [f32(1, 6, 9, 16), f32(1, 1, 1, 16)]
    module = _fused(shapes, body)
    assert len(_scaled(module)) == 2
    x, s = _inputs(shapes)
    x[..., 5] = np.abs(x[..., 5])
    x[0, 2, 3, 5] = 0.0
    s[0, 0, 0, 5] = np.inf  # inf * 0 at one point: NaN there, infinities elsewhere
    expected = evaluate(module, [x, s])
    got = JitModel.from_compiled(compile_entry(module, "m"))(x, s)
    for have, want in zip(got, expected, strict=True):
        assert np.isnan(want).any() and np.isinf(want).any()
        np.testing.assert_array_equal(np.isnan(have), np.isnan(want))
        np.testing.assert_array_equal(np.isposinf(have), np.isposinf(want))
        np.testing.assert_array_equal(np.isneginf(have), np.isneginf(want))
