"""f32 NHWC convolutions as implicit GEMM on the packed GEMM engine (``gemm.py``).

``out[M, Cout] = patches[M, K] @ W[K, Cout]`` with ``M`` the output points (batch and spatial
positions, row-major, which is exactly the NHWC output), ``K`` the window taps times the input
features (``[KH, KW, Cin]`` order, so the HWIO kernel *is* ``W`` row-major) and ``N = Cout``.
A constant kernel is packed at compile time like a dot's weights; a runtime one is packed per
block by the engine. The patch matrix never exists: the engine's A packer
(``GemmOptions.a_packer``) fills each ``mr x kc`` panel straight from the input, one
*segment* (a run of contiguous input features of one tap) at a time, writing zeros for taps
in the padding or between base-dilated input elements (transposed convolutions) through a
branch-free select. ``kc`` is chosen so that a K block holds whole segments: whole taps when
``Cin <= KC``, else an equal split of each tap's features.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from aotc.codegen.irtypes import F32, PTR, add_nuw, i64, mul_nuw
from aotc.codegen.kernels.dot_gemm import GemmCall, VectorEpilogueFactory, packed_weights
from aotc.codegen.kernels.elemental import delinearize
from aotc.codegen.kernels.gemm import (
    APacker,
    APanel,
    GemmOptions,
    emit_gemm,
    extra_args,
    gemm_split,
)
from aotc.codegen.kernels.gemm_plan import KC, GemmPlan, gemm_scratch_bytes, plan_gemm
from aotc.codegen.kernels.gemm_tile import Epilogue, gep, offset
from aotc.codegen.kernels.window import window_positions
from aotc.codegen.loops import for_range
from aotc.codegen.vector import VectorInfo
from aotc.hlo.ir import ConvAttrs, ConvDims, Instruction, Opcode, WindowDim
from aotc.hlo.shape import PrimitiveType

MIN_SEGMENT = 16  # below this a segment's bookkeeping outweighs its copy; keep the loop kernel
# Narrow outputs (Cout < MIN_COUT) run on one-vector tiles (``gemm_plan._narrow``); there the
# per-segment packing bookkeeping is as costly as the tile's FMAs, so the GEMM only wins with
# segments of at least MIN_NARROW_CIN features. Measured on znver4, median us, 5x5 VALID,
# [2,14,14,Cin]: Cin 4/6 Cout 6: GEMM 4.3/7.4, loop 12.2/20.7; [2,28,28,Cin] SAME: Cin 1 Cout 6:
# GEMM 42, loop 12.5; Cin 3 Cout 8 (3x3): GEMM 30, loop 9.4.
MIN_COUT = 16
MIN_NARROW_CIN = 4


@dataclass(frozen=True)
class ConvGemm:
    """One NHWC convolution as ``[M,K] @ [K,Cout]``; see the module docstring."""

    batch: int
    in_spatial: tuple[int, ...]
    out_spatial: tuple[int, ...]
    kernel_spatial: tuple[int, ...]
    window: tuple[WindowDim, ...]
    cin: int
    cout: int
    seg: int  # contiguous input features per K segment (divides cin)
    kc: int  # K block: a multiple of seg
    weights: np.ndarray | None  # [K, Cout] when the kernel is a constant

    @property
    def m(self) -> int:
        return self.batch * math.prod(self.out_spatial)

    @property
    def k(self) -> int:
        return math.prod(self.kernel_spatial) * self.cin

    @property
    def points(self) -> tuple[int, ...]:
        """The output's leading dimensions, which flatten into M."""
        return (self.batch, *self.out_spatial)

    def plan(self, info: VectorInfo) -> GemmPlan:
        return plan_gemm(self.m, self.cout, self.k, info, self.kc, self.weights is not None)

    def scratch_bytes(self, info: VectorInfo) -> int:
        return gemm_scratch_bytes(self.plan(info), self.weights is not None)


def is_nhwc(d: ConvDims, rank: int) -> bool:
    """``b01f_01io->b01f`` for any number of spatial dimensions."""
    spatial = tuple(range(1, rank - 1))
    return (
        (d.input_batch, d.input_feature, d.input_spatial) == (0, rank - 1, spatial)
        and (d.kernel_input_feature, d.kernel_output_feature) == (rank - 2, rank - 1)
        and d.kernel_spatial == tuple(range(rank - 2))
        and (d.output_batch, d.output_feature, d.output_spatial) == (0, rank - 1, spatial)
    )


