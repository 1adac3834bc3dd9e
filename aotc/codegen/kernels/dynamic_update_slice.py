"""The dynamic-update-slice kernel: the update written at clamped start indices.

Run in place (its operand's buffer is its output's: ``KernelIO.aliased``, as buffer
assignment arranges when the operand dies there -- a scan writing one row per iteration into
the carried result), it touches only the update's elements; otherwise it first copies the
operand. The update loop's innermost dimension is contiguous, so it vectorizes.
"""

from __future__ import annotations

from llvmlite import ir

from aotc.codegen.irtypes import add_nuw, store_element
from aotc.codegen.kernels.base import KernelIO
from aotc.codegen.kernels.elemental import dynamic_starts, emit_store_loop
from aotc.codegen.loops import loop_nest


def emit_dynamic_update_slice_kernel(b: ir.IRBuilder, io: KernelIO) -> None:
    inst = io.inst
    shape, update = inst.array_shape, inst.operands[1].array_shape
    starts = dynamic_starts(inst, io.operands[2:], update.dims)(b)  # before any store
    if 0 not in io.aliased:
        emit_store_loop(b, io.operands[0], io.outputs[0], shape)
    with loop_nest(b, update.dims) as index:
        at = [add_nuw(b, i, s) for i, s in zip(index, starts, strict=True)]
        store_element(b, io.operands[1](b, index), io.outputs[0], shape, at)
