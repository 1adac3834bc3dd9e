"""Image resizing: ResizeBilinear and ResizeNearestNeighbor (NHWC), without gathers.

Sizes are static, so each spatial axis is resampled by a ``dot`` with a constant ``[out, in]``
interpolation matrix: two taps with weights ``1 - lerp`` and ``lerp`` per row for bilinear, a
single 1 per row for nearest. Coordinates follow TF's kernels (``image_resizer_state.h``,
``resize_bilinear_op.cc``, ``resize_nearest_neighbor_op.cc``) in float32, as TF computes them.
Nearest neighbour through a 0/1 matrix is exact for finite inputs; an inf or NaN input also
spreads NaN to the other outputs of its row (0 * inf).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from aotc.errors import ShapeError, UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.ir import DotDims, Instruction
from aotc.hlo.shape import PrimitiveType

Matrix = Callable[[int, int, bool, bool], np.ndarray]

_NOTE = "NHWC; size constant; align_corners, half_pixel_centers"


def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    """TF's CalculateResizeScale."""
    if align_corners and out_size > 1:
        return np.float32((in_size - 1) / (out_size - 1))
    return np.float32(in_size / out_size)


def bilinear_matrix(
    in_size: int, out_size: int, align_corners: bool, half_pixel: bool
) -> np.ndarray:
    """Row o holds the weights of output o: TF's compute_interpolation_weights."""
    scale = _scale(in_size, out_size, align_corners)
    o = np.arange(out_size, dtype=np.float32)
    pos = (o + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel else o * scale
    floor = np.floor(pos)
    lower = np.maximum(floor, 0).astype(np.int64)
    upper = np.minimum(np.ceil(pos), in_size - 1).astype(np.int64)
    lerp = (pos - floor).astype(np.float32)
    matrix = np.zeros((out_size, in_size), np.float32)
    rows = np.arange(out_size)
    np.add.at(matrix, (rows, lower), np.float32(1) - lerp)
    np.add.at(matrix, (rows, upper), lerp)
    return matrix


def nearest_matrix(
    in_size: int, out_size: int, align_corners: bool, half_pixel: bool
) -> np.ndarray:
    """A one-hot row per output: TF's ResizeNearestNeighbor source index."""
    scale = _scale(in_size, out_size, align_corners)
    o = np.arange(out_size, dtype=np.float32)
    pos = (o + np.float32(0.5)) * scale if half_pixel else o * scale
    # roundf rounds halves away from zero; positions are never negative here.
    source = np.floor(pos + np.float32(0.5)) if align_corners else np.floor(pos)
    index = np.minimum(source.astype(np.int64), in_size - 1)
    if half_pixel:
        index = np.maximum(index, 0)
    matrix = np.zeros((out_size, in_size), np.float32)
    matrix[np.arange(out_size), index] = 1
    return matrix


def _resample_axis(
    ctx: TranslationContext, x: Instruction, axis: int, matrix: np.ndarray
) -> Instruction:
    """Contract ``axis`` with ``matrix`` [out, in]; the new axis takes the old one's place."""
    if matrix.shape[0] == matrix.shape[1] and np.array_equal(matrix, np.eye(matrix.shape[0])):
        return x
    b = ctx.builder
    weights = b.constant(matrix, x.array_shape.dtype)
    moved = b.dot(x, weights, DotDims((axis,), (1,)))  # the resampled axis comes last
    rank = x.array_shape.rank
    order = [*range(axis), rank - 1, *range(axis, rank - 1)]
    return b.transpose(moved, order)


def _resize(
    ctx: TranslationContext, node: Node, x: Instruction, size: Instruction, matrix: Matrix
) -> Instruction:
    shape = x.array_shape
    if node.attr("data_format", "NHWC") != "NHWC" or shape.rank != 4:
        raise UnsupportedError(f"only rank-4 NHWC images are supported, got {shape}")
    out = [int(v) for v in ctx.constant_value(size, "size input").reshape(-1)]
    if len(out) != 2 or min(out) <= 0 or 0 in shape.dims[1:3]:
        raise ShapeError(f"cannot resize {shape} to {out}")
    align, half = (
        bool(node.attr("align_corners", False)),
        bool(node.attr("half_pixel_centers", False)),
    )
    if align and half:
        raise UnsupportedError("align_corners and half_pixel_centers cannot both be true")
    for axis, out_size in zip((1, 2), out, strict=True):
        x = _resample_axis(ctx, x, axis, matrix(shape.dims[axis], out_size, align, half))
    return x


@translates("ResizeBilinear", note=_NOTE + "; computes in float32")
def resize_bilinear(
    ctx: TranslationContext, node: Node, images: Instruction, size: Instruction
) -> Instruction:
    if images.array_shape.dtype is not PrimitiveType.F32:
        images = ctx.builder.convert(images, PrimitiveType.F32)  # TF's output is float32
    return _resize(ctx, node, images, size, bilinear_matrix)


@translates("ResizeNearestNeighbor", note=_NOTE)
def resize_nearest(
    ctx: TranslationContext, node: Node, images: Instruction, size: Instruction
) -> Instruction:
    return _resize(ctx, node, images, size, nearest_matrix)
