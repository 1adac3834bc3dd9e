"""End-to-end codegen tests: HLO text -> object + header -> C program -> compare with evaluate.

Every module is compiled once and run through ``c_harness`` (both entry points, aligned and
misaligned buffers); expected values come from the reference evaluator. Modules batch many
ops into one tuple of results to keep the number of compiles (and cc runs) small.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from c_harness import entry_points, exported_and_undefined_symbols, run_compiled
from codegen_testing import compile_hlo
from llvmlite import ir

from aotc.codegen import CompiledModel, TensorInfo, compile_module
from aotc.codegen.irtypes import I64, add_wrap, i64, mul_wrap, sub_wrap
from aotc.errors import CodegenError
from aotc.hlo.evaluate import evaluate
from aotc.hlo.shape import PrimitiveType
from aotc.hlo.text import parse_module

RNG = np.random.default_rng(1234)
F32_SPECIALS = np.array(
    [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        3.7,
        -3.7,
        1e-30,
        -1e30,
        np.inf,
        -np.inf,
        np.nan,
    ],
    np.float32,
)


def check(text: str, *inputs: np.ndarray, rtol: float = 0.0, atol: float = 0.0) -> CompiledModel:
    """Compile, run both entry points and compare every result with the evaluator."""
    module, model = compile_hlo(text)
    expected = evaluate(module, list(inputs))
    typed, buffers = run_compiled(model, inputs)
    for j, (want, got, got2) in enumerate(zip(expected, typed, buffers, strict=True)):
        np.testing.assert_array_equal(got, got2, err_msg=f"result {j}: the two calls differ")
        assert got.dtype == want.dtype and got.shape == want.shape, f"result {j}"
        if want.dtype.kind == "f":
            np.testing.assert_allclose(
                got,
                want,
                rtol=rtol,
                atol=atol,
                equal_nan=True,
                err_msg=f"result {j} ({model.results[j]})",
            )
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"result {j}")
    return model


def _elementwise_module(dtype: str, shape: str, unary: list[str], binary: list[str]) -> str:
    lines = [f"  x = {dtype}{shape} parameter(0)", f"  y = {dtype}{shape} parameter(1)"]
    names = []
    for op in unary:
        lines.append(f"  u_{op.replace('-', '_')} = {dtype}{shape} {op}(x)")
        names.append(f"u_{op.replace('-', '_')}")
    for op in binary:
        lines.append(f"  b_{op} = {dtype}{shape} {op}(x, y)")
        names.append(f"b_{op}")
    shapes = ", ".join([f"{dtype}{shape}"] * len(names))
    lines.append(f"  ROOT t = ({shapes}) tuple({', '.join(names)})")
    return "HloModule m\nENTRY main {\n" + "\n".join(lines) + "\n}\n"


# ---- elementwise -----------------------------------------------------------------------------


def test_float_elementwise_exact_ops_match_bitwise() -> None:
    x = np.repeat(F32_SPECIALS, 16)
    y = np.tile(F32_SPECIALS, 16)
    text = _elementwise_module(
        "f32",
        "[256]",
        [
            "abs",
            "ceil",
            "floor",
            "negate",
            "round-nearest-afz",
            "round-nearest-even",
            "sign",
            "sqrt",
            "rsqrt",
            "copy",
        ],
        ["add", "subtract", "multiply", "divide", "maximum", "minimum", "remainder"],
    )
    model = check(text, x, y)
    _, undefined = exported_and_undefined_symbols(model.object_bytes)
    assert undefined <= {"fmod", "memcpy", "memset"}, undefined


def test_round_afz_breaks_ties_away_from_zero() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, 2**23 + 1, -3.5], np.float32)
    text = """HloModule m
