"""Convolutions as implicit GEMM: compiled, run from C, compared with the evaluator.

One module per test holds many shapes, so a few compiles cover the packer's cases: padding
(SAME, VALID, negative), strides, dilations, transposed (base-dilated) inputs, odd ``Cin`` and
``Cout``, a K split inside a tap, runtime kernels, and the fused bias/activation epilogue.
Constant 2-D kernels take the row-tiled kernel (``conv_rows.py``) unless transposed, so
most cases here pass their kernel at run time.
"""

from __future__ import annotations

import numpy as np
from codegen_testing import run_and_compare
from hlo_programs import build, labels, window

from aotc.codegen.kernels.conv import conv_fast_path
from aotc.codegen.kernels.conv_gemm import ConvGemm, conv_gemm
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.ir import ConvAttrs, FusionAttrs, FusionKind, Instruction, Opcode, Window
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.passes.fusion import Fusion

RNG = np.random.default_rng(11)
F32 = PrimitiveType.F32
NHWC = labels("b01f_01io->b01f")


def f32(*dims: int) -> Shape:
    return Shape(F32, dims)


def weights(*dims: int) -> np.ndarray:
    return RNG.standard_normal(dims).astype(np.float32)


def conv(b: ComputationBuilder, x: Instruction, w: Instruction, win: Window) -> Instruction:
    return b.convolution(x, w, ConvAttrs(win, NHWC))


SAME3 = window((3, 1, 1, 1), (3, 1, 1, 1))

# (input, kernel [kh, kw, cin, cout], window): every one takes the implicit GEMM path
CASES = [
    ((2, 9, 9, 8), (3, 3, 8, 20), SAME3),  # 3x3 SAME, batch 2, Cout not a multiple of 16
    ((1, 9, 8, 8), (3, 3, 8, 16), window((3,), (3,))),  # VALID
    ((1, 11, 10, 8), (3, 3, 8, 33), window((3, 2, 1, 1), (3, 2, 0, 1))),  # stride 2
    ((1, 10, 10, 8), (3, 3, 8, 16), window((3, 1, 2, 2, 1, 2), (3, 1, 2, 2, 1, 2))),  # dilation 2
    ((1, 12, 11, 6), (5, 5, 6, 24), window((5, 1, 2, 2), (5, 1, 2, 2))),  # 5x5
    ((1, 23, 23, 3), (7, 7, 3, 40), window((7, 2, 3, 3), (7, 2, 3, 3))),  # ResNet stem, Cin 3
    ((2, 6, 14, 16), (1, 3, 16, 17), window((1,), (3, 1, 1, 1))),  # 1x3
    ((1, 8, 8, 8), (1, 1, 8, 16), window((1, 2), (1, 2))),  # strided 1x1
    ((1, 7, 7, 8), (3, 3, 8, 16), window((3, 1, -1, 1), (3, 1, 0, -1))),  # negative padding
    ((1, 5, 6, 8), (3, 3, 8, 18), window((3, 1, 1, 2, 2), (3, 1, 1, 2, 2))),  # transposed, s2
    ((1, 6, 5, 320), (2, 2, 320, 18), window((2,), (2, 1, 0, 1))),  # Cin > KC: split taps
]


# the case whose constant kernel the row-tiled kernel leaves to the implicit GEMM
CONSTANT = (9,)  # transposed


def _cases_body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
    out = []
    xs, kernels = ps[: len(CASES)], iter(ps[len(CASES) :])
    for i, ((_, kernel, win), x) in enumerate(zip(CASES, xs, strict=True)):
        w = b.constant(weights(*kernel)) if i in CONSTANT else next(kernels)
        out.append(conv(b, x, w, win))  # a runtime kernel: B packed at run time
    return out


