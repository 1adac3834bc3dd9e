"""The reference evaluator, opcode family by opcode family, including XLA's edge cases."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from aotc.errors import AotcError, ShapeError, UnsupportedError
from aotc.hlo import evaluate as ev
from aotc.hlo import shape_inference as si
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import (
    Attrs,
    ComparisonDirection,
    Computation,
    ConvAttrs,
    ConvDims,
    DotDims,
    FusionAttrs,
    FusionKind,
    Instruction,
    Module,
    Opcode,
    PadDim,
    ReduceWindowAttrs,
    Window,
    WindowDim,
)
from aotc.hlo.shape import AnyShape, PrimitiveType, Shape
from aotc.hlo.text import parse_module
from aotc.hlo.verify import verify_module

pytestmark = pytest.mark.filterwarnings("error")  # overflow, invalid, ... must stay silent

F16, F32, F64 = PrimitiveType.F16, PrimitiveType.F32, PrimitiveType.F64
S8, S32, S64, U8, U32 = (
    PrimitiveType.S8,
    PrimitiveType.S32,
    PrimitiveType.S64,
    PrimitiveType.U8,
    PrimitiveType.U32,
)
PRED = PrimitiveType.PRED
INT32_MIN, INT32_MAX = np.iinfo(np.int32).min, np.iinfo(np.int32).max


# ---- helpers ---------------------------------------------------------------------------------

Body = Callable[[ModuleBuilder, ComputationBuilder, list[Instruction]], Instruction]


def build(body: Body, *arg_shapes: Shape) -> Module:
    """A verified module whose entry takes ``arg_shapes`` and returns ``body``'s result."""
    mb = ModuleBuilder("test")
    b = mb.computation("main")
    params = [b.parameter(i, s, f"p{i}") for i, s in enumerate(arg_shapes)]
    return with_callees(mb.build(b.build(body(mb, b, params))))


def with_callees(module: Module) -> Module:
    """Add the computations the test built by hand (not via ``reducer``), then verify."""
    for comp in module.called_computations():
        if not any(c is comp for c in module.computations):
            module.add_computation(comp)
    verify_module(module)
    return module


def run(body: Body, *args: np.ndarray) -> Any:
    """The entry's result: an array, or a list for a tuple root."""
    shapes = [Shape(PrimitiveType.from_numpy(a.dtype), a.shape) for a in map(np.asarray, args)]
    return evaluate(build(body, *shapes), [np.asarray(a) for a in args])


def run_unary(opcode: Opcode, x: np.ndarray) -> np.ndarray:
    result = run(lambda mb, b, p: b.unary(opcode, p[0]), x)
    assert isinstance(result, np.ndarray)
    return result