ENTRY main {
  x = f32[8] parameter(0)
  a = f32[8] round-nearest-afz(x)
  e = f32[8] round-nearest-even(x)
  ROOT t = (f32[8], f32[8]) tuple(a, e)
}"""
    _, model = compile_hlo(text)
    afz, even = run_compiled(model, [x])[0]
    np.testing.assert_array_equal(afz, [1, 2, 3, -1, -3, 0, 2**23 + 1, -4])
    np.testing.assert_array_equal(even, [0, 2, 2, -0.0, -2, 0, 2**23 + 1, -4])


def test_float_transcendentals_match_the_evaluator() -> None:
    x = np.concatenate([F32_SPECIALS, RNG.uniform(-20, 20, 240).astype(np.float32)])
    y = np.concatenate([RNG.uniform(0.1, 3, 240).astype(np.float32), F32_SPECIALS])
    text = _elementwise_module(
        "f32",
        "[256]",
        [
            "exponential",
            "log",
            "tanh",
            "logistic",
            "erf",
            "sine",
            "cosine",
            "exponential-minus-one",
            "log-plus-one",
        ],
        ["power", "atan2"],
    )
    model = check(text, x, y, rtol=1e-5, atol=1e-6)
    _, undefined = exported_and_undefined_symbols(model.object_bytes)
    assert not undefined & {
        "expf",
        "logf",
        "tanhf",
        "erff",
        "sinf",
        "cosf",
        "expm1f",
        "log1pf",
        "exp",
        "log",
    }, undefined


def test_f64_and_f16_elementwise() -> None:
    for dtype, np_dtype, tol in (("f64", np.float64, 1e-12), ("f16", np.float16, 1e-3)):
        with np.errstate(over="ignore"):  # 1e30 -> f16 inf is intended
            x = np.concatenate([F32_SPECIALS, RNG.uniform(-5, 5, 48)]).astype(np_dtype)
            y = np.concatenate([RNG.uniform(0.5, 2, 48), F32_SPECIALS]).astype(np_dtype)
        text = _elementwise_module(
            dtype,
            "[64]",
            [
                "abs",
                "floor",
                "negate",
                "sqrt",
                "exponential",
                "log",
                "tanh",
                "logistic",
                "erf",
                "sine",
            ],
            ["add", "multiply", "divide", "maximum", "minimum"],
        )
        check(text, x, y, rtol=tol, atol=tol)


def test_is_finite_compare_select_clamp() -> None:
    x = np.repeat(F32_SPECIALS, 16)
    y = np.tile(F32_SPECIALS, 16)
    compares = "\n".join(
        f"  c{d} = pred[256] compare(x, y), direction={d}"
        for d in ("EQ", "NE", "LT", "LE", "GT", "GE")
    )
    text = f"""HloModule m