@dataclass(frozen=True)
class NhwcConv2d:
    """The geometry of an f32 2-D NHWC convolution the register-tile kernels (direct,
    depthwise, row-tiled) take: one batch group, no base dilation, no empty dimension."""

    batch: int
    in_hw: tuple[int, int]
    out_hw: tuple[int, int]
    kernel_hw: tuple[int, int]
    window: tuple[WindowDim, WindowDim]


def nhwc_conv2d(inst: Instruction) -> NhwcConv2d | None:
    """``inst``'s geometry when it is such a convolution, else None."""
    attrs = inst.attrs_as(ConvAttrs)
    lhs, rhs = (op.array_shape for op in inst.operands)
    out = inst.array_shape
    if any(s.dtype is not PrimitiveType.F32 for s in (lhs, rhs, out)) or lhs.rank != 4:
        return None
    if not is_nhwc(attrs.dims, 4) or attrs.batch_group_count != 1:
        return None
    if min(*lhs.dims, *rhs.dims, *out.dims) == 0:
        return None
    if any(w.lhs_dilation != 1 for w in attrs.window.dims):
        return None  # transposed: most taps hit holes, the implicit GEMM splits them
    h, w = attrs.window.dims
    in_hw, out_hw = (lhs.dims[1], lhs.dims[2]), (out.dims[1], out.dims[2])
    return NhwcConv2d(lhs.dims[0], in_hw, out_hw, (rhs.dims[0], rhs.dims[1]), (h, w))


def conv_gemm(inst: Instruction, rhs_source: Instruction | None = None) -> ConvGemm | None:
    """The implicit-GEMM form of an f32 NHWC convolution with one group, or None.

    ``rhs_source`` holds the kernel's buffer (a fusion operand when the convolution is fused);
    a constant there is packed at compile time.
    """
    attrs = inst.attrs_as(ConvAttrs)
    lhs, rhs = (op.array_shape for op in inst.operands)
    out = inst.array_shape
    if any(s.dtype is not PrimitiveType.F32 for s in (lhs, rhs, out)):
        return None
    if not is_nhwc(attrs.dims, lhs.rank) or attrs.feature_group_count != 1:
        return None
    if attrs.batch_group_count != 1 or min(*lhs.dims, *rhs.dims, *out.dims) == 0:
        return None
    cin, cout = lhs.dims[-1], out.dims[-1]
    taps = math.prod(rhs.dims[:-2])
    blocking = _k_blocking(cin, taps)
    if blocking is None or out.size // cout < 2:  # M == 1: GEMV, no A
        return None
    if cout < MIN_COUT and cin < MIN_NARROW_CIN:
        return None
    source = rhs_source if rhs_source is not None else inst.operands[1]
    weights = None
    if source.opcode is Opcode.CONSTANT and source.literal is not None:
        weights = np.asarray(source.literal, np.float32).reshape(taps * cin, cout)
    spatial = (tuple(lhs.dims[1:-1]), tuple(out.dims[1:-1]), tuple(rhs.dims[:-2]))
    return ConvGemm(lhs.dims[0], *spatial, attrs.window.dims, cin, cout, *blocking, weights)


