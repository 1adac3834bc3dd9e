"""The GEMM emitter (``kernels/gemm.py``): results against numpy through MCJIT, cross targets.

Each shape is compiled once into one module holding four exported wrappers (runtime or
pre-packed B, with or without a bias+relu epilogue), so the whole file runs in seconds.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir

from aotc.codegen.irtypes import PTR, VOID, call_intrinsic
from aotc.codegen.kernels.gemm import GemmOptions, emit_gemm, extra_args, gemm_split
from aotc.codegen.kernels.gemm_plan import GemmPlan, gemm_scratch_bytes, pack_b, plan_gemm
from aotc.codegen.kernels.gemm_tile import gep
from aotc.codegen.target import TargetArch, TargetSpec, create_target_machine, emit_object, optimize
from aotc.codegen.vector import AVX2, AVX512, GENERIC, NEON, SSE, VectorInfo, vector_info

VARIANTS = [(packed, epi) for packed in (False, True) for epi in (False, True)]


def bias_relu(b: ir.IRBuilder, acc: ir.Value, row: ir.Value, col: ir.Value) -> ir.Value:
    """``max(acc + bias[col:col+w], 0)``, reading the bias from the first extra argument."""
    (bias,) = extra_args(b, 1)
    values = b.fadd(acc, b.load(gep(b, bias, col), typ=acc.type, align=4))
    return call_intrinsic(b, "maxnum", [values, ir.Constant(acc.type, None)])


def gemm_module(plan: GemmPlan, info: VectorInfo) -> ir.Module:
    """Exported ``wrapP_E(C, A, B, scratch, bias)`` per variant (P: packed B, E: epilogue).

    Each wrapper computes the GEMM in two calls, the units ``[0, half)`` and ``[half,
    units)`` of ``gemm_split``, as two threads would.
    """
    module = ir.Module("gemm_test")
    for packed, epi in VARIANTS:
        units = gemm_split(plan, packed)[1]
        options = GemmOptions(packed, bias_relu if epi else None, int(epi))
        name = f"gemm{int(packed)}{int(epi)}"
        gemm = emit_gemm(module, name, plan, info, options)
        wrap = ir.Function(module, ir.FunctionType(VOID, [PTR] * 5), f"wrap{int(packed)}{int(epi)}")
        b = ir.IRBuilder(wrap.append_basic_block())
        pointers = list(wrap.args)
        for lo, hi in ((0, units // 2), (units // 2, units)):
            bounds = [ir.Constant(ir.IntType(64), v) for v in (lo, hi)]
            b.call(gemm, [*pointers[:4], *bounds, *pointers[4 : 4 + int(epi)]])
        b.ret_void()
    return module


@pytest.fixture(scope="module")
def host() -> VectorInfo:
    return vector_info(create_target_machine(TargetSpec())[1])


Runner = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def compile_variants(
    plan: GemmPlan, info: VectorInfo
) -> tuple[llvm.ExecutionEngine, dict[tuple[bool, bool], Runner]]:
    tm, _ = create_target_machine(TargetSpec())  # the engine takes ownership of it
    engine = llvm.create_mcjit_compiler(optimize(str(gemm_module(plan, info)), tm), tm)
    engine.finalize_object()
    runners = {v: _runner(engine, plan, *v) for v in VARIANTS}
    return engine, runners


def _runner(engine: llvm.ExecutionEngine, plan: GemmPlan, packed: bool, epi: bool) -> Runner:
    address = engine.get_function_address(f"wrap{int(packed)}{int(epi)}")
    fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 5)(address)

    def run(a: np.ndarray, b: np.ndarray, bias: np.ndarray) -> np.ndarray:
        c = np.full((plan.m, plan.n), np.nan, np.float32)  # unwritten elements show up
        b_arg = np.frombuffer(pack_b(plan, b), np.float32).copy() if packed else b
        scratch = _aligned(gemm_scratch_bytes(plan, packed))
        fn(c.ctypes.data, a.ctypes.data, b_arg.ctypes.data, scratch.ctypes.data, bias.ctypes.data)
        return c

    return run


def _aligned(nbytes: int) -> np.ndarray:
    """Garbage-filled float scratch at a 64-byte boundary, as the buffer assigner gives."""
    raw = np.full(nbytes // 4 + 16, np.float32(1e30), np.float32)
    skip = (-raw.ctypes.data % 64) // 4
    return raw[skip : skip + nbytes // 4 + 1]


SHAPES = [
    (1, 1, 1),
    (1, 37, 19),  # GEMV with a partial vector
    (1, 200, 300),  # GEMV, several panels plus an edge
    (7, 13, 29),
    (65, 33, 17),
    (5, 1, 9),  # N = 1
    (3, 7, 1),  # K = 1
    (2, 70, 40),  # short M: wide tile
    (200, 70, 300),  # M over MC, K over KC with a short last block
    (20, 2100, 40),  # N over NC
    (256, 256, 256),
    # narrow N: one-vector tiles with row-major A panels (N = 1 and 6: 4 and 8 lanes)
    (40, 1, 50),
    (45, 6, 70),
    (33, 10, 300),  # K over KC: a short last K block in the panel's row stride
    (70, 16, 40),
    (61, 24, 33),
    (50, 33, 20),
]


@pytest.mark.parametrize(("m", "n", "k"), SHAPES)
def test_gemm_matches_numpy(host: VectorInfo, m: int, n: int, k: int) -> None:
    plan = plan_gemm(m, n, k, host)
    _engine, runners = compile_variants(plan, host)
    rng = np.random.default_rng(m * 10007 + n * 101 + k)
    a = rng.standard_normal((m, k), np.float32)
    b = rng.standard_normal((k, n), np.float32)
    bias = rng.standard_normal(n, np.float32)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-5 * np.sqrt(k) * 4
    for (packed, epi), run in runners.items():
        want = np.maximum(expected + bias, 0) if epi else expected
        got = run(a, b, bias)
        np.testing.assert_allclose(
            got, want, rtol=tol, atol=tol, err_msg=f"packed={packed} epilogue={epi}"
        )


def _driver_instructions(m: int) -> int:
    """Instructions of the optimized module outside the micro-kernels, for an ``m x 8 x 128``
    GEMM at SSE width (6-row panels, one MC block)."""
    plan = plan_gemm(m, 8, 128, SSE)
    assert (plan.mr, plan.mc) == (6, m)
    tm, _ = create_target_machine(TargetSpec())
    text = str(optimize(str(gemm_module(plan, SSE)), tm))
    bodies = [fn.split("\n}")[0] for fn in text.split("\ndefine ")[1:] if ".tile" not in fn[:200]]
    return sum(line.startswith("  ") for body in bodies for line in body.splitlines())


def test_driver_loops_stay_rolled() -> None:
    """LLVM does not copy the driver's packing and blocking loops per row panel: 11 panels
    cost no more code than 6 (unrolled they cost 2,600 instructions against 1,400)."""
    assert _driver_instructions(66) == _driver_instructions(36)


def test_plan_tiles_follow_the_vector_shape() -> None:
    assert (plan_gemm(512, 512, 512, AVX512).mr, plan_gemm(512, 512, 512, AVX512).nr) == (14, 32)
    assert (plan_gemm(512, 512, 512, AVX2).mr, plan_gemm(512, 512, 512, AVX2).nr) == (6, 16)
    assert (plan_gemm(512, 512, 512, NEON).mr, plan_gemm(512, 512, 512, NEON).nr) == (8, 12)
    assert plan_gemm(1, 512, 512, AVX512).gemv
    small = plan_gemm(8, 512, 512, AVX512)
    assert small.mr == 8 and small.mr * small.nv + small.nv <= AVX512.registers


@pytest.mark.parametrize(
    ("n", "lanes", "nv", "a_rows"),
    [(1, 4, 1, True), (6, 8, 1, True), (10, 16, 1, True), (16, 16, 1, True), (24, 16, 2, False)],
)
def test_narrow_n_gets_a_narrow_tile_with_more_rows(
    n: int, lanes: int, nv: int, a_rows: bool
) -> None:
    plan = plan_gemm(512, n, 256, AVX512)
    assert (plan.vw, plan.nv, plan.a_rows) == (lanes, nv, a_rows)
    assert plan.mr == (20 if nv == 1 else 14)
    assert plan_gemm(512, 8, 256, AVX2).vw == 8 and plan_gemm(512, 3, 64, SSE).vw == 4


def test_vector_info_reads_features_and_cpu_names() -> None:
    x86 = "x86_64-unknown-linux-gnu"
    assert vector_info(TargetSpec(x86, "generic", "+avx2,+fma")) == AVX2
    assert vector_info(TargetSpec(x86, "skylake-avx512", "")) == AVX512
    assert vector_info(TargetSpec(x86, "znver4", "-avx512f")) == AVX2
    assert vector_info(TargetSpec(x86, "x86-64", "")) == SSE
    assert vector_info(TargetSpec("aarch64-unknown-linux-gnu", "generic", "")) == NEON
    assert vector_info(TargetSpec("i586-unknown-linux-gnu", "pentium4", "")).arch is TargetArch.X86
    other = vector_info(TargetSpec("riscv64-unknown-linux-gnu", "generic-rv64", ""))
    assert other == GENERIC and other.arch is TargetArch.OTHER


@pytest.mark.parametrize(
    ("spec", "width"),
    [
        (TargetSpec("aarch64-unknown-linux-gnu", "generic", ""), 4),
        (TargetSpec("x86_64-unknown-linux-gnu", "x86-64", "+avx2"), 8),  # no FMA: mul + add
        (TargetSpec("x86_64-unknown-linux-gnu", "skylake-avx512", ""), 16),
    ],
)
def test_cross_compiles_with_the_target_vector_width(spec: TargetSpec, width: int) -> None:
    tm, resolved = create_target_machine(spec)
    info = vector_info(resolved)
    assert info.width == width
    text = str(gemm_module(plan_gemm(30, 40, 300, info), info))
    # fmuladd, not fma: without FMA hardware llvm.fma would become calls to libm's fmaf
    assert f"<{width} x float>" in text and f"llvm.fmuladd.v{width}f32" in text
    wider = [w for w in (4, 8, 16) if w > width]
    assert not any(f"<{w} x float>" in text for w in wider)
    optimized = optimize(text, tm)
    assert "fmaf" not in str(tm.emit_assembly(optimized))
    assert emit_object(optimized, tm)[:4] == b"\x7fELF"