ENTRY main {{
  x = f32[256] parameter(0)
  y = f32[256] parameter(1)
{compares}
  f = pred[256] is-finite(x)
  s = f32[256] select(cLT, x, y)
  lo = f32[] constant(-1)
  hi = f32[] constant(2)
  blo = f32[256] broadcast(lo), dimensions={{}}
  bhi = f32[256] broadcast(hi), dimensions={{}}
  k = f32[256] clamp(blo, x, bhi)
  n = pred[256] not(cEQ)
  a = pred[256] and(cLE, f)
  o = pred[256] or(cGT, n)
  ROOT t = (pred[256], pred[256], pred[256], pred[256], pred[256], pred[256], pred[256],
            f32[256], f32[256], pred[256], pred[256], pred[256])
      tuple(cEQ, cNE, cLT, cLE, cGT, cGE, f, s, k, n, a, o)
}}"""
    check(text, x, y)


CONSTANT_EXTREMA = {  # fused, so the constants are literals in the kernel
    "a": "maximum(x, b0)",
    "b": "minimum(x, bn0)",
    "c": "maximum(b6, x)",
    "d": "minimum(b6, x)",
    "e": "clamp(b0, x, b6)",
}


def _constant_extrema_module(n: int) -> str:
    fused = [
        f"""fused_{name} {{
  x = f32[{n}] parameter(0)
  zero = f32[] constant(0)
  nzero = f32[] constant(-0)
  six = f32[] constant(6)
  b0 = f32[{n}] broadcast(zero), dimensions={{}}
  bn0 = f32[{n}] broadcast(nzero), dimensions={{}}
  b6 = f32[{n}] broadcast(six), dimensions={{}}
  ROOT r = f32[{n}] {op}
}}"""
        for name, op in CONSTANT_EXTREMA.items()
    ]
    calls = [f"  {k} = f32[{n}] fusion(x), kind=kLoop, calls=fused_{k}" for k in CONSTANT_EXTREMA]
    types = ", ".join([f"f32[{n}]"] * len(CONSTANT_EXTREMA))
    body = "\n".join([f"  x = f32[{n}] parameter(0)", *calls])
    root = f"  ROOT t = ({types}) tuple({', '.join(CONSTANT_EXTREMA)})"
    return "HloModule m\n" + "\n".join(fused) + f"\nENTRY main {{\n{body}\n{root}\n}}"


def test_maximum_and_minimum_with_constants_keep_nan_and_the_sign_of_zero() -> None:
    """Against a constant the kernels use one compare and select (``scalar_ops``): the bits
    must stay those of the general form, ``x >= c ? x : c`` (x on ties, so -0 stays -0) and
    nan for nan x, in vectors (256 elements) and scalars (3)."""
    for n in (256, 3):
        x = np.resize(F32_SPECIALS, n)
        _, model = compile_hlo(_constant_extrema_module(n))
        got = run_compiled(model, [x])[0]

        def pick(keep: np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
            return np.where(keep | np.isnan(p), p, q).astype(np.float32)

        z, nz, six = (np.full(n, v, np.float32) for v in (0.0, -0.0, 6.0))
        relu = pick(x >= 0, x, z)
        want = [relu, pick(x <= -0.0, x, nz), pick(six >= x, six, x), pick(six <= x, six, x)]
        want.append(pick(relu <= 6, relu, six))
        for j, (w, g) in enumerate(zip(want, got, strict=True)):
            np.testing.assert_array_equal(g.view(np.uint32), w.view(np.uint32), f"{n}: {j}")


def test_wrapping_index_arithmetic_folds_as_the_instructions_would_compute() -> None:
    """Window positions are wrapping i64 arithmetic: folded constants wrap like ``add``/
    ``sub``/``mul`` do, identities emit nothing, anything else one instruction."""
    fn = ir.Function(ir.Module(), ir.FunctionType(I64, [I64]), "f")
    b = ir.IRBuilder(fn.append_basic_block())
    x = fn.args[0]
    assert sub_wrap(b, i64(0), i64(3)).constant == -3
    assert add_wrap(b, i64(2**63 - 1), i64(1)).constant == -(2**63)
    assert mul_wrap(b, i64(2**62), i64(4)).constant == 0
    assert mul_wrap(b, i64(-3), i64(5)).constant == -15
    assert add_wrap(b, x, i64(0)) is x and add_wrap(b, i64(0), x) is x
    assert sub_wrap(b, x, i64(0)) is x and mul_wrap(b, i64(1), x) is x
    assert mul_wrap(b, x, i64(0)).constant == 0
    assert not b.block.instructions
    assert sub_wrap(b, i64(0), x).opname == "sub" and mul_wrap(b, x, i64(3)).opname == "mul"


INT_TYPES = ["s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"]


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_integer_elementwise_wraps_and_defines_division_by_zero(dtype: str) -> None:
    np_dtype = PrimitiveType(dtype).numpy
    info = np.iinfo(np_dtype)
    special = np.array(
        [
            0,
            1,
            2,
            3,
            7,
            info.max,
            info.min,
            info.max - 1,
            info.min + 1,
            -1 if info.min < 0 else 5,
            -2 if info.min < 0 else 100,
            -7 if info.min < 0 else 9,
        ],
        dtype=object,
    )
    values = special.astype(np_dtype)
    x = np.repeat(values, len(values))
    y = np.tile(values, len(values))
    text = _elementwise_module(
        dtype,
        f"[{x.size}]",
        ["abs", "negate", "sign", "not", "copy"],
        [
            "add",
            "subtract",
            "multiply",
            "divide",
            "remainder",
            "maximum",
            "minimum",
            "and",
            "or",
            "xor",
            "power",
        ],
    )
    check(text, x, y)


def test_integer_compare_and_pred_ops() -> None:
    x = np.array([0, 1, -1, 5, -128, 127, 3, 3], np.int8)
    y = np.array([0, -1, 1, 5, 127, -128, 4, 2], np.int8)
    ux = x.view(np.uint8)
    uy = y.view(np.uint8)
    px, py = x > 0, y > 0
    lines = []
    for d in ("EQ", "NE", "LT", "LE", "GT", "GE"):
        lines += [
            f"  s{d} = pred[8] compare(x, y), direction={d}",
            f"  u{d} = pred[8] compare(ux, uy), direction={d}",
            f"  p{d} = pred[8] compare(px, py), direction={d}",
        ]
    names = [f"{k}{d}" for d in ("EQ", "NE", "LT", "LE", "GT", "GE") for k in "sup"]
    names += ["pmax", "pmin", "pxor", "pnot"]
    body = "\n".join(lines)
    text = f"""HloModule m
