"""Pooling: MaxPool, MaxPoolV2, AvgPool and their 3-D forms, as HLO ``reduce-window``.

TF gives ``ksize`` and ``strides`` over every dimension, so the window covers all of them and
the layout does not matter beyond checking ``data_format``. Max pooling pads with -inf (the
reducer's identity), which is how TF ignores padded cells. Average pooling divides the window
sum by the number of cells that are not padding, a compile-time constant per output position.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aotc.errors import UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import translates
from aotc.frontend.ops.window_attrs import check_unit, int_list, layout, padding
from aotc.frontend.translate import TranslationContext
from aotc.hlo.ir import Instruction, Opcode, Window, WindowDim
from aotc.hlo.shape import PrimitiveType

_FORMATS_2D = ("NHWC", "NCHW")
_FORMATS_3D = ("NDHWC", "NCDHW")
_PADDING_NOTE = "padding SAME/VALID, ksize, strides"


def _window(
    node: Node,
    dims: Sequence[int],
    ksize: Sequence[int],
    strides: Sequence[int],
    formats: Sequence[str],
) -> Window:
    lay = layout(node, formats)
    rank = len(dims)
    if len(ksize) != rank or len(strides) != rank or rank != len(lay.spatial) + 2:
        raise UnsupportedError(
            f"ksize {list(ksize)} and strides {list(strides)} need {rank} values for a "
            f"rank-{rank} input in {formats[0]} or {formats[1]} layout"
        )
    check_unit(ksize, (lay.batch,), "ksize")
    check_unit(strides, (lay.batch,), "strides")
    pads = padding(node, dims, ksize, strides, [1] * rank, range(rank))
    per_dim = zip(ksize, strides, pads, strict=True)
    return Window(tuple(WindowDim(k, s, lo, hi) for k, s, (lo, hi) in per_dim))


def _window_from_attrs(node: Node, x: Instruction, formats: Sequence[str]) -> Window:
    rank = x.array_shape.rank
    ksize, strides = int_list(node, "ksize", rank), int_list(node, "strides", rank)
    return _window(node, x.array_shape.dims, ksize, strides, formats)


def max_pool(ctx: TranslationContext, x: Instruction, window: Window) -> Instruction:
    dtype = x.array_shape.dtype
    lowest = -np.inf if dtype.is_float else np.iinfo(dtype.numpy).min
    init = ctx.scalar(lowest, dtype)
    return ctx.builder.reduce_window([x], [init], window, ctx.module.reducer(Opcode.MAXIMUM, dtype))


def avg_pool(ctx: TranslationContext, x: Instruction, window: Window) -> Instruction:
    shape = x.array_shape
    if not shape.dtype.is_float:
        raise UnsupportedError(f"AvgPool needs a floating-point input, got {shape}")
    zero = ctx.scalar(0, shape.dtype)
    reducer = ctx.module.reducer(Opcode.ADD, shape.dtype)
    total = ctx.builder.reduce_window([x], [zero], window, reducer)
    return ctx.builder.binary(Opcode.DIVIDE, total, _cell_counts(ctx, shape.dims, window, total))


def _cell_counts(
    ctx: TranslationContext, dims: Sequence[int], window: Window, like: Instruction
) -> Instruction:
    """How many non-padding cells each window covers: a product of per-dimension counts."""
    counts = [_counts_1d(n, w) for n, w in zip(dims, window.dims, strict=True)]
    varying = [d for d, c in enumerate(counts) if np.any(c != c[0])]
    factor = np.prod([c[0] for d, c in enumerate(counts) if d not in varying])
    table = np.full([], factor, np.float64)
    for d in varying:
        table = np.multiply.outer(table, counts[d])
    dtype: PrimitiveType = like.array_shape.dtype
    constant = ctx.builder.constant(table, dtype)
    return ctx.builder.broadcast(constant, like.array_shape.dims, varying)


def _counts_1d(size: int, w: WindowDim) -> np.ndarray:
    out = (size + w.pad_low + w.pad_high - w.size) // w.stride + 1
    starts = np.arange(max(out, 0)) * w.stride - w.pad_low
    return np.minimum(starts + w.size, size) - np.maximum(starts, 0)


@translates("MaxPool", note=f"{_PADDING_NOTE}, EXPLICIT; data_format NHWC or NCHW")
def max_pool_2d(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return max_pool(ctx, x, _window_from_attrs(node, x, _FORMATS_2D))


@translates("MaxPoolV2", note="ksize and strides constant inputs; padding SAME/VALID; NHWC/NCHW")
def max_pool_v2(
    ctx: TranslationContext, node: Node, x: Instruction, ksize: Instruction, strides: Instruction
) -> Instruction:
    k = [int(v) for v in ctx.constant_value(ksize, "ksize input").reshape(-1)]
    s = [int(v) for v in ctx.constant_value(strides, "strides input").reshape(-1)]
    return max_pool(ctx, x, _window(node, x.array_shape.dims, k, s, _FORMATS_2D))


@translates("MaxPool3D", note=f"{_PADDING_NOTE}; data_format NDHWC or NCDHW")
def max_pool_3d(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return max_pool(ctx, x, _window_from_attrs(node, x, _FORMATS_3D))


@translates("AvgPool", note=f"{_PADDING_NOTE}; data_format NHWC or NCHW")
def avg_pool_2d(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return avg_pool(ctx, x, _window_from_attrs(node, x, _FORMATS_2D))


@translates("AvgPool3D", note=f"{_PADDING_NOTE}; data_format NDHWC or NCDHW")
def avg_pool_3d(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return avg_pool(ctx, x, _window_from_attrs(node, x, _FORMATS_3D))
