"""Direct f32 NHWC convolution for few input features (``Cin <= 3``, first layers) whose
kernel is no constant the row-tiled kernel (``conv_rows.py``) packs: a runtime kernel, or one
with non-finite weights next to padding.

The implicit GEMM (``conv_gemm.py``) packs patches whose segments are ``Cin`` floats long,
which costs more than the FMAs for such inputs, and the loop kernel keeps its accumulator row
on the stack. Here a register tile of ``points`` consecutive output columns times all output
features (``ceil(Cout / width)`` vectors per column) stays in registers over the window: each
tap loads the kernel's ``w[kh, kw, ci, :]`` vectors once and, per column, broadcasts one input
element into an FMA. The fused epilogue (bias, activation) runs on the finished vectors before
their only store, at the output index of each column.

Padding is resolved where it costs least: a kernel row that falls off the input takes one
branch per tile to a copy of the taps that multiplies zeros in (``0 * w``, so a non-finite
weight there still gives NaN, as in XLA) without loading the input; along the width, the
output columns are split at compile time into the interior (every tap inside: no checks) and
the borders (taps clamped and zeroed by a select).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from llvmlite import ir

from aotc.codegen.irtypes import F32, add_nuw, call_intrinsic, i64
from aotc.codegen.kernels.conv_gemm import NhwcConv2d, nhwc_conv2d
from aotc.codegen.kernels.dot_gemm import GemmCall, VectorEpilogue, VectorEpilogueFactory
from aotc.codegen.kernels.gemm_tile import gep, offset, splat
from aotc.codegen.kernels.window import (
    border_regions,
    emit_column_tiles,
    placed_position,
    window_position,
)
from aotc.codegen.loops import entry_alloca, for_range, loop_nest
from aotc.codegen.vector import VectorInfo
from aotc.hlo.ir import ConvAttrs, Instruction

MAX_CIN = 3  # from 4 input features on, the implicit GEMM's segments pay off (conv_gemm.py)


@dataclass(frozen=True)
class DirectConv(NhwcConv2d):
    """One 2-D NHWC convolution for the direct kernel; see the module docstring."""

    cin: int
    cout: int

    def scratch_bytes(self, info: VectorInfo) -> int:
        return 0  # everything lives in registers

    def chunks(self, info: VectorInfo) -> list[tuple[int, int]]:
        """(first feature, lanes) of each output-feature vector of a column."""
        return [(c, min(info.width, self.cout - c)) for c in range(0, self.cout, info.width)]

    def points(self, info: VectorInfo) -> int:
        """Output columns per register tile: half the registers hold accumulators."""
        per_column = len(self.chunks(info))
        return max(1, min(self.out_hw[1], info.registers // 2 // per_column))

    def regions(self) -> list[tuple[int, int, bool]]:
        """(first column, columns, checked) covering the output width: borders are checked."""
        return border_regions(self.window[1], self.in_hw[1], self.out_hw[1], self.kernel_hw[1])


def direct_conv(inst: Instruction) -> DirectConv | None:
    """The direct-kernel form of an f32 2-D NHWC convolution with ``Cin <= MAX_CIN``, or None."""
    geometry = nhwc_conv2d(inst)
    if geometry is None or inst.attrs_as(ConvAttrs).feature_group_count != 1:
        return None
    cin, cout = inst.operands[0].array_shape.dims[3], inst.array_shape.dims[3]
    return DirectConv(**vars(geometry), cin=cin, cout=cout) if cin <= MAX_CIN else None


@dataclass(frozen=True)
class _Tile:
    """What every register tile of one kernel shares."""

    spec: DirectConv
    info: VectorInfo
    call: GemmCall
    epilogue: VectorEpilogue | None
    batch: ir.Value
    row: ir.Value  # the output row ``oh``


def emit_direct_conv(
    b: ir.IRBuilder,
    spec: DirectConv,
    info: VectorInfo,
    call: GemmCall,
    epilogue: VectorEpilogueFactory | None = None,
) -> None:
    """Compute the convolution into ``call.out`` (lhs: the input, rhs: the HWIO kernel)."""
    apply = epilogue(b, list(call.extras)) if epilogue is not None else None
    with loop_nest(b, [spec.batch, spec.out_hw[0]], "dc", call.split) as (n, oh):
        tile = _Tile(spec, info, call, apply, n, oh)
        for region in spec.regions():
            emit_column_tiles(b, region, spec.points(info), partial(_emit_tile, tile=tile))


def _emit_tile(b: ir.IRBuilder, ow0: ir.Value, points: int, checked: bool, tile: _Tile) -> None:
    """Accumulate ``points`` columns from ``ow0`` over the window, then finish and store them."""
    chunks = tile.spec.chunks(tile.info)
    types = [ir.VectorType(F32, lanes) for _, lanes in chunks]
    slots = [[entry_alloca(b, t, "dacc") for t in types] for _ in range(points)]
    for column in slots:
        for slot, t in zip(column, types, strict=True):
            b.store(ir.Constant(t, [0.0] * t.count), slot)
    wh = tile.spec.window[0]
    with for_range(b, tile.spec.kernel_hw[0], "dkh") as kh:
        hit, ih = window_position(b, wh, tile.spec.in_hw[0], tile.row, kh)
        if hit is None:
            _add_row(b, tile, (kh, ih), ow0, slots, checked)
        else:
            with b.if_else(hit) as (inside, outside):
                with inside:
                    _add_row(b, tile, (kh, ih), ow0, slots, checked)
                with outside:
                    _add_row(b, tile, (kh, None), ow0, slots, checked)
    for p, column in enumerate(slots):
        ow = add_nuw(b, ow0, i64(p))
        values = [b.load(s, typ=s.allocated_type) for s in column]
        _store_column(b, tile, ow, values)


def _add_row(
    b: ir.IRBuilder,
    tile: _Tile,
    khh: tuple[ir.Value, ir.Value | None],
    ow0: ir.Value,
    slots: list[list[ir.Value]],
    checked: bool,
) -> None:
    """Load the accumulators, add one kernel row's taps, store them back."""
    accs = [[b.load(s, typ=s.allocated_type) for s in column] for column in slots]
    accs = _accumulate_row(b, tile, khh, ow0, accs, checked)
    for column, values in zip(slots, accs, strict=True):
        for slot, value in zip(column, values, strict=True):
            b.store(value, slot)