def run_binary(opcode: Opcode, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    result = run(lambda mb, b, p: b.binary(opcode, p[0], p[1]), x, y)
    assert isinstance(result, np.ndarray)
    return result


def run_convert(x: np.ndarray, dtype: PrimitiveType) -> np.ndarray:
    result = run(lambda mb, b, p: b.convert(p[0], dtype), x)
    assert isinstance(result, np.ndarray) and result.dtype == dtype.numpy
    return result


def f32(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def i32(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int32)


def assert_same(actual: np.ndarray, expected: np.ndarray) -> None:
    """Equal dtype, shape and values (NaN equal to NaN, -0.0 distinct from 0.0)."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)
    if actual.dtype.kind == "f":  # the sign of a NaN means nothing
        signs = np.where(np.isnan(expected), False, np.signbit(expected))
        np.testing.assert_array_equal(np.where(np.isnan(actual), False, np.signbit(actual)), signs)


def new(
    b: ComputationBuilder,
    opcode: Opcode,
    shape: AnyShape,
    operands: Sequence[Instruction],
    attrs: Attrs = None,
    called: Sequence[Computation] = (),
) -> Instruction:
    """An instruction the builder has no helper for (convolution, reduce-window, ...)."""
    inst = Instruction(
        b.names.get(opcode.value), opcode, shape, list(operands), attrs, called=list(called)
    )
    return b.add(inst)


# ---- leaves ----------------------------------------------------------------------------------


def test_parameter_checks_dtype_and_shape() -> None:
    module = build(lambda mb, b, p: p[0], Shape(F32, (2, 3)))
    with pytest.raises(ShapeError, match=r"main/p0 \(parameter 0\) expects f32\[2,3\], got f"):
        evaluate(module, [np.zeros((2, 3))])
    with pytest.raises(AotcError, match=r"expects f32\[2,3\], got float32\[3, 2\]"):
        evaluate(module, [np.zeros((3, 2), np.float32)])
    with pytest.raises(ShapeError, match="takes 1 arguments, got 0"):
        evaluate(module, [])


def test_result_is_a_private_copy() -> None:
    x = f32(1, 2)
    out = evaluate(build(lambda mb, b, p: p[0], Shape(F32, (2,))), [x])
    assert isinstance(out, np.ndarray) and out is not x and np.shares_memory(out, x) is False


def test_constant_and_iota() -> None:
    def body(mb: ModuleBuilder, b: ComputationBuilder, p: list[Instruction]) -> Instruction:
        iota = b.iota(Shape(S32, (2, 3)), 1)
        return b.tuple(
            [b.constant(np.array([[1.5, 2]], np.float32)), iota, b.iota(Shape(F32, (2, 2)), 0)]
        )

    const, iota, fiota = run(body)
    assert_same(const, np.array([[1.5, 2]], np.float32))
    assert_same(iota, np.array([[0, 1, 2], [0, 1, 2]], np.int32))
    assert_same(fiota, np.array([[0, 0], [1, 1]], np.float32))


# ---- unary -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("opcode", "fn"), [
    (Opcode.EXP, np.exp), (Opcode.LOG, np.log), (Opcode.SINE, np.sin), (Opcode.COSINE, np.cos),
    (Opcode.TANH, np.tanh), (Opcode.SQRT, np.sqrt), (Opcode.EXPM1, np.expm1),
    (Opcode.LOG1P, np.log1p), (Opcode.CEIL, np.ceil), (Opcode.FLOOR, np.floor),
])  # fmt: skip
def test_float_unary_stays_f32(opcode: Opcode, fn: Callable[[np.ndarray], np.ndarray]) -> None:
    x = np.linspace(0.01, 3, 17, dtype=np.float32)
    assert_same(run_unary(opcode, x), fn(x))  # computed in f32, not via f64


def test_rsqrt_erf_logistic() -> None:
    x = f32(0.25, 1, 4, 1e-30)
    np.testing.assert_allclose(run_unary(Opcode.RSQRT, x), 1 / np.sqrt(x), rtol=1e-7)
    x = np.array([-3, -0.5, 0, 1e-8, 0.5, 2, 6], np.float64)
    assert_same(run_unary(Opcode.ERF, x), np.array([math.erf(v) for v in x]))
    logistic = run_unary(Opcode.LOGISTIC, f32(-100, -20, 0, 20, 100, np.nan))
    assert logistic.dtype == np.float32
    assert logistic[0] == np.float32(math.exp(-100))  # a subnormal f32, not 0
    np.testing.assert_allclose(logistic[1:5], [1 / (1 + math.exp(20)), 0.5, 1, 1], rtol=1e-6)
    assert np.isnan(logistic[5])


def test_rounding() -> None:
    x = f32(0.5, -0.5, 1.5, 2.5, -2.5, 0.49999997, -0.3, np.inf, np.nan)
    assert_same(run_unary(Opcode.ROUND_AFZ, x), f32(1, -1, 2, 3, -3, 0, -0.0, np.inf, np.nan))
    assert_same(run_unary(Opcode.ROUND_EVEN, x), f32(0, -0.0, 2, 2, -2, 0, -0.0, np.inf, np.nan))


def test_sign_abs_negate_not_is_finite() -> None:
    assert_same(run_unary(Opcode.SIGN, f32(-2, -0.0, 0, 3, np.nan)), f32(-1, -0.0, 0, 1, np.nan))
    assert_same(run_unary(Opcode.SIGN, i32(-7, 0, 9)), i32(-1, 0, 1))
    assert_same(run_unary(Opcode.ABS, i32(INT32_MIN, -3)), i32(INT32_MIN, 3))  # wraps
    assert_same(run_unary(Opcode.NEGATE, i32(INT32_MIN, 5)), i32(INT32_MIN, -5))
    assert_same(run_unary(Opcode.NEGATE, np.array([1], np.uint8)), np.array([255], np.uint8))
    assert_same(run_unary(Opcode.NOT, np.array([True, False])), np.array([False, True]))
    assert_same(run_unary(Opcode.NOT, i32(0, 5)), i32(-1, -6))
    assert_same(
        run_unary(Opcode.IS_FINITE, f32(1, np.inf, -np.inf, np.nan)),
        np.array([True, False, False, False]),
    )


def test_copy_and_f16_math() -> None:
    assert_same(run_unary(Opcode.COPY, i32(1, 2)), i32(1, 2))
    x = np.array([0.5, 1, 2], np.float16)
    assert_same(run_unary(Opcode.EXP, x), np.exp(x.astype(np.float32)).astype(np.float16))


# ---- convert ---------------------------------------------------------------------------------


def test_convert_float_to_int_truncates_and_saturates() -> None:
    x = f32(1.9, -1.9, np.nan, np.inf, -np.inf, 3e9, -3e9, 2147483520.0)
    assert_same(
        run_convert(x, S32), i32(1, -1, 0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 2147483520)
    )
    assert_same(
        run_convert(f32(-1.5, -0.5, 300, 255.9, np.nan), U8),
        np.array([0, 0, 255, 255, 0], np.uint8),
    )
    big = np.array([1e19, -1e19, 2.0**63, -(2.0**63)], np.float64)
    i64 = np.iinfo(np.int64)
    assert_same(run_convert(big, S64), np.array([i64.max, i64.min, i64.max, i64.min], np.int64))
    assert_same(run_convert(np.array([7.9, -3], np.float16), S8), np.array([7, -3], np.int8))


def test_convert_pred_and_ints() -> None:
    assert_same(run_convert(i32(0, 5, -1), PRED), np.array([False, True, True]))
    assert_same(run_convert(f32(0, -0.0, np.nan, 0.1), PRED), np.array([False, False, True, True]))
    assert_same(run_convert(np.array([True, False]), F32), f32(1, 0))
    assert_same(run_convert(np.array([True, False]), S32), i32(1, 0))
    assert_same(run_convert(i32(300, -129), S8), np.array([44, 127], np.int8))  # wraps
    assert_same(run_convert(i32(-1), U32), np.array([4294967295], np.uint32))
    assert_same(run_convert(f32(1e5, -1e5), F16), np.array([np.inf, -np.inf], np.float16))
    assert_same(run_convert(i32(16777217), F32), f32(16777216))  # round to nearest even


# ---- binary ----------------------------------------------------------------------------------


def test_integer_divide_and_remainder_follow_xla() -> None:
    x = i32(7, -7, 7, -7, 5, INT32_MIN, INT32_MIN, 0)
    y = i32(2, 2, -2, -2, 0, -1, 0, 0)
    assert_same(run_binary(Opcode.DIVIDE, x, y), i32(3, -3, -3, 3, -1, INT32_MIN, -1, -1))
    assert_same(run_binary(Opcode.REMAINDER, x, y), i32(1, -1, 1, -1, 5, 0, INT32_MIN, 0))
    u, v = np.array([7, 9], np.uint8), np.array([2, 0], np.uint8)
    assert_same(run_binary(Opcode.DIVIDE, u, v), np.array([3, 255], np.uint8))
    assert_same(run_binary(Opcode.REMAINDER, u, v), np.array([1, 9], np.uint8))


def test_float_divide_and_remainder() -> None:
    quotient = run_binary(Opcode.DIVIDE, f32(1, -1, 0), f32(0, 0, 0))
    assert_same(quotient, f32(np.inf, -np.inf, np.nan))
    remainder = run_binary(Opcode.REMAINDER, f32(5.5, -5.5, 5.5), f32(2, 2, -2))
    assert_same(remainder, f32(1.5, -1.5, 1.5))


def test_maximum_minimum_propagate_nan() -> None:
    x, y = f32(np.nan, 1, 2, -0.0), f32(1, np.nan, 3, 0)
    assert_same(run_binary(Opcode.MAXIMUM, x, y)[:3], f32(np.nan, np.nan, 3))
    assert_same(run_binary(Opcode.MINIMUM, x, y)[:3], f32(np.nan, np.nan, 2))
    assert_same(run_binary(Opcode.MAXIMUM, i32(-1, 5), i32(3, 2)), i32(3, 5))


def test_integer_power() -> None:
    x = i32(2, 2, 1, -1, -1, 0, 3, 2, -2, 5)
    y = i32(10, -1, -5, -1, 3, 0, 41, 40, 3, 0)
    expected = [2**10, 0, 1, 0, -1, 1, pow(3, 41, 2**32), 0, -8, 1]
    expected[6] -= 2**32 if expected[6] >= 2**31 else 0
    assert_same(run_binary(Opcode.POWER, x, y), i32(*expected))
    assert_same(
        run_binary(Opcode.POWER, np.array([3], np.uint8), np.array([5], np.uint8)),
        np.array([243], np.uint8),
    )


def test_float_power_and_atan2() -> None:
    x, y = f32(2, 1, np.nan, -8, 4), f32(0.5, np.nan, 0, 1 / 3, -1)
    expected = f32(np.sqrt(np.float32(2)), 1, 1, np.nan, 0.25)  # C pow: pow(1, nan) == 1, ...
    assert_same(run_binary(Opcode.POWER, x, y), expected)
    # C's and XLA's pow(-inf, 0.5) is +inf; numpy's gives NaN when the exponent is a
    # broadcast scalar 0.5 (it takes a sqrt shortcut).
    half = parse_module(
        """ENTRY e {
  x = f32[4] parameter(0)
  h = f32[] constant(0.5)
  hb = f32[4] broadcast(h), dimensions={}
  ROOT p = f32[4] power(x, hb)
}"""
    )
    got = evaluate(half, [f32(-np.inf, np.inf, 4, -4)])
    assert_same(got, f32(np.inf, np.inf, 2, np.nan))
    a, b = f32(1, -1, 0), f32(-1, -1, -1)
    assert_same(run_binary(Opcode.ATAN2, a, b), np.arctan2(a, b))


def test_wrapping_arithmetic_and_logic() -> None:
    s8 = np.array([127, -128, 100], np.int8)
    assert_same(
        run_binary(Opcode.ADD, s8, np.array([1, -1, 100], np.int8)),
        np.array([-128, 127, -56], np.int8),
    )
    assert_same(
        run_binary(Opcode.SUBTRACT, s8, np.array([-1, 1, 0], np.int8)),
        np.array([-128, 127, 100], np.int8),
    )
    assert_same(run_binary(Opcode.MULTIPLY, i32(65536), i32(65536)), i32(0))
    t, f = np.array([True, True, False]), np.array([True, False, False])
    assert_same(run_binary(Opcode.AND, t, f), t & f)
    assert_same(run_binary(Opcode.OR, t, f), t | f)
    assert_same(run_binary(Opcode.XOR, i32(12), i32(10)), i32(6))
    assert_same(run_binary(Opcode.ADD, t, f), t | f)  # pred add is or, as in XLA


def test_compare_is_ieee() -> None:
    x, y = f32(np.nan, 1, 2), f32(np.nan, 1, 1)

    def compare(direction: ComparisonDirection) -> np.ndarray:
        out = run(lambda mb, b, p: b.compare(p[0], p[1], direction), x, y)
        assert isinstance(out, np.ndarray)
        return out

    assert compare(ComparisonDirection.EQ).tolist() == [False, True, False]
    assert compare(ComparisonDirection.NE).tolist() == [True, False, True]
    assert compare(ComparisonDirection.LT).tolist() == [False, False, False]
    assert compare(ComparisonDirection.GE).tolist() == [False, True, True]


# ---- ternary ---------------------------------------------------------------------------------


def test_select_and_clamp() -> None:
    pred = np.array([True, False, True])
    out = run(lambda mb, b, p: b.select(p[0], p[1], p[2]), pred, i32(1, 2, 3), i32(4, 5, 6))
    assert_same(out, i32(1, 5, 3))
    out = run(
        lambda mb, b, p: b.clamp(p[0], p[1], p[2]), f32(0, 0, np.nan), f32(-1, 5, 1), f32(2, 2, 2)
    )
    assert_same(out, f32(0, 2, np.nan))
    scalar_bounds = run(
        lambda mb, b, p: b.clamp(b.constant(0, F32), p[0], b.constant(6, F32)), f32(-3, 3, 9)
    )
    assert_same(scalar_bounds, f32(0, 3, 6))


# ---- data movement ---------------------------------------------------------------------------


def test_bitcast_reinterprets_bytes() -> None:
    out = run(
        lambda mb, b, p: new(b, Opcode.BITCAST, Shape(S32, (2, 2)), [p[0]]), f32(1, -2, 0, 0.5)
    )
    assert_same(out, f32(1, -2, 0, 0.5).view(np.int32).reshape(2, 2))


def test_broadcast_maps_operand_dims() -> None:
    x = np.arange(8, dtype=np.int32).reshape(4, 2)
    out = run(lambda mb, b, p: b.broadcast(p[0], (2, 3, 4), (2, 0)), x)
    assert isinstance(out, np.ndarray)
    expected = np.empty((2, 3, 4), np.int32)
    for i, j, k in np.ndindex(2, 3, 4):
        expected[i, j, k] = x[k, i]
    assert_same(out, expected)
    scalar = run(lambda mb, b, p: b.broadcast(p[0], (2, 2), ()), np.array(7, np.float32))
    assert_same(scalar, np.full((2, 2), 7, np.float32))


def test_reshape_transpose_reverse_concatenate() -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    reshape, transpose, reverse, concat = run(
        lambda mb, b, p: b.tuple(
            [
                b.reshape(p[0], (4, 6)),
                b.transpose(p[0], (2, 0, 1)),
                b.reverse(p[0], (0, 2)),
                b.concatenate([p[0], p[0]], 1),
            ]
        ),
        x,
    )
    assert_same(reshape, x.reshape(4, 6))
    assert_same(transpose, x.transpose(2, 0, 1))
    assert_same(reverse, x[::-1, :, ::-1])
    assert_same(concat, np.concatenate([x, x], axis=1))


def test_slice_with_strides() -> None:
    x = np.arange(30, dtype=np.int32).reshape(5, 6)
    out = run(lambda mb, b, p: b.slice(p[0], (1, 0), (5, 6), (2, 4)), x)
    assert_same(out, x[1:5:2, 0:6:4])


def test_pad_negative_and_interior() -> None:
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    dims = (PadDim(1, -1, 1), PadDim(-1, 2, 0))
    out = run(lambda mb, b, p: b.pad(p[0], b.constant(9, S32), dims), x)
    # rows: 9 | 1 2 3 | 9 | (4 5 6 cropped by high=-1); cols: drop first, add two 9s
    expected = np.array([[9, 9, 9, 9], [2, 3, 9, 9], [9, 9, 9, 9]], np.int32)
    assert_same(out, expected)
    crop = ev.pad(np.arange(4), 0, [PadDim(-5, 5, 0)])
    assert crop.tolist() == [0, 0, 0, 0]


# ---- dot and convolution ---------------------------------------------------------------------


def test_dot_matmul_and_batch_dims() -> None:
    rng = np.random.default_rng(0)
    a, c = rng.standard_normal((3, 4), np.float32), rng.standard_normal((4, 5), np.float32)
    out = run(lambda mb, b, p: b.dot(p[0], p[1], DotDims((1,), (0,))), a, c)
    np.testing.assert_allclose(out, a @ c, rtol=1e-6)
    assert out.dtype == np.float32
    lhs = rng.standard_normal((4, 2, 3, 5), np.float32)  # batch is lhs dim 1
    rhs = rng.standard_normal((2, 5, 6, 4), np.float32)  # batch is rhs dim 0
    dims = DotDims(lhs_contracting=(3, 0), rhs_contracting=(1, 3), lhs_batch=(1,), rhs_batch=(0,))
    out = run(lambda mb, b, p: b.dot(p[0], p[1], dims), lhs, rhs)
    np.testing.assert_allclose(out, np.einsum("kbmc,bcnk->bmn", lhs, rhs), rtol=1e-5)


def test_integer_dot_wraps() -> None:
    a = np.array([[100, 100]], np.int8)
    out = run(lambda mb, b, p: b.dot(p[0], p[1], DotDims((1,), (0,))), a, a.T.copy())
    assert_same(out, np.array([[20000 % 256]], np.int8))


NHWC = ConvDims(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2))  # b01f_01io->b01f
NCHW = ConvDims(0, 1, (2, 3), 1, 0, (2, 3), 0, 1, (2, 3))  # bf01_oi01->bf01


def conv_module(x: Shape, w: Shape, attrs: ConvAttrs) -> Module:
    def body(mb: ModuleBuilder, b: ComputationBuilder, p: list[Instruction]) -> Instruction:
        shape = si.infer_convolution_shape(p[0].array_shape, p[1].array_shape, attrs)
        return new(b, Opcode.CONVOLUTION, shape, p, attrs)

    return build(body, x, w)


def naive_conv(x: np.ndarray, w: np.ndarray, window: Window, groups: int) -> np.ndarray:
    """XLA's convolution pseudo-code, NCHW / OIHW, one output element at a time."""
    n, c, h, wd = x.shape
    o, i, kh, kw = w.shape
    (dy, dx) = window.dims
    dilated = [(s - 1) * d.lhs_dilation + 1 for s, d in ((h, dy), (wd, dx))]
    oh, ow = (
        si.window_output_size(
            s, 0, d.size, d.stride, d.pad_low, d.pad_high, d.lhs_dilation, d.rhs_dilation
        )
        for s, d in ((h, dy), (wd, dx))
    )
    out = np.zeros((n, o, oh, ow), np.float64)
    for b_, oz, oy, ox in itertools.product(range(n), range(o), range(oh), range(ow)):
        g = oz // (o // groups)
        for iz, ky, kx in itertools.product(range(i), range(kh), range(kw)):
            py = oy * dy.stride + ky * dy.rhs_dilation - dy.pad_low
            px = ox * dx.stride + kx * dx.rhs_dilation - dx.pad_low
            if not (0 <= py < dilated[0] and 0 <= px < dilated[1]):
                continue
            if py % dy.lhs_dilation or px % dx.lhs_dilation:
                continue  # a hole of the base dilation
            value = x[b_, g * i + iz, py // dy.lhs_dilation, px // dx.lhs_dilation]
            out[b_, oz, oy, ox] += value * w[oz, iz, ky, kx]
    return out


@pytest.mark.parametrize(("window", "groups"), [
    (Window((WindowDim(3, 1, 1, 1), WindowDim(3, 1, 1, 1))), 1),  # SAME
    (Window((WindowDim(3, 2, 0, 1), WindowDim(2, 1, 0, 0))), 1),  # strided VALID-ish
    (Window((WindowDim(3, 1, 2, 2, rhs_dilation=2), WindowDim(3, 2, -1, 1))), 1),  # atrous, crop
    (Window((WindowDim(2, 1, 1, 1, lhs_dilation=2), WindowDim(3, 1, 2, 2, lhs_dilation=3))), 1),
    (Window((WindowDim(3, 1, 1, 1), WindowDim(3, 1, 1, 1))), 2),  # grouped
    (Window((WindowDim(3, 1, 1, 1), WindowDim(3, 1, 1, 1))), 4),  # depthwise
])  # fmt: skip
def test_convolution_matches_naive_loop(window: Window, groups: int) -> None:
    rng = np.random.default_rng(1)
    ky, kx = (d.size for d in window.dims)
    x = rng.standard_normal((2, 4, 6, 7)).astype(np.float32)  # NCHW
    w = rng.standard_normal((8, 4 // groups, ky, kx)).astype(np.float32)  # OIHW
    attrs = ConvAttrs(window, NCHW, feature_group_count=groups)
    out = evaluate(conv_module(Shape(F32, x.shape), Shape(F32, w.shape), attrs), [x, w])
    expected = naive_conv(x.astype(np.float64), w.astype(np.float64), window, groups)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_convolution_nhwc_layout_and_speed() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 32, 32, 16)).astype(np.float32)
    w = rng.standard_normal((3, 3, 16, 32)).astype(np.float32)
    window = Window((WindowDim(3, 1, 1, 1), WindowDim(3, 1, 1, 1)))
    module = conv_module(Shape(F32, x.shape), Shape(F32, w.shape), ConvAttrs(window, NHWC))
    start = time.perf_counter()
    out = evaluate(module, [x, w])
    assert time.perf_counter() - start < 0.5
    expected = naive_conv(
        x.transpose(0, 3, 1, 2)[:, :, :6, :6].astype(np.float64),
        w.transpose(3, 2, 0, 1).astype(np.float64),
        window,
        1,
    )
    assert isinstance(out, np.ndarray) and out.shape == (1, 32, 32, 32)
    np.testing.assert_allclose(
        out.transpose(0, 3, 1, 2)[:, :, :5, :5], expected[:, :, :5, :5], rtol=1e-4, atol=1e-4
    )


def test_convolution_batch_groups_are_unsupported() -> None:
    window = Window((WindowDim(1), WindowDim(1)))
    attrs = ConvAttrs(window, NCHW, batch_group_count=2)
    module = conv_module(Shape(F32, (2, 2, 3, 3)), Shape(F32, (2, 2, 1, 1)), attrs)
    with pytest.raises(UnsupportedError, match="batch_group_count 2"):
        evaluate(module, [np.zeros((2, 2, 3, 3), np.float32), np.zeros((2, 2, 1, 1), np.float32)])


# ---- reductions ------------------------------------------------------------------------------


def reduce_body(opcode: Opcode, init: float, dims: Sequence[int]) -> Body:
    def body(mb: ModuleBuilder, b: ComputationBuilder, p: list[Instruction]) -> Instruction:
        dtype = p[0].array_shape.dtype
        return b.reduce([p[0]], [b.constant(init, dtype)], dims, mb.reducer(opcode, dtype))

    return body


def test_simple_reductions() -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 10
    assert_same(run(reduce_body(Opcode.ADD, 0, (0, 2)), x), x.sum(axis=(0, 2)))
    assert_same(run(reduce_body(Opcode.ADD, 100, (1,)), x), x.sum(axis=1) + 100)
    assert_same(run(reduce_body(Opcode.MAXIMUM, -np.inf, (2,)), x), x.max(axis=2))
    assert_same(run(reduce_body(Opcode.ADD, 1, ()), x), x + 1)
    empty = np.zeros((3, 0), np.float32)
    assert_same(run(reduce_body(Opcode.MAXIMUM, -np.inf, (1,)), empty), f32(*[-np.inf] * 3))
    ints = np.array([[100, 100, 100]], np.int8)
    assert_same(run(reduce_body(Opcode.ADD, 0, (1,)), ints), np.array([44], np.int8))
    nan = f32(1, np.nan, 3)
    assert np.isnan(run(reduce_body(Opcode.MAXIMUM, -np.inf, (0,)), nan))
    bools = np.array([[True, False], [False, False]])
    assert run(reduce_body(Opcode.OR, False, (1,)), bools).tolist() == [True, False]


def argmax_reducer(mb: ModuleBuilder) -> Computation:
    """(value, index) pairs: the larger value wins, the smaller index breaks ties."""
    b = mb.computation("argmax")
    av, ai = b.parameter(0, Shape(F32), "av"), b.parameter(1, Shape(S32), "ai")
    bv, bi = b.parameter(2, Shape(F32), "bv"), b.parameter(3, Shape(S32), "bi")
    gt = b.compare(av, bv, ComparisonDirection.GT)
    eq = b.compare(av, bv, ComparisonDirection.EQ)
    a_wins = b.binary(
        Opcode.OR, gt, b.binary(Opcode.AND, eq, b.compare(ai, bi, ComparisonDirection.LT))
    )
    root = b.tuple([b.select(a_wins, av, bv), b.select(a_wins, ai, bi)])
    comp = b.build(root)
    return comp


def test_variadic_reduce_argmax() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(0, 5, (7, 13)).astype(np.float32)  # many ties

    def body(mb: ModuleBuilder, b: ComputationBuilder, p: list[Instruction]) -> Instruction:
        index = b.iota(Shape(S32, (7, 13)), 1)
        inits = [b.constant(-np.inf, F32), b.constant(0, S32)]
        reduce = b.reduce([p[0], index], inits, [1], argmax_reducer(mb))
        return b.tuple([b.get_tuple_element(reduce, 0), b.get_tuple_element(reduce, 1)])

    values, indices = run(body, x)
    assert_same(values, x.max(axis=1))
    assert_same(indices, x.argmax(axis=1).astype(np.int32))


def reducer_with(
    mb: ModuleBuilder, make: Callable[[ComputationBuilder, Instruction, Instruction], Instruction]
) -> Computation:
    b = mb.computation("reducer")
    comp = b.build(make(b, b.parameter(0, Shape(F32), "x"), b.parameter(1, Shape(F32), "y")))
    return comp


@pytest.mark.parametrize("make", [
    lambda b, x, y: b.binary(Opcode.ADD, x, b.binary(Opcode.MULTIPLY, y, b.constant(1.0, F32))),
    lambda b, x, y: b.reshape(b.binary(Opcode.ADD, x, y), ()),  # not vectorizable: slow path
])  # fmt: skip
def test_generic_reducers_agree_with_sum(make: Callable[..., Instruction]) -> None:
    x = np.arange(35, dtype=np.float32).reshape(5, 7)

    def body(mb: ModuleBuilder, b: ComputationBuilder, p: list[Instruction]) -> Instruction:
        return b.reduce([p[0]], [b.constant(1, F32)], [1], reducer_with(mb, make))

    assert ev.simple_reducer(build(body, Shape(F32, (5, 7))).computations[0]) is None
    assert_same(run(body, x), x.sum(axis=1) + 1)


def reduce_window_module(x: Shape, window: Window, opcode: Opcode, init: float) -> Module:
    def body(mb: ModuleBuilder, b: ComputationBuilder, p: list[Instruction]) -> Instruction:
        init_inst = b.constant(init, x.dtype)
        shape = si.infer_reduce_window_shape([x], [init_inst.array_shape], window)
        return new(
            b,
            Opcode.REDUCE_WINDOW,
            shape,
            [p[0], init_inst],
            ReduceWindowAttrs(window),
            [mb.reducer(opcode, x.dtype)],
        )

    return build(body, x)


def naive_pool(
    x: np.ndarray, window: Window, fn: Callable[[np.ndarray], float], init: float
) -> np.ndarray:
    padded = ev.pad(
        x, init, [PadDim(w.pad_low, w.pad_high, w.lhs_dilation - 1) for w in window.dims]
    )
    out_dims = [
        si.window_output_size(
            n, 0, w.size, w.stride, w.pad_low, w.pad_high, w.lhs_dilation, w.rhs_dilation
        )
        for n, w in zip(x.shape, window.dims, strict=True)
    ]
    out = np.empty(out_dims, x.dtype)
    for index in np.ndindex(*out_dims):
        starts = [i * w.stride for i, w in zip(index, window.dims, strict=True)]
        region = padded[
            tuple(
                slice(s, s + (w.size - 1) * w.rhs_dilation + 1, w.rhs_dilation)
                for s, w in zip(starts, window.dims, strict=True)
            )
        ]
        out[index] = fn(np.append(region.ravel(), init))
    return out


def test_reduce_window_max_pool_same_padding() -> None:
    x = np.random.default_rng(4).standard_normal((1, 5, 5, 2)).astype(np.float32)
    window = Window((WindowDim(1), WindowDim(2, 2, 0, 1), WindowDim(2, 2, 0, 1), WindowDim(1)))
    out = evaluate(reduce_window_module(Shape(F32, x.shape), window, Opcode.MAXIMUM, -np.inf), [x])
    assert isinstance(out, np.ndarray) and out.shape == (1, 3, 3, 2)
    assert_same(out, naive_pool(x, window, np.max, -np.inf))
    assert_same(out[0, 2, 2], x[0, 4, 4])  # the window hanging over the edge sees one element


def test_reduce_window_dilations_and_sum() -> None:
    x = np.arange(40, dtype=np.float32).reshape(5, 8)
    window = Window((WindowDim(2, 1, 1, 1, lhs_dilation=2), WindowDim(3, 2, 0, 0, rhs_dilation=2)))
    out = evaluate(reduce_window_module(Shape(F32, x.shape), window, Opcode.ADD, 0.0), [x])
    assert isinstance(out, np.ndarray)
    assert_same(out, naive_pool(x, window, np.sum, 0.0))


# ---- structure -------------------------------------------------------------------------------


def test_fusion_tuple_and_get_tuple_element() -> None:
    def body(mb: ModuleBuilder, b: ComputationBuilder, p: list[Instruction]) -> Instruction:
        fb = mb.computation("fused")
        fa, fc = fb.parameter(0, Shape(F32, (2,)), "fa"), fb.parameter(1, Shape(F32, (2,)), "fc")
        fused = fb.build(fb.binary(Opcode.ADD, fb.binary(Opcode.MULTIPLY, fa, fa), fc))
        fusion = new(b, Opcode.FUSION, Shape(F32, (2,)), p, FusionAttrs(FusionKind.LOOP), [fused])
        pair = b.tuple([fusion, p[0]])
        return b.tuple([b.get_tuple_element(pair, 1), b.get_tuple_element(pair, 0)])

    out = run(body, f32(1, 2), f32(10, 20))
    assert isinstance(out, list)
    assert_same(out[0], f32(1, 2))
    assert_same(out[1], f32(11, 24))


def test_registry() -> None:
    assert set(ev.EVALUATORS) | {Opcode.PARAMETER} == set(Opcode)
    with pytest.raises(ValueError, match="registered twice"):
        ev.handles(Opcode.ADD)(lambda inst, ops: ops[0])


def test_f16_reductions_fast_and_generic_paths() -> None:
    x = np.array([[1, 2, 3, 4], [0.5, 0.25, 8, 1]], np.float16)
    window = Window((WindowDim(1), WindowDim(2, 2)))
    fast = evaluate(reduce_window_module(Shape(F16, x.shape), window, Opcode.ADD, 0.0), [x])
    assert isinstance(fast, np.ndarray)
    assert_same(fast, np.array([[3, 7], [0.75, 9]], np.float16))

    def body(mb: ModuleBuilder, b: ComputationBuilder, p: list[Instruction]) -> Instruction:
        rb = mb.computation("reducer")
        u, v = rb.parameter(0, Shape(F16), "u"), rb.parameter(1, Shape(F16), "v")
        reducer = rb.build(rb.binary(Opcode.ADD, v, rb.binary(Opcode.ADD, u, rb.constant(0, F16))))
        init = b.constant(0, F16)
        shape = si.infer_reduce_window_shape([p[0].array_shape], [init.array_shape], window)
        return new(
            b, Opcode.REDUCE_WINDOW, shape, [p[0], init], ReduceWindowAttrs(window), [reducer]
        )

    assert_same(run(body, x), np.array([[3, 7], [0.75, 9]], np.float16))


def test_evaluate_computation_returns_writable_copies() -> None:
    b = ModuleBuilder("m").computation("c")
    const = b.constant(2, F32)
    out = ev.evaluate_computation(b.build(b.broadcast(const, (3,), ())), [])
    assert isinstance(out, np.ndarray) and out.flags.writeable
    out[0] = 5  # the constant's literal is untouched
    assert const.literal is not None and const.literal[()] == 2
