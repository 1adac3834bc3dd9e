"""The depthwise convolution kernel: compiled, run, compared.

One module holds many shapes, so a few compiles cover the kernel's cases: 3x3 and 5x5
windows, strides 1 and 2, SAME, VALID, Keras' folded ``ZeroPadding2D`` (0_1) and negative
padding (checked border columns, unchecked interior ones), dilation, widths that are no
multiple of the register tile, batch > 1, channel counts with and without a narrower last
vector, a runtime kernel, and the fused epilogues of MobileNet and EfficientNet (bias and
relu6, bias and swish, a residual add). Every result is checked from C (both entry points)
and through the JIT against the evaluator.
"""

from __future__ import annotations

import numpy as np
import pytest
from codegen_testing import compile_entry, run_and_compare
from hlo_programs import build, labels, same, window
from mt_harness import run_multicore, split_every_kernel

from aotc.codegen.kernels.conv import conv_fast_path
from aotc.codegen.kernels.conv_depthwise import DepthwiseConv, depthwise_conv, splits_channels
from aotc.codegen.vector import AVX512
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import ConvAttrs, FusionAttrs, FusionKind, Instruction, Module, Opcode, Window
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.jit import JitModel
from aotc.passes.fusion import Fusion

RNG = np.random.default_rng(29)
NHWC = labels("b01f_01io->b01f")


def f32(*dims: int) -> Shape:
    return Shape(PrimitiveType.F32, dims)


def weights(*dims: int) -> np.ndarray:
    return RNG.standard_normal(dims).astype(np.float32)


# (input NHWC, kernel size, window): every one takes the depthwise kernel
CASES = [
    ((1, 13, 13, 32), 3, window(same(3), same(3))),  # SAME, odd width, two vectors
    ((1, 10, 10, 24), 3, window((3, 2, 0, 1), (3, 2, 0, 1))),  # folded ZeroPadding2D, stride 2
    ((2, 7, 8, 7), 3, window(same(3, 2), same(3, 2))),  # only a narrow vector, batch 2
    ((1, 11, 17, 20), 5, window(same(5), same(5))),  # EfficientNet's 5x5
    ((1, 12, 14, 16), 3, window((3, 1, 2, 2, 1, 2), (3, 1, 2, 2, 1, 2))),  # dilated
    ((1, 8, 9, 3), 3, window((3, 1, -1, 1), (3, 1, 0, -1))),  # negative padding
    ((1, 3, 3, 40), 3, window((3,), (3,))),  # VALID, one output point
    ((1, 4, 37, 48), 3, window(same(3), same(3))),  # several full tiles per row
    ((1, 6, 5, 2), 3, window((3, 2, 2, 2), (3, 3, 4, 4))),  # wide padding, stride 3
]


def _depthwise(b: ComputationBuilder, x: Instruction, w: Instruction, win: Window) -> Instruction:
    channels = x.array_shape.dims[3]
    return b.convolution(x, w, ConvAttrs(win, NHWC, feature_group_count=channels))


def _kernel(b: ComputationBuilder, size: int, channels: int) -> Instruction:
    return b.constant(weights(size, size, 1, channels))


def _cases_body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
    out = []
    for (x_dims, size, win), x in zip(CASES, ps[:-1], strict=True):
        out.append(_depthwise(b, x, _kernel(b, size, x_dims[3]), win))
    out.append(_depthwise(b, ps[0], ps[-1], CASES[0][2]))  # a runtime kernel
    return out


def _compare_jit(module: Module, inputs: list[np.ndarray]) -> None:
    """The JIT's results match the evaluator's as closely as the C run's do."""
    expected = evaluate(module, inputs)
    got = JitModel.from_compiled(compile_entry(module, "m"))(*inputs)
    for j, (want, have) in enumerate(zip(expected, got, strict=True)):
        scale = float(np.max(np.abs(want), initial=1.0))
        np.testing.assert_allclose(have, want, rtol=0, atol=2e-5 * scale, err_msg=f"result {j}")


def test_depthwise_conv_shapes_match_the_evaluator() -> None:
    shapes = [f32(*x) for x, _, _ in CASES] + [f32(3, 3, 1, 32)]
    module = build(shapes, _cases_body)
    convs = module.entry.root.operands
    assert all(isinstance(conv_fast_path(c), DepthwiseConv) for c in convs)
    inputs = [weights(*s.dims) for s in shapes]
    ir_text = run_and_compare(module, inputs, rtol=2e-5)
    assert ir_text.count("dwacc") > 0
    _compare_jit(module, inputs)


