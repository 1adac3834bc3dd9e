"""TensorLists (TF2's ``TensorList*`` ops) and TF1's ``TensorArrayV3`` family as dense buffers.

A list of ``n`` elements of shape ``s`` is one array ``[n, *s]``: getting an item is a
``dynamic-slice`` of one row, setting one a ``dynamic-update-slice`` (which codegen does in
place), stacking is the buffer itself. TensorFlow's ``variant`` value is replaced by that
buffer, so a list carried through a ``While`` is a carry of that shape, and its length and
element shape must be known when it is made: from the reserve or from-tensor node, or the
element shape attribute. A TF1 TensorArray is a resource plus a ``flow`` scalar that orders its
reads and writes; here the flow is the buffer and the handle a placeholder nobody reads.
An index out of range is clamped (XLA's rule); TF would fail on it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aotc.errors import ShapeError, UnsupportedError
from aotc.frontend.list_lengths import RuntimeLength
from aotc.frontend.node import Node
from aotc.frontend.ops.array import constant_ints
from aotc.frontend.ops.gather import gather_axis_attrs
from aotc.frontend.ops.registry import translates
from aotc.frontend.ops.scatter import nd_scatter
from aotc.frontend.translate import TranslationContext
from aotc.hlo.ir import Instruction, Opcode
from aotc.hlo.shape import PrimitiveType

_SCATTER_RULE = "a repeated index: the last wins; one out of range drops its row (XLA)"
ElementDims = tuple[int, ...] | None  # None: rank unknown; -1: a dim unknown


class ListGrows(UnsupportedError):
    """A list of static length grows at run time: a loop carrying it makes it a list of
    run-time length (aotc/frontend/list_lengths.py) and translates its body again."""


# ---- making lists ------------------------------------------------------------------------------


@translates("TensorListReserve", note="constant length; element shape known or written in a loop")
def reserve(
    ctx: TranslationContext, node: Node, element_shape: Instruction, num_elements: Instruction
) -> Instruction:
    length = _length(ctx, num_elements, "num_elements")
    dtype = node.dtype_attr("element_dtype")
    return _new_list(ctx, dtype, length, _element_dims(ctx, element_shape))


@translates("EmptyTensorList", note="grown by TensorListPushBack; in loops up to max_num_elements")
def empty_list(
    ctx: TranslationContext, node: Node, element_shape: Instruction, max_elements: Instruction
) -> Instruction:
    dims = _element_dims(ctx, element_shape)
    known = () if dims is None or -1 in dims else dims
    empty = _zeros(ctx, node.dtype_attr("element_dtype"), (0, *known))
    most = constant_ints(ctx, max_elements, "max_num_elements input")
    return ctx.lists.set_capacity(empty, most[0] if len(most) == 1 and most[0] >= 0 else None)


@translates("TensorListFromTensor")
def from_tensor(
    ctx: TranslationContext, node: Node, tensor: Instruction, element_shape: Instruction
) -> Instruction:
    if not tensor.array_shape.dims:
        raise ShapeError("a TensorList is made from a tensor of rank 1 or more, got a scalar")
    _check_element(tensor, _element_dims(ctx, element_shape))
    return tensor


# ---- reading and writing -----------------------------------------------------------------------


@translates("TensorListGetItem", note="runtime index (clamped into range)")
def get_item(
    ctx: TranslationContext,
    node: Node,
    tensor_list: Instruction,
    index: Instruction,
    element_shape: Instruction,
) -> Instruction:
    return _row(ctx, _shaped(ctx, tensor_list, _element_dims(ctx, element_shape)), index)


@translates("TensorListSetItem", note="runtime index (clamped into range), no resizing")
def set_item(
    ctx: TranslationContext,
    node: Node,
    tensor_list: Instruction,
    index: Instruction,
    item: Instruction,
) -> Instruction:
    held = ctx.lists.runtime(tensor_list)
    resize = node.bool_attr("resize_if_index_out_of_bounds", False)
    if resize and held is None:
        raise ListGrows(
            "resize_if_index_out_of_bounds grows the list at run time; aotc needs its length "
            "bounded statically (give the TensorArray a fixed size)"
        )
    written = _write_row(ctx, _for_item(ctx, tensor_list, item), index, item)
    if held is None:
        return ctx.lists.inherit(written, tensor_list)
    if resize:  # TF grows the list to index + 1 elements
        end = ctx.builder.binary(Opcode.ADD, _index(ctx, index), ctx.scalar(1, PrimitiveType.S32))
        held = held.written(index, ctx.builder.binary(Opcode.MAXIMUM, held.length, end))
    return ctx.lists.set_runtime(written, held)


@translates("TensorListStack", note="the whole list")
def stack(
    ctx: TranslationContext, node: Node, tensor_list: Instruction, element_shape: Instruction
) -> Instruction:
    tensor_list = _shaped(ctx, tensor_list, _element_dims(ctx, element_shape))
    count = node.int_attr("num_elements", -1)
    length = tensor_list.array_shape.dims[0]
    if ctx.lists.runtime(tensor_list) is not None:
        raise ShapeError(
            f"the list's length is known only at run time (at most {length} elements) and "
            "aotc needs static shapes: stack it after a loop of a constant trip count"
        )
    if count not in (-1, length):
        raise ShapeError(f"num_elements is {count}, but the list holds {length}")
    return tensor_list


@translates("TensorListLength")
def length(ctx: TranslationContext, node: Node, tensor_list: Instruction) -> Instruction:
    held = ctx.lists.runtime(tensor_list)
    if held is not None:
        return held.length
    return ctx.scalar(tensor_list.array_shape.dims[0], PrimitiveType.S32)


@translates("TensorListElementShape")
def element_shape(ctx: TranslationContext, node: Node, tensor_list: Instruction) -> Instruction:
    dtype = node.dtype_attr("shape_type", np.dtype(np.int32))
    dims = _shaped(ctx, tensor_list, None).array_shape.dims[1:]
    return ctx.builder.constant(np.array(dims, dtype))


@translates("TensorListPushBack", note="in loops: max_num_elements or a constant trip count")
def push_back(
    ctx: TranslationContext, node: Node, tensor_list: Instruction, item: Instruction
) -> Instruction:
    held = ctx.lists.runtime(tensor_list)
    if held is not None:
        written = _write_row(ctx, _for_item(ctx, tensor_list, item), held.length, item)
        return ctx.lists.set_runtime(written, _moved(ctx, held, 1))
    row = ctx.builder.reshape(item, (1, *item.array_shape.dims))
    if tensor_list.array_shape.dims[0] == 0:  # an empty list takes the first item's shape
        return ctx.lists.inherit(row, tensor_list)
    _check_element(tensor_list, item.array_shape.dims)
    return ctx.lists.inherit(ctx.builder.concatenate([tensor_list, row], 0), tensor_list)


@translates("TensorListPopBack", note="in loops: max_num_elements or a constant trip count")
def pop_back(
    ctx: TranslationContext, node: Node, tensor_list: Instruction, element_shape: Instruction
) -> list[Instruction]:
    held = ctx.lists.runtime(tensor_list)
    tensor_list = _shaped(ctx, tensor_list, _element_dims(ctx, element_shape))
    if held is not None:
        moved = _moved(ctx, held, -1)
        rest = ctx.builder.reshape(tensor_list, tensor_list.array_shape.dims)  # a new value
        return [ctx.lists.set_runtime(rest, moved), _row(ctx, tensor_list, moved.length)]
    dims = tensor_list.array_shape.dims
    if dims[0] == 0:
        raise ShapeError("TensorListPopBack on an empty list")
    last = ctx.builder.slice(tensor_list, [dims[0] - 1, *[0] * (len(dims) - 1)], dims)
    rest = ctx.builder.slice(tensor_list, [0] * len(dims), [dims[0] - 1, *dims[1:]])
    return [ctx.lists.inherit(rest, tensor_list), ctx.builder.reshape(last, dims[1:])]


def _moved(ctx: TranslationContext, held: RuntimeLength, step: int) -> RuntimeLength:
    """``held`` after a push (``step`` 1) or a pop (-1)."""
    length = ctx.builder.binary(Opcode.ADD, held.length, ctx.scalar(step, PrimitiveType.S32))
    return held.moved(length, step)


# ---- TF1 TensorArrayV3: the flow is the buffer ----------------------------------------------


@translates("TensorArrayV3", note="constant size, no dynamic_size")
def tensor_array(ctx: TranslationContext, node: Node, size: Instruction) -> list[Instruction]:
    if node.bool_attr("dynamic_size", False):
        raise UnsupportedError(
            "dynamic_size grows the TensorArray at run time; aotc needs its size static"
        )
    length = _length(ctx, size, "size")
    flow = _new_list(ctx, node.dtype_attr("dtype"), length, node.attr("element_shape", None))
    return [_handle(ctx), flow]


@translates("TensorArrayReadV3", note="runtime index (clamped into range)")
def array_read(
    ctx: TranslationContext, node: Node, handle: Instruction, index: Instruction, flow: Instruction
) -> Instruction:
    return _row(ctx, _shaped(ctx, flow, None), index)


@translates("TensorArrayWriteV3", note="runtime index (clamped into range)")
def array_write(
    ctx: TranslationContext,
    node: Node,
    handle: Instruction,
    index: Instruction,
    value: Instruction,
    flow: Instruction,
) -> Instruction:
    return _write_row(ctx, _for_item(ctx, flow, value), index, value)


@translates("TensorArrayScatterV3", note=f"runtime indices; {_SCATTER_RULE}")
def array_scatter(
    ctx: TranslationContext,
    node: Node,
    handle: Instruction,
    indices: Instruction,
    value: Instruction,
    flow: Instruction,
) -> Instruction:
    return _scatter_rows(ctx, _shaped(ctx, flow, value.array_shape.dims[1:]), indices, value)


@translates("TensorArrayGatherV3", note="runtime indices (clamped into range)")
def array_gather(
    ctx: TranslationContext,
    node: Node,
    handle: Instruction,
    indices: Instruction,
    flow: Instruction,
) -> Instruction:
    return _gather_rows(ctx, _shaped(ctx, flow, node.attr("element_shape", None)), indices)


@translates("TensorListGather", note="runtime indices (clamped into range)")
def list_gather(
    ctx: TranslationContext,
    node: Node,
    tensor_list: Instruction,
    indices: Instruction,
    element_shape: Instruction,
) -> Instruction:
    tensor_list = _shaped(ctx, tensor_list, _element_dims(ctx, element_shape))
    return _gather_rows(ctx, tensor_list, indices)


@translates("TensorListScatterIntoExistingList", note=f"runtime indices; {_SCATTER_RULE}")
def scatter_into_list(
    ctx: TranslationContext,
    node: Node,
    tensor_list: Instruction,
    tensor: Instruction,
    indices: Instruction,
) -> Instruction:
    held = ctx.lists.runtime(tensor_list)
    tensor_list = _shaped(ctx, tensor_list, tensor.array_shape.dims[1:])
    written = _scatter_rows(ctx, tensor_list, indices, tensor)
    return ctx.lists.set_runtime(written, held) if held is not None else written


@translates("TensorListScatter", note=f"constant length; {_SCATTER_RULE}")
def scatter_list(
    ctx: TranslationContext,
    node: Node,
    tensor: Instruction,
    indices: Instruction,
    element_shape: Instruction,
) -> Instruction:
    return _scattered_list(ctx, tensor, indices, element_shape, -1)


@translates("TensorListScatterV2", note=f"constant length; {_SCATTER_RULE}")
def scatter_list_v2(
    ctx: TranslationContext,
    node: Node,
    tensor: Instruction,
    indices: Instruction,
    element_shape: Instruction,
    num_elements: Instruction,
) -> Instruction:
    count = _length(ctx, num_elements, "num_elements") if _is_given(ctx, num_elements) else -1
    return _scattered_list(ctx, tensor, indices, element_shape, count)


def _is_given(ctx: TranslationContext, num_elements: Instruction) -> bool:
    """Whether a ``num_elements`` input says a length (-1: the indices do)."""
    return constant_ints(ctx, num_elements, "num_elements input (the list's length)") != [-1]


def _scattered_list(
    ctx: TranslationContext,
    tensor: Instruction,
    indices: Instruction,
    element_shape: Instruction,
    count: int,
) -> Instruction:
    """A new list of ``count`` elements (-1: one past the largest index) holding the rows of
    ``tensor`` at ``indices``."""
    _check_element(tensor, _element_dims(ctx, element_shape))
    if count < 0:
        rows = constant_ints(ctx, indices, "indices input (they give the list's length)")
        count = max(rows, default=-1) + 1
    empty = _zeros(ctx, tensor.array_shape.dtype.numpy, (count, *tensor.array_shape.dims[1:]))
    return _scatter_rows(ctx, empty, indices, tensor)


def _gather_rows(ctx: TranslationContext, buffer: Instruction, indices: Instruction) -> Instruction:
    count = buffer.array_shape.dims[0]
    if _is_range(ctx, indices, count):
        return buffer
    attrs = gather_axis_attrs(buffer.array_shape, indices.array_shape, 0, 0)
    return ctx.builder.gather(buffer, indices, attrs)


def _scatter_rows(
    ctx: TranslationContext, buffer: Instruction, indices: Instruction, rows: Instruction
) -> Instruction:
    """``buffer`` with element ``indices[k]`` set to ``rows[k]`` (HLO ``scatter``)."""
    count, dims = indices.array_shape.dims, rows.array_shape.dims
    if len(count) != 1 or dims[:1] != count:
        raise ShapeError(f"{rows.shape} does not hold one element for each of indices {count}")
    _check_element(buffer, dims[1:])
    if rows.array_shape.dtype is not buffer.array_shape.dtype:
        raise ShapeError(f"elements of {rows.shape} do not fit a list of {buffer.shape}")
    if rows.shape == buffer.shape and _is_range(ctx, indices, dims[0]):
        return rows  # the usual unstack: every element, in order
    vectors = ctx.builder.reshape(indices, (dims[0], 1))
    return nd_scatter(ctx, None, buffer, vectors, rows)


@translates("TensorArraySizeV3")
def array_size(
    ctx: TranslationContext, node: Node, handle: Instruction, flow: Instruction
) -> Instruction:
    return ctx.scalar(flow.array_shape.dims[0], PrimitiveType.S32)


@translates("TensorArrayCloseV3", note="has no outputs")
def array_close(ctx: TranslationContext, node: Node, handle: Instruction) -> list[Instruction]:
    return []


# ---- helpers -----------------------------------------------------------------------------------


def _row(ctx: TranslationContext, buffer: Instruction, index: Instruction) -> Instruction:
    """``buffer[index]``, one element of the list."""
    dims = buffer.array_shape.dims
    starts = [_index(ctx, index), *[ctx.scalar(0, PrimitiveType.S32)] * (len(dims) - 1)]
    row = ctx.builder.dynamic_slice(buffer, starts, [1, *dims[1:]])
    return ctx.builder.reshape(row, dims[1:])


def _write_row(
    ctx: TranslationContext, buffer: Instruction, index: Instruction, item: Instruction
) -> Instruction:
    """``buffer`` with ``buffer[index] = item``."""
    dims = buffer.array_shape.dims
    _check_element(buffer, item.array_shape.dims)
    if item.array_shape.dtype is not buffer.array_shape.dtype:
        raise ShapeError(f"an item of {item.shape} does not fit a list of {buffer.shape}")
    row = ctx.builder.reshape(item, [1, *dims[1:]])
    starts = [_index(ctx, index), *[ctx.scalar(0, PrimitiveType.S32)] * (len(dims) - 1)]
    return ctx.builder.dynamic_update_slice(buffer, row, starts)


def _index(ctx: TranslationContext, index: Instruction) -> Instruction:
    shape = index.array_shape
    if shape.dims:
        raise ShapeError(f"the index must be a scalar, got {shape}")
    if shape.dtype is PrimitiveType.S32:
        return index
    return ctx.builder.convert(index, PrimitiveType.S32)


def _is_range(ctx: TranslationContext, indices: Instruction, count: int) -> bool:
    """Whether ``indices`` is the constant ``0, 1, ..., count - 1``."""
    if indices.array_shape.dims != (count,) or _depends_on_feed(indices):
        return False
    return constant_ints(ctx, indices, "indices input") == list(range(count))


def _depends_on_feed(value: Instruction) -> bool:
    stack, seen = [value], {id(value)}
    while stack:
        inst = stack.pop()
        if inst.opcode is Opcode.PARAMETER:
            return True
        for op in inst.operands:
            if id(op) not in seen:
                seen.add(id(op))
                stack.append(op)
    return False


def _new_list(
    ctx: TranslationContext, dtype: np.dtype, length: int, dims: ElementDims
) -> Instruction:
    """An empty list of ``length`` elements; without a known element shape a placeholder
    (``[length]``) that the first write, or a read naming the shape, makes dense."""
    if dims is not None and -1 not in dims:
        return _zeros(ctx, dtype, (length, *dims))
    return ctx.mark_unshaped(_zeros(ctx, dtype, (length,)))


def _for_item(ctx: TranslationContext, tensor_list: Instruction, item: Instruction) -> Instruction:
    """The list an ``item`` is written to: one of unknown element shape takes the item's."""
    if not ctx.is_unshaped(tensor_list):
        return tensor_list
    length = tensor_list.array_shape.dims[0]
    return _zeros(ctx, item.array_shape.dtype.numpy, (length, *item.array_shape.dims))


