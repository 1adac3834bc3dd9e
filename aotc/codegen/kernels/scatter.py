"""The scatter kernel: the update computation applied window by window, in index order.

The operands are first copied to the outputs, unless buffer assignment made operand 0's buffer
the output's (``KernelIO.aliased``: the operand dies here), when only the windows are touched.
Then, for every position of the updates' scatter dims in row-major order, the window start is
read from the indices; a window not wholly inside the operand is skipped (XLA's CPU and GPU
backends skip it, and so does the evaluator), so no index value makes the kernel write
outside its buffer. Inside a window, each element is folded with the ``to_apply`` computation
(inlined on register values) from the output's current value and the update's. Updates are
applied in order, so repeated indices fold in index order, as in the evaluator.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from aotc.codegen.irtypes import add_nuw, i64, load_element, store_element
from aotc.codegen.kernels.base import KernelIO
from aotc.codegen.kernels.elemental import emit_scalar_computation, emit_store_loop
from aotc.codegen.kernels.scalar_ops import convert
from aotc.codegen.loops import loop_nest
from aotc.hlo.ir import ScatterAttrs
from aotc.hlo.memory import output_shapes
from aotc.hlo.shape import PrimitiveType
from aotc.hlo.shape_inference import scatter_window_operand_dims


def emit_scatter_kernel(b: ir.IRBuilder, io: KernelIO) -> None:
    inst, shapes = io.inst, output_shapes(io.inst)
    n = len(shapes)
    if 0 not in io.aliased:
        for value, out, shape in zip(io.operands[:n], io.outputs, shapes, strict=True):
            emit_store_loop(b, value, out, shape)
    s = inst.attrs_as(ScatterAttrs)
    update = inst.operands[n + 1].array_shape
    scatter_dims = [d for d in range(update.rank) if d not in s.update_window_dims]
    targets = scatter_window_operand_dims(shapes[0].rank, s)
    sizes = [1] * shapes[0].rank
    for u, o in zip(s.update_window_dims, targets, strict=True):
        sizes[o] = update.dims[u]
    limits = [dim - size for dim, size in zip(shapes[0].dims, sizes, strict=True)]
    with loop_nest(b, [update.dims[d] for d in scatter_dims], "s") as at:
        start = _window_start(b, io, at)
        inside = [
            b.icmp_unsigned("<=", v, i64(high)) for v, high in zip(start, limits, strict=True)
        ]
        with b.if_then(_all(b, inside)):
            _apply_window(b, io, start, dict(zip(scatter_dims, at, strict=True)), targets)


def _window_start(b: ir.IRBuilder, io: KernelIO, at: Sequence[ir.Value]) -> list[ir.Value]:
    """The operand index the window of update position ``at`` starts at, as i64 (a negative
    index is a huge unsigned one: out of bounds)."""
    inst = io.inst
    s, n = inst.attrs_as(ScatterAttrs), len(inst.operands) // 2
    indices, dtype = io.operands[n], inst.operands[n].array_shape.dtype
    wide = PrimitiveType.U64 if dtype.is_unsigned_int else PrimitiveType.S64
    start: list[ir.Value] = [i64(0)] * inst.operands[0].array_shape.rank
    for k, d in enumerate(s.scatter_dims_to_operand_dims):
        where = list(at)
        if s.index_vector_dim < inst.operands[n].array_shape.rank:
            where.insert(s.index_vector_dim, i64(k))
        start[d] = convert(b, indices(b, where), dtype, wide)
    for o, i in zip(s.input_batching_dims, s.scatter_indices_batching_dims, strict=True):
        start[o] = at[i if i < s.index_vector_dim else i - 1]
    return start


def _apply_window(
    b: ir.IRBuilder,
    io: KernelIO,
    start: list[ir.Value],
    picks: dict[int, ir.Value],
    targets: list[int],
) -> None:
    """Fold every element of one update window into the outputs."""
    inst, shapes = io.inst, output_shapes(io.inst)
    s, n = inst.attrs_as(ScatterAttrs), len(shapes)
    update = inst.operands[n + 1].array_shape
    with loop_nest(b, [update.dims[d] for d in s.update_window_dims], "w") as w:
        offsets = dict(zip(targets, w, strict=True))
        position = [add_nuw(b, v, offsets[d]) if d in offsets else v for d, v in enumerate(start)]
        window = dict(zip(s.update_window_dims, w, strict=True))
        where = [picks[d] if d in picks else window[d] for d in range(update.rank)]
        current = [
            load_element(b, out, shape, position)
            for out, shape in zip(io.outputs, shapes, strict=True)
        ]
        updates = [g(b, where) for g in io.operands[n + 1 :]]
        new = emit_scalar_computation(b, inst.called[0], [*current, *updates])
        for value, out, shape in zip(new, io.outputs, shapes, strict=True):
            store_element(b, value, out, shape, position)


def _all(b: ir.IRBuilder, conditions: list[ir.Value]) -> ir.Value:
    result: ir.Value = ir.Constant(ir.IntType(1), 1)
    for c in conditions:
        result = b.and_(result, c)
    return result
