"""Image resizing: ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic and ResizeArea (NHWC).

Sizes are static, so every output row (and column) has static source taps and a static lerp,
computed in float32 with TF's coordinate formulas (``image_resizer_state.h``,
``resize_bilinear_op.cc``, ``resize_nearest_neighbor_op.cc``). Each spatial axis is resampled
on its own, width first and then height as TF does: a ``gather`` with constant indices takes
the lower taps (and another the upper ones), blended as TF blends them, ``a + (b - a) * lerp``
with the lerp broadcast along the axis. Gathers, broadcasts and the arithmetic all fuse into
one loop with the neighbouring elementwise ops (and a concatenation), whose innermost loop runs
over the contiguous channels: four loads and three lerps per bilinear output, no wasted work.
Bicubic (``resize_bicubic_op.cc``) and area (``resize_area_op.cc``) resampling take a few
gathers per axis, summed with constant weights.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from aotc.errors import ShapeError, UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.builder import ComputationBuilder
from aotc.hlo.ir import GatherAttrs, Instruction, Opcode
from aotc.hlo.shape import PrimitiveType

_NOTE = "NHWC; size constant; align_corners, half_pixel_centers"


def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    """TF's CalculateResizeScale."""
    if align_corners and out_size > 1:
        return np.float32((in_size - 1) / (out_size - 1))
    return np.float32(in_size / out_size)


@dataclass(frozen=True)
class Taps:
    """Per output element along one axis: the two source indices and the lerp between them."""

    lower: np.ndarray  # int64 [out]
    upper: np.ndarray  # int64 [out]; equal to lower where lerp is 0
    lerp: np.ndarray  # float32 [out]


TapsFn = Callable[[int, int, bool, bool], Taps]