def _shaped(ctx: TranslationContext, tensor_list: Instruction, dims: ElementDims) -> Instruction:
    """The list read with element shape ``dims`` (checked); an unwritten list of unknown
    element shape is zeros of ``dims`` when they are fully known, as in TensorFlow."""
    if not ctx.is_unshaped(tensor_list):
        _check_element(tensor_list, dims)
        return tensor_list
    if dims is None or -1 in dims:
        shown = "of unknown rank" if dims is None else str(list(dims))
        raise ShapeError(
            f"the element shape of the list is {shown} and nothing written to it before "
            "says more; aotc needs it static (give the TensorArray an element_shape)"
        )
    dtype = tensor_list.array_shape.dtype.numpy
    return _zeros(ctx, dtype, (tensor_list.array_shape.dims[0], *dims))


def _zeros(ctx: TranslationContext, dtype: np.dtype, dims: Sequence[int]) -> Instruction:
    zero = ctx.scalar(0, PrimitiveType.from_numpy(dtype))
    return ctx.builder.broadcast(zero, dims, [])


def _length(ctx: TranslationContext, count: Instruction, what: str) -> int:
    values = constant_ints(ctx, count, f"{what} input (the list's length)")
    if len(values) != 1 or values[0] < 0:
        raise ShapeError(f"the {what} must be one length of 0 or more, got {values}")
    return values[0]


def _element_dims(ctx: TranslationContext, element_shape: Instruction) -> ElementDims:
    """The element shape input: a scalar -1 for an unknown rank, else dims (-1 unknown)."""
    dims = constant_ints(ctx, element_shape, "element_shape input")
    return None if element_shape.array_shape.rank == 0 else tuple(dims)


def _check_element(buffer: Instruction, dims: ElementDims) -> None:
    """``dims`` (from an attribute or input, -1 unknown) agrees with the buffer's elements."""
    have = buffer.array_shape.dims[1:]
    if dims is None:
        return
    if len(dims) != len(have) or any(d not in (-1, h) for d, h in zip(dims, have, strict=True)):
        raise ShapeError(f"element shape {list(dims)} does not match the list's {list(have)}")


def _handle(ctx: TranslationContext) -> Instruction:
    return ctx.scalar(0, PrimitiveType.S32)
