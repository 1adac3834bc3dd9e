"""The reduce-window kernel: any ``to_apply``, padding, strides, base and window dilation.

For each position of the outer output dimensions, one stack row per result holds the
accumulators of the innermost output dimension (the channels, in NHWC pooling). Window taps
run outside that row loop, so the innermost loop walks contiguous memory and vectorizes. The
reducer is inlined on scalars, as in ``reduce.py``. XLA pads with the init value, so a tap in
padding folds the init value in (exact for any reducer, not just when init is its identity):
for the outer dimensions the check is hoisted out of the row loop into an if/else; for the
innermost dimension it is a branch-free select.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from llvmlite import ir

from aotc.codegen.irtypes import i64, store_element
from aotc.codegen.kernels.base import KernelIO
from aotc.codegen.kernels.elemental import emit_scalar_computation
from aotc.codegen.kernels.window import Row, window_position, window_positions
from aotc.codegen.loops import loop_nest
from aotc.hlo.ir import ReduceWindowAttrs, WindowDim
from aotc.hlo.memory import output_shapes


def emit_reduce_window_kernel(b: ir.IRBuilder, io: KernelIO) -> None:
    inst = io.inst
    window = inst.attrs_as(ReduceWindowAttrs).window.dims
    count = len(inst.operands) // 2
    shapes = output_shapes(inst)
    out_dims = shapes[0].dims
    outer, inner = list(out_dims[:-1]), list(out_dims[-1:])
    rows = [Row(b, s.dtype, math.prod(inner), f"acc{i}") for i, s in enumerate(shapes)]
    with loop_nest(b, outer, "o", io.split) as outer_index:
        inits = [init(b, []) for init in io.operands[count:]]
        with loop_nest(b, inner, "i") as inner_index:
            for row, init in zip(rows, inits, strict=True):
                row.store(b, init, _row_index(inner_index))
        with loop_nest(b, [w.size for w in window], "k") as taps:
            _fold_tap(b, io, rows, inits, outer_index, taps)
        with loop_nest(b, inner, "s") as inner_index:
            index = [*outer_index, *inner_index]
            for row, out, shape in zip(rows, io.outputs, shapes, strict=True):
                store_element(b, row.load(b, _row_index(inner_index)), out, shape, index)


def _row_index(inner_index: Sequence[ir.Value]) -> ir.Value:
    return inner_index[0] if inner_index else i64(0)


def _fold_tap(
    b: ir.IRBuilder,
    io: KernelIO,
    rows: list[Row],
    inits: list[ir.Value],
    outer_index: list[ir.Value],
    taps: list[ir.Value],
) -> None:
    """Fold one window tap into every accumulator of the row."""
    window = _window(io)
    in_dims = io.inst.operands[0].array_shape.dims
    outer = max(len(in_dims) - 1, 0)
    inside, positions = window_positions(
        b, window[:outer], in_dims[:outer], outer_index, taps[:outer]
    )
    if inside is None:
        _fold_row(b, io, rows, inits, positions, taps[outer:])
        return
    with b.if_else(inside) as (then, otherwise):
        with then:
            _fold_row(b, io, rows, inits, positions, taps[outer:])
        with otherwise:
            _fold_row(b, io, rows, inits, None, taps[outer:])


def _window(io: KernelIO) -> tuple[WindowDim, ...]:
    return io.inst.attrs_as(ReduceWindowAttrs).window.dims


def _fold_row(
    b: ir.IRBuilder,
    io: KernelIO,
    rows: list[Row],
    inits: list[ir.Value],
    positions: list[ir.Value] | None,
    inner_taps: list[ir.Value],
) -> None:
    """Fold the tap's elements (``positions`` = outer operand index; None: padding) into rows."""
    out_dims = output_shapes(io.inst)[0].dims
    with loop_nest(b, list(out_dims[-1:]), "c") as inner_index:
        values = inits
        if positions is not None:
            values = _tap_values(b, io, inits, positions, inner_index, inner_taps)
        current = [row.load(b, _row_index(inner_index)) for row in rows]
        folded = emit_scalar_computation(b, io.inst.called[0], [*current, *values])
        for row, value in zip(rows, folded, strict=True):
            row.store(b, value, _row_index(inner_index))


def _tap_values(
    b: ir.IRBuilder,
    io: KernelIO,
    inits: list[ir.Value],
    positions: list[ir.Value],
    inner_index: list[ir.Value],
    inner_taps: list[ir.Value],
) -> list[ir.Value]:
    """The operands' elements under the tap, or the init values where it is in padding."""
    in_dims = io.inst.operands[0].array_shape.dims
    if math.prod(in_dims) == 0:
        return inits  # nothing to read: every tap is padding
    readers = io.operands[: len(inits)]
    if not in_dims:
        return [read(b, []) for read in readers]
    hit, position = window_position(b, _window(io)[-1], in_dims[-1], inner_index[0], inner_taps[0])
    if hit is None:
        return [read(b, [*positions, position]) for read in readers]
    index = [*positions, b.select(hit, position, i64(0))]
    return [b.select(hit, read(b, index), init) for read, init in zip(readers, inits, strict=True)]
