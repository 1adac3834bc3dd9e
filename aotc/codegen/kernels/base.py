"""What every kernel emitter shares: element generators and the kernel calling convention.

An *element generator* computes one element of an array given its multi-index (a list of
``i64`` values): reading a buffer is one, and every elementwise or data-movement instruction
turns its operands' generators into its own (see ``elemental.py``). A *kernel emitter* writes
the loops that compute a whole instruction into its output buffer(s), reading operands only
through generators, so the same emitter works whether an operand lives in a buffer or is
computed on the fly by a fused producer.

Kernels that need more than generators (a GEMM packs its operands, reads pre-packed constant
weights) also get the operands' raw pointers where they live in a buffer, a pointer to the
shared scratch region (sized by the opcode's ``SCRATCH`` hook in ``kernels/__init__.py``) and
the target's ``VectorInfo``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from llvmlite import ir

from aotc.codegen.irtypes import load_element
from aotc.codegen.loops import Split
from aotc.codegen.vector import GENERIC, VectorInfo
from aotc.hlo.ir import Instruction
from aotc.hlo.shape import Shape

ElementGenerator = Callable[[ir.IRBuilder, Sequence[ir.Value]], ir.Value]


@dataclass(frozen=True)
class KernelPart:
    """One function of a kernel emitted in parts: it reads the operands numbered ``operands``
    and writes the output from ``offset`` on along the dimension the parts split."""

    operands: range
    offset: int


@dataclass
class KernelIO:
    """The instruction a kernel computes, its output pointers and its operands' generators.

    ``pointers[i]`` is operand ``i``'s row-major buffer, or None where the operand is computed
    on the fly (a fused producer) or not known to be a plain buffer; ``scratch`` points to
    ``SCRATCH[opcode](inst, vector)`` bytes of 64-byte aligned scratch (None when the hook
    asked for none); ``vector`` is the target's SIMD shape. A kernel emitted in parts
    (``PARTS`` in ``kernels/__init__.py``) gets the operands of one ``part``. A kernel large
    enough to run on several threads is offered a ``split`` (``loops.Split``), which it may
    claim at its outer loop.
    """

    inst: Instruction
    outputs: list[ir.Value]
    operands: list[ElementGenerator]
    pointers: list[ir.Value | None] = field(default_factory=list)
    scratch: ir.Value | None = None
    vector: VectorInfo = GENERIC
    aliased: frozenset[int] = frozenset()  # operands whose buffer is the output's (in place)
    part: KernelPart | None = None  # the part of the kernel this function computes
    split: Split | None = None  # the outer-loop range this call computes, when offered

    def pointer(self, number: int) -> ir.Value | None:
        """Operand ``number``'s buffer pointer, if it has one."""
        return self.pointers[number] if number < len(self.pointers) else None


KernelEmitter = Callable[[ir.IRBuilder, KernelIO], None]

#: Bytes of scratch a kernel needs for an instruction on a target (0: none).
ScratchSize = Callable[[Instruction, VectorInfo], int]

#: Operand numbers a kernel takes from compile-time packed copies instead of their buffers.
PackedOperands = Callable[[Instruction, VectorInfo], frozenset[int]]


def buffer_reader(base: ir.Value, shape: Shape) -> ElementGenerator:
    """The generator that loads elements of a row-major array at ``base``."""
    return lambda b, index: load_element(b, base, shape, index)
