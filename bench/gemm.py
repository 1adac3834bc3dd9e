"""GEMM benchmark (not a test): aotc's emitted GEMM vs numpy's ``a @ b``, one thread each.

Run as ``.venv/bin/python bench/gemm.py [--reps N]``. Each shape is compiled for the host
and run through MCJIT; aotc and numpy calls alternate so that load from other processes hits
both alike. Prints median GFLOP/s and the ratio. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are
dropped and OpenBLAS is pinned to one thread before numpy loads.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(_var, None)
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import ctypes  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import llvmlite.binding as llvm  # noqa: E402
import numpy as np  # noqa: E402
from llvmlite import ir  # noqa: E402

from aotc.codegen.irtypes import PTR, VOID  # noqa: E402
from aotc.codegen.kernels.gemm import GemmOptions, emit_gemm  # noqa: E402
from aotc.codegen.kernels.gemm_plan import (  # noqa: E402
    GemmPlan,
    gemm_scratch_bytes,
    pack_b,
    plan_gemm,  # noqa: E402
)
from aotc.codegen.target import TargetSpec, create_target_machine, optimize  # noqa: E402
from aotc.codegen.vector import vector_info  # noqa: E402

SHAPES = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (1, 1024, 1024)]


def openblas_core() -> str:
    """The kernel family OpenBLAS picked at load time (what threadpoolctl reports)."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    for path in paths:
        lib = ctypes.CDLL(path)
        for symbol in ("scipy_openblas_get_corename64_", "openblas_get_corename64_"):
            if hasattr(lib, symbol):
                fn = getattr(lib, symbol)
                fn.restype = ctypes.c_char_p
                return f"{fn().decode()} ({os.path.basename(path)})"
        if hasattr(lib, "openblas_get_corename"):
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return f"{lib.openblas_get_corename().decode()} ({os.path.basename(path)})"
    return "unknown"


def compile_gemm(plan: GemmPlan, packed: bool) -> tuple[object, Callable[..., None]]:
    """The engine (keep it alive) and a ctypes callable ``f(C, A, B, scratch)``."""
    tm, spec = create_target_machine(TargetSpec())
    module = ir.Module("bench")
    gemm = emit_gemm(module, "gemm", plan, vector_info(spec), GemmOptions(b_packed=packed))
    wrap = ir.Function(module, ir.FunctionType(VOID, [PTR] * 4), "wrap")
    builder = ir.IRBuilder(wrap.append_basic_block())
    builder.call(gemm, list(wrap.args))
    builder.ret_void()
    engine = llvm.create_mcjit_compiler(optimize(str(module), tm), tm)
    engine.finalize_object()
    fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4)(engine.get_function_address("wrap"))
    return engine, fn


def bench_shape(m: int, n: int, k: int, packed: bool, reps: int) -> tuple[float, float, float]:
    """(aotc GFLOP/s, numpy GFLOP/s, max abs error), medians over interleaved runs."""
    tm, spec = create_target_machine(TargetSpec())
    plan = plan_gemm(m, n, k, vector_info(spec))
    engine, fn = compile_gemm(plan, packed)
    rng = np.random.default_rng(0)
    a, b = rng.random((m, k), np.float32), rng.random((k, n), np.float32)
    c = np.empty((m, n), np.float32)
    b_arg = np.frombuffer(pack_b(plan, b), np.float32).copy() if packed else b
    scratch = np.empty(gemm_scratch_bytes(plan, packed) // 4 + 16, np.float32)
    args = (c.ctypes.data, a.ctypes.data, b_arg.ctypes.data, scratch.ctypes.data)
    ours, theirs = [], []
    for _ in range(reps):
        ours.append(_time(lambda: fn(*args)))
        theirs.append(_time(lambda: a @ b))
    flops = 2.0 * m * n * k / 1e9
    error = float(np.abs(c - a @ b).max())
    del engine
    return flops / float(np.median(ours)), flops / float(np.median(theirs)), error


def _time(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=21)
    reps = parser.parse_args().reps
    _tm, spec = create_target_machine(TargetSpec())
    info = vector_info(spec)
    print(f"host {spec.cpu}: {info.width} f32 lanes, {info.registers} vector registers")
    print(f"numpy {np.__version__}, OpenBLAS core: {openblas_core()}, one thread")
    print(f"{'shape':>16} {'B':>8} {'tile':>6} {'aotc':>8} {'numpy':>8} {'ratio':>6}  GFLOP/s")
    for m, n, k in SHAPES:
        plan = plan_gemm(m, n, k, info)
        for packed in (False, True):
            ours, theirs, err = bench_shape(m, n, k, packed, reps)
            kind = "constant" if packed else "runtime"
            tile = f"{plan.mr}x{plan.nr}"
            print(
                f"{m:>4}x{n:>5}x{k:>5} {kind:>8} {tile:>6} {ours:8.1f} {theirs:8.1f} "
                f"{ours / theirs:6.2f}  (max err {err:.1e})"
            )


if __name__ == "__main__":
    main()
