"""Indexing with runtime indices: GatherV2, GatherNd (HLO ``gather``) and OneHot.

Indices TF would reject as out of range are clamped into range by ``gather`` (XLA's rule), so a
compiled model never reads outside its buffers; such inputs are errors in TF anyway.
"""

from __future__ import annotations

from aotc.errors import ShapeError, UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.array import constant_axis, constant_ints, normalize_axis
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.ir import ComparisonDirection, GatherAttrs, Instruction
from aotc.hlo.shape import PrimitiveType, Shape


def gather_axis_attrs(params: Shape, indices: Shape, axis: int, batch_dims: int) -> GatherAttrs:
    """``params[b..., indices[b..., i...], j...]``: one index per slice along ``axis``.

    The first ``batch_dims`` dims of params and indices are batching dims of each other; the
    output is params' dims before ``axis``, then indices' non-batch dims, then the rest.
    """
    if not 0 <= batch_dims <= min(axis, indices.rank):
        raise ShapeError(f"batch_dims {batch_dims} must be between 0 and min(axis, indices rank)")
    if params.dims[:batch_dims] != indices.dims[:batch_dims]:
        raise ShapeError(f"batch dims of {params} and {indices} differ")
    batch = tuple(range(batch_dims))
    gathered = indices.rank - batch_dims
    sizes = tuple(1 if d == axis or d < batch_dims else n for d, n in enumerate(params.dims))
    out_rank = params.rank - 1 + gathered
    offsets = (*range(batch_dims, axis), *range(axis + gathered, out_rank))
    return GatherAttrs(offsets, (axis,), (axis,), indices.rank, sizes, batch, batch)


@translates("GatherV2", note="constant axis and batch_dims (may be negative); runtime indices")
def gather_v2(
    ctx: TranslationContext,
    node: Node,
    params: Instruction,
    indices: Instruction,
    axis: Instruction,
) -> Instruction:
    p, i = params.array_shape, indices.array_shape
    dim = constant_axis(ctx, axis, p.rank)
    batch_dims = node.int_attr("batch_dims", 0)
    batch_dims = batch_dims + i.rank if batch_dims < 0 else batch_dims
    return ctx.builder.gather(params, indices, gather_axis_attrs(p, i, dim, batch_dims))


@translates("Gather", note="runtime indices into dimension 0")
def gather_v1(
    ctx: TranslationContext, node: Node, params: Instruction, indices: Instruction
) -> Instruction:
    attrs = gather_axis_attrs(params.array_shape, indices.array_shape, 0, 0)
    return ctx.builder.gather(params, indices, attrs)


@translates("GatherNd", note="runtime indices; batch_dims 0")
def gather_nd(
    ctx: TranslationContext, node: Node, params: Instruction, indices: Instruction
) -> Instruction:
    if node.int_attr("batch_dims", 0) != 0:
        raise UnsupportedError("GatherNd with batch_dims is not supported")
    p, i = params.array_shape, indices.array_shape
    depth = i.dims[-1] if i.rank else 0
    if i.rank == 0 or depth > p.rank:
        raise ShapeError(f"GatherNd indices {i} need a last dimension of at most {p.rank}")
    indexed = tuple(range(depth))
    sizes = (1,) * depth + p.dims[depth:]
    offsets = tuple(range(i.rank - 1, i.rank - 1 + p.rank - depth))
    return ctx.builder.gather(
        params, indices, GatherAttrs(offsets, indexed, indexed, i.rank - 1, sizes)
    )


@translates("OneHot", note="constant depth; axis may be -1; on/off values may be computed")
def one_hot(
    ctx: TranslationContext,
    node: Node,
    indices: Instruction,
    depth: Instruction,
    on_value: Instruction,
    off_value: Instruction,
) -> Instruction:
    b, dims = ctx.builder, indices.array_shape.dims
    if indices.array_shape.dtype not in (PrimitiveType.S32, PrimitiveType.S64):
        indices = b.convert(indices, PrimitiveType.S64)  # so the iota cannot wrap (uint8)
    counts = constant_ints(ctx, depth, "depth input")
    if len(counts) != 1:
        raise ShapeError(f"the depth input must hold one value, got {len(counts)}")
    (count,) = counts
    axis = normalize_axis(node.int_attr("axis", -1), len(dims) + 1)
    out = [*dims[:axis], count, *dims[axis:]]
    kept = [d for d in range(len(out)) if d != axis]
    # Negative or too-large indices match no position of the iota: the row is all off_value.
    hit = b.compare(
        b.iota(indices.array_shape.with_dims(tuple(out)), axis),
        b.broadcast(indices, out, kept),
        ComparisonDirection.EQ,
    )
    on, off = (b.broadcast(b.reshape(v, []), out, []) for v in (on_value, off_value))
    return b.select(hit, on, off)