def test_depthwise_conv_regions_check_only_borders() -> None:
    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
        return [_depthwise(b, ps[0], _kernel(b, 3, 24), CASES[1][2])]

    spec = depthwise_conv(build([f32(*CASES[1][0])], body).entry.root.operands[0])
    assert spec is not None and spec.regions() == [(0, 4, False), (4, 1, True)]


def test_depthwise_conv_leaves_other_convolutions_to_other_kernels() -> None:
    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
        x, y = ps
        twice = ConvAttrs(window(same(3), same(3)), NHWC, feature_group_count=4)
        dilated = ConvAttrs(window((3, 1, 0, 0, 2), (3,)), NHWC, feature_group_count=4)
        grouped = ConvAttrs(window(same(3), same(3)), NHWC, feature_group_count=2)
        return [
            b.convolution(x, b.constant(weights(3, 3, 1, 8)), twice),  # multiplier 2
            b.convolution(x, _kernel(b, 3, 4), dilated),  # base dilation
            b.convolution(x, b.constant(weights(3, 3, 2, 4)), grouped),  # 2 features per group
            b.convolution(y, b.constant(weights(3, 3, 1, 4)), ConvAttrs(twice.window, NHWC)),
        ]

    module = build([f32(1, 8, 8, 4), f32(1, 8, 8, 1)], body)
    assert [depthwise_conv(c) for c in module.entry.root.operands] == [None] * 4


def _fused_body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
    """depthwise + bias + relu6, + bias + swish, and + a residual, as MobileNet/EfficientNet."""
    x, x2, residual = ps
    relu6 = _depthwise(b, x, _kernel(b, 3, 24), window(same(3), same(3)))
    dims = relu6.array_shape.dims
    biased = b.binary(Opcode.ADD, relu6, b.broadcast(b.constant(weights(24)), dims, [3]))
    zero, six = (b.broadcast(b.constant(np.float32(v)), dims, []) for v in (0.0, 6.0))
    swish = _depthwise(b, x2, _kernel(b, 5, 40), window((5, 2, 1, 2), (5, 2, 1, 2)))
    sdims = swish.array_shape.dims
    sbiased = b.binary(Opcode.ADD, swish, b.broadcast(b.constant(weights(40)), sdims, [3]))
    plain = _depthwise(b, x, _kernel(b, 3, 24), window(same(3), same(3)))
    return [
        b.clamp(zero, biased, six),
        b.binary(Opcode.MULTIPLY, sbiased, b.unary(Opcode.LOGISTIC, sbiased)),
        b.binary(Opcode.ADD, plain, residual),
    ]


def test_depthwise_conv_runs_the_fused_epilogue_in_registers() -> None:
    shapes = [f32(2, 15, 15, 24), f32(1, 13, 11, 40), f32(2, 15, 15, 24)]
    module = build(shapes, _fused_body)
    assert Fusion().run(module)
    roots = module.entry.root.operands
    assert all(r.attrs_as(FusionAttrs).kind is FusionKind.OUTPUT for r in roots)
    inputs = [weights(*s.dims) * 3 for s in shapes]
    ir_text = run_and_compare(module, inputs, rtol=2e-5)
    assert ir_text.count("dwacc") > 0
    _compare_jit(module, inputs)


# Few rows and many channels split by channel groups (a partial last group, batch 2, 5x5,
# stride 2); many rows by rows.
SPLIT_CASES = [
    ((1, 7, 7, 200), 3, window(same(3), same(3))),
    ((2, 3, 9, 128), 5, window(same(5), same(5))),
    ((1, 14, 14, 144), 3, window((3, 2, 0, 1), (3, 2, 0, 1))),
    ((1, 20, 6, 160), 3, window(same(3), same(3))),
]


def test_split_depthwise_convs_match_on_every_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each output element is computed by one task, in the serial order: every pool size
    gives the single-threaded run's bits, by channel groups or by rows."""
    split_every_kernel(monkeypatch)

    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
        return [
            _depthwise(b, x, _kernel(b, size, dims[3]), win)
            for (dims, size, win), x in zip(SPLIT_CASES, ps, strict=True)
        ]

    shapes = [f32(*x) for x, _, _ in SPLIT_CASES]
    module = build(shapes, body)
    specs = [depthwise_conv(c) for c in module.entry.root.operands]
    assert [splits_channels(s, AVX512) for s in specs if s is not None] == [True] * 3 + [False]
    inputs = [weights(*s.dims) for s in shapes]
    reference, pooled = run_multicore(compile_entry(module, "m"), inputs, (1, 2, 3))
    for want, got in zip(evaluate(module, inputs), reference, strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * float(np.max(np.abs(want))))
    for threads, results in pooled.items():
        for k, (got, want) in enumerate(zip(results, reference, strict=True)):
            assert got.tobytes() == want.tobytes(), f"result {k}, pool of {threads}"