def bilinear_taps(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> Taps:
    """TF's compute_interpolation_weights, in float32."""
    scale = _scale(in_size, out_size, align_corners)
    o = np.arange(out_size, dtype=np.float32)
    pos = (o + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel else o * scale
    floor = np.floor(pos)
    lower = np.maximum(floor, 0).astype(np.int64)
    upper = np.minimum(np.ceil(pos), in_size - 1).astype(np.int64)
    return Taps(lower, upper, (pos - floor).astype(np.float32))


def nearest_taps(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> Taps:
    """TF's ResizeNearestNeighbor source index, as taps with a lerp of 0."""
    scale = _scale(in_size, out_size, align_corners)
    o = np.arange(out_size, dtype=np.float32)
    pos = (o + np.float32(0.5)) * scale if half_pixel else o * scale
    # roundf rounds halves away from zero; positions are never negative here.
    source = np.floor(pos + np.float32(0.5)) if align_corners else np.floor(pos)
    index = np.minimum(source.astype(np.int64), in_size - 1)
    if half_pixel:
        index = np.maximum(index, 0)
    return Taps(index, index, np.zeros(out_size, np.float32))


def take(b: ComputationBuilder, x: Instruction, axis: int, index: np.ndarray) -> Instruction:
    """``x`` with ``axis`` replaced by ``x[..., index[o], ...]`` for each ``o``: a gather with
    constant indices, which fuses and reads whole contiguous rows of channels."""
    shape = x.array_shape
    indices = b.constant(index.astype(np.int32).reshape(-1, 1))
    offset_dims = tuple(d for d in range(shape.rank) if d != axis)
    sizes = tuple(1 if d == axis else n for d, n in enumerate(shape.dims))
    return b.gather(x, indices, GatherAttrs(offset_dims, (axis,), (axis,), 1, sizes))


def _lerp(
    b: ComputationBuilder, a: Instruction, c: Instruction, axis: int, lerp: np.ndarray
) -> Instruction:
    """TF's ``a + (c - a) * lerp``, ``lerp`` varying along ``axis``."""
    shape = a.array_shape
    weight = b.broadcast(b.constant(lerp, shape.dtype), shape.dims, (axis,))
    step = b.binary(Opcode.MULTIPLY, b.binary(Opcode.SUBTRACT, c, a), weight)
    return b.binary(Opcode.ADD, a, step)


def resample_axis(b: ComputationBuilder, x: Instruction, axis: int, taps: Taps) -> Instruction:
    """Resample ``axis`` of ``x`` to ``len(taps.lower)`` elements."""
    in_size = x.array_shape.dims[axis]
    if np.array_equal(taps.lower, np.arange(in_size)) and not taps.lerp.any():
        return x  # the same size: TF copies
    lower = take(b, x, axis, taps.lower)
    if not taps.lerp.any():
        return lower
    return _lerp(b, lower, take(b, x, axis, taps.upper), axis, taps.lerp)


def _resize(
    ctx: TranslationContext, node: Node, x: Instruction, size: Instruction, taps: TapsFn
) -> Instruction:
    out, align, half = _resize_options(ctx, node, x, size)
    shape = x.array_shape
    # Width first, then height: TF blends each row horizontally, then the rows vertically.
    for axis in (2, 1):
        axis_taps = taps(shape.dims[axis], out[axis - 1], align, half)
        x = resample_axis(ctx.builder, x, axis, axis_taps)
    return x


def _resize_options(
    ctx: TranslationContext, node: Node, x: Instruction, size: Instruction
) -> tuple[list[int], bool, bool]:
    """The output size (height, width), align_corners and half_pixel_centers, checked."""
    shape = x.array_shape
    if node.str_attr("data_format", "NHWC") != "NHWC" or shape.rank != 4:
        raise UnsupportedError(f"only rank-4 NHWC images are supported, got {shape}")
    out = [int(v) for v in ctx.constant_value(size, "size input").reshape(-1)]
    if len(out) != 2 or min(out) <= 0 or 0 in shape.dims[1:3]:
        raise ShapeError(f"cannot resize {shape} to {out}")
    align, half = (
        node.bool_attr("align_corners", False),
        node.bool_attr("half_pixel_centers", False),
    )
    if align and half:
        raise UnsupportedError("align_corners and half_pixel_centers cannot both be true")
    return out, align, half


# TF's bicubic weights come from a table of kTableSize steps of the cubic convolution kernel.
_CUBIC_TABLE_SIZE = 1024


def _cubic_table(a: float) -> np.ndarray:
    """TF's GetCoeffsTable: [i, 0] the kernel at i/size, [i, 1] at i/size + 1 (float32)."""
    x = np.arange(_CUBIC_TABLE_SIZE + 1, dtype=np.float32) / np.float32(_CUBIC_TABLE_SIZE)
    a32, one = np.float32(a), np.float32(1)
    near = ((a32 + 2) * x - (a32 + 3)) * x * x + one
    far = x + one
    far = ((a32 * far - 5 * a32) * far + 8 * a32) * far - 4 * a32
    return np.stack([near, far], axis=1).astype(np.float32)


def bicubic_taps(
    in_size: int, out_size: int, align_corners: bool, half_pixel: bool
) -> tuple[np.ndarray, np.ndarray]:
    """TF's GetWeightsAndIndices: source indices and weights [4, out]. With half-pixel
    centers (Keys' kernel, a = -0.5) taps outside the image weigh 0 and the rest are
    renormalized; otherwise (a = -0.75) edge pixels repeat."""
    scale = _scale(in_size, out_size, align_corners)
    o = np.arange(out_size, dtype=np.float32)
    pos = (o + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel else o * scale
    floor = np.floor(pos)
    offset = np.rint((pos - floor) * np.float32(_CUBIC_TABLE_SIZE)).astype(np.int64)
    table = _cubic_table(-0.5 if half_pixel else -0.75)
    weights = np.stack(
        [
            table[offset, 1],
            table[offset, 0],
            table[_CUBIC_TABLE_SIZE - offset, 0],
            table[_CUBIC_TABLE_SIZE - offset, 1],
        ]
    )
    wanted = floor.astype(np.int64) + np.arange(-1, 3).reshape(4, 1)
    index = np.clip(wanted, 0, in_size - 1)
    if half_pixel:
        weights = np.where(index == wanted, weights, np.float32(0))
        total = weights.sum(axis=0, dtype=np.float32)
        usable = np.abs(total) >= 1000 * np.finfo(np.float32).tiny
        weights = np.where(usable, weights * (np.float32(1) / np.where(usable, total, 1)), weights)
    return index, weights.astype(np.float32)


def weighted_axis(
    b: ComputationBuilder, x: Instruction, axis: int, index: np.ndarray, weights: np.ndarray
) -> Instruction:
    """``axis`` of ``x`` resampled as a weighted sum of taps, in tap order: output ``o`` is
    ``sum_k weights[k, o] * x[..., index[k, o], ...]``."""
    total: Instruction | None = None
    for k in range(len(index)):
        tap = take(b, x, axis, index[k])
        dims = tap.array_shape.dims
        weight = b.broadcast(b.constant(weights[k], x.array_shape.dtype), dims, (axis,))
        term = b.binary(Opcode.MULTIPLY, tap, weight)
        total = term if total is None else b.binary(Opcode.ADD, total, term)
    assert total is not None
    return total


def area_taps(in_size: int, out_size: int, align_corners: bool) -> tuple[np.ndarray, np.ndarray]:
    """TF's ResizeArea coverage along one axis: each output cell averages the input cells
    [o*scale, (o+1)*scale) overlaps, weighted by the overlap (padded with zero weights to
    the widest cell; indices past the edge clamp, as TF's BoundIfNeeded)."""
    scale = _scale(in_size, out_size, align_corners)
    lo = np.arange(out_size, dtype=np.float32) * scale
    hi = (np.arange(out_size, dtype=np.float32) + 1) * scale
    start, end = np.floor(lo).astype(np.int64), np.ceil(hi).astype(np.int64)
    width = int((end - start).max())
    cells = start + np.arange(width).reshape(-1, 1)  # [width, out]
    i = cells.astype(np.float32)
    inside = np.where(i + 1 > hi, hi - i, np.float32(1))
    first = np.where(i + 1 > hi, scale, i + 1 - lo)
    weights = np.where(i < lo, first, inside).astype(np.float32)
    weights = np.where(cells < end, weights, np.float32(0))
    return np.clip(cells, 0, in_size - 1), weights


@translates("ResizeBicubic", note=_NOTE + "; computes in float32")
def resize_bicubic(
    ctx: TranslationContext, node: Node, images: Instruction, size: Instruction
) -> Instruction:
    images = _as_f32(ctx, images)
    out, align, half = _resize_options(ctx, node, images, size)
    for axis in (2, 1):  # width first, then height, as TF's cached rows do
        index, weights = bicubic_taps(images.array_shape.dims[axis], out[axis - 1], align, half)
        images = weighted_axis(ctx.builder, images, axis, index, weights)
    return images


@translates("ResizeArea", note="NHWC; size constant; align_corners; computes in float32")
def resize_area(
    ctx: TranslationContext, node: Node, images: Instruction, size: Instruction
) -> Instruction:
    images = _as_f32(ctx, images)
    out, align, _ = _resize_options(ctx, node, images, size)
    scale = np.float32(1)
    for axis in (2, 1):
        in_size = images.array_shape.dims[axis]
        index, weights = area_taps(in_size, out[axis - 1], align)
        images = weighted_axis(ctx.builder, images, axis, index, weights)
        scale *= _scale(in_size, out[axis - 1], align)
    # TF scales the summed coverage by 1 / (height_scale * width_scale) at the end.
    return ctx.builder.binary(
        Opcode.MULTIPLY, images, ctx.splat(float(np.float32(1) / scale), images)
    )


def _as_f32(ctx: TranslationContext, images: Instruction) -> Instruction:
    if images.array_shape.dtype is PrimitiveType.F32:
        return images
    return ctx.builder.convert(images, PrimitiveType.F32)  # TF's output is float32


@translates("ResizeBilinear", note=_NOTE + "; computes in float32")
def resize_bilinear(
    ctx: TranslationContext, node: Node, images: Instruction, size: Instruction
) -> Instruction:
    return _resize(ctx, node, _as_f32(ctx, images), size, bilinear_taps)


@translates("ResizeNearestNeighbor", note=_NOTE)
def resize_nearest(
    ctx: TranslationContext, node: Node, images: Instruction, size: Instruction
) -> Instruction:
    return _resize(ctx, node, images, size, nearest_taps)
