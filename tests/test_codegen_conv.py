"""Codegen of ``convolution`` and ``reduce-window``: compiled and run from C vs the evaluator.

Each test builds one module holding many variants (dim_labels, windows, groups, dilations,
element types) so that a handful of compiles covers the kernels' cases.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from codegen_testing import run_and_compare
from hlo_programs import build, labels, window

from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.ir import ConvAttrs, ConvDims, Instruction, Opcode, Window
from aotc.hlo.shape import PrimitiveType, Shape

RNG = np.random.default_rng(77)
F32, F16, S32 = PrimitiveType.F32, PrimitiveType.F16, PrimitiveType.S32


def dims_for(dims: ConvDims, batch: int, feature: int, spatial: Sequence[int]) -> list[int]:
    out = [0] * (len(spatial) + 2)
    out[dims.input_batch], out[dims.input_feature] = batch, feature
    for d, n in zip(dims.input_spatial, spatial, strict=True):
        out[d] = n
    return out


def kernel_for(dims: ConvDims, fin: int, fout: int, spatial: Sequence[int]) -> list[int]:
    out = [0] * (len(spatial) + 2)
    out[dims.kernel_input_feature], out[dims.kernel_output_feature] = fin, fout
    for d, n in zip(dims.kernel_spatial, spatial, strict=True):
        out[d] = n
    return out


# (dim_labels, input [batch, features, spatial], kernel [in, out], window, groups)
CONV_CASES = [
    ("b01f_01io->b01f", (2, 3, (9, 9)), (3, 4), window((3, 2, 1, 1), (3, 2, 1, 1)), 1),
    ("b01f_01io->b01f", (1, 3, (8, 7)), (3, 5), window((3, 1, 0, 2, 1, 2), (2, 1, 1, 0)), 1),
    ("b01f_01io->b01f", (2, 4, (4, 5)), (4, 3), window((3, 1, 2, 2, 2), (3, 1, 1, 2, 2)), 1),
    ("b01f_01io->b01f", (1, 6, (7, 7)), (3, 4), window((3, 1, 1, 1), (3, 1, 1, 1)), 2),
    ("b01f_01io->b01f", (2, 5, (6, 6)), (1, 10), window((3, 2, 1, 1), (3, 2, 0, 1)), 5),
    ("bf01_oi01->bf01", (2, 3, (6, 5)), (3, 4), window((2, 1, 1, 0), (3, 2, 1, 1)), 1),
    ("f01b_i01o->01bf", (3, 4, (5, 6)), (2, 6), window((3, 1, 1, 1), (2, 2, 0, 1, 1, 2)), 2),
    ("b0f_0io->b0f", (2, 3, (10,)), (3, 2), window((4, 3, 2, 1, 1, 2)), 1),
    ("b012f_012io->b012f", (1, 2, (4, 5, 3)), (2, 3), window((2, 1, 1, 0), (3, 2, 1, 1), (1,)), 1),
    ("b01f_01io->b01f", (1, 2, (5, 5)), (2, 3), window((3, 1, -1, 1), (2, 1, 0, -1)), 1),
]


def _conv_body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
    out = []
    for (text, _, _, win, groups), (x, w) in zip(
        CONV_CASES, zip(ps[::2], ps[1::2], strict=True), strict=True
    ):
        out.append(b.convolution(x, w, ConvAttrs(win, labels(text), groups)))
    return out


def _conv_shapes(dtype: PrimitiveType) -> list[Shape]:
    shapes = []
    for text, (batch, features, spatial), (fin, fout), win, _ in CONV_CASES:
        d = labels(text)
        sizes = [w.size for w in win.dims]
        shapes.append(Shape(dtype, tuple(dims_for(d, batch, features, spatial))))
        shapes.append(Shape(dtype, tuple(kernel_for(d, fin, fout, sizes))))
    return shapes


def _random(shape: Shape) -> np.ndarray:
    if shape.dtype.is_float:
        return RNG.standard_normal(shape.dims).astype(shape.dtype.numpy)
    return RNG.integers(-9, 10, shape.dims).astype(shape.dtype.numpy)


def test_convolution_layouts_windows_and_groups() -> None:
    shapes = _conv_shapes(F32)
    run_and_compare(build(shapes, _conv_body), [_random(s) for s in shapes])


def test_convolution_f16_and_s32() -> None:
    cases = [0, 3, 6]
    for dtype, rtol in ((F16, 2e-3), (S32, 0.0)):
        shapes = [s for i, s in enumerate(_conv_shapes(dtype)) if i // 2 in cases]

        def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
            pairs = zip(cases, ps[::2], ps[1::2], strict=True)
            return [
                b.convolution(
                    x, w, ConvAttrs(CONV_CASES[c][3], labels(CONV_CASES[c][0]), CONV_CASES[c][4])
                )
                for c, x, w in pairs
            ]

        run_and_compare(build(shapes, body), [_random(s) for s in shapes], rtol=rtol)


# ---- reduce-window -----------------------------------------------------------------------------


def _pair_reducer(mb: ModuleBuilder) -> tuple:
    """(max, sum) over pairs: a variadic, tuple-valued reducer."""
    c = mb.computation("max_and_sum")
    scalar = Shape(F32)
    a0, a1, b0, b1 = (c.parameter(i, scalar, f"v{i}") for i in range(4))
    root = c.tuple([c.binary(Opcode.MAXIMUM, a0, b0), c.binary(Opcode.ADD, a1, b1)])
    return c.build(root)


def _reduce_window_body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
    x, v, s = ps
    ninf, zero, one = (b.constant(value, F32) for value in (-np.inf, 0.0, 1.0))
    vmax, vadd = mb.reducer(Opcode.MAXIMUM, F32), mb.reducer(Opcode.ADD, F32)
    pool = window((1,), (3, 2, 1, 1), (3, 2, 0, 1), (1,))
    dilated = window((1,), (2, 1, 1, 1, 2, 1), (3, 2, 0, 0, 1, 2), (1,))
    channels = window((2, 1, 0, 1), (1,), (1,), (3, 1, 1, 1))
    pair = _pair_reducer(mb)
    pair_out = b.reduce_window([x, x], [ninf, zero], pool, pair)
    results = [
        b.reduce_window([x], [ninf], pool, vmax),
        b.reduce_window([x], [one], pool, vadd),  # init 1: padding folds in 1s
        b.reduce_window([x], [zero], dilated, vadd),
        b.reduce_window([x], [ninf], channels, vmax),
        b.get_tuple_element(pair_out, 0),
        b.get_tuple_element(pair_out, 1),
        b.reduce_window([v], [zero], window((3, 2, 2, 1, 1, 2)), vadd),
        b.reduce_window([b.reshape(s, [])], [one], Window(()), vadd),
    ]
    return results


def test_reduce_window_paddings_dilations_and_variadic() -> None:
    shapes = [Shape(F32, (2, 7, 6, 3)), Shape(F32, (9,)), Shape(F32, (1,))]
    run_and_compare(build(shapes, _reduce_window_body), [_random(s) for s in shapes])


def test_reduce_window_integer_max_pool() -> None:
    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
        low = b.constant(np.iinfo(np.int32).min, S32)
        pool = window((1,), (2, 2, 0, 1), (3, 1, 1, 1), (1,))
        return [b.reduce_window([ps[0]], [low], pool, mb.reducer(Opcode.MAXIMUM, S32))]

    shape = Shape(S32, (1, 5, 4, 6))
    run_and_compare(build([shape], body), [_random(shape)], rtol=0.0)
