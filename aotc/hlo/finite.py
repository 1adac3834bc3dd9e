"""When a convolution may skip the zeros its input is padded and dilated with.

XLA (and TensorFlow, and the reference evaluator) define a convolution's padding and base
(lhs) dilation as real zeros in the input, multiplied into the sum like any other element:
``0 * inf`` and ``0 * nan`` are NaN. Kernels that skip those taps (the direct loop kernel's
bounds check, the sub-pixel split of transposed convolutions) are exact only when every kernel
(rhs) element is finite, or the type has no infinities. ``skips_zeros_exactly`` decides that
at compile time from the kernel's constant; a kernel known only at run time takes the path
that multiplies the zeros.
"""

from __future__ import annotations

import numpy as np

from aotc.hlo.ir import ConvAttrs, Instruction, Opcode

#: Opcodes that only move or repeat their one operand's elements (finite in, finite out).
ELEMENT_MOVES = frozenset({
    Opcode.BROADCAST, Opcode.RESHAPE, Opcode.BITCAST, Opcode.TRANSPOSE, Opcode.SLICE,
    Opcode.REVERSE, Opcode.COPY,
})  # fmt: skip


def known_finite(inst: Instruction) -> bool:
    """Every element of ``inst`` is finite: an integer or pred value, or a constant (moved
    by data-movement ops) without infinities and NaNs."""
    while inst.opcode in ELEMENT_MOVES and len(inst.operands) == 1:
        inst = inst.operands[0]
    if inst.is_tuple:
        return False
    if not inst.array_shape.dtype.is_float:
        return True
    if inst.opcode is not Opcode.CONSTANT or inst.literal is None:
        return False
    return bool(np.isfinite(inst.literal).all())


def skips_zeros_exactly(conv: Instruction, kernel: Instruction | None = None) -> bool:
    """Whether skipping the multiply-adds of ``conv``'s input padding and base-dilation zeros
    gives what multiplying them does; ``kernel`` is where the kernel operand comes from (a
    fusion's operand, for a fused convolution), else the operand itself."""
    window = conv.attrs_as(ConvAttrs).window.dims
    if all(w.pad_low <= 0 and w.pad_high <= 0 and w.lhs_dilation == 1 for w in window):
        return True
    return known_finite(kernel if kernel is not None else conv.operands[1])