def _accumulate_row(
    b: ir.IRBuilder,
    tile: _Tile,
    khh: tuple[ir.Value, ir.Value | None],
    ow0: ir.Value,
    accs: list[list[ir.Value]],
    checked: bool,
) -> list[list[ir.Value]]:
    """Add one kernel row's taps (every ``kw`` and input feature) to the tile's accumulators;
    ``ih`` None: the row is in the padding, its input is zero."""
    spec, (kh, ih) = tile.spec, khh
    chunks = spec.chunks(tile.info)
    for kw in range(spec.kernel_hw[1]):
        for ci in range(spec.cin):
            tap = offset(
                b, (kh, spec.kernel_hw[1] * spec.cin * spec.cout), (kw * spec.cin + ci) * spec.cout
            )
            weights = [
                b.load(
                    gep(b, tile.call.rhs, add_nuw(b, tap, i64(c))),
                    typ=ir.VectorType(F32, lanes),
                    align=4,
                )
                for c, lanes in chunks
            ]
            for p, column in enumerate(accs):
                x = (
                    ir.Constant(F32, 0.0)
                    if ih is None
                    else _input(b, tile, ih, add_nuw(b, ow0, i64(p)), (kw, ci), checked)
                )
                accs[p] = [
                    call_intrinsic(b, "fmuladd", [splat(b, x, w.type.count), w, acc])
                    for w, acc in zip(weights, column, strict=True)
                ]
    return accs


def _input(
    b: ir.IRBuilder,
    tile: _Tile,
    ih: ir.Value,
    ow: ir.Value,
    tap: tuple[int, int],
    checked: bool,
) -> ir.Value:
    """``x[n, ih, iw, ci]`` for output column ``ow``'s tap ``kw``; zero in the padding."""
    spec, (kw, ci) = tile.spec, tap
    hit, iw = placed_position(b, spec.window[1], spec.in_hw[1], ow, kw, checked)
    h, width = spec.in_hw
    at = offset(b, (tile.batch, h * width * spec.cin), (ih, width * spec.cin), (iw, spec.cin), ci)
    value = b.load(gep(b, tile.call.lhs, at), typ=F32, align=4)
    return value if hit is None else b.select(hit, value, ir.Constant(F32, 0.0))


def _store_column(b: ir.IRBuilder, tile: _Tile, ow: ir.Value, values: Sequence[ir.Value]) -> None:
    """Finish one output column's vectors (the fused epilogue) and store them."""
    spec = tile.spec
    oh_, ow_ = spec.out_hw
    base = offset(
        b, (tile.batch, oh_ * ow_ * spec.cout), (tile.row, ow_ * spec.cout), (ow, spec.cout)
    )
    for (c, _), value in zip(spec.chunks(tile.info), values, strict=True):
        if tile.epilogue is not None:
            value = tile.epilogue(b, value, [tile.batch, tile.row, ow, i64(c)])
        b.store(value, gep(b, tile.call.out, add_nuw(b, base, i64(c))), align=4)
