"""Arithmetic operations of instructions and kernels: the compile report's FLOPs column and
the work the multi-core entry's cost model weighs (``codegen/parallel.py``)."""

from __future__ import annotations

import math

from aotc.hlo.ir import ELEMENTWISE, ConvAttrs, DotDims, Instruction, Opcode


def flops(inst: Instruction) -> int:
    """Arithmetic operations of one instruction: 1 per elementwise result, 2 per multiply-add
    of a dot or convolution, 1 per folded element of a reduction; data movement is free."""
    if inst.is_tuple:
        return 0
    size = inst.array_shape.size
    if inst.opcode in ELEMENTWISE and inst.opcode not in (Opcode.CONVERT, Opcode.COPY):
        return size
    if inst.opcode is Opcode.DOT:
        lhs = inst.operands[0].array_shape.dims
        return 2 * size * math.prod(lhs[d] for d in inst.attrs_as(DotDims).lhs_contracting)
    if inst.opcode is Opcode.REDUCE:
        return inst.operands[0].array_shape.size
    if inst.opcode is Opcode.CONVOLUTION:
        kernel, dims = inst.operands[1].array_shape, inst.attrs_as(ConvAttrs).dims
        per_output = kernel.size // max(kernel.dims[dims.kernel_output_feature], 1)
        return 2 * size * per_output
    return 0


def fused_instructions(inst: Instruction) -> list[Instruction]:
    """The instructions a kernel computes: a fusion's (less its parameters), else itself."""
    if inst.opcode is not Opcode.FUSION:
        return [inst]
    return [i for i in inst.called[0].post_order() if i.opcode is not Opcode.PARAMETER]


def kernel_flops(inst: Instruction) -> int:
    """Arithmetic operations of the kernel computing ``inst``."""
    return sum(flops(i) for i in fused_instructions(inst))
