"""Kernel emitters, one per opcode family, found through ``kernel_emitter(opcode)``.

Swapping in a faster emitter for an opcode (a tiled GEMM for ``dot``, a vectorized row
reduction) means changing one entry of ``KERNELS``. ``SCRATCH`` says how many bytes of shared
scratch an opcode's kernel needs for an instruction on a target (absent: none).
"""

from __future__ import annotations

from collections.abc import Callable

from aotc.codegen.kernels.base import KernelEmitter, KernelPart, PackedOperands, ScratchSize
from aotc.codegen.kernels.conv import (
    conv_packed_operands,
    conv_scratch_bytes,
    emit_convolution_kernel,
)
from aotc.codegen.kernels.dot import dot_packed_operands, dot_scratch_bytes, emit_dot_kernel
from aotc.codegen.kernels.dynamic_update_slice import emit_dynamic_update_slice_kernel
from aotc.codegen.kernels.elemental import concat_parts, emit_elemental_kernel
from aotc.codegen.kernels.fusion import (
    emit_fusion_kernel,
    fusion_packed_operands,
    fusion_scratch_bytes,
)
from aotc.codegen.kernels.reduce import emit_reduce_kernel
from aotc.codegen.kernels.reduce_window import emit_reduce_window_kernel
from aotc.codegen.kernels.scatter import emit_scatter_kernel
from aotc.codegen.kernels.sort import (
    emit_sort_kernel,
    emit_topk_kernel,
    sort_scratch_bytes,
    topk_scratch_bytes,
)
from aotc.codegen.vector import VectorInfo
from aotc.errors import CodegenError
from aotc.hlo.ir import ELEMENTWISE, Instruction, Opcode
from aotc.hlo.opcodes import DATA_MOVEMENT

#: The elemental emitter has a generator for every elementwise and data-movement opcode.
_ELEMENTAL = ELEMENTWISE | DATA_MOVEMENT | {Opcode.IOTA}

KERNELS: dict[Opcode, KernelEmitter] = {
    **{opcode: emit_elemental_kernel for opcode in _ELEMENTAL},
    Opcode.DOT: emit_dot_kernel,
    Opcode.REDUCE: emit_reduce_kernel,
    Opcode.FUSION: emit_fusion_kernel,
    Opcode.CONVOLUTION: emit_convolution_kernel,
    Opcode.REDUCE_WINDOW: emit_reduce_window_kernel,
    Opcode.DYNAMIC_UPDATE_SLICE: emit_dynamic_update_slice_kernel,
    Opcode.SORT: emit_sort_kernel,
    Opcode.TOPK: emit_topk_kernel,
    Opcode.SCATTER: emit_scatter_kernel,
}

SCRATCH: dict[Opcode, ScratchSize] = {
    Opcode.DOT: dot_scratch_bytes,
    Opcode.FUSION: fusion_scratch_bytes,
    Opcode.CONVOLUTION: conv_scratch_bytes,
    Opcode.SORT: sort_scratch_bytes,
    Opcode.TOPK: topk_scratch_bytes,
}

#: Operands an opcode's kernel reads only from a copy packed at compile time (constant weights
#: on the GEMM engine), never from their buffer (absent: none). A constant read only that way
#: needs no global of its own: the emitter passes a null pointer.
PACKED: dict[Opcode, PackedOperands] = {
    Opcode.DOT: dot_packed_operands,
    Opcode.FUSION: fusion_packed_operands,
    Opcode.CONVOLUTION: conv_packed_operands,
}


#: Opcodes whose kernel may be several functions, each computing the output's part from a range
#: of the operands (the hook's None, or absent: one function of all operands). A function with
#: thousands of operands costs LLVM time quadratic in them (its calls' stack arguments, loops).
PARTS: dict[Opcode, Callable[[Instruction], list[KernelPart] | None]] = {
    Opcode.CONCATENATE: concat_parts,
}


def kernel_parts(inst: Instruction) -> list[KernelPart] | None:
    """The functions of ``inst``'s kernel when it is emitted in parts (see ``PARTS``)."""
    parts = PARTS.get(inst.opcode)
    return parts(inst) if parts is not None else None


def kernel_emitter(inst: Instruction) -> KernelEmitter:
    emitter = KERNELS.get(inst.opcode)
    if emitter is None:
        raise CodegenError(f"{inst.opcode.value} %{inst.name} is not supported by codegen yet")
    return emitter


def kernel_scratch_bytes(inst: Instruction, info: VectorInfo) -> int:
    """Scratch bytes ``inst``'s kernel needs on a target with vector shape ``info``."""
    size = SCRATCH.get(inst.opcode)
    return size(inst, info) if size is not None else 0


def kernel_packed_operands(inst: Instruction, info: VectorInfo) -> frozenset[int]:
    """Operand numbers ``inst``'s kernel never reads from their buffers (see ``PACKED``)."""
    packed = PACKED.get(inst.opcode)
    return packed(inst, info) if packed is not None else frozenset()
