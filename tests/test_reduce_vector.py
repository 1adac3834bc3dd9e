"""Vectorized reductions: every layout, dtype and reducer, compiled and run from C vs the evaluator.

Float add/multiply reductions are reassociated (vector partial sums), so they are compared
with a tolerance scaled by the sum of magnitudes; max/min and integer reductions are exact.
One module per (dtype, reducer) holds every layout as a tuple of results, to keep the number
of compiles small. The IR checks assert that the host's vector width shows up.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from c_harness import run_compiled
from codegen_testing import compile_entry, compile_hlo

from aotc.codegen import TargetSpec
from aotc.codegen.target import resolve_target
from aotc.codegen.vector import vector_info
from aotc.driver import optimize
from aotc.hlo.evaluate import evaluate
from aotc.hlo.text import parse_module

RNG = np.random.default_rng(2024)
SHAPE = (3, 5, 37)  # 37: a vector body plus a scalar remainder at any width
LAYOUTS = [(2,), (1,), (0,), (0, 1), (1, 2), (0, 2), (0, 1, 2)]
OPS = {"add": "add", "mul": "multiply", "max": "maximum", "min": "minimum"}
TOLERANCE = {"f32": 1e-5, "f64": 1e-12}
HOST_WIDTH = vector_info(resolve_target(TargetSpec())).width


def _inits(dtype: str) -> dict[str, str]:
    big = "inf" if dtype.startswith("f") else "2147483647"
    return {"add": "0", "mul": "1", "max": f"-{big}", "min": big}


def _module(dtype: str, op: str, shape: tuple[int, ...], layouts: list[tuple[int, ...]]) -> str:
    """HLO reducing one parameter of ``shape`` over each of ``layouts``, results in order."""
    dims = ",".join(map(str, shape))
    lines = [
        f"  x = {dtype}[{dims}] parameter(0)",
        f"  init = {dtype}[] constant({_inits(dtype)[op]})",
    ]
    names = []
    for j, reduced in enumerate(layouts):
        kept = ",".join(str(n) for d, n in enumerate(shape) if d not in reduced)
        lines.append(
            f"  r{j} = {dtype}[{kept}] reduce(x, init), "
            f"dimensions={{{','.join(map(str, reduced))}}}, to_apply=reducer"
        )
        names.append(f"r{j}")
    types = ", ".join(
        f"{dtype}[{','.join(str(n) for d, n in enumerate(shape) if d not in r)}]" for r in layouts
    )
    lines.append(f"  ROOT t = ({types}) tuple({', '.join(names)})")
    reducer = (
        f"reducer {{ a = {dtype}[] parameter(0)  b = {dtype}[] parameter(1)  "
        f"ROOT c = {dtype}[] {OPS[op]}(a, b) }}\n"
    )
    return "HloModule m\n" + reducer + "ENTRY main {\n" + "\n".join(lines) + "\n}"


def _inputs(dtype: str, op: str, shape: tuple[int, ...]) -> np.ndarray:
    if dtype == "s32":
        values = [-1, 1, 2] if op == "mul" else list(range(-50, 50))
        return RNG.choice(values, shape).astype(np.int32)
    if op == "mul":  # near 1, so products of hundreds of elements stay normal
        return RNG.uniform(0.97, 1.03, shape).astype(dtype.replace("f", "float"))
    return RNG.standard_normal(shape).astype(dtype.replace("f", "float"))


def _compare(
    op: str, x: np.ndarray, reduced: tuple[int, ...], want: np.ndarray, got: np.ndarray
) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    if x.dtype.kind != "f" or op in ("max", "min"):
        np.testing.assert_array_equal(got, want)
        return
    tol = TOLERANCE["f32" if x.dtype == np.float32 else "f64"]
    scale = np.sum(np.abs(x.astype(np.float64)), axis=reduced) if op == "add" else np.abs(want)
    assert np.all(np.abs(got.astype(np.float64) - want) <= tol * scale + 1e-300), f"{op} {reduced}"


def _check(
    dtype: str, op: str, shape: tuple[int, ...], layouts: list[tuple[int, ...]], x: np.ndarray
) -> None:
    module, model = compile_hlo(_module(dtype, op, shape, layouts))
    expected = evaluate(module, [x])
    typed, buffers = run_compiled(model, [x])
    for reduced, want, got, got2 in zip(layouts, expected, typed, buffers, strict=True):
        np.testing.assert_array_equal(got, got2)
        _compare(op, x, reduced, want, got)


@pytest.mark.parametrize("dtype", ["f32", "f64", "s32"])
@pytest.mark.parametrize("op", list(OPS))
def test_reduce_every_layout(dtype: str, op: str) -> None:
    _check(dtype, op, SHAPE, LAYOUTS, _inputs(dtype, op, SHAPE))


def test_long_rows_and_tiled_columns() -> None:
    """Rows long enough for several interleaved vectors; kept rows longer than one tile."""
    shape = (3, 4100)
    x = RNG.standard_normal(shape).astype(np.float32) * 100
    _check("f32", "add", shape, [(1,), (0,)], x)
    _check("f32", "max", shape, [(1,), (0,)], x)


@pytest.mark.parametrize("op", ["max", "min"])
def test_nan_propagates(op: str) -> None:
    """A NaN anywhere in a reduced slice (vector body, remainder, first element) wins."""
    shape = (6, 203)  # 203 = 3 * 64 + 11: interleaved vectors, vector epilogue, scalar tail
    x = RNG.standard_normal(shape).astype(np.float32)
    x[0, 0] = x[1, 100] = x[2, 202] = x[4, 195] = np.nan
    x[3, :] = np.inf if op == "max" else -np.inf
    module, model = compile_hlo(_module("f32", op, shape, [(1,), (0,), (0, 1)]))
    expected = evaluate(module, [x])
    typed, _ = run_compiled(model, [x])
    assert np.isnan(typed[0][[0, 1, 2, 4]]).all() and not np.isnan(typed[0][[3, 5]]).any()
    for want, got in zip(expected, typed, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_keys_order_zeros_and_keep_values(dtype: str, op: str) -> None:
    """Row max/min run on integer keys: -0 orders below +0 (as ``llvm.maximum``), every other
    value comes back bit for bit (subnormals, infinities), a nan of either sign wins."""
    numpy = np.float32 if dtype == "f32" else np.float64
    tiny = np.finfo(numpy).smallest_subnormal
    rows = [
        [-0.0, 0.0, -0.0] * 11,  # max +0, min -0
        [-0.0] * 33,
        [tiny, -tiny, 0.0] * 11,
        [np.inf, -np.inf, 1.0] * 11,
        [1.0] * 32 + [-np.nan],
        [-np.nan] + [2.0] * 32,
    ]
    x = np.array(rows, dtype=numpy)
    module, model = compile_hlo(_module(dtype, op, x.shape, [(1,)]))
    (got,), _ = run_compiled(model, [x])
    pick = np.max if op == "max" else np.min
    want = np.array([pick(r) for r in x[:4]], dtype=numpy)
    np.testing.assert_array_equal(got[:4], want)
    assert np.signbit(got[0]) == (op == "min") and np.signbit(got[1])
    assert np.isnan(got[4:]).all()


def test_variadic_reduce_over_outer_dimension() -> None:
    """argmax down the columns: the kept-innermost path with two accumulator rows."""
    x = RNG.standard_normal((7, 37)).astype(np.float32)
    text = """HloModule m