def test_implicit_gemm_shapes_match_the_evaluator() -> None:
    shapes = [f32(*x) for x, _, _ in CASES]
    shapes += [f32(*k) for i, (_, k, _) in enumerate(CASES) if i not in CONSTANT]
    module = build(shapes, _cases_body)
    convs = module.entry.root.operands
    assert all(isinstance(conv_fast_path(c), ConvGemm) for c in convs)
    assert all(conv_gemm(c).weights is not None for c in (convs[i] for i in CONSTANT))
    run_and_compare(module, [weights(*s.dims) for s in shapes], rtol=2e-5)


def _fused_body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
    """conv + bias + relu (implicit GEMM on a runtime kernel, row tiles on a constant 1x1, and
    an f32 grouped loop kernel), and a residual add whose operand has the output's shape."""
    x, residual, w3 = ps
    zero = b.constant(np.float32(0.0))
    outs = []
    for kernel, win, groups in [
        (w3, SAME3, 1),
        (b.constant(weights(1, 1, 8, 24)), window((1,), (1,)), 1),
        (b.constant(weights(3, 3, 4, 20)), SAME3, 2),
    ]:
        c = b.convolution(x, kernel, ConvAttrs(win, NHWC, groups))
        dims = c.array_shape.dims
        biased = b.binary(Opcode.ADD, c, b.broadcast(b.constant(weights(dims[-1])), dims, [3]))
        outs.append(b.binary(Opcode.MAXIMUM, biased, b.broadcast(zero, dims, [])))
    c = conv(b, x, b.constant(weights(3, 3, 8, 20)), SAME3)
    outs.append(b.binary(Opcode.ADD, c, residual))
    return outs


def test_conv_bias_relu_becomes_an_output_fusion_with_the_epilogue_in_the_tile_store() -> None:
    shapes = [f32(2, 9, 9, 8), f32(2, 9, 9, 20), f32(3, 3, 8, 20)]
    module = build(shapes, _fused_body)
    assert Fusion().run(module)
    roots = module.entry.root.operands
    assert [r.opcode for r in roots] == [Opcode.FUSION] * 4
    assert all(r.attrs_as(FusionAttrs).kind is FusionKind.OUTPUT for r in roots)
    inputs = [weights(*s.dims) for s in shapes]
    ir_text = run_and_compare(module, inputs, rtol=2e-5)
    assert ir_text.count(".gemm.tile") > 0


NARROW_KERNELS = [(5, 5, 6, 16), (5, 5, 6, 6), (3, 3, 6, 1)]


def _narrow_body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
    """conv + bias + relu with few filters (LeNet's 6 and 16; runtime kernels), and Cin
    below the threshold."""
    zero = b.constant(np.float32(0.0))
    outs = []
    for x, w, win in [
        (ps[0], ps[2], window((5,), (5,))),
        (ps[0], ps[3], window((5, 1, 2, 2), (5, 1, 2, 2))),
        (ps[0], ps[4], SAME3),
        (ps[1], b.constant(weights(5, 5, 1, 6)), window((5, 1, 2, 2), (5, 1, 2, 2))),  # Cin 1
    ]:
        c = conv(b, x, w, win)
        dims = c.array_shape.dims
        biased = b.binary(Opcode.ADD, c, b.broadcast(b.constant(weights(dims[-1])), dims, [3]))
        outs.append(b.binary(Opcode.MAXIMUM, biased, b.broadcast(zero, dims, [])))
    return outs


def test_small_cout_convs_with_bias_relu_take_narrow_gemm_tiles() -> None:
    shapes = [f32(2, 14, 14, 6), f32(2, 12, 12, 1), *(f32(*k) for k in NARROW_KERNELS)]
    module = build(shapes, _narrow_body)
    convs = [r.operands[0].operands[0] for r in module.entry.root.operands]
    assert [conv_gemm(c) is not None for c in convs] == [True, True, True, False]
    assert Fusion().run(module)
    inputs = [weights(*s.dims) for s in shapes]
    ir_text = run_and_compare(module, inputs, rtol=2e-5)
    assert ir_text.count(".gemm.tile") > 0
