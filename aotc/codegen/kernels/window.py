"""Helpers shared by the windowed kernels (convolution, reduce-window).

Both map an output position and a window tap to a position in the operand: through the
stride, the window (rhs) dilation, the low padding and the base (lhs) dilation. Taps that land
in padding or between dilated base elements read nothing. Both also accumulate one output
"row" (the innermost output dimension) in a stack array so the innermost loop runs over
contiguous memory, which is what lets LLVM vectorize it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from llvmlite import ir

from aotc.codegen.irtypes import add_nuw, add_wrap, i64, mul_nuw, mul_wrap, register_type, sub_wrap
from aotc.codegen.loops import entry_alloca, for_range
from aotc.hlo.ir import WindowDim
from aotc.hlo.shape import PrimitiveType


def window_position(
    b: ir.IRBuilder, w: WindowDim, size: int, out: ir.Value, tap: ir.Value
) -> tuple[ir.Value | None, ir.Value]:
    """(is the operand hit?, operand index) for one dimension; None means always hit.

    Computed in i64: a negative position (in the low padding) is a huge unsigned value, so one
    unsigned compare checks both ends.
    """
    padded = add_wrap(b, mul_wrap(b, out, i64(w.stride)), mul_wrap(b, tap, i64(w.rhs_dilation)))
    if w.pad_low == 0 and w.pad_high <= 0 and w.lhs_dilation == 1:
        return None, padded  # a valid window never leaves the operand
    position = sub_wrap(b, padded, i64(w.pad_low))
    span = (size - 1) * w.lhs_dilation + 1 if size else 0
    hit = b.icmp_unsigned("<", position, i64(span))
    if w.lhs_dilation == 1:
        return hit, position
    on_grid = b.icmp_unsigned("==", b.urem(position, i64(w.lhs_dilation)), i64(0))
    return b.and_(hit, on_grid), b.udiv(position, i64(w.lhs_dilation))


def placed_position(
    b: ir.IRBuilder, w: WindowDim, size: int, out: ir.Value, tap: int, checked: bool
) -> tuple[ir.Value | None, ir.Value]:
    """``window_position`` for a tap known at compile time, in a region ``border_regions``
    placed: ``checked``, (hit?, the index clamped to 0 where missed); else (None, the index),
    every tap there reading the operand."""
    if checked:
        hit, position = window_position(b, w, size, out, i64(tap))
        return hit, position if hit is None else b.select(hit, position, i64(0))
    padded = add_wrap(b, mul_wrap(b, out, i64(w.stride)), i64(tap * w.rhs_dilation))
    return None, sub_wrap(b, padded, i64(w.pad_low))


def window_positions(
    b: ir.IRBuilder,
    window: Sequence[WindowDim],
    sizes: Sequence[int],
    out: Sequence[ir.Value],
    taps: Sequence[ir.Value],
) -> tuple[ir.Value | None, list[ir.Value]]:
    """``window_position`` over several dimensions: (all hit?, clamped operand indices).

    Indices of missed dimensions are clamped to 0, so a read there stays inside the operand.
    """
    inside: ir.Value | None = None
    hits, positions = [], []
    for w, size, o, t in zip(window, sizes, out, taps, strict=True):
        hit, position = window_position(b, w, size, o, t)
        hits.append(hit)
        positions.append(position)
        if hit is not None:
            inside = hit if inside is None else b.and_(inside, hit)
    clamped = [
        p if h is None else b.select(h, p, i64(0)) for h, p in zip(hits, positions, strict=True)
    ]
    return inside, clamped


def border_regions(w: WindowDim, size: int, out: int, taps: int) -> list[tuple[int, int, bool]]:
    """(first output, outputs, checked) covering ``out`` outputs of one dimension: the interior
    span, where every tap reads the operand, is unchecked; the borders around it are checked."""
    reach = (taps - 1) * w.rhs_dilation - w.pad_low  # last tap's offset from ow * stride
    lo = min(out, max(0, -(-w.pad_low // w.stride)))
    last = size - 1 - reach
    hi = max(lo, min(out, last // w.stride + 1 if last >= 0 else 0))
    spans = [(0, lo, True), (lo, hi - lo, False), (hi, out - hi, True)]
    return [s for s in spans if s[1] > 0]


#: Emits one register tile: (builder, first output column, columns, checked).
TileEmitter = Callable[[ir.IRBuilder, ir.Value, int, bool], None]


def emit_column_tiles(
    b: ir.IRBuilder, region: tuple[int, int, bool], points: int, emit: TileEmitter
) -> None:
    """A region's full tiles of ``points`` columns in a loop, then one narrower tile."""
    start, count, checked = region
    full, rest = divmod(count, points)
    if full == 1:
        emit(b, i64(start), points, checked)
    elif full > 1:
        with for_range(b, full, "dt") as t:
            emit(b, add_nuw(b, i64(start), mul_nuw(b, t, i64(points))), points, checked)
    if rest:
        emit(b, i64(start + full * points), rest, checked)


@contextmanager
def if_inside(b: ir.IRBuilder, inside: ir.Value | None) -> Iterator[None]:
    """Run the body only where ``inside`` holds (always, when it is None)."""
    if inside is None:
        yield
        return
    with b.if_then(inside):
        yield


class Row:
    """A stack array of ``length`` accumulators of ``dtype`` (hoisted to the entry block)."""

    def __init__(self, b: ir.IRBuilder, dtype: PrimitiveType, length: int, name: str):
        self.type = ir.ArrayType(register_type(dtype), max(length, 1))
        self.slot = entry_alloca(b, self.type, name)
        self.element_type = register_type(dtype)

    def pointer(self, b: ir.IRBuilder, index: ir.Value) -> ir.Value:
        return b.gep(self.slot, [i64(0), index], inbounds=True, source_etype=self.type)

    def load(self, b: ir.IRBuilder, index: ir.Value) -> ir.Value:
        return b.load(self.pointer(b, index), typ=self.element_type)

    def store(self, b: ir.IRBuilder, value: ir.Value, index: ir.Value) -> None:
        b.store(value, self.pointer(b, index))


def place(rank: int, placed: dict[int, ir.Value]) -> list[ir.Value]:
    """A multi-index from a dimension -> value map that covers every dimension."""
    return [placed[d] for d in range(rank)]