def _k_blocking(cin: int, taps: int) -> tuple[int, int] | None:
    """(segment, kc): whole taps per K block, balanced; or a tap's features split evenly."""
    if cin <= KC:
        blocks = -(-taps // max(1, KC // cin))
        return cin, -(-taps // blocks) * cin
    seg = max(d for d in range(1, KC + 1) if cin % d == 0)
    return (seg, seg) if seg >= MIN_SEGMENT else None


# ---- A packing from patches ------------------------------------------------------------------


def patch_packer(spec: ConvGemm) -> APacker:
    """The engine's A packer: gather a panel of the patch matrix from the NHWC input."""

    def pack(b: ir.IRBuilder, x: ir.Value, panel: APanel, plan: GemmPlan) -> None:
        with for_range(b, panel.rows, "cr") as r:
            point = delinearize(b, add_nuw(b, panel.row, r), spec.points)
            with for_range(b, panel.kc // spec.seg, "cs") as s:
                _pack_segment(b, spec, x, panel, plan, point, (r, s))
        if panel.rows < plan.mr:
            _zero_rows(b, panel, plan)

    return pack


def _pack_segment(
    b: ir.IRBuilder,
    spec: ConvGemm,
    x: ir.Value,
    panel: APanel,
    plan: GemmPlan,
    point: Sequence[ir.Value],
    rs: tuple[ir.Value, ir.Value],
) -> None:
    """Copy one segment (``seg`` features of one tap) of row ``r`` into the panel's column."""
    r, s = rs
    per_tap = spec.cin // spec.seg
    segment = offset(b, (panel.block, plan.kc // spec.seg), (s, 1))
    tap = b.udiv(segment, i64(per_tap)) if per_tap > 1 else segment
    first = mul_nuw(b, b.urem(segment, i64(per_tap)), i64(spec.seg)) if per_tap > 1 else i64(0)
    taps = delinearize(b, tap, spec.kernel_spatial)
    inside, at = window_positions(b, spec.window, spec.in_spatial, point[1:], taps)
    src = gep(b, x, _input_offset(b, spec, point[0], at, first))
    row_stride, k_stride = plan.a_strides(panel.kc)
    dst = gep(b, panel.dst, offset(b, (s, spec.seg * k_stride), (r, row_stride)))
    zero = ir.Constant(F32, 0.0)
    with for_range(b, spec.seg, "cc") as c:
        value = b.load(gep(b, src, c), typ=F32, align=4)
        if inside is not None:  # taps off the input read a clamped, valid address
            value = b.select(inside, value, zero)
        b.store(value, gep(b, dst, offset(b, (c, k_stride))), align=4)


def _input_offset(
    b: ir.IRBuilder, spec: ConvGemm, batch: ir.Value, at: Sequence[ir.Value], feature: ir.Value
) -> ir.Value:
    """The float offset of ``x[batch, at..., feature]`` in the NHWC input."""
    linear = batch
    for size, position in zip(spec.in_spatial, at, strict=True):
        linear = add_nuw(b, mul_nuw(b, linear, i64(size)), position)
    return add_nuw(b, mul_nuw(b, linear, i64(spec.cin)), feature)


def _zero_rows(b: ir.IRBuilder, panel: APanel, plan: GemmPlan) -> None:
    """Rows past M in the last panel: the micro-kernel reads all ``mr`` of them."""
    row_stride, k_stride = plan.a_strides(panel.kc)
    with for_range(b, panel.kc, "cz") as k:
        row = gep(b, panel.dst, offset(b, (k, k_stride)))
        for r in range(panel.rows, plan.mr):
            b.store(ir.Constant(F32, 0.0), gep(b, row, r * row_stride), align=4)


# ---- emission --------------------------------------------------------------------------------


def emit_conv_gemm(
    b: ir.IRBuilder,
    spec: ConvGemm,
    info: VectorInfo,
    call: GemmCall,
    epilogue: VectorEpilogueFactory | None = None,
) -> None:
    """Compute the convolution into ``call.out`` (lhs: the input, rhs: the kernel)."""
    plan = spec.plan(info)
    n_extra = len(call.extras)
    options = GemmOptions(
        b_packed=spec.weights is not None,
        epilogue=_tile_epilogue(spec, epilogue, n_extra) if epilogue else None,
        extra_args=n_extra,
        a_packer=patch_packer(spec),
    )
    name = f"{b.function.name}.gemm"
    gemm = emit_gemm(b.module, name, plan, info, options)
    rhs = packed_weights(b.module, name, plan, spec.weights) if options.b_packed else call.rhs
    scratch = call.scratch if call.scratch is not None else ir.Constant(PTR, None)
    units = gemm_split(plan, options.b_packed)[1]
    bounds = call.split.claim(units) if call.split else (i64(0), i64(units))
    b.call(gemm, [call.out, call.lhs, rhs, scratch, *bounds, *call.extras])


def _tile_epilogue(spec: ConvGemm, factory: VectorEpilogueFactory, n_extra: int) -> Epilogue:
    """The tile-store epilogue: the fused vector epilogue at the piece's output index."""

    def epilogue(b: ir.IRBuilder, values: ir.Value, row: ir.Value, col: ir.Value) -> ir.Value:
        point = delinearize(b, row, spec.points)
        return factory(b, extra_args(b, n_extra))(b, values, [*point, col])

    return epilogue
