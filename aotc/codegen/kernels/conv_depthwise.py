"""Depthwise f32 NHWC 2-D convolution (one input feature per group, multiplier 1).

The loop kernel keeps its accumulator row on the stack and applies a fused epilogue element
by element. Here a register tile is ``points`` consecutive output columns of one output row
times one vector of channels: channels are contiguous in NHWC input, kernel (``[KH, KW, 1,
C]``) and output, so every tap is one vector load of the input per column and one of the
weights, shared by the tile's columns, into an FMA. The fused epilogue (bias, relu6, swish,
a residual) runs on the finished vectors before their only store. No scratch.

Padding is resolved as in the direct kernel (``conv_direct.py``): a kernel row off the input
is skipped by one branch per tile; along the width the columns are split at compile time into
the interior (no checks) and the borders (taps clamped and zeroed by a select). Skipping a
row is exact only for finite weights (``hlo/finite.py``: ``0 * inf`` is NaN); otherwise the
row is clamped inside and its inputs zeroed by a select too, so the zeros are multiplied in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from llvmlite import ir

from aotc.codegen.irtypes import F32, add_nuw, call_intrinsic, i64, mul_nuw
from aotc.codegen.kernels.conv_gemm import NhwcConv2d, nhwc_conv2d
from aotc.codegen.kernels.conv_rows import FEW_ROWS  # split by channels below, as 1x1s are
from aotc.codegen.kernels.dot_gemm import GemmCall, VectorEpilogue, VectorEpilogueFactory
from aotc.codegen.kernels.gemm_tile import gep, offset
from aotc.codegen.kernels.window import (
    border_regions,
    emit_column_tiles,
    if_inside,
    placed_position,
    window_position,
)
from aotc.codegen.loops import entry_alloca, for_range, loop_nest
from aotc.codegen.vector import VectorInfo
from aotc.hlo.finite import skips_zeros_exactly
from aotc.hlo.ir import ConvAttrs, Instruction


@dataclass(frozen=True)
class DepthwiseConv(NhwcConv2d):
    """One depthwise 2-D NHWC convolution; see the module docstring."""

    channels: int
    skips_zeros: bool  # kernel rows in the padding are skipped, not multiplied (exact here)

    def scratch_bytes(self, info: VectorInfo) -> int:
        return 0  # everything lives in registers

    def points(self, info: VectorInfo) -> int:
        """Output columns per tile: a quarter of the registers hold accumulators, the rest the
        input vectors the columns' taps read (shared between neighbours at stride 1)."""
        return max(1, min(self.out_hw[1], info.registers // 4))

    def regions(self) -> list[tuple[int, int, bool]]:
        """(first column, columns, checked) covering the output width: borders are checked."""
        return border_regions(self.window[1], self.in_hw[1], self.out_hw[1], self.kernel_hw[1])


def depthwise_conv(
    inst: Instruction, rhs_source: Instruction | None = None
) -> DepthwiseConv | None:
    """The depthwise-kernel form of an f32 2-D NHWC convolution, or None; ``rhs_source`` is
    where the kernel comes from (a fusion's operand), for ``skips_zeros_exactly``."""
    geometry = nhwc_conv2d(inst)
    if geometry is None:
        return None
    lhs, rhs = (op.array_shape for op in inst.operands)
    channels = lhs.dims[3]
    if inst.attrs_as(ConvAttrs).feature_group_count != channels:
        return None
    if channels < 2 or rhs.dims[2:] != (1, channels):
        return None
    skips = skips_zeros_exactly(inst, rhs_source)
    return DepthwiseConv(**vars(geometry), channels=channels, skips_zeros=skips)


@dataclass(frozen=True)
class _Tile:
    """What every register tile of one kernel shares."""

    spec: DepthwiseConv
    info: VectorInfo
    call: GemmCall
    epilogue: VectorEpilogue | None
    batch: ir.Value
    row: ir.Value  # the output row ``oh``
    lines: InputRows | None  # where input rows are; None: in ``call.lhs``


#: The pointer to input row ``ih`` (of the current batch element) where it is kept.
InputRows = Callable[[ir.IRBuilder, ir.Value], ir.Value]


def emit_depthwise_conv(
    b: ir.IRBuilder,
    spec: DepthwiseConv,
    info: VectorInfo,
    call: GemmCall,
    epilogue: VectorEpilogueFactory | None = None,
) -> None:
    """Compute the convolution into ``call.out`` (lhs: the input, rhs: the HWIO kernel).

    Split over threads, the units are output rows or, for a few rows of many channels (7x7
    layers, ``splits_channels``), output rows of one group of channels,
    group-major: the threads' shares are even, and each reads the channels the feature split
    of its producer (``conv_rows.by_features``) left in its cache.
    """
    if call.split is not None and splits_channels(spec, info):
        _emit_by_channels(b, spec, info, call, epilogue)
        return
    emit_row = depthwise_row_emitter(b, spec, info, call, epilogue)
    with loop_nest(b, [spec.batch, spec.out_hw[0]], "dw", call.split) as (n, oh):
        emit_row(b, n, oh)


#: Channel vectors per unit of a split by channels: each column's tap reads a few whole
#: cache lines of the input.
GROUP_VECTORS = 4


def splits_channels(spec: DepthwiseConv, info: VectorInfo) -> bool:
    """Whether threads share the convolution by groups of channels (see there)."""
    rows = spec.batch * spec.out_hw[0]
    return rows < FEW_ROWS and spec.channels >= 2 * GROUP_VECTORS * info.width


def _emit_by_channels(
    b: ir.IRBuilder,
    spec: DepthwiseConv,
    info: VectorInfo,
    call: GemmCall,
    epilogue: VectorEpilogueFactory | None,
) -> None:
    """The convolution in units of (channel group, output row), group-major, those of the
    claimed range only."""
    assert call.split is not None
    apply = epilogue(b, list(call.extras)) if epilogue is not None else None
    rows, group = spec.batch * spec.out_hw[0], GROUP_VECTORS * info.width
    whole, tail = divmod(spec.channels, group)
    lo, hi = call.split.claim((whole + (tail > 0)) * rows)
    with for_range(b, hi, "dwu", lo) as unit:
        g, rest = b.udiv(unit, i64(rows)), b.urem(unit, i64(rows))
        n, oh = b.udiv(rest, i64(spec.out_hw[0])), b.urem(rest, i64(spec.out_hw[0]))
        tile = _Tile(spec, info, call, apply, n, oh, None)
        first = mul_nuw(b, g, i64(group))
        if not tail:
            _emit_row_channels(b, tile, (first, group))
        else:
            with b.if_else(b.icmp_unsigned("<", g, i64(whole))) as (full, last):
                with full:
                    _emit_row_channels(b, tile, (first, group))
                with last:
                    _emit_row_channels(b, tile, (i64(whole * group), tail))


def _emit_row_channels(b: ir.IRBuilder, tile: _Tile, channels: tuple[ir.Value, int]) -> None:
    """Output row ``tile.row`` for ``channels`` (first, static count) only."""
    for region in tile.spec.regions():
        columns = partial(_emit_columns, tile=tile, channels=channels)
        emit_column_tiles(b, region, tile.spec.points(tile.info), columns)


def depthwise_row_emitter(
    b: ir.IRBuilder,
    spec: DepthwiseConv,
    info: VectorInfo,
    call: GemmCall,
    epilogue: VectorEpilogueFactory | None = None,
    lines: InputRows | None = None,
) -> Callable[[ir.IRBuilder, ir.Value, ir.Value], None]:
    """What computes output row ``(n, oh)`` into ``call.out``, reading input rows from
    ``call.lhs`` or, for a fused producer's rows, through ``lines``."""
    apply = epilogue(b, list(call.extras)) if epilogue is not None else None

    def emit_row(b: ir.IRBuilder, n: ir.Value, oh: ir.Value) -> None:
        tile = _Tile(spec, info, call, apply, n, oh, lines)
        for region in spec.regions():
            emit_column_tiles(b, region, spec.points(info), partial(_emit_columns, tile=tile))

    return emit_row


def _emit_columns(
    b: ir.IRBuilder,
    ow0: ir.Value,
    points: int,
    checked: bool,
    tile: _Tile,
    channels: tuple[ir.Value, int] | None = None,
) -> None:
    """Every channel vector (of ``channels``: first, static count; default all) of
    ``points`` columns from ``ow0``: full vectors in a loop, then one narrower vector for the
    remaining channels."""
    width = tile.info.width
    first, count = channels if channels is not None else (i64(0), tile.spec.channels)
    full, rest = divmod(count, width)
    if full:
        with for_range(b, full, "dwc") as c:
            at = add_nuw(b, first, mul_nuw(b, c, i64(width)))
            _emit_tile(b, tile, (ow0, points), (at, width), checked)
    if rest:
        at = add_nuw(b, first, i64(full * width))
        _emit_tile(b, tile, (ow0, points), (at, rest), checked)


def _emit_tile(
    b: ir.IRBuilder,
    tile: _Tile,
    columns: tuple[ir.Value, int],
    chunk: tuple[ir.Value, int],
    checked: bool,
) -> None:
    """Accumulate one tile over the window, then finish and store it."""
    (ow0, points), (c, lanes) = columns, chunk
    vector = ir.VectorType(F32, lanes)
    slots = [entry_alloca(b, vector, "dwacc") for _ in range(points)]
    for slot in slots:
        b.store(ir.Constant(vector, [0.0] * lanes), slot)
    spec = tile.spec
    with for_range(b, spec.kernel_hw[0], "dwkh") as kh:
        hit, ih = window_position(b, spec.window[0], spec.in_hw[0], tile.row, kh)
        row_hit = None if spec.skips_zeros or hit is None else hit
        if row_hit is not None:
            ih = b.select(row_hit, ih, i64(0))
        with if_inside(b, hit if spec.skips_zeros else None):
            accs = [b.load(s, typ=vector) for s in slots]
            for kw in range(spec.kernel_hw[1]):
                tap = offset(b, (kh, spec.kernel_hw[1] * spec.channels), kw * spec.channels)
                w = b.load(gep(b, tile.call.rhs, add_nuw(b, tap, c)), typ=vector, align=4)
                for p in range(points):
                    ow = add_nuw(b, ow0, i64(p))
                    x = _input(b, tile, (ih, ow, kw), (c, vector), checked)
                    if row_hit is not None:
                        x = b.select(row_hit, x, ir.Constant(vector, [0.0] * lanes))
                    accs[p] = call_intrinsic(b, "fmuladd", [x, w, accs[p]])
            for slot, acc in zip(slots, accs, strict=True):
                b.store(acc, slot)
    for p, slot in enumerate(slots):
        _store(b, tile, add_nuw(b, ow0, i64(p)), c, b.load(slot, typ=vector))


def _input(
    b: ir.IRBuilder,
    tile: _Tile,
    at: tuple[ir.Value, ir.Value, int],
    chunk: tuple[ir.Value, ir.VectorType],
    checked: bool,
) -> ir.Value:
    """The channel vector ``x[n, ih, iw, c:]`` output column ``ow``'s tap ``kw`` reads; zero
    in the padding."""
    spec, (ih, ow, kw), (c, vector) = tile.spec, at, chunk
    hit, iw = placed_position(b, spec.window[1], spec.in_hw[1], ow, kw, checked)
    h, width = spec.in_hw
    channels = spec.channels
    if tile.lines is None:
        line = gep(
            b, tile.call.lhs, offset(b, (tile.batch, h * width * channels), (ih, width * channels))
        )
    else:
        line = tile.lines(b, ih)
    index = offset(b, (iw, channels))
    value = b.load(gep(b, line, add_nuw(b, index, c)), typ=vector, align=4)
    if hit is None:
        return value
    return b.select(hit, value, ir.Constant(vector, [0.0] * vector.count))


def _store(b: ir.IRBuilder, tile: _Tile, ow: ir.Value, c: ir.Value, value: ir.Value) -> None:
    """Finish one output vector (the fused epilogue) and store it."""
    spec = tile.spec
    oh_, ow_ = spec.out_hw
    at = offset(
        b, (tile.batch, oh_ * ow_ * spec.channels), (tile.row, ow_ * spec.channels),
        (ow, spec.channels),
    )  # fmt: skip
    if tile.epilogue is not None:
        value = tile.epilogue(b, value, [tile.batch, tile.row, ow, c])
    b.store(value, gep(b, tile.call.out, add_nuw(b, at, c)), align=4)
