"""Transposed convolutions split into sub-pixel convolutions (``passes/conv_transpose.py``).

The pass is checked against the evaluator on the HLO alone, then compiled through the whole
default pipeline (with a bias + relu epilogue) and run from C.
"""

from __future__ import annotations

import numpy as np
import pytest
from c_harness import run_compiled
from hlo_programs import build, labels, window
from pass_testing import assert_same_results, run_pass

from aotc.codegen.compile import TargetSpec, TensorInfo, compile_module
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import ConvAttrs, Instruction, Opcode, Window
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.hlo.text import parse_module, print_module
from aotc.passes import ConvTransposePhases, default_pipeline

RNG = np.random.default_rng(5)
NHWC = labels("b01f_01io->b01f")


def _text(x: tuple[int, ...], k: tuple[int, ...], win: Window, epilogue: bool = False) -> str:
    """A module: a transposed convolution of parameter ``x`` with a constant kernel ``k``."""

    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
        w = b.constant(RNG.standard_normal(k).astype(np.float32))
        y = b.convolution(ps[0], w, ConvAttrs(win, NHWC))
        if not epilogue:
            return [y]
        dims = y.array_shape.dims
        bias = b.constant(RNG.standard_normal(dims[-1]).astype(np.float32))
        y = b.binary(Opcode.ADD, y, b.broadcast(bias, dims, (len(dims) - 1,)))
        zero = b.broadcast(b.constant(np.float32(0)), dims, ())
        return [b.binary(Opcode.MAXIMUM, y, zero)]

    return print_module(build([Shape(PrimitiveType.F32, x)], body))


# (input, kernel [kh, kw, cin, cout], window): (size, stride, pad_low, pad_high, lhs_dilation)
CASES = {
    "s2_same_3x3": ((1, 5, 6, 8), (3, 3, 8, 20), window((3, 1, 2, 1, 2), (3, 1, 2, 1, 2))),
    "s2_valid_3x3": ((2, 4, 5, 6), (3, 3, 6, 17), window((3, 1, 2, 2, 2), (3, 1, 2, 2, 2))),
    "s2_2x2": ((1, 4, 4, 16), (2, 2, 16, 16), window((2, 1, 1, 1, 2), (2, 1, 1, 1, 2))),
    "s3_same_3x3": ((1, 4, 3, 5), (3, 3, 5, 7), window((3, 1, 1, 1, 3), (3, 1, 1, 1, 3))),
    "s3_valid_5x5": ((1, 3, 4, 4), (5, 5, 4, 9), window((5, 1, 4, 4, 3), (5, 1, 4, 4, 3))),
    "s3_4x4_odd_pads": ((1, 3, 3, 4), (4, 4, 4, 3), window((4, 1, 3, 0, 3), (4, 1, 1, 2, 3))),
    "one_dim_dilated": ((1, 5, 4, 8), (3, 3, 8, 16), window((3, 1, 2, 1, 2), (3, 1, 1, 1))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_split_matches_the_evaluator(name: str) -> None:
    after = assert_same_results(ConvTransposePhases(), _text(*CASES[name]))
    convs = [i for i in after.entry.instructions if i.opcode is Opcode.CONVOLUTION]
    assert convs and all(
        w.lhs_dilation == 1
        for c in convs
        for w in c.attrs.window.dims  # type: ignore[union-attr]
    )


def test_kernel_smaller_than_stride_is_left_alone() -> None:
    """A 2x2 kernel at stride 3 leaves phases without taps (all zeros): not split."""
    text = _text((1, 3, 3, 4), (2, 2, 4, 8), window((2, 1, 1, 1, 3), (2, 1, 1, 1, 3)))
    _, changed = run_pass(ConvTransposePhases(), text)
    assert not changed


@pytest.mark.parametrize("name", ["s2_same_3x3", "s3_valid_5x5", "s2_2x2"])
def test_compiled_with_bias_relu_matches_the_evaluator(name: str) -> None:
    """The default pipeline (split, fold, fuse) compiled and run from C, vs the evaluator."""
    x_shape, kernel, win = CASES[name]
    text = _text(x_shape, kernel, win, epilogue=True)
    module = parse_module(text)
    inputs = [RNG.standard_normal(x_shape).astype(np.float32)]
    (want,) = evaluate(module, inputs)
    default_pipeline().run(module)
    assert not any(
        i.opcode is Opcode.CONVOLUTION and i.attrs.window.dims[0].lhs_dilation > 1  # type: ignore[union-attr]
        for c in module.computations
        for i in c.instructions
    )
    args = [TensorInfo("x", module.entry.parameters[0].array_shape)]
    results = [TensorInfo("y", Shape(PrimitiveType.F32, want.shape))]
    model = compile_module(module, "ct", args, results, TargetSpec())
    typed, buffers = run_compiled(model, inputs)
    scale = float(np.max(np.abs(want), initial=1.0))
    np.testing.assert_allclose(typed[0], want, rtol=0, atol=2e-6 * scale)
    np.testing.assert_array_equal(typed[0], buffers[0])
