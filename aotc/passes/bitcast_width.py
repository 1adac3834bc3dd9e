"""Width-changing ``bitcast-convert`` lowered to shifts, as XLA's CPU backend computes it.

XLA reinterprets an element as ``n`` narrower ones along a new last dimension (least
significant part first: its CPU backend is little-endian), and ``n`` narrower ones along the
last dimension as one. aotc's kernels treat ``bitcast-convert`` as elementwise, so before any
other pass the width-changing form becomes unsigned integer ops: shifts and truncating
converts to split, zero-extending converts, shifts and ``or`` to join. JAX emits it around
``rng-bit-generator`` (its u32[4] keys are a u64[2] state).
"""

from __future__ import annotations

from dataclasses import dataclass

from aotc.hlo.builder import ComputationBuilder
from aotc.hlo.ir import Instruction, Module, Opcode, is_width_changing_bitcast
from aotc.hlo.shape import PrimitiveType
from aotc.passes.rewrite import RewriteContext, rewrite_module

_UNSIGNED = {1: PrimitiveType.U8, 2: PrimitiveType.U16, 4: PrimitiveType.U32, 8: PrimitiveType.U64}


def lower(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """The rewrite rule: a width-changing bitcast-convert as integer ops."""
    if not is_width_changing_bitcast(inst):
        return None
    src, dst = inst.operands[0].array_shape.dtype, inst.array_shape.dtype
    if src.byte_size > dst.byte_size:
        return _split(ctx.b, inst.operands[0], dst)
    return _join(ctx.b, inst.operands[0], dst)


def _retype(b: ComputationBuilder, x: Instruction, dtype: PrimitiveType) -> Instruction:
    return x if x.array_shape.dtype is dtype else b.bitcast_convert(x, dtype)


def _shift(b: ComputationBuilder, opcode: Opcode, x: Instruction, bits: int) -> Instruction:
    if bits == 0:
        return x
    shape = x.array_shape
    amount = b.broadcast(b.constant(bits, shape.dtype), shape.dims, [])
    return b.binary(opcode, x, amount)


def _split(b: ComputationBuilder, x: Instruction, dst: PrimitiveType) -> Instruction:
    """``x[...]`` as ``dst[..., n]``, the least significant part first."""
    shape = x.array_shape
    wide, narrow = _UNSIGNED[shape.dtype.byte_size], _UNSIGNED[dst.byte_size]
    bits = _retype(b, x, wide)
    parts = []
    for j in range(shape.dtype.byte_size // dst.byte_size):
        part = b.convert(_shift(b, Opcode.SHIFT_RIGHT_LOGICAL, bits, 8 * dst.byte_size * j), narrow)
        parts.append(b.reshape(_retype(b, part, dst), (*shape.dims, 1)))
    return b.concatenate(parts, shape.rank)


def _join(b: ComputationBuilder, x: Instruction, dst: PrimitiveType) -> Instruction:
    """``x[..., n]`` as one ``dst`` per row, the first part least significant."""
    shape = x.array_shape
    narrow, wide = _UNSIGNED[shape.dtype.byte_size], _UNSIGNED[dst.byte_size]
    lead, n = shape.dims[:-1], shape.dims[-1]
    joined: Instruction | None = None
    for j in range(n):
        column = b.slice(x, [0] * (shape.rank - 1) + [j], [*lead, j + 1], [1] * shape.rank)
        part = b.convert(_retype(b, b.reshape(column, lead), narrow), wide)
        part = _shift(b, Opcode.SHIFT_LEFT, part, 8 * shape.dtype.byte_size * j)
        joined = part if joined is None else b.binary(Opcode.OR, joined, part)
    assert joined is not None
    return _retype(b, joined, dst)


@dataclass(frozen=True)
class BitcastWidthLowering:
    """Lower every width-changing ``bitcast-convert`` to integer ops."""

    name: str = "bitcast-width-lowering"

    def run(self, module: Module) -> bool:
        return rewrite_module(module, lower)