ENTRY main {{
  x = s8[8] parameter(0)
  y = s8[8] parameter(1)
  ux = u8[8] parameter(2)
  uy = u8[8] parameter(3)
  px = pred[8] parameter(4)
  py = pred[8] parameter(5)
{body}
  pmax = pred[8] maximum(px, py)
  pmin = pred[8] minimum(px, py)
  pxor = pred[8] xor(px, py)
  pnot = pred[8] not(px)
  ROOT t = ({", ".join(["pred[8]"] * len(names))}) tuple({", ".join(names)})
}}"""
    check(text, x, y, ux, uy, px, py)


ALL_TYPES = ["pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f16", "f32", "f64"]


@pytest.mark.parametrize("src", ["pred", "s8", "s32", "u16", "u64", "s64", "f16", "f32", "f64"])
def test_convert_to_every_type_saturates_and_maps_nan_to_zero(src: str) -> None:
    np_src = PrimitiveType(src).numpy
    if np_src.kind == "f":
        raw = [
            0,
            -0.0,
            0.4,
            0.6,
            -0.6,
            1.5,
            -1.5,
            127.7,
            128.5,
            -129.5,
            255.9,
            256.0,
            300,
            -300,
            65535.5,
            65536,
            2.0**31,
            -(2.0**31) - 1e3,
            2.0**32,
            2.0**63,
            -(2.0**63),
            2.0**64,
            1e30,
            -1e30,
            np.inf,
            -np.inf,
            np.nan,
            3.0e4,
            70000,
            1e-8,
        ]
        with np.errstate(over="ignore"):  # out-of-range values become f16 inf: intended
            values = np.array(raw, np.float64).astype(np_src)
    elif np_src.kind == "b":
        values = np.array([True, False, True, True])
    else:
        info = np.iinfo(np_src)
        raw = [
            0,
            1,
            2,
            127,
            128,
            255,
            256,
            65535,
            65536,
            2**31,
            2**32 + 7,
            2**53 + 1,
            int(info.max),
            int(info.min),
            -1,
            -128,
            -129,
            -(2**31),
        ]
        values = np.array([v for v in raw if info.min <= v <= info.max], object)
        values = values.astype(np_src)
    n = values.size
    names = [f"c_{t}" for t in ALL_TYPES]
    lines = [f"  c_{t} = {t}[{n}] convert(x)" for t in ALL_TYPES]
    text = f"""HloModule m
