"""The row-tiled convolution kernel (constant weights): compiled, run, compared.

One module holds many shapes, so a compile covers the kernel's cases: SAME/VALID/negative and
wide padding (border tiles, kernel rows and whole tiles off the input), strides, dilations,
widths that make interior tile loops and narrower last tiles, Cout below, at and above the
register tile's width (several feature blocks and a partial one), batch > 1, and the fused
bias/activation/residual epilogue. Each runs on this machine's vector level and on the
x86-64 baseline (SSE: another register tile), checked from C against the evaluator.
"""

from __future__ import annotations

import platform

import numpy as np
import pytest
from c_harness import run_compiled
from codegen_testing import compile_entry, run_and_compare
from hlo_programs import build, labels, window
from mt_harness import run_multicore, split_every_kernel

from aotc.codegen.kernels.conv import conv_fast_path
from aotc.codegen.kernels.conv_rows import RowConv, _tile_runs, by_features, row_conv
from aotc.codegen.target import TargetSpec
from aotc.codegen.vector import AVX2, AVX512
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import ConvAttrs, FusionAttrs, FusionKind, Instruction, Module, Opcode, Window
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.passes.fusion import Fusion

RNG = np.random.default_rng(31)
NHWC = labels("b01f_01io->b01f")
SAME3 = window((3, 1, 1, 1), (3, 1, 1, 1))


def f32(*dims: int) -> Shape:
    return Shape(PrimitiveType.F32, dims)


def weights(*dims: int) -> np.ndarray:
    return RNG.standard_normal(dims).astype(np.float32)


# (input, kernel [kh, kw, cin, cout], window): every one takes the row-tiled kernel
CASES = [
    ((2, 9, 9, 8), (3, 3, 8, 20), SAME3),  # batch 2, a partial feature block
    ((1, 5, 60, 16), (3, 3, 16, 64), SAME3),  # interior tile loop, two feature blocks
    ((1, 11, 30, 8), (3, 3, 8, 33), window((3, 2, 1, 1), (3, 2, 0, 1))),  # stride 2
    ((1, 10, 31, 8), (3, 3, 8, 16), window((3, 1, 2, 2, 1, 2), (3, 1, 2, 2, 1, 2))),  # dilated
    ((2, 14, 14, 6), (5, 5, 6, 16), window((5,), (5,))),  # LeNet's second layer, VALID
    ((1, 7, 17, 8), (3, 3, 8, 16), window((3, 1, -1, 1), (3, 1, 0, -1))),  # negative padding
    ((1, 5, 9, 4), (3, 3, 4, 8), window((3, 1, 3, 3), (3, 1, 3, 3))),  # padding past the taps
    ((1, 8, 16, 8), (1, 1, 8, 16), window((1, 2), (1, 2))),  # strided 1x1
    ((2, 3, 10, 24), (1, 1, 24, 36), window((1,), (1,))),  # 1x1 (else a plain GEMM)
    ((2, 6, 14, 16), (1, 3, 16, 17), window((1,), (3, 1, 1, 1))),  # 1x3
    ((1, 6, 12, 96), (3, 3, 96, 40), SAME3),  # many input features
    ((1, 4, 9, 5), (2, 2, 5, 70), window((2, 1, 0, 1), (2, 1, 1, 0))),  # three feature blocks
    ((1, 9, 13, 4), (3, 3, 4, 8), window((3, 1, 1, 1), (3, 3, 1, 1))),  # width 4, stride 3
    ((4, 28, 28, 1), (5, 5, 1, 6), window((5, 1, 2, 2), (5, 1, 2, 2))),  # LeNet's first layer
    ((1, 23, 23, 3), (7, 7, 3, 40), window((7, 2, 3, 3), (7, 2, 3, 3))),  # ResNet-like stem
    ((2, 5, 6, 2), (2, 2, 2, 1), window((2, 1, 0, 1), (2, 1, 1, 0))),  # one filter
]


def _cases_body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
    return [
        _conv(b, x, b.constant(weights(*kernel)), win)
        for (_, kernel, win), x in zip(CASES, ps, strict=True)
    ]


def _conv(b: ComputationBuilder, x: Instruction, w: Instruction, win: Window) -> Instruction:
    return b.convolution(x, w, ConvAttrs(win, NHWC))


def _run_baseline(module: Module, inputs: list[np.ndarray]) -> None:
    """The x86-64 baseline object (SSE tiles) matches the evaluator too."""
    if platform.machine() != "x86_64":
        return
    model = compile_entry(module, "m", TargetSpec("x86_64-unknown-linux-gnu", "x86-64", ""))
    typed, _ = run_compiled(model, inputs)
    for j, (want, got) in enumerate(zip(evaluate(module, inputs), typed, strict=True)):
        scale = float(np.max(np.abs(want), initial=1.0))
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * scale, err_msg=f"result {j}")


def test_row_conv_shapes_match_the_evaluator() -> None:
    shapes = [f32(*x) for x, _, _ in CASES]
    module = build(shapes, _cases_body)
    convs = module.entry.root.operands
    assert all(isinstance(conv_fast_path(c), RowConv) for c in convs)
    inputs = [weights(*s.dims) for s in shapes]
    ir_text = run_and_compare(module, inputs, rtol=2e-5)
    assert ir_text.count("racc") > 0 and ".gemm" not in ir_text
    _run_baseline(module, inputs)


