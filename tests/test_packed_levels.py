"""Constant GEMM weights in a portable x86-64 object: packed once for the cpu levels sharing a
layout, read by each level with its own register tile, results right at every level.

The levels' tiles are 8, 16 and 32 columns wide for most dots (SSE, AVX2, AVX-512): all read
the AVX-512 level's 32-column panels, so the object holds one copy of each weight matrix where
it held three. Short-M tiles may be of widths no one panel serves (64, 24, 12 columns for
M = 3): those weights get one copy per distinct layout. Each level runs natively and under
qemu as Nehalem (level 1) and Haswell (level 3), as in ``test_cross.py``.
"""

from __future__ import annotations

import re

import numpy as np
from c_harness import run_compiled_level
from codegen_testing import compile_entry
from cross_testing import CROSS_TARGETS, require_toolchains
from hlo_programs import build, labels, window

from aotc.codegen import TargetSpec
from aotc.codegen.dispatch import X86_64_LEVELS
from aotc.codegen.kernels.conv import conv_fast_path
from aotc.codegen.kernels.conv_rows import RowConv
from aotc.codegen.kernels.gemm_plan import pack_b, plan_gemm
from aotc.codegen.vector import AVX512
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import ConvAttrs, DotDims, Instruction, Module
from aotc.hlo.shape import PrimitiveType, Shape

RNG = np.random.default_rng(11)
X86_64 = "x86_64-unknown-linux-gnu"
# (M, N, K) of dots by constant weights: a small-M tile all levels share (48, 16, 8 columns),
# GEMV (64, 32, 16), M = 3 (two layouts: 64 and 24 = 2 x 12), K over two blocks with a short
# last panel, N over two column blocks (NC_MAX = 2048).
DOTS = [(5, 37, 29), (1, 37, 29), (3, 64, 40), (40, 300, 300), (20, 2100, 20)]


def _module_and_inputs() -> tuple[Module, list[np.ndarray]]:
    shapes = [Shape(PrimitiveType.F32, (m, k)) for m, _, k in DOTS]

    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list[Instruction]:
        return [
            b.dot(x, b.constant(_weights(k, n)), DotDims((1,), (0,)))
            for x, (_, n, k) in zip(ps, DOTS, strict=True)
        ]

    inputs = [RNG.standard_normal(s.dims).astype(np.float32) for s in shapes]
    return build(shapes, body), inputs


def _weights(k: int, n: int) -> np.ndarray:
    return RNG.standard_normal((k, n)).astype(np.float32)


def test_levels_share_one_packed_layout_where_their_tiles_fit_it() -> None:
    levels = [lv.vector for lv in X86_64_LEVELS]
    for m, n, k in DOTS:
        plans = [plan_gemm(m, n, k, v, b_constant=True) for v in levels]
        assert all(p.panel % p.nr == 0 for p in plans), plans
        layouts = {(p.kc, p.nc, p.panel) for p in plans}
        assert len(layouts) == (2 if m == 3 else 1), (m, n, k, plans)
        widest = max(plans, key=lambda p: p.nr)
        w = _weights(k, n)
        assert pack_b(widest, w) == pack_b(plan_gemm(m, n, k, AVX512, b_constant=True), w)
        # a runtime B is packed per block in each level's own tile
        assert all(plan_gemm(m, n, k, v).panel == plan_gemm(m, n, k, v).nr for v in levels)


def test_portable_object_holds_each_layout_once_and_every_level_computes_right() -> None:
    module, inputs = _module_and_inputs()
    portable = compile_entry(module, "m", TargetSpec(X86_64, "portable"))
    one_level = compile_entry(module, "m", TargetSpec(X86_64, "x86-64-v4"))
    # by name: a module compiled in chunks (split.py) has a global in each chunk that reads it
    globals_ = set(re.findall(r"^@\"?[\w.\-]+packed_b\"? = ", portable.llvm_ir, re.M))
    assert len(globals_) == len(DOTS) + 1, globals_  # M = 3 has two layouts
    weight_bytes = sum(4 * n * k for _, n, k in DOTS)
    assert one_level.sizes.rodata >= weight_bytes
    # the second layout of the M = 3 weights (10 KiB) and the dispatcher's few constants
    assert portable.sizes.rodata < one_level.sizes.rodata + 16 * 1024
    expected = evaluate(module, inputs)
    cross = CROSS_TARGETS["x86-64"]
    require_toolchains(cross)
    for runner, toolchain in cross.toolchains.items():
        typed, buffers, level = run_compiled_level(portable, inputs, toolchain=toolchain)
        assert level == cross.levels[runner], runner
        for j, (got, again, want) in enumerate(zip(typed, buffers, expected, strict=True)):
            np.testing.assert_array_equal(got, again, err_msg=f"{runner} result {j}")
            scale = float(np.max(np.abs(want)))
            np.testing.assert_allclose(got, want, atol=2e-5 * scale, err_msg=f"{runner} {j}")


# Row-tiled convolutions (``conv_rows.py``): input, kernel [kh, kw, cin, cout]; Cout a whole
# number of AVX-512 tiles, so every level reads the AVX-512 level's panels.
ROW_CONVS = [((1, 9, 20, 8), (3, 3, 8, 64)), ((1, 6, 16, 16), (1, 1, 16, 32))]


def test_row_convolutions_share_their_packed_weights_across_levels() -> None:
    shapes = [Shape(PrimitiveType.F32, x) for x, _ in ROW_CONVS]

    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list[Instruction]:
        nhwc, same = labels("b01f_01io->b01f"), window((3, 1, 1, 1), (3, 1, 1, 1))
        return [
            b.convolution(
                x,
                b.constant(RNG.standard_normal(k).astype(np.float32)),
                ConvAttrs(same if k[0] == 3 else window((1,), (1,)), nhwc),
            )
            for x, (_, k) in zip(ps, ROW_CONVS, strict=True)
        ]

    module = build(shapes, body)
    assert all(isinstance(conv_fast_path(c), RowConv) for c in module.entry.root.operands)
    portable = compile_entry(module, "m", TargetSpec(X86_64, "portable"))
    one_level = compile_entry(module, "m", TargetSpec(X86_64, "x86-64-v4"))
    globals_ = re.findall(r"^@\"?[\w.\-]+rowconv\.packed_b\"? = ", portable.llvm_ir, re.M)
    assert len(globals_) == len(ROW_CONVS), globals_
    assert portable.sizes.rodata < one_level.sizes.rodata + 4 * 1024
    inputs = [RNG.standard_normal(s.dims).astype(np.float32) for s in shapes]
    expected = evaluate(module, inputs)
    cross = CROSS_TARGETS["x86-64"]
    require_toolchains(cross)
    for runner, toolchain in cross.toolchains.items():
        typed, _, level = run_compiled_level(portable, inputs, toolchain=toolchain)
        assert level == cross.levels[runner], runner
        for j, (got, want) in enumerate(zip(typed, expected, strict=True)):
            scale = float(np.max(np.abs(want)))
            np.testing.assert_allclose(got, want, atol=2e-5 * scale, err_msg=f"{runner} {j}")
