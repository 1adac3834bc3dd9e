"""Memory analysis of a computation: which kernel owns each value's bytes, sizes, liveness.

The model (the one the ``schedule`` pass optimizes and buffer assignment,
``aotc/codegen/buffers.py``, implements): each kernel output owns a buffer of its byte size,
except outputs written straight into a result buffer; parameters and constants own none;
``reshape``, ``bitcast``, ``tuple`` and ``get-tuple-element`` only name a buffer that exists
already. A buffer is live from the kernel that writes it to the last kernel that reads it,
through any of its aliases; ``peak_bytes`` is the largest total live at once for an order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aotc.abi import ALIGN
from aotc.hlo.ir import Computation, Instruction, Opcode, TupleIndex
from aotc.hlo.shape import Shape, TupleShape

#: Instructions that run no kernel and own no memory.
NO_BUFFER = frozenset({
    Opcode.PARAMETER, Opcode.CONSTANT, Opcode.TUPLE, Opcode.GET_TUPLE_ELEMENT,
    Opcode.RESHAPE, Opcode.BITCAST,
})  # fmt: skip

#: Instructions whose value is their operand's bytes (row-major bytes are the same).
ALIASING = frozenset({Opcode.RESHAPE, Opcode.BITCAST})


def aligned(size: int) -> int:
    """``size`` rounded up to the temp buffer's alignment."""
    return -(-size // ALIGN) * ALIGN


def output_shapes(inst: Instruction) -> list[Shape]:
    """The array shapes an instruction writes: one, or one per element of its tuple shape."""
    if isinstance(inst.shape, TupleShape):
        shapes = list(inst.shape.elements)
        assert all(isinstance(s, Shape) for s in shapes), f"nested tuple in {inst}"
        return shapes  # type: ignore[return-value]
    return [inst.shape]


def byte_size(inst: Instruction) -> int:
    """Bytes of every array ``inst`` writes (all elements of a tuple shape)."""
    shape = inst.shape
    if isinstance(shape, TupleShape):
        return sum(s.byte_size for s in shape.elements if isinstance(s, Shape))
    return shape.byte_size


def value_source(inst: Instruction) -> tuple[Instruction, int] | None:
    """The kernel output whose bytes ``inst``'s value is, as (kernel, output number), or
    None for parameters and constants (and values made of them)."""
    while True:
        if inst.opcode in ALIASING:
            inst = inst.operands[0]
        elif inst.opcode is Opcode.GET_TUPLE_ELEMENT:
            tuple_value, index = inst.operands[0], inst.attrs_as(TupleIndex).index
            if tuple_value.opcode is not Opcode.TUPLE:
                return None if tuple_value.opcode in NO_BUFFER else (tuple_value, index)
            inst = tuple_value.operands[index]
        else:
            return None if inst.opcode in NO_BUFFER else (inst, 0)


def owner(inst: Instruction) -> Instruction | None:
    """The kernel whose buffer ``inst``'s value is, or None for parameters and constants."""
    source = value_source(inst)
    return source[0] if source is not None else None


@dataclass
class MemoryModel:
    """For each kernel: the buffers it reads (by owner id) and the bytes it allocates."""

    sizes: dict[int, int]
    reads: dict[int, set[int]]
    results: set[int]  # owners of result values: they live in the caller's result buffers

    @staticmethod
    def of(comp: Computation) -> MemoryModel:
        root = comp.root  # a loop body's or branch's results live in its caller's buffers too
        values = root.operands if root.opcode is Opcode.TUPLE else [root]
        results = {id(o) for v in values if (o := owner(v)) is not None}
        sizes: dict[int, int] = {}
        reads: dict[int, set[int]] = {}
        for inst in comp.instructions:
            if inst.opcode in NO_BUFFER:
                continue
            sizes[id(inst)] = 0 if id(inst) in results else aligned(byte_size(inst))
            reads[id(inst)] = {id(o) for op in inst.operands if (o := owner(op)) is not None}
        return MemoryModel(sizes, reads, results)


def peak_bytes(order: Sequence[Instruction], model: MemoryModel) -> int:
    """Peak of the live temp bytes when the kernels run in ``order``."""
    kernels = [i for i in order if id(i) in model.sizes]
    last_use = {id(k): t for t, k in enumerate(kernels)}
    for t, k in enumerate(kernels):
        for o in model.reads[id(k)]:
            last_use[o] = t
    live = peak = 0
    dying: dict[int, int] = {}
    for t, k in enumerate(kernels):
        live += model.sizes[id(k)]
        peak = max(peak, live)
        dying[last_use[id(k)]] = dying.get(last_use[id(k)], 0) + model.sizes[id(k)]
        live -= dying.pop(t, 0)
    return peak