def test_row_tiles_loop_over_the_interior_and_place_the_borders() -> None:
    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
        return [_conv(b, ps[0], b.constant(weights(3, 3, 64, 64)), SAME3)]

    spec = row_conv(build([f32(1, 56, 56, 64)], body).entry.root.operands[0])
    assert spec is not None
    assert _tile_runs(spec, AVX512) == [(0, 14, 1), (14, 14, 2), (42, 14, 1)]
    assert spec.columns_inside(0, 14, 0) == range(1, 14)
    assert spec.columns_inside(42, 14, 2) == range(0, 13)
    assert spec.tiles(AVX2) == [(s, 6) for s in range(0, 36, 6)] + [
        (36, 5),
        (41, 5),
        (46, 5),
        (51, 5),
    ]


def test_row_conv_leaves_other_convolutions_to_other_kernels() -> None:
    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
        x, w, thin, deep = ps
        nonfinite = weights(3, 3, 3, 16)
        nonfinite[1, 1, 0, 0] = np.inf
        return [
            _conv(b, x, b.constant(nonfinite), SAME3),  # inf * padding zeros is NaN
            _conv(b, thin, w, SAME3),  # a runtime kernel
            _conv(b, thin, b.constant(weights(3, 3, 4, 16)), window((3, 1, 1, 1, 2), (3,))),
            _conv(b, thin, b.constant(weights(3, 3, 4, 8)), window((3,), (3, 2))),  # width 3
            _conv(b, deep, b.constant(weights(1, 1, 520, 1040)), window((1,), (1,))),  # 1.5 MiB+
        ]

    shapes = [f32(1, 8, 8, 3), f32(3, 3, 4, 16), f32(1, 8, 8, 4), f32(1, 6, 6, 520)]
    module = build(shapes, body)
    assert [row_conv(c) for c in module.entry.root.operands] == [None] * 5


def _fused_body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
    """conv + bias + relu, conv + bias + tanh (two feature blocks), and a residual add."""
    x, x2, residual = ps
    outs = []
    for inp, kernel, win, act in [
        (x, (3, 3, 8, 20), SAME3, Opcode.MAXIMUM),
        (x2, (3, 3, 16, 40), window((3, 2, 1, 1), (3, 2, 1, 1)), Opcode.TANH),
    ]:
        c = _conv(b, inp, b.constant(weights(*kernel)), win)
        dims = c.array_shape.dims
        biased = b.binary(Opcode.ADD, c, b.broadcast(b.constant(weights(dims[-1])), dims, [3]))
        if act is Opcode.TANH:
            outs.append(b.unary(Opcode.TANH, biased))
        else:
            zero = b.broadcast(b.constant(np.float32(0.0)), dims, [])
            outs.append(b.binary(Opcode.MAXIMUM, biased, zero))
    c = _conv(b, x, b.constant(weights(3, 3, 8, 20)), SAME3)
    outs.append(b.binary(Opcode.ADD, c, residual))
    return outs


def test_row_conv_runs_the_fused_epilogue_in_registers() -> None:
    shapes = [f32(2, 9, 19, 8), f32(1, 11, 23, 16), f32(2, 9, 19, 20)]
    module = build(shapes, _fused_body)
    assert Fusion().run(module)
    roots = module.entry.root.operands
    assert all(r.attrs_as(FusionAttrs).kind is FusionKind.OUTPUT for r in roots)
    inputs = [weights(*s.dims) for s in shapes]
    ir_text = run_and_compare(module, inputs, rtol=2e-5)
    assert ir_text.count("racc") > 0 and ".gemm" not in ir_text
    _run_baseline(module, inputs)


# Split over threads by feature blocks (weights above the input's bytes), with a partial
# block, 7 rows, batch 2, a 3x3 window; the last two by rows (the input outweighs the weights).
SPLIT_CASES = [
    ((1, 7, 7, 40), (1, 1, 40, 80), window((1,), (1,))),
    ((2, 3, 5, 16), (3, 3, 16, 70), SAME3),
    ((1, 9, 11, 24), (1, 1, 24, 64), window((1,), (1,))),
    ((1, 12, 16, 32), (1, 1, 32, 16), window((1,), (1,))),
]


def test_split_row_convs_match_on_every_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each output element is computed by one task, in the serial order: every pool size
    gives the single-threaded run's bits, by feature blocks or by rows."""
    split_every_kernel(monkeypatch)

    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
        return [
            _conv(b, x, b.constant(weights(*kernel)), win)
            for (_, kernel, win), x in zip(SPLIT_CASES, ps, strict=True)
        ]

    shapes = [f32(*x) for x, _, _ in SPLIT_CASES]
    module = build(shapes, body)
    specs = [row_conv(c) for c in module.entry.root.operands]
    assert all(spec is not None for spec in specs)
    blocked = [by_features(spec, AVX512, False) for spec in specs if spec is not None]
    assert blocked == [True, True, False, False]
    inputs = [weights(*s.dims) for s in shapes]
    reference, pooled = run_multicore(compile_entry(module, "m"), inputs, (1, 2, 3))
    for want, got in zip(evaluate(module, inputs), reference, strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * float(np.max(np.abs(want))))
    for threads, results in pooled.items():
        for k, (got, want) in enumerate(zip(results, reference, strict=True)):
            assert got.tobytes() == want.tobytes(), f"result {k}, pool of {threads}"
