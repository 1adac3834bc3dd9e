"""StridedSlice: TF's canonicalisation of begin/end/strides and the five masks, then HLO.

The rules are TensorFlow's (``ValidateStridedSliceOp`` in ``strided_slice_op.cc``): the sparse
spec (one entry per begin value, plus an implicit ellipsis at the end when there is none) is
expanded into a dense spec with one entry per input dimension, each entry's begin and end are
canonicalised (masks, negative values, clamping), and the final shape drops shrunk dimensions
and inserts new axes. The result is a ``slice`` (positive strides), a ``reverse`` of the
dimensions read with negative strides, and a ``reshape`` to the final shape.
"""

from __future__ import annotations

from dataclasses import dataclass

from aotc.errors import ShapeError
from aotc.frontend.node import Node
from aotc.frontend.ops.array import constant_ints, reshape_if_needed
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.builder import ComputationBuilder
from aotc.hlo.ir import Instruction

_NEW_AXIS = -1  # entries of the final-shape list that are not dense dimension numbers
_SHRINK = -2


@dataclass(frozen=True)
class StridedSliceSpec:
    """The inputs and attributes of a TF StridedSlice, as given (the sparse spec)."""

    begin: tuple[int, ...]
    end: tuple[int, ...]
    strides: tuple[int, ...]
    begin_mask: int = 0
    end_mask: int = 0
    ellipsis_mask: int = 0
    new_axis_mask: int = 0
    shrink_axis_mask: int = 0


@dataclass(frozen=True)
class _DenseDim:
    begin: int
    end: int
    stride: int
    begin_masked: bool
    end_masked: bool
    shrink: bool


@dataclass(frozen=True)
class SliceDim:
    """What one input dimension contributes: elements ``start + j * stride``, j < ``size``."""

    start: int
    size: int
    stride: int


@dataclass(frozen=True)
class SlicePlan:
    dims: tuple[SliceDim, ...]  # one per input dimension
    final_dims: tuple[int, ...]  # the result's shape


def _bit(mask: int, i: int) -> bool:
    return bool(mask >> i & 1)


def plan_strided_slice(input_dims: tuple[int, ...], spec: StridedSliceSpec) -> SlicePlan:
    """Canonicalise ``spec`` against ``input_dims`` exactly as TF does."""
    if not len(spec.begin) == len(spec.end) == len(spec.strides):
        raise ShapeError("begin, end and strides must have the same length")
    dense, final = _dense_spec(len(input_dims), spec)
    dims = tuple(
        _canonical(d, n, i) for i, (d, n) in enumerate(zip(dense, input_dims, strict=True))
    )
    shape = [1 if f == _NEW_AXIS else dims[f].size for f in final if f != _SHRINK]
    return SlicePlan(dims, tuple(shape))


def _dense_spec(rank: int, spec: StridedSliceSpec) -> tuple[list[_DenseDim], list[int]]:
    """One entry per input dimension, and the final shape as dense dims / new axes / shrinks."""
    count, ellipsis = len(spec.begin), spec.ellipsis_mask
    positions = [i for i in range(count) if _bit(ellipsis, i)]
    if len(positions) > 1:
        raise ShapeError("StridedSlice allows at most one ellipsis")
    if not positions:  # an implicit ellipsis at the end covers the remaining dimensions
        ellipsis |= 1 << count
        count += 1
    new_after = sum(
        _bit(spec.new_axis_mask, i) for i in range(positions[0] + 1 if positions else count, count)
    )
    dense: list[_DenseDim] = []
    final: list[int] = []
    for i in range(count):
        if _bit(ellipsis, i):
            stop = min(rank - (count - i) + 1 + new_after, rank)
            while len(dense) < stop:
                final.append(len(dense))
                dense.append(_DenseDim(0, 0, 1, True, True, False))
        elif _bit(spec.new_axis_mask, i):
            final.append(_NEW_AXIS)
        else:
            if len(dense) == rank:
                raise ShapeError(f"the slice spec indexes more than the input's {rank} dimensions")
            dense.append(_sparse_entry(spec, i))
            final.append(_SHRINK if dense[-1].shrink else len(dense) - 1)
    return dense, final


def _sparse_entry(spec: StridedSliceSpec, i: int) -> _DenseDim:
    return _DenseDim(
        spec.begin[i],
        spec.end[i],
        spec.strides[i],
        _bit(spec.begin_mask, i),
        _bit(spec.end_mask, i),
        _bit(spec.shrink_axis_mask, i),
    )


def _canonical(d: _DenseDim, n: int, dim: int) -> SliceDim:
    if d.stride == 0:
        raise ShapeError(f"stride of dimension {dim} is 0")
    if d.shrink:
        # TF ignores the masks and end here: x[-1] has begin -1, end 0, both meaningless.
        if d.stride <= 0:
            raise ShapeError("only stride 1 is allowed on an index that shrinks a dimension")
        begin = d.begin + n if d.begin < 0 else d.begin
        if not 0 <= begin < n:
            raise ShapeError(f"index {d.begin} is out of bounds of dimension {dim} of size {n}")
        return SliceDim(begin, 1, 1)
    begin = _canonical_bound(d.begin, d.begin_masked, 0, d.stride, n)
    end = _canonical_bound(d.end, d.end_masked, 1, d.stride, n)
    length = end - begin
    if length == 0 or (length < 0) != (d.stride < 0):
        return SliceDim(0, 0, 1)
    return SliceDim(begin, (abs(length) + abs(d.stride) - 1) // abs(d.stride), d.stride)


def _canonical_bound(x: int, masked: bool, which: int, stride: int, n: int) -> int:
    """TF's ``canonical``: a masked bound is the far end; else wrap negatives and clamp."""
    valid = (0, n) if stride > 0 else (-1, n - 1)
    if masked:
        return valid[which] if stride > 0 else valid[1 - which]
    x = x + n if x < 0 else x
    return min(max(x, valid[0]), valid[1])


def emit_strided_slice(b: ComputationBuilder, x: Instruction, plan: SlicePlan) -> Instruction:
    """``slice`` with positive strides, ``reverse`` where TF's stride is negative, ``reshape``."""
    starts, limits, strides, flipped = [], [], [], []
    for dim, d in enumerate(plan.dims):
        low = d.start if d.stride > 0 else d.start + (d.size - 1) * d.stride
        starts.append(low if d.size else 0)
        limits.append(low + (d.size - 1) * abs(d.stride) + 1 if d.size else 0)
        strides.append(abs(d.stride) if d.size > 1 else 1)
        if d.stride < 0 and d.size > 1:
            flipped.append(dim)
    dims = x.array_shape.dims
    if starts != [0] * len(dims) or limits != list(dims) or any(s != 1 for s in strides):
        x = b.slice(x, starts, limits, strides)
    if flipped:
        x = b.reverse(x, flipped)
    return reshape_if_needed(b, x, plan.final_dims)


_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


@translates(
    "StridedSlice",
    note="constant begin/end/strides; all masks; negative strides",
)
def strided_slice(
    ctx: TranslationContext,
    node: Node,
    x: Instruction,
    begin: Instruction,
    end: Instruction,
    strides: Instruction,
) -> Instruction:
    spec = StridedSliceSpec(
        tuple(constant_ints(ctx, begin, "begin input")),
        tuple(constant_ints(ctx, end, "end input")),
        tuple(constant_ints(ctx, strides, "strides input")),
        *(node.int_attr(mask, 0) for mask in _MASKS),
    )
    return emit_strided_slice(ctx.builder, x, plan_strided_slice(x.array_shape.dims, spec))
