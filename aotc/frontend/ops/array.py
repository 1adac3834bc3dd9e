"""Graph plumbing and array ops: constants, identities, placeholders, reshape, padding,
concatenation and splitting, slicing, transposition, tiling, reversal, depth <-> space.

Shapes are static, so every shape-like input (axes, paddings, sizes, permutations) must be a
compile-time constant; ``ctx.constant_value`` says so clearly when one is not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from aotc.errors import ConfigError, ShapeError, UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.builder import ComputationBuilder
from aotc.hlo.ir import Instruction, PadDim


@translates("Const")
def const(ctx: TranslationContext, node: Node) -> Instruction:
    value = node.tensor_attr("value")
    if value.size > 1 and not any(value.strides):  # a splat stays symbolic: broadcast(scalar)
        scalar = ctx.builder.constant(value[(0,) * value.ndim])
        return ctx.builder.broadcast(scalar, value.shape, ())
    return ctx.builder.constant(value)


@translates("Identity", "StopGradient", "Snapshot", "PreventGradient")
def identity(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return x


@translates("IdentityN")
def identity_n(ctx: TranslationContext, node: Node, *xs: Instruction) -> list[Instruction]:
    return list(xs)


@translates("NoOp", note="has no outputs; what its control inputs reach is checked for effects")
def no_op(ctx: TranslationContext, node: Node) -> list[Instruction]:
    return []


@translates("Placeholder", note="must be a feed")
def placeholder(ctx: TranslationContext, node: Node) -> Instruction:
    raise ConfigError(
        "this Placeholder is needed by the fetches but is not a feed; "
        "add it to 'feeds' in the config"
    )


@translates("PlaceholderWithDefault", note="its default value when not fed")
def placeholder_with_default(
    ctx: TranslationContext, node: Node, default: Instruction
) -> Instruction:
    return default


@translates("Reshape", note="shape from a constant input; one -1 is inferred")
def reshape(ctx: TranslationContext, node: Node, x: Instruction, shape: Instruction) -> Instruction:
    dims = [int(d) for d in ctx.constant_value(shape, "shape input").reshape(-1)]
    return ctx.builder.reshape(x, resolve_reshape_dims(x.array_shape.size, dims))


def resolve_reshape_dims(size: int, dims: list[int]) -> list[int]:
    """Replace a single -1 in ``dims`` by what makes the element count ``size``."""
    unknown = [i for i, d in enumerate(dims) if d == -1]
    if len(unknown) > 1 or any(d < -1 for d in dims):
        raise ShapeError(f"invalid target shape {dims}")
    if unknown:
        known = math.prod(d for d in dims if d != -1)
        if known == 0 or size % known:
            raise ShapeError(f"cannot reshape {size} elements to {dims}")
        dims[unknown[0]] = size // known
    if math.prod(dims) != size:
        raise ShapeError(f"cannot reshape {size} elements to {dims}")
    return dims


# ---- helpers shared by the array op modules --------------------------------------------------


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """A TF axis in ``[-rank, rank)`` as a non-negative dimension number."""
    if not -rank <= axis < rank:
        raise ShapeError(f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def constant_ints(ctx: TranslationContext, x: Instruction, what: str) -> list[int]:
    """A constant input (shape, axes, paddings, ...) as a flat list of Python ints."""
    return [int(v) for v in ctx.constant_value(x, what).reshape(-1)]


def constant_axis(ctx: TranslationContext, x: Instruction, rank: int) -> int:
    values = constant_ints(ctx, x, "axis input")
    if len(values) != 1:
        raise ShapeError(f"the axis input must hold one value, got {values}")
    return normalize_axis(values[0], rank)


def slice_dim(
    b: ComputationBuilder, x: Instruction, dim: int, start: int, limit: int
) -> Instruction:
    """``x[..., start:limit, ...]`` along ``dim``."""
    dims = x.array_shape.dims
    starts = [start if d == dim else 0 for d in range(len(dims))]
    limits = [limit if d == dim else n for d, n in enumerate(dims)]
    return b.slice(x, starts, limits)


def reshape_if_needed(b: ComputationBuilder, x: Instruction, dims: Sequence[int]) -> Instruction:
    return x if x.array_shape.dims == tuple(dims) else b.reshape(x, dims)


# ---- padding and concatenation ---------------------------------------------------------------


def _paddings(ctx: TranslationContext, x: Instruction, paddings: Instruction) -> list[list[int]]:
    values = ctx.constant_value(paddings, "paddings input")
    rank = x.array_shape.rank
    if values.shape != (rank, 2) or (values < 0).any():
        raise ShapeError(f"paddings must be a [{rank}, 2] array of non-negative values")
    return values.astype(int).tolist()


@translates("Pad", note="constant paddings; pads with zeros")
def pad(ctx: TranslationContext, node: Node, x: Instruction, paddings: Instruction) -> Instruction:
    dims = [PadDim(lo, hi) for lo, hi in _paddings(ctx, x, paddings)]
    return ctx.builder.pad(x, ctx.scalar(0, x.array_shape.dtype), dims)


@translates("PadV2", note="constant paddings; the pad value may be computed")
def pad_v2(
    ctx: TranslationContext, node: Node, x: Instruction, paddings: Instruction, value: Instruction
) -> Instruction:
    dims = [PadDim(lo, hi) for lo, hi in _paddings(ctx, x, paddings)]
    return ctx.builder.pad(x, reshape_if_needed(ctx.builder, value, []), dims)


@translates("MirrorPad", note="constant paddings; mode REFLECT or SYMMETRIC")
def mirror_pad(
    ctx: TranslationContext, node: Node, x: Instruction, paddings: Instruction
) -> Instruction:
    mode = node.str_attr("mode")
    if mode not in ("REFLECT", "SYMMETRIC"):
        raise UnsupportedError(f"MirrorPad mode {mode!r} is not supported")
    skip = 1 if mode == "REFLECT" else 0  # REFLECT leaves out the edge element itself
    for dim, (low, high) in enumerate(_paddings(ctx, x, paddings)):
        n = x.array_shape.dims[dim]
        if max(low, high) + skip > n:
            raise ShapeError(f"{mode} padding {low},{high} is too large for dimension {n}")
        x = _mirror_dim(ctx.builder, x, dim, low, high, skip)
    return x


def _mirror_dim(
    b: ComputationBuilder, x: Instruction, dim: int, low: int, high: int, skip: int
) -> Instruction:
    """Concatenate the reversed edges of ``x`` along ``dim`` on both sides."""
    n = x.array_shape.dims[dim]
    left = b.reverse(slice_dim(b, x, dim, skip, skip + low), [dim]) if low else None
    right = b.reverse(slice_dim(b, x, dim, n - skip - high, n - skip), [dim]) if high else None
    parts = [p for p in (left, x, right) if p is not None]
    return parts[0] if len(parts) == 1 else b.concatenate(parts, dim)


def concat(
    ctx: TranslationContext, values: Sequence[Instruction], axis: Instruction
) -> Instruction:
    if not values:
        raise ShapeError("needs at least one value to concatenate besides the axis")
    dim = constant_axis(ctx, axis, values[0].array_shape.rank)
    return values[0] if len(values) == 1 else ctx.builder.concatenate(values, dim)


@translates("ConcatV2", note="constant axis (may be negative)")
def concat_v2(
    ctx: TranslationContext, node: Node, first: Instruction, *rest: Instruction
) -> Instruction:
    *values, axis = first, *rest
    return concat(ctx, values, axis)


@translates("Concat", note="constant axis (may be negative)")
def concat_v1(
    ctx: TranslationContext, node: Node, axis: Instruction, *values: Instruction
) -> Instruction:
    return concat(ctx, values, axis)


@translates("Pack", note="axis may be negative")
def pack(
    ctx: TranslationContext, node: Node, first: Instruction, *rest: Instruction
) -> Instruction:
    values = (first, *rest)
    dims = first.array_shape.dims
    axis = normalize_axis(node.int_attr("axis", 0), len(dims) + 1)
    expanded = [*dims[:axis], 1, *dims[axis:]]
    parts = [ctx.builder.reshape(v, expanded) for v in values]
    return parts[0] if len(parts) == 1 else ctx.builder.concatenate(parts, axis)


@translates("Unpack", note="axis may be negative")
def unpack(ctx: TranslationContext, node: Node, x: Instruction) -> list[Instruction]:
    dims = x.array_shape.dims
    axis = normalize_axis(node.int_attr("axis", 0), len(dims))
    kept = [n for d, n in enumerate(dims) if d != axis]
    b = ctx.builder
    return [b.reshape(slice_dim(b, x, axis, i, i + 1), kept) for i in range(dims[axis])]


def split_sizes(
    b: ComputationBuilder, x: Instruction, dim: int, sizes: Sequence[int]
) -> list[Instruction]:
    """Consecutive slices of ``x`` along ``dim`` with the given sizes."""
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return [slice_dim(b, x, dim, s, s + n) for s, n in zip(starts, sizes, strict=True)]


@translates("Split", note="constant axis; equal parts")
def split(
    ctx: TranslationContext, node: Node, axis: Instruction, x: Instruction
) -> list[Instruction]:
    dim = constant_axis(ctx, axis, x.array_shape.rank)
    count, n = node.int_attr("num_split"), x.array_shape.dims[dim]
    if count <= 0 or n % count:
        raise ShapeError(f"cannot split dimension {dim} of size {n} into {count} equal parts")
    return split_sizes(ctx.builder, x, dim, [n // count] * count)


@translates("SplitV", note="constant sizes (one may be -1) and axis")
def split_v(
    ctx: TranslationContext, node: Node, x: Instruction, sizes: Instruction, axis: Instruction
) -> list[Instruction]:
    dim = constant_axis(ctx, axis, x.array_shape.rank)
    n = x.array_shape.dims[dim]
    return split_sizes(
        ctx.builder, x, dim, resolve_sizes(n, constant_ints(ctx, sizes, "size_splits"))
    )


def resolve_sizes(total: int, sizes: list[int]) -> list[int]:
    """Replace one -1 in ``sizes`` by what makes them add up to ``total``."""
    unknown = [i for i, s in enumerate(sizes) if s == -1]
    known = sum(s for s in sizes if s != -1)
    if len(unknown) > 1 or any(s < -1 for s in sizes) or known > total:
        raise ShapeError(f"sizes {sizes} do not split a dimension of {total}")
    if unknown:
        sizes[unknown[0]] = total - known
    if sum(sizes) != total:
        raise ShapeError(f"sizes {sizes} do not add up to {total}")
    return sizes


# ---- slicing, reshaping, reordering ----------------------------------------------------------


@translates("Slice", note="constant begin and size (size -1: to the end)")
def slice_op(
    ctx: TranslationContext, node: Node, x: Instruction, begin: Instruction, size: Instruction
) -> Instruction:
    dims = x.array_shape.dims
    starts = constant_ints(ctx, begin, "begin input")
    sizes = constant_ints(ctx, size, "size input")
    if not len(starts) == len(sizes) == len(dims):
        raise ShapeError(f"begin {starts} and size {sizes} must have one value per dimension")
    limits = [n if s == -1 else b + s for b, s, n in zip(starts, sizes, dims, strict=True)]
    if any(not 0 <= b <= lim <= n for b, lim, n in zip(starts, limits, dims, strict=True)):
        raise ShapeError(f"slice begin {starts} size {sizes} is out of bounds of {list(dims)}")
    return ctx.builder.slice(x, starts, limits)


@translates("Squeeze", note="squeeze_dims (may be negative), or every dimension of size 1")
def squeeze(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    dims = x.array_shape.dims
    axes = node.ints_attr("squeeze_dims", [])
    chosen = {normalize_axis(a, len(dims)) for a in axes} or {
        d for d, n in enumerate(dims) if n == 1
    }
    if any(dims[d] != 1 for d in chosen):
        raise ShapeError(f"cannot squeeze dimensions {sorted(chosen)} of {list(dims)}")
    return reshape_if_needed(ctx.builder, x, [n for d, n in enumerate(dims) if d not in chosen])


@translates("ExpandDims", note="constant axis (may be negative)")
def expand_dims(
    ctx: TranslationContext, node: Node, x: Instruction, axis: Instruction
) -> Instruction:
    dims = x.array_shape.dims
    dim = constant_axis(ctx, axis, len(dims) + 1)
    return ctx.builder.reshape(x, [*dims[:dim], 1, *dims[dim:]])


@translates("Transpose", note="constant permutation")
def transpose(
    ctx: TranslationContext, node: Node, x: Instruction, perm: Instruction
) -> Instruction:
    permutation = constant_ints(ctx, perm, "perm input")
    rank = x.array_shape.rank
    permutation = [normalize_axis(p, rank, "perm entry") for p in permutation]
    if permutation == list(range(rank)):
        return x
    return ctx.builder.transpose(x, permutation)


@translates("Tile", note="constant multiples")
def tile(
    ctx: TranslationContext, node: Node, x: Instruction, multiples: Instruction
) -> Instruction:
    # Broadcast [d0, d1] to [m0, d0, m1, d1], then merge each pair: row-major order makes the
    # copies of each dimension consecutive, exactly as tiling does.
    dims = x.array_shape.dims
    counts = constant_ints(ctx, multiples, "multiples input")
    if len(counts) != len(dims) or any(m < 0 for m in counts):
        raise ShapeError(f"multiples {counts} must be {len(dims)} non-negative values")
    if all(m == 1 for m in counts):
        return x
    pairs = [n for m, d in zip(counts, dims, strict=True) for n in (m, d)]
    wide = ctx.builder.broadcast(x, pairs, list(range(1, 2 * len(dims), 2)))
    return ctx.builder.reshape(wide, [m * d for m, d in zip(counts, dims, strict=True)])


@translates("BroadcastTo", note="constant shape; numpy broadcasting rules")
def broadcast_to(
    ctx: TranslationContext, node: Node, x: Instruction, shape: Instruction
) -> Instruction:
    dims = constant_ints(ctx, shape, "shape input")
    rank = max(len(dims), x.array_shape.rank)
    x = reshape_if_needed(
        ctx.builder, x, [1] * (rank - x.array_shape.rank) + list(x.array_shape.dims)
    )
    return ctx.broadcast_to(x, [1] * (rank - len(dims)) + dims)


@translates("ReverseV2", note="constant axes (may be negative)")
def reverse_v2(
    ctx: TranslationContext, node: Node, x: Instruction, axis: Instruction
) -> Instruction:
    rank = x.array_shape.rank
    dims = sorted({normalize_axis(a, rank) for a in constant_ints(ctx, axis, "axis input")})
    return ctx.builder.reverse(x, dims) if dims else x


@translates("Reverse", note="constant bool mask of dimensions")
def reverse_v1(
    ctx: TranslationContext, node: Node, x: Instruction, mask: Instruction
) -> Instruction:
    flags = constant_ints(ctx, mask, "dims input")
    if len(flags) != x.array_shape.rank:
        raise ShapeError(f"dims {flags} needs one flag per dimension of {x.shape}")
    dims = [d for d, flag in enumerate(flags) if flag]
    return ctx.builder.reverse(x, dims) if dims else x


# ---- depth <-> space -------------------------------------------------------------------------


def _block_size(node: Node, dims: tuple[int, ...]) -> int:
    if node.str_attr("data_format", "NHWC") != "NHWC" or len(dims) != 4:
        raise UnsupportedError(f"{node.op} supports 4-d NHWC inputs only, got {list(dims)}")
    block = node.int_attr("block_size")
    if block < 2:
        raise ShapeError(f"block_size {block} must be at least 2")
    return block


@translates("DepthToSpace", note="NHWC")
def depth_to_space(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    s = _block_size(node, x.array_shape.dims)
    n, h, w, c = x.array_shape.dims
    if c % (s * s):
        raise ShapeError(f"depth {c} is not divisible by block_size {s} squared")
    b = ctx.builder
    blocks = b.reshape(x, [n, h, w, s, s, c // (s * s)])
    moved = b.transpose(blocks, [0, 1, 3, 2, 4, 5])  # [n, h, s, w, s, c']
    return b.reshape(moved, [n, h * s, w * s, c // (s * s)])


@translates("SpaceToDepth", note="NHWC")
def space_to_depth(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    s = _block_size(node, x.array_shape.dims)
    n, h, w, c = x.array_shape.dims
    if h % s or w % s:
        raise ShapeError(f"height {h} and width {w} must be divisible by block_size {s}")
    b = ctx.builder
    blocks = b.reshape(x, [n, h // s, s, w // s, s, c])
    moved = b.transpose(blocks, [0, 1, 3, 2, 4, 5])  # [n, h', w', s, s, c]
    return b.reshape(moved, [n, h // s, w // s, s * s * c])