argmax {
  v0 = f32[] parameter(0)  i0 = s32[] parameter(1)  v1 = f32[] parameter(2)  i1 = s32[] parameter(3)
  gt = pred[] compare(v1, v0), direction=GT
  v = f32[] select(gt, v1, v0)
  i = s32[] select(gt, i1, i0)
  ROOT r = (f32[], s32[]) tuple(v, i)
}
ENTRY main {
  x = f32[7,37] parameter(0)
  idx = s32[7,37] iota(), iota_dimension=0
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  r = (f32[37], s32[37]) reduce(x, idx, ninf, zero), dimensions={0}, to_apply=argmax
  v = f32[37] get-tuple-element(r), index=0
  i = s32[37] get-tuple-element(r), index=1
  ROOT t = (s32[37], f32[37]) tuple(i, v)
}"""
    module, model = compile_hlo(text)
    typed, _ = run_compiled(model, [x])
    np.testing.assert_array_equal(typed[0], np.argmax(x, axis=0))
    np.testing.assert_array_equal(typed[1], np.max(x, axis=0))


# ---- IR evidence -----------------------------------------------------------------------------

ADD = "add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT c = f32[] add(a, b) }\n"
MAX = "max { ma = f32[] parameter(0)  mb = f32[] parameter(1)  ROOT mc = f32[] maximum(ma, mb) }\n"
SOFTMAX = """
ENTRY main {
  x = f32[8,1000] parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[8] reduce(x, ninf), dimensions={1}, to_apply=max
  mbc = f32[8,1000] broadcast(m), dimensions={0}
  d = f32[8,1000] subtract(x, mbc)
  e = f32[8,1000] exponential(d)
  zero = f32[] constant(0)
  s = f32[8] reduce(e, zero), dimensions={1}, to_apply=add
  sb = f32[8,1000] broadcast(s), dimensions={0}
  y = f32[8,1000] divide(e, sb)
  ROOT t = (f32[8,1000]) tuple(y)
}"""


def _optimized_ir(text: str) -> str:
    module = parse_module(text)
    optimize(module)  # the default pipeline: softmax becomes kInput fusions
    return compile_entry(module, "m").llvm_ir


@pytest.mark.parametrize("reduced", [1, 0])
def test_row_and_column_sums_are_vector_code(reduced: int) -> None:
    kept = 64 if reduced else 1000
    ir = _optimized_ir(
        f"""HloModule m
{ADD}
ENTRY main {{
  x = f32[64,1000] parameter(0)
  z = f32[] constant(0)
  r = f32[{kept}] reduce(x, z), dimensions={{{reduced}}}, to_apply=add
  ROOT t = (f32[{kept}]) tuple(r)
}}"""
    )
    assert f"fadd reassoc <{HOST_WIDTH} x float>" in ir or f"fadd <{HOST_WIDTH} x float>" in ir
    if reduced == 1:  # several independent accumulators, then one horizontal reduction
        assert "llvm.vector.reduce.fadd" in ir
        assert (
            len(re.findall(rf"fadd reassoc <{HOST_WIDTH} x float> %wide\.load\d*, %wide", ir)) >= 2
        )


def test_short_row_sums_are_vector_code_not_an_unrolled_chain() -> None:
    """A row of 64 (attention's softmax sum) is fully unrolled unless the loop is kept, and
    the SLP vectorizer leaves an unrolled float add chain scalar."""
    ir = _optimized_ir(
        f"""HloModule m
{ADD}
ENTRY main {{
  x = f32[512,64] parameter(0)
  z = f32[] constant(0)
  r = f32[512] reduce(x, z), dimensions={{1}}, to_apply=add
  ROOT t = (f32[512]) tuple(r)
}}"""
    )
    assert f"fadd reassoc <{HOST_WIDTH} x float> %wide.load" in ir
    assert "fadd reassoc float %" not in ir  # only the horizontal sums' -0.0 + lane


def test_softmax_is_vector_code_without_libm() -> None:
    ir = _optimized_ir("HloModule m\n" + ADD + MAX + SOFTMAX)
    assert f"<{HOST_WIDTH} x float>" in ir
    # the row max on integer keys (one-cycle vector max), the sum reassociated
    assert "llvm.vector.reduce.smax" in ir and "llvm.vector.reduce.fadd" in ir
    assert "llvm.maximum" not in ir
    assert not re.search(r"call [^@]*@(exp|expf)\(", ir)


def test_pooling_is_vector_code_over_channels() -> None:
    """Max pool (padded, NaN-propagating selects) and average pool's sum vectorize over C."""
    window = "size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0"
    ir = _optimized_ir(
        f"""HloModule m
max {{ ma = f32[] parameter(0)  mb = f32[] parameter(1)  ROOT mc = f32[] maximum(ma, mb) }}
add {{ a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT c = f32[] add(a, b) }}
ENTRY main {{
  x = f32[1,16,16,64] parameter(0)
  ninf = f32[] constant(-inf)
  zero = f32[] constant(0)
  mp = f32[1,8,8,64] reduce-window(x, ninf), window={{{window}}}, to_apply=max
  ap = f32[1,8,8,64] reduce-window(x, zero), window={{size=1x2x2x1 stride=1x2x2x1}}, to_apply=add
  ROOT t = (f32[1,8,8,64], f32[1,8,8,64]) tuple(mp, ap)
}}"""
    )
    assert f"fadd <{HOST_WIDTH} x float>" in ir
    assert f"select <{HOST_WIDTH} x i1>" in ir
    assert "load float" not in ir  # no scalar loop left over channels


def test_fused_transcendentals_are_vector_code_without_libm() -> None:
    """A fused loop of exp, log, tanh, logistic and erf: vector ops, no calls at all."""
    ir = _optimized_ir(
        """HloModule m
ENTRY main {
  x = f32[4,1000] parameter(0)
  e = f32[4,1000] exponential(x)
  l = f32[4,1000] log(e)
  t = f32[4,1000] tanh(l)
  s = f32[4,1000] logistic(t)
  f = f32[4,1000] erf(s)
  ROOT r = (f32[4,1000]) tuple(f)
}"""
    )
    assert f"fmul <{HOST_WIDTH} x float>" in ir
    calls = re.findall(r"call [^@\n]*@([\w.]+)\(", ir)
    assert all(name.startswith(("llvm.", "kernel.")) for name in calls), calls


def _head_split(out: str, permutation: str) -> str:
    """Attention's bias add and head split of K (columns 128..255 of the Q/K/V GEMM)."""
    return f"""HloModule m
ENTRY main {{
  qkv = f32[2,64,384] parameter(0)
  bias = f32[4,32] parameter(1)
  k = f32[2,64,128] slice(qkv), slice={{[0:2], [0:64], [128:256]}}
  heads = f32[2,64,4,32] reshape(k)
  bb = f32[2,64,4,32] broadcast(bias), dimensions={{2,3}}
  biased = f32[2,64,4,32] add(heads, bb)
  y = {out} transpose(biased), dimensions={{{permutation}}}
  ROOT t = ({out}) tuple(y)
}}"""


@pytest.mark.parametrize(
    "out, permutation, kept",
    [("f32[2,4,64,32]", "0,2,1,3", True), ("f32[2,4,32,64]", "0,2,3,1", False)],
)
def test_head_split_vectorizes_along_the_last_dimension_it_keeps(
    out: str, permutation: str, kept: bool
) -> None:
    """A transpose keeping the last dimension keeps its innermost loop (of 32) for the loop
    vectorizer: contiguous vector loads instead of the outer loop vectorized with strided
    loads. A transpose moving the last dimension (K for Q K^T) is left to LLVM as before."""
    module = parse_module(_head_split(out, permutation))
    optimize(module)
    model = compile_entry(module, "m")
    if kept:  # before: the loop over 64 vectorized, 32 scalar loads splatted per step
        assert re.search(rf"load <{HOST_WIDTH} x float>", model.llvm_ir)
        assert not re.search(r"load float,", model.llvm_ir)
    rng = np.random.default_rng(1)
    args = [
        rng.standard_normal(p.array_shape.dims).astype(np.float32) for p in module.entry.parameters
    ]
    (want,) = evaluate(module, args)
    typed, buffers = run_compiled(model, args)
    np.testing.assert_array_equal(typed[0], want)
    np.testing.assert_array_equal(buffers[0], want)
