"""f32 NHWC 2-D convolutions with constant weights, register-tiled along output rows.

The implicit GEMM (``conv_gemm.py``) first copies every patch into a packed A panel, one
select per element, which costs as much as the FMAs for 3x3 kernels on 1-64 features. Here
the micro-kernel reads the input itself. A tile is ``mr`` consecutive output columns of one
output row times ``nv`` vectors of output features (the GEMM engine's register tile,
``gemm_plan.plan_gemm`` with ``M`` the output width). For each kernel tap ``(kh, kw)`` and
input feature ``ci`` it broadcasts ``x[n, ih, iw(r), ci]`` of each column ``r`` straight from
the input (a broadcast load x86 folds into the FMA) and multiplies it with one row of the
weights, packed at compile time as ``[Cout/pr][KH][KW][Cin][pr]`` (``pack_b`` with a single
K block; ``pr`` is ``nr`` or the wider panel all cpu levels of a portable object read,
``gemm_plan.plan_gemm``): each tile streams its weight panel once, the whole K accumulates
in registers, and the fused epilogue (bias, activation, residual) runs on the finished
vectors before their only store. No scratch, except for an input scaled per feature
(``row_emitter``'s ``scale``).

Padding costs nothing in the inner loop (its taps are skipped, which is exact for finite
weights, ``hlo/finite.py``; others keep the implicit GEMM): a kernel row off the input is
skipped by one branch per tile, and along the width the tiles are placed at compile time:
interior tiles (every tap inside) run in a loop, while a border tile knows for each ``kw``
which of its columns read the input and leaves the others' accumulators alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from aotc.codegen.irtypes import F32, add_nuw, add_wrap, i64, mul_nuw, sub_wrap
from aotc.codegen.kernels.conv_gemm import NhwcConv2d, nhwc_conv2d
from aotc.codegen.kernels.dot_gemm import (
    GemmCall,
    VectorEpilogue,
    VectorEpilogueFactory,
    packed_weights,
)
from aotc.codegen.kernels.gemm import strip
from aotc.codegen.kernels.gemm_plan import NC_MAX, GemmPlan, plan_gemm
from aotc.codegen.kernels.gemm_tile import gep, k_loop, load_vector, offset, resize, splat
from aotc.codegen.kernels.window import if_inside, window_position
from aotc.codegen.loops import entry_alloca, for_range, loop_nest
from aotc.codegen.vector import VectorInfo
from aotc.hlo.finite import skips_zeros_exactly
from aotc.hlo.ir import ConvAttrs, Instruction, Opcode

# Output widths below which a row holds too few columns for a register tile.
MIN_WIDTH = 4
# 1x1 kernels with more weight bytes than this stay plain GEMMs. Measured on a loaded Intel
# AVX-512 machine, us, 1x1 GEMM / rows: 7x7 960->160 93/75, 14x14 384->64 70/49, 56x56
# 24->144 170/134, 28x28 192->32 92/45; looping over feature blocks outside the rows
# (``by_features``: each block's weights read once) 7x7 960->320 (1.2 MB) 203/181,
# 320->1280 (1.6 MB) 254/267.
POINTWISE_WEIGHTS_MAX = 3 << 19
# Weights above this are not scaled per call for an input scaled per feature (the fusion
# stores the scaled input to scratch instead): EfficientNetB0's 7x7 1152->320 (1.5 MB of
# weights, 225 KB of input) took 460 us scaling its weights, 325 us its input (same machine).
SCALED_WEIGHTS_MAX = 1 << 20


@dataclass(frozen=True)
class RowConv(NhwcConv2d):
    """One 2-D NHWC convolution for the row-tiled kernel; see the module docstring."""

    cin: int
    cout: int
    weights: np.ndarray  # [KH * KW * Cin, Cout]

    @property
    def k(self) -> int:
        return self.kernel_hw[0] * self.kernel_hw[1] * self.cin

    def plan(self, info: VectorInfo) -> GemmPlan:
        """The register tile (``mr`` columns x ``nv`` vectors) and the packed weights' layout."""
        return plan_gemm(self.out_hw[1], self.cout, self.k, info, kc=self.k, b_constant=True)

    def scratch_bytes(self, info: VectorInfo) -> int:
        return 0  # the input is read in place and the tile lives in registers

    def scaled_bytes(self, info: VectorInfo) -> int:
        """Scratch for the packed weights scaled at run time (``row_emitter``'s ``scale``)."""
        plan = self.plan(info)
        return -(-self.cout // plan.panel) * self.k * plan.panel * 4

    def tiles(self, info: VectorInfo) -> list[tuple[int, int]]:
        """(first column, columns) of the tiles of an output row: as few as the register tile
        allows, their widths differing by one at most (wider ones first)."""
        count = -(-self.out_hw[1] // self.plan(info).mr)
        size, wider = divmod(self.out_hw[1], count)
        widths = [size + 1] * wider + [size] * (count - wider)
        starts = [sum(widths[:i]) for i in range(count)]
        return list(zip(starts, widths, strict=True))

    def columns_inside(self, start: int, columns: int, kw: int) -> range:
        """The columns of a tile at ``start`` whose tap ``kw`` reads the input (a range)."""
        w = self.window[1]
        hits = [
            r
            for r in range(columns)
            if 0 <= (start + r) * w.stride + kw * w.rhs_dilation - w.pad_low < self.in_hw[1]
        ]
        return range(hits[0], hits[-1] + 1) if hits else range(0)

    def interior(self, start: int, columns: int) -> bool:
        return all(
            len(self.columns_inside(start, columns, kw)) == columns
            for kw in range(self.kernel_hw[1])
        )


def row_conv(inst: Instruction, rhs_source: Instruction | None = None) -> RowConv | None:
    """The row-tiled form of an f32 2-D NHWC convolution with constant weights, or None.

    ``rhs_source`` holds the kernel's buffer (a fusion operand when the convolution is fused).
    """
    geometry = nhwc_conv2d(inst)
    lhs, rhs = (op.array_shape for op in inst.operands)
    out = inst.array_shape
    if geometry is None or inst.attrs_as(ConvAttrs).feature_group_count != 1:
        return None
    if out.dims[2] < MIN_WIDTH or out.dims[3] > NC_MAX:
        return None
    source = rhs_source if rhs_source is not None else inst.operands[1]
    if source.opcode is not Opcode.CONSTANT or source.literal is None:
        return None
    if not skips_zeros_exactly(inst, source):
        return None  # an infinite weight times a padding zero is NaN: conv_gemm multiplies
    weights = np.asarray(source.literal, np.float32).reshape(-1, out.dims[3])
    if rhs.dims[0] == rhs.dims[1] == 1 and weights.nbytes > POINTWISE_WEIGHTS_MAX:
        return None
    return RowConv(**vars(geometry), cin=lhs.dims[3], cout=out.dims[3], weights=weights)


@dataclass(frozen=True)
class _Row:
    """What every tile of one output row shares."""

    spec: RowConv
    plan: GemmPlan
    call: GemmCall
    weights: ir.Value
    epilogue: VectorEpilogue | None
    batch: ir.Value
    row: ir.Value  # the output row ``oh``
    line: ir.Value | None  # where the row is stored; None: its place in ``call.out``


#: Emits output row ``(n, oh)`` of a convolution, stored at ``line`` (None: in the output).
RowEmitter = Callable[[ir.IRBuilder, ir.Value, ir.Value, ir.Value | None], None]


def emit_row_conv(
    b: ir.IRBuilder,
    spec: RowConv,
    info: VectorInfo,
    call: GemmCall,
    epilogue: VectorEpilogueFactory | None = None,
    scale: ir.Value | None = None,
) -> None:
    """Compute the convolution into ``call.out`` (lhs: the input; the weights are packed),
    the input scaled per feature by the floats at ``scale`` if given.

    The loop runs over output rows or (``by_features``) over output rows of one block of
    ``nr`` features, block-major, which threads share in units: each then reads (and scales)
    only its blocks' weights, and a layer of a few rows (7x7) still splits evenly.
    """
    if by_features(spec, info, scale is not None):
        _emit_by_features(b, spec, info, call, epilogue, scale)
        return
    emit_row = row_emitter(b, spec, info, call, epilogue, scale)
    with loop_nest(b, [spec.batch, spec.out_hw[0]], "rc", call.split) as (n, oh):
        emit_row(b, n, oh, None)


#: Output rows (times the batch) below which a convolution whose weights outweigh its input
#: loops over feature blocks outside the rows, and a depthwise one splits by channels. At
#: 14x14, split by feature blocks, each thread read half its input from the other core
#: (written by a split by rows) and measured slower on two threads than split by rows
#: (MobileNetV2, 3%).
FEW_ROWS = 8


def by_features(spec: RowConv, info: VectorInfo, scaled: bool) -> bool:
    """Whether the convolution loops over feature blocks outside its rows: in a layer of
    fewer than ``FEW_ROWS`` rows whose weights outweigh its input (a block's weights stay in
    cache over the rows; split by rows, every thread would stream all the weights and a
    7-row layer split 4:3), or where the weights are scaled per call (split by rows, each
    thread would scale all of them)."""
    if -(-spec.cout // spec.plan(info).nr) < 2:
        return False
    input_bytes = spec.batch * spec.in_hw[0] * spec.in_hw[1] * spec.cin * 4
    few = spec.batch * spec.out_hw[0] < FEW_ROWS
    return scaled or (few and spec.weights.nbytes > input_bytes)


def _emit_by_features(
    b: ir.IRBuilder,
    spec: RowConv,
    info: VectorInfo,
    call: GemmCall,
    epilogue: VectorEpilogueFactory | None,
    scale: ir.Value | None,
) -> None:
    """The convolution in units of (feature block, output row), block-major, those of the
    split's range if any; with ``scale``, only the panels of its blocks are scaled."""
    plan = spec.plan(info)
    rows = spec.batch * spec.out_hw[0]
    units = -(-spec.cout // plan.nr) * rows
    lo, hi = call.split.claim(units) if call.split is not None else (i64(0), i64(units))
    weights: ir.Value = packed_weights(b.module, f"{b.function.name}.rowconv", plan, spec.weights)
    if scale is not None:
        assert call.scratch is not None, "scaled weights live in scratch"
        with b.if_then(b.icmp_unsigned("<", lo, hi)):
            last = _panel(b, plan, b.sub(hi, i64(1)), rows)
            panels = (_panel(b, plan, lo, rows), b.add(last, i64(1)))
            _scale_panels(b, spec, plan, (weights, scale, call.scratch), panels)
        weights = call.scratch
    apply = epilogue(b, list(call.extras)) if epilogue is not None else None
    with for_range(b, hi, "rf", lo) as unit:
        block, rest = b.udiv(unit, i64(rows)), b.urem(unit, i64(rows))
        n, oh = b.udiv(rest, i64(spec.out_hw[0])), b.urem(rest, i64(spec.out_hw[0]))
        row = _Row(spec, plan, call, weights, apply, n, oh, None)
        _emit_tiles(b, row, spec, info, block)


def _panel(b: ir.IRBuilder, plan: GemmPlan, unit: ir.Value, rows: int) -> ir.Value:
    """The packed weight panel of the feature block of ``unit`` (of ``rows`` per block)."""
    return b.udiv(mul_nuw(b, b.udiv(unit, i64(rows)), i64(plan.nr)), i64(plan.panel))


def row_emitter(
    b: ir.IRBuilder,
    spec: RowConv,
    info: VectorInfo,
    call: GemmCall,
    epilogue: VectorEpilogueFactory | None = None,
    scale: ir.Value | None = None,
) -> RowEmitter:
    """What computes one output row (its tiles, the fused epilogue applied) wherever it is
    called in the function ``b`` is in; a fused consumer stores rows elsewhere (``line``).

    With ``scale`` (one float per input feature: squeeze-and-excitation's factors), the input
    is scaled per feature: ``conv(x * s, W) = conv(x, s * W)``, so the packed weights are
    scaled once per call into ``call.scratch`` (``RowConv.scaled_bytes``) instead of every
    input element.
    """
    plan = spec.plan(info)
    weights: ir.Value = packed_weights(b.module, f"{b.function.name}.rowconv", plan, spec.weights)
    if scale is not None:
        assert call.scratch is not None, "scaled weights live in scratch"
        weights = _scaled_weights(b, spec, plan, (weights, scale), call.scratch)
    apply = epilogue(b, list(call.extras)) if epilogue is not None else None

    def emit_row(b: ir.IRBuilder, n: ir.Value, oh: ir.Value, line: ir.Value | None) -> None:
        _emit_tiles(b, _Row(spec, plan, call, weights, apply, n, oh, line), spec, info, None)

    return emit_row


def _emit_tiles(
    b: ir.IRBuilder, row: _Row, spec: RowConv, info: VectorInfo, block: ir.Value | None
) -> None:
    """The tiles of one output row, of every feature block or of ``block`` alone."""
    for start, columns, count in _tile_runs(spec, info):
        if count == 1:
            _emit_features(b, row, (i64(start), columns, start), block)
            continue
        with for_range(b, count, "rt") as t:
            first = add_nuw(b, i64(start), mul_nuw(b, t, i64(columns)))
            _emit_features(b, row, (first, columns, None), block)


def _scaled_weights(
    b: ir.IRBuilder,
    spec: RowConv,
    plan: GemmPlan,
    sources: tuple[ir.Value, ir.Value],
    out: ir.Value,
) -> ir.Value:
    """The packed weights at ``out``, each panel row (one ``k``, input feature ``k % Cin``)
    times that feature's factor."""
    panels = (i64(0), i64(-(-spec.cout // plan.panel)))
    _scale_panels(b, spec, plan, (*sources, out), panels)
    return out


def _scale_panels(
    b: ir.IRBuilder,
    spec: RowConv,
    plan: GemmPlan,
    pointers: tuple[ir.Value, ir.Value, ir.Value],
    panels: tuple[ir.Value, ir.Value],
) -> None:
    """Packed weight panels ``[first, stop)`` from ``packed`` to ``out``, each panel row times
    its input feature's factor in ``scale``."""
    packed, scale, out = pointers
    assert plan.panel % plan.vw == 0
    first, stop = (mul_nuw(b, p, i64(spec.k)) for p in panels)
    with for_range(b, stop, "rs", first) as r:
        factor = splat(b, b.load(gep(b, scale, b.urem(r, i64(spec.cin))), typ=F32), plan.vw)
        line = mul_nuw(b, r, i64(plan.panel))
        for v in range(0, plan.panel, plan.vw):
            at = add_nuw(b, line, i64(v))
            value = load_vector(b, gep(b, packed, at), plan.vw, plan.vw)
            b.store(b.fmul(value, factor), gep(b, out, at), align=4)


def _tile_runs(spec: RowConv, info: VectorInfo) -> list[tuple[int, int, int]]:
    """(first column, columns, tiles): consecutive interior tiles of one width form a loop."""
    runs: list[tuple[int, int, int]] = []
    for start, columns in spec.tiles(info):
        if runs and spec.interior(start, columns):
            first, width, count = runs[-1]
            if width == columns and spec.interior(first, width):
                runs[-1] = (first, width, count + 1)
                continue
        runs.append((start, columns, 1))
    return runs


def _emit_features(
    b: ir.IRBuilder, row: _Row, tile: tuple[ir.Value, int, int | None], block: ir.Value | None
) -> None:
    """One tile of columns (first column, columns, and its first column when it is placed at
    compile time: a border tile; None for interior tiles in a loop) for every block of ``nr``
    output features (full ones in a loop), or for feature block ``block`` alone."""
    p = row.plan
    full, rest = divmod(row.spec.cout, p.nr)
    if block is not None:
        if not rest:
            _emit_tile(b, row, tile, block, p.nr)
            return
        with b.if_else(b.icmp_unsigned("<", block, i64(full))) as (whole, last):
            with whole:
                _emit_tile(b, row, tile, block, p.nr)
            with last:
                _emit_tile(b, row, tile, i64(full), rest)
        return
    if full > 1:
        with for_range(b, full, "rj") as j:
            _emit_tile(b, row, tile, j, p.nr)
    elif full == 1:
        _emit_tile(b, row, tile, i64(0), p.nr)
    if rest:
        _emit_tile(b, row, tile, i64(full), rest)


def _emit_tile(
    b: ir.IRBuilder,
    row: _Row,
    tile: tuple[ir.Value, int, int | None],
    block: ir.Value,
    features: int,
) -> None:
    """Accumulate one tile of ``features`` output features of feature block ``block`` over
    the window (kernel rows off the input skipped), then store it."""
    spec, p = row.spec, row.plan
    first, columns, _ = tile
    nv = -(-features // p.vw)
    vec = ir.VectorType(F32, p.vw)
    slots = [[entry_alloca(b, vec, "racc") for _ in range(nv)] for _ in range(columns)]
    for column in slots:
        for slot in column:
            b.store(ir.Constant(vec, [0.0] * p.vw), slot)
    panel = gep(b, row.weights, strip(b, p, block, spec.k))
    with for_range(b, spec.kernel_hw[0], "rkh") as kh:
        hit, ih = window_position(b, spec.window[0], spec.in_hw[0], row.row, kh)
        with if_inside(b, hit):
            accs = [[b.load(s, typ=vec) for s in column] for column in slots]
            for kw in range(spec.kernel_hw[1]):
                _accumulate_tap(b, row, tile, panel, (kh, ih, kw), accs)
            for column, values in zip(slots, accs, strict=True):
                for slot, value in zip(column, values, strict=True):
                    b.store(value, slot)
    col = offset(b, (block, p.nr))
    for r, column in enumerate(slots):
        values = [b.load(s, typ=vec) for s in column]
        _store_column(b, row, (add_nuw(b, first, i64(r)), col), values, features)


def _accumulate_tap(
    b: ir.IRBuilder,
    row: _Row,
    tile: tuple[ir.Value, int, int | None],
    panel: ir.Value,
    tap: tuple[ir.Value, ir.Value, int],
    accs: list[list[ir.Value]],
) -> None:
    """Add tap ``(kh, kw)`` over every input feature to the columns it reads (in ``accs``)."""
    spec, p = row.spec, row.plan
    first, columns, start = tile
    kh, ih, kw = tap
    inside = range(columns) if start is None else spec.columns_inside(start, columns, kw)
    if not inside:
        return
    w = spec.window[1]
    h_size, w_size = spec.in_hw
    line = offset(b, (row.batch, h_size * w_size * spec.cin), (ih, w_size * spec.cin))
    iw0 = sub_wrap(
        b, add_nuw(b, mul_nuw(b, first, i64(w.stride)), i64(kw * w.rhs_dilation)), i64(w.pad_low)
    )
    bases = [
        gep(
            b,
            row.call.lhs,
            add_nuw(b, line, mul_nuw(b, add_wrap(b, iw0, i64(r * w.stride)), i64(spec.cin))),
        )
        for r in inside
    ]
    taps = offset(b, (kh, spec.kernel_hw[1] * spec.cin * p.panel), kw * spec.cin * p.panel)
    weights = gep(b, panel, taps)
    nv = len(accs[0])

    def step(b: ir.IRBuilder, ci: ir.Value) -> tuple[list[ir.Value], list[ir.Value]]:
        scalars = [b.load(gep(b, base, ci), typ=F32, align=4) for base in bases]
        w_row = gep(b, weights, offset(b, (ci, p.panel)))
        vecs = [load_vector(b, gep(b, w_row, v * p.vw), p.vw, p.vw) for v in range(nv)]
        return scalars, vecs

    done = k_loop(b, spec.cin, len(inside), nv, p.vw, step, [accs[r] for r in inside])
    for r, values in zip(inside, done, strict=True):
        accs[r] = values


def _store_column(
    b: ir.IRBuilder,
    row: _Row,
    at: tuple[ir.Value, ir.Value],
    values: Sequence[ir.Value],
    features: int,
) -> None:
    """Finish the vectors of output column ``ow`` from feature ``col`` (the fused epilogue)
    and store their first ``features`` lanes."""
    spec, p = row.spec, row.plan
    ow, col = at
    oh_, ow_ = spec.out_hw
    line = row.line
    if line is None:
        line = gep(
            b,
            row.call.out,
            offset(b, (row.batch, oh_ * ow_ * spec.cout), (row.row, ow_ * spec.cout)),
        )
    base = offset(b, (ow, spec.cout), (col, 1))
    for v, value in enumerate(values):
        index = add_nuw(b, col, i64(v * p.vw))
        value = resize(b, value, min(p.vw, features - v * p.vw))
        if row.epilogue is not None:
            value = row.epilogue(b, value, [row.batch, row.row, ow, index])
        b.store(value, gep(b, line, add_nuw(b, base, i64(v * p.vw))), align=4)
