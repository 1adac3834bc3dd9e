"""The reduce kernel: for each output element, fold the reduced dimensions into accumulators.

The reducer (``to_apply``) is inlined on scalar register values, so any computation of
scalars works, including variadic reductions (N operands, N inits, a tuple-valued reducer).
Elements are folded in row-major order of the reduced dimensions.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from aotc.codegen.irtypes import register_type, store_element
from aotc.codegen.kernels.base import KernelIO, output_shapes
from aotc.codegen.kernels.elemental import emit_scalar_computation
from aotc.codegen.loops import entry_alloca, loop_nest
from aotc.hlo.ir import Dimensions


def emit_reduce_kernel(b: ir.IRBuilder, io: KernelIO) -> None:
    inst = io.inst
    assert isinstance(inst.attrs, Dimensions)
    reduced = inst.attrs.dimensions
    count = len(inst.operands) // 2
    inputs, inits = io.operands[:count], io.operands[count:]
    in_dims = inst.operands[0].array_shape.dims
    shapes = output_shapes(inst)
    accs = [entry_alloca(b, register_type(s.dtype), f"acc{i}") for i, s in enumerate(shapes)]
    with loop_nest(b, shapes[0].dims, "o") as out_index:
        for acc, init in zip(accs, inits, strict=True):
            b.store(init(b, []), acc)
        with loop_nest(b, [in_dims[d] for d in reduced], "r") as r_index:
            index = _merge(len(in_dims), reduced, r_index, out_index)
            elements = [g(b, index) for g in inputs]
            current = [b.load(acc, typ=acc.allocated_type) for acc in accs]
            folded = emit_scalar_computation(b, inst.called[0], [*current, *elements])
            for acc, value in zip(accs, folded, strict=True):
                b.store(value, acc)
        for acc, out, shape in zip(accs, io.outputs, shapes, strict=True):
            store_element(b, b.load(acc, typ=acc.allocated_type), out, shape, out_index)


def _merge(
    rank: int, reduced: Sequence[int], r_index: Sequence[ir.Value], kept_index: Sequence[ir.Value]
) -> list[ir.Value]:
    """The operand index: reduced dimensions from ``r_index``, the rest from ``kept_index``."""
    placed = dict(zip(reduced, r_index, strict=True))
    kept = iter(kept_index)
    return [placed[d] if d in placed else next(kept) for d in range(rank)]