ENTRY main {{
  x = {src}[{n}] parameter(0)
{chr(10).join(lines)}
  ROOT t = ({", ".join(f"{t}[{n}]" for t in ALL_TYPES)}) tuple({", ".join(names)})
}}"""
    check(text, values)


# ---- data movement ---------------------------------------------------------------------------


def test_broadcast_reshape_transpose_reverse_iota() -> None:
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    v = RNG.standard_normal(3).astype(np.float32)
    text = """HloModule m
ENTRY main {
  x = f32[2,3,4] parameter(0)
  v = f32[3] parameter(1)
  b = f32[2,3,4] broadcast(v), dimensions={1}
  s = f32[2,3,4] add(x, b)
  r = f32[4,6] reshape(s)
  r2 = f32[24] bitcast(x)
  tr = f32[4,2,3] transpose(x), dimensions={2,0,1}
  rv = f32[2,3,4] reverse(x), dimensions={0,2}
  io = s32[3,5] iota(), iota_dimension=1
  iof = f32[4,2] iota(), iota_dimension=0
  tb = f32[3,4,2] transpose(tr), dimensions={2,0,1}
  m = f32[3,4,2] multiply(tb, tb)
  ROOT t = (f32[4,6], f32[24], f32[4,2,3], f32[2,3,4], s32[3,5], f32[4,2], f32[3,4,2])
      tuple(r, r2, tr, rv, io, iof, m)
}"""
    check(text, x, v)


def test_slice_concatenate_pad() -> None:
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    y = RNG.standard_normal((4, 2)).astype(np.float32)
    text = """HloModule m
ENTRY main {
  x = f32[4,6] parameter(0)
  y = f32[4,2] parameter(1)
  z = f32[] constant(-7)
  s = f32[2,2] slice(x), slice={[1:4:2], [0:6:4]}
  s2 = f32[3,5] slice(x), slice={[1:4], [1:6]}
  c = f32[4,10] concatenate(x, y, y), dimensions={1}
  c0 = f32[12,2] concatenate(y, y, y), dimensions={0}
  e = f32[4,0] slice(x), slice={[0:4], [3:3]}
  ce = f32[4,8] concatenate(e, x, e, y), dimensions={1}
  p = f32[10,15] pad(x, z), padding=1_2_1x-1_0_2
  pn = f32[2,3] pad(x, z), padding=-1_-1x-2_-1
  pi = f32[4,6] pad(y, z), padding=0_0_0x1_0_3
  ROOT t = (f32[2,2], f32[3,5], f32[4,10], f32[12,2], f32[4,8], f32[10,15], f32[2,3], f32[4,6])
      tuple(s, s2, c, c0, ce, p, pn, pi)
}"""
    check(text, x, y)


def test_zero_size_and_integer_data_movement() -> None:
    x = np.arange(12, dtype=np.int16).reshape(3, 4)
    p = np.array([[True, False], [False, True]])
    text = """HloModule m
ENTRY main {
  x = s16[3,4] parameter(0)
  p = pred[2,2] parameter(1)
  c = pred[] constant(true)
  t = s16[4,3] transpose(x), dimensions={1,0}
  e = s16[0,4] slice(x), slice={[1:1], [0:4]}
  pp = pred[4,4] pad(p, c), padding=1_1x0_0_2
  s = s16[1,1] slice(x), slice={[2:3], [1:2]}
  r = s16[] reshape(s)
  ROOT out = (s16[4,3], s16[0,4], pred[4,4], s16[]) tuple(t, e, pp, r)
}"""
    check(text, x, p)


# ---- dot -------------------------------------------------------------------------------------


def test_dot_general_forms() -> None:
    a = RNG.standard_normal((3, 5)).astype(np.float32)
    b = RNG.standard_normal((5, 4)).astype(np.float32)
    bt = RNG.standard_normal((4, 5)).astype(np.float32)
    ba = RNG.standard_normal((2, 3, 5)).astype(np.float32)
    bb = RNG.standard_normal((2, 4, 5)).astype(np.float32)
    v = RNG.standard_normal(5).astype(np.float32)
    text = """HloModule m
