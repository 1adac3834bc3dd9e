"""The direct convolution kernel for few input features (runtime kernels): compiled, run,
compared.

Each module holds many shapes, so a few compiles cover the kernel's cases: ``Cin`` 1-3,
strides, dilations, SAME/VALID/negative padding (checked border columns and unchecked
interior ones), widths that are no multiple of the register tile, batch > 1, several feature
vectors per column, and the fused bias/activation epilogue. Every result is
checked from C (both entry points) and through the JIT against the evaluator.
"""

from __future__ import annotations

import numpy as np
from codegen_testing import compile_entry, run_and_compare
from hlo_programs import build, labels, same, window

from aotc.codegen.kernels.conv import conv_fast_path
from aotc.codegen.kernels.conv_direct import DirectConv, direct_conv
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import ConvAttrs, FusionAttrs, FusionKind, Instruction, Module, Opcode, Window
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.jit import JitModel
from aotc.passes.fusion import Fusion

RNG = np.random.default_rng(23)
NHWC = labels("b01f_01io->b01f")


def f32(*dims: int) -> Shape:
    return Shape(PrimitiveType.F32, dims)


def weights(*dims: int) -> np.ndarray:
    return RNG.standard_normal(dims).astype(np.float32)


# (input, kernel [kh, kw, cin, cout], window): every one takes the direct kernel
CASES = [
    ((4, 28, 28, 1), (5, 5, 1, 6), window(same(5), same(5))),  # LeNet's first layer, SAME
    ((2, 13, 29, 1), (5, 5, 1, 6), window((5,), (5,))),  # VALID, odd width
    ((1, 17, 19, 3), (3, 3, 3, 8), window(same(3, 2), same(3, 2))),  # Cin 3, stride 2
    ((3, 9, 11, 2), (3, 3, 2, 5), window(same(3), same(3))),  # Cin 2, batch 3
    ((1, 23, 23, 3), (7, 7, 3, 12), window((7, 2, 3, 3), (7, 2, 3, 3))),  # ResNet-like stem
    ((1, 12, 14, 1), (3, 3, 1, 7), window((3, 1, 2, 2, 1, 2), (3, 1, 2, 2, 1, 2))),  # dilated
    ((2, 8, 9, 2), (3, 3, 2, 4), window((3, 1, -1, 1), (3, 1, 0, -1))),  # negative padding
    ((1, 7, 40, 1), (1, 5, 1, 9), window((1,), (5, 3, 4, 1))),  # 1x5, stride 3, wide pad
    ((1, 3, 3, 3), (3, 3, 3, 40), window((3,), (3,))),  # one output point, 40 features
    ((2, 5, 6, 1), (2, 2, 1, 1), window((2, 1, 0, 1), (2, 1, 1, 0))),  # one feature
]


def _cases_body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
    """Each case with its runtime kernel (constant ones take the row-tiled kernel)."""
    xs, kernels = ps[: len(CASES)], ps[len(CASES) :]
    return [_conv(b, x, w, win) for (_, _, win), x, w in zip(CASES, xs, kernels, strict=True)]


def _conv(b: ComputationBuilder, x: Instruction, w: Instruction, win: Window) -> Instruction:
    return b.convolution(x, w, ConvAttrs(win, NHWC))


def _compare_jit(module: Module, inputs: list[np.ndarray]) -> None:
    """The JIT's results match the evaluator's as closely as the C run's do."""
    expected = evaluate(module, inputs)
    got = JitModel.from_compiled(compile_entry(module, "m"))(*inputs)
    for j, (want, have) in enumerate(zip(expected, got, strict=True)):
        scale = float(np.max(np.abs(want), initial=1.0))
        np.testing.assert_allclose(have, want, rtol=0, atol=2e-5 * scale, err_msg=f"result {j}")


def test_direct_conv_shapes_match_the_evaluator() -> None:
    shapes = [f32(*x) for x, _, _ in CASES] + [f32(*k) for _, k, _ in CASES]
    module = build(shapes, _cases_body)
    convs = module.entry.root.operands
    assert all(isinstance(conv_fast_path(c), DirectConv) for c in convs)
    inputs = [weights(*s.dims) for s in shapes]
    ir_text = run_and_compare(module, inputs, rtol=2e-5)
    assert ir_text.count("dacc") > 0
    _compare_jit(module, inputs)


def test_direct_conv_regions_cover_the_width_and_check_only_borders() -> None:
    first = build([f32(*CASES[0][0]), f32(*CASES[0][1])], _first_case)
    spec = direct_conv(first.entry.root.operands[0])
    assert spec is not None
    assert spec.regions() == [(0, 2, True), (2, 24, False), (26, 2, True)]
    second = build([f32(*CASES[1][0]), f32(*CASES[1][1])], _second_case)
    valid = direct_conv(second.entry.root.operands[0])
    assert valid is not None and valid.regions() == [(0, 25, False)]


def _first_case(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
    return [_conv(b, ps[0], ps[1], CASES[0][2])]


def _second_case(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
    return [_conv(b, ps[0], ps[1], CASES[1][2])]


def test_direct_conv_leaves_other_convolutions_to_other_kernels() -> None:
    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
        x4, x1 = ps
        return [
            _conv(b, x4, b.constant(weights(3, 3, 4, 6)), window(same(3), same(3))),  # Cin 4
            _conv(b, x1, b.constant(weights(3, 3, 1, 6)), window((3, 1, 0, 0, 2), (3,))),
        ]

    module = build([f32(1, 8, 8, 4), f32(1, 8, 8, 1)], body)
    assert [direct_conv(c) for c in module.entry.root.operands] == [None, None]


def _fused_body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
    """conv + bias + relu and conv + bias + tanh on the direct kernel, and a residual add."""
    x, x3, residual, w1, w3 = ps
    outs = []
    for inp, kernel, win, act in [
        (x, w1, window(same(5), same(5)), Opcode.MAXIMUM),
        (x3, w3, window(same(3, 2), same(3, 2)), Opcode.TANH),
    ]:
        c = _conv(b, inp, kernel, win)
        dims = c.array_shape.dims
        biased = b.binary(Opcode.ADD, c, b.broadcast(b.constant(weights(dims[-1])), dims, [3]))
        if act is Opcode.TANH:
            outs.append(b.unary(Opcode.TANH, biased))
        else:
            zero = b.broadcast(b.constant(np.float32(0.0)), dims, [])
            outs.append(b.binary(Opcode.MAXIMUM, biased, zero))
    c = _conv(b, x, w1, window(same(5), same(5)))
    outs.append(b.binary(Opcode.ADD, c, residual))
    return outs


def test_direct_conv_runs_the_fused_epilogue_in_registers() -> None:
    shapes = [f32(2, 15, 15, 1), f32(3, 11, 13, 3), f32(2, 15, 15, 6)]
    shapes += [f32(5, 5, 1, 6), f32(3, 3, 3, 10)]  # runtime kernels
    module = build(shapes, _fused_body)
    assert Fusion().run(module)
    roots = module.entry.root.operands
    assert all(r.attrs_as(FusionAttrs).kind is FusionKind.OUTPUT for r in roots)
    inputs = [weights(*s.dims) for s in shapes]
    ir_text = run_and_compare(module, inputs, rtol=2e-5)
    assert ir_text.count("dacc") > 0
    _compare_jit(module, inputs)