ENTRY main {
  a = f32[3,5] parameter(0)
  b = f32[5,4] parameter(1)
  bt = f32[4,5] parameter(2)
  ba = f32[2,3,5] parameter(3)
  bb = f32[2,4,5] parameter(4)
  v = f32[5] parameter(5)
  mm = f32[3,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  nt = f32[3,4] dot(a, bt), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  tn = f32[4,4] dot(b, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  bm = f32[2,3,4] dot(ba, bb), lhs_batch_dims={0}, lhs_contracting_dims={2},
      rhs_batch_dims={0}, rhs_contracting_dims={2}
  mv = f32[3] dot(a, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  op = f32[5,5] dot(v, v), lhs_contracting_dims={}, rhs_contracting_dims={}
  two = f32[2] dot(ba, a), lhs_contracting_dims={1,2}, rhs_contracting_dims={0,1}
  ROOT t = (f32[3,4], f32[3,4], f32[4,4], f32[2,3,4], f32[3], f32[5,5], f32[2])
      tuple(mm, nt, tn, bm, mv, op, two)
}"""
    check(text, a, b, bt, ba, bb, v, rtol=1e-5, atol=1e-5)


def test_dot_to_a_scalar() -> None:
    v = RNG.standard_normal(7).astype(np.float32)
    text = """HloModule m
ENTRY main {
  v = f32[7] parameter(0)
  vv = f32[] dot(v, v), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT t = (f32[]) tuple(vv)
}"""
    _, model = compile_hlo(text)
    (got,), _ = run_compiled(model, [v])
    np.testing.assert_allclose(got, np.dot(v, v), rtol=1e-6)


def test_dot_integer_and_f64() -> None:
    a = RNG.integers(-100, 100, (3, 4)).astype(np.int32)
    b = RNG.integers(-100, 100, (4, 2)).astype(np.int32)
    c = RNG.standard_normal((3, 4))
    d = RNG.standard_normal((4, 2))
    text = """HloModule m
ENTRY main {
  a = s32[3,4] parameter(0)
  b = s32[4,2] parameter(1)
  c = f64[3,4] parameter(2)
  d = f64[4,2] parameter(3)
  i = s32[3,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  f = f64[3,2] dot(c, d), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (s32[3,2], f64[3,2]) tuple(i, f)
}"""
    check(text, a, b, c, d, rtol=1e-12)


# ---- reduce ----------------------------------------------------------------------------------

REDUCERS = """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
add_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
and {
  a = pred[] parameter(0)
  b = pred[] parameter(1)
  ROOT s = pred[] and(a, b)
}
scaled_max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  m = f32[] maximum(a, b)
  one = f32[] constant(1)
  ROOT s = f32[] multiply(m, one)
}
argmax {
  v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  gt = pred[] compare(v1, v0), direction=GT
  eq = pred[] compare(v1, v0), direction=EQ
  lt = pred[] compare(i1, i0), direction=LT
  tie = pred[] and(eq, lt)
  take = pred[] or(gt, tie)
  v = f32[] select(take, v1, v0)
  i = s32[] select(take, i1, i0)
  ROOT r = (f32[], s32[]) tuple(v, i)
}
"""


def test_reduce_over_various_dimensions() -> None:
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    n = RNG.integers(-1000, 1000, (6, 7)).astype(np.int32)
    p = RNG.random((4, 3)) > 0.2
    text = (
        "HloModule m\n"
        + REDUCERS
        + """
ENTRY main {
  x = f32[3,4,5] parameter(0)
  n = s32[6,7] parameter(1)
  p = pred[4,3] parameter(2)
  zero = f32[] constant(0)
  ninf = f32[] constant(-inf)
  izero = s32[] constant(0)
  yes = pred[] constant(true)
  s0 = f32[4,5] reduce(x, zero), dimensions={0}, to_apply=add
  s1 = f32[3,5] reduce(x, zero), dimensions={1}, to_apply=add
  s2 = f32[3,4] reduce(x, zero), dimensions={2}, to_apply=add
  s02 = f32[4] reduce(x, zero), dimensions={0,2}, to_apply=add
  sall = f32[] reduce(x, zero), dimensions={0,1,2}, to_apply=add
  m1 = f32[3,5] reduce(x, ninf), dimensions={1}, to_apply=max
  mall = f32[] reduce(x, ninf), dimensions={0,1,2}, to_apply=max
  none = f32[3,4,5] reduce(x, zero), dimensions={}, to_apply=add
  q = f32[3] reduce(x, ninf), dimensions={1,2}, to_apply=scaled_max
  i0 = s32[7] reduce(n, izero), dimensions={0}, to_apply=add_s32
  pa = pred[3] reduce(p, yes), dimensions={0}, to_apply=and
  ROOT t = (f32[4,5], f32[3,5], f32[3,4], f32[4], f32[], f32[3,5], f32[], f32[3,4,5], f32[3],
            s32[7], pred[3]) tuple(s0, s1, s2, s02, sall, m1, mall, none, q, i0, pa)
}"""
    )
    check(text, x, n, p, rtol=1e-5, atol=1e-5)


def test_variadic_reduce_argmax() -> None:
    x = RNG.standard_normal((4, 9)).astype(np.float32)
    x[1, 3] = x[1, 7] = 50  # a tie: the smaller index wins
    text = (
        "HloModule m\n"
        + REDUCERS
        + """
ENTRY main {
  x = f32[4,9] parameter(0)
  idx = s32[4,9] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  r = (f32[4], s32[4]) reduce(x, idx, ninf, zero), dimensions={1}, to_apply=argmax
  v = f32[4] get-tuple-element(r), index=0
  i = s32[4] get-tuple-element(r), index=1
  ROOT t = (s32[4], f32[4]) tuple(i, v)
}"""
    )
    model = check(text, x)
    assert run_compiled(model, [x])[0][0][1] == 3


# ---- buffers and results ---------------------------------------------------------------------


def test_results_that_are_parameters_constants_duplicates_or_aliases() -> None:
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    text = """HloModule m
ENTRY main {
  x = f32[2,3] parameter(0)
  c = f32[3] constant({1, 2, 3})
  e = f32[2,3] exponential(x)
  r = f32[6] reshape(e)
  rx = f32[3,2] reshape(x)
  k = f32[] constant(4)
  tp = (f32[2,3], f32[3]) tuple(e, c)
  g = f32[3] get-tuple-element(tp), index=1
  g0 = f32[2,3] get-tuple-element(tp), index=0
  ROOT t = (f32[2,3], f32[3], f32[2,3], f32[6], f32[3,2], f32[], f32[3], f32[2,3], f32[2,3])
      tuple(x, c, e, r, rx, k, g, g0, e)
}"""
    model = check(text, x, rtol=1e-6)
    assert model.temp_bytes == 0


def test_temp_buffers_are_64_byte_aligned_and_counted() -> None:
    text = """HloModule m
ENTRY main {
  x = f32[5] parameter(0)
  a = f32[5] exponential(x)
  b = f32[5] negate(a)
  c = f32[5] add(a, b)
  ROOT t = (f32[5]) tuple(c)
}"""
    model = check(text, np.arange(5, dtype=np.float32), rtol=1e-6)
    assert model.temp_bytes == 64 + 20


def test_no_arguments_and_a_scalar_result() -> None:
    text = """HloModule m
ENTRY main {
  c = s32[] constant(41)
  one = s32[] constant(1)
  s = s32[] add(c, one)
  ROOT t = (s32[]) tuple(s)
}"""
    model = check(text)
    assert model.temp_bytes == 0


def test_exports_only_the_entry_points() -> None:
    text = """HloModule m
ENTRY main {
  x = f32[64] parameter(0)
  c = f32[64] constant({...})
  e = f32[64] tanh(x)
  ROOT t = (f32[64]) tuple(e)
}""".replace("{...}", "{" + ", ".join(["1.5"] * 64) + "}")
    _, model = compile_hlo(text, name="only_two")
    defined, undefined = exported_and_undefined_symbols(model.object_bytes)
    assert defined == entry_points("only_two")
    assert not undefined, undefined


def test_unsupported_opcodes_are_named() -> None:
    text = """HloModule m
ENTRY main {
  x = f32[4,5,2] parameter(0)
  k = f32[1,2,4] parameter(1)
  w = f32[2,5,4] convolution(x, k), window={size=1}, dim_labels=b0f_0io->b0f, batch_group_count=2
  ROOT t = (f32[2,5,4]) tuple(w)
}"""
    with pytest.raises(CodegenError, match="convolution %w .*not supported by codegen yet"):
        compile_hlo(text)


def test_signature_mismatch_is_reported() -> None:
    module = parse_module(
        "HloModule m\nENTRY main {\n  x = f32[2] parameter(0)\n  ROOT t = (f32[2]) tuple(x)\n}"
    )
    from aotc.hlo.shape import Shape

    bad = [TensorInfo("x", Shape(PrimitiveType.F32, (3,)))]
    with pytest.raises(CodegenError, match="argument 0 'x'"):
        compile_module(module, "m", bad, bad)


def test_power_special_values_agree_with_the_evaluator() -> None:
    """Every pair of special values: the compiled pow (C's) and the evaluator agree."""
    specials = [-np.inf, -2.5, -2, -1, -0.5, -0.0, 0.0, 0.5, 1, 2, 2.5, np.inf, np.nan]
    base, power = (g.ravel() for g in np.meshgrid(*[np.array(specials, np.float32)] * 2))
    n = base.size
    check(
        f"""HloModule m
ENTRY main {{
  x = f32[{n}] parameter(0)
  y = f32[{n}] parameter(1)
  p = f32[{n}] power(x, y)
  ROOT t = (f32[{n}]) tuple(p)
}}""",
        base,
        power,
        rtol=1e-6,
    )


def test_a_kernel_computed_in_place_reads_and_writes_through_one_noalias_pointer() -> None:
    """b = negate(exp(x)) overwrites a's buffer: the kernel gets one pointer for both, so
    LLVM vectorizes it without runtime overlap checks (which an exact overlap fails, sending
    every call to the scalar loop: an LSTM's cell update ran 8x slower that way)."""
    from codegen_testing import run_and_compare

    module = parse_module("""HloModule m
ENTRY main {
  x = f32[256] parameter(0)
  a = f32[256] exponential(x)
  b = f32[256] negate(a)
  c = f32[256] tanh(b)
  ROOT t = (f32[256]) tuple(c)
}""")
    x = np.linspace(-3, 3, 256, dtype=np.float32)
    ir_text = run_and_compare(module, [x])
    (params,) = re.findall(r"^define internal [^@]*@kernel\.b\((.*)\)", ir_text, re.M)
    assert params.count("ptr") == 1 and "noalias" in params


def test_pointers_to_an_outputs_bytes_become_that_output_s() -> None:
    from types import SimpleNamespace

    from aotc.codegen.emitter import _written_in_place

    def buffer(index: int, offset: int = 0) -> SimpleNamespace:
        return SimpleNamespace(kind="temp", index=index, offset=offset)

    # outputs 0 and 1, then inputs: one over output 0, one elsewhere, one over output 1
    pointers = [buffer(1), buffer(2), buffer(1), buffer(1, 64), buffer(2)]
    assert _written_in_place(pointers, 2) == [None, None, 0, None, 1]  # type: ignore[arg-type]
    # a second output naming the first's bytes shares its pointer too (never two noalias)
    assert _written_in_place([buffer(1)] * 3, 2) == [None, 0, 0]  # type: ignore[arg-type]
