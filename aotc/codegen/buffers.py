"""Buffer assignment for the entry computation: where every instruction's value lives.

Arguments and results are the caller's buffers; constants are read-only globals; everything
else a kernel computes lives in the caller's temp buffer at a 64-byte aligned offset (assigned
in order, no reuse yet). The producer of each result writes straight into the result buffer;
results that are parameters, constants, or values already written to another result are
copied at the end. ``reshape`` and ``bitcast`` alias their operand's buffer (row-major bytes
are the same), and ``tuple`` / ``get-tuple-element`` only name buffers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from aotc.codegen.kernels import NO_KERNEL
from aotc.codegen.kernels.base import output_shapes
from aotc.errors import CodegenError
from aotc.hlo.ir import Computation, Instruction, Opcode, TupleIndex, parameter_number
from aotc.hlo.shape import Shape

ALIGN = 64
_ALIASING = frozenset({Opcode.RESHAPE, Opcode.BITCAST})


class BufferKind(Enum):
    ARG = "arg"
    RESULT = "result"
    TEMP = "temp"
    CONSTANT = "constant"


@dataclass(frozen=True)
class Buffer:
    """A byte range: argument/result ``index``, a temp ``offset``, or constant ``index``."""

    kind: BufferKind
    index: int = 0
    offset: int = 0
    size: int = 0


Location = Buffer | tuple["Location", ...]


@dataclass(frozen=True)
class ResultCopy:
    result: int
    source: Buffer
    shape: Shape


@dataclass
class BufferAssignment:
    """Where each value of the entry computation lives, and what code must run, in order."""

    locations: dict[int, Location] = field(default_factory=dict)
    kernels: list[Instruction] = field(default_factory=list)
    constants: list[Instruction] = field(default_factory=list)
    copies: list[ResultCopy] = field(default_factory=list)
    temp_bytes: int = 0

    def location(self, inst: Instruction) -> Location:
        return self.locations[id(inst)]

    def buffer(self, inst: Instruction) -> Buffer:
        location = self.locations[id(inst)]
        assert isinstance(location, Buffer), f"{inst} has a tuple location"
        return location


Source = tuple[int, int]  # (id of the writing instruction, output number)


def assign_buffers(comp: Computation) -> BufferAssignment:
    root = comp.root
    if root.opcode is not Opcode.TUPLE:
        raise CodegenError(f"the entry root %{root.name} must be a tuple of the results")
    designated = _designate_results(root)
    result = BufferAssignment()
    for inst in comp.post_order():
        result.locations[id(inst)] = _locate(inst, result, designated)
    for j, value in enumerate(root.operands):
        if designated.get(_source(value) or (0, -1)) != j:
            result.copies.append(ResultCopy(j, result.buffer(value), value.array_shape))
    return result


def _designate_results(root: Instruction) -> dict[Source, int]:
    """Which kernel output writes straight into which result (first come, first served)."""
    designated: dict[Source, int] = {}
    for j, value in enumerate(root.operands):
        if value.is_tuple:
            raise CodegenError(f"result {j} (%{value.name}) is a tuple; results must be arrays")
        source = _source(value)
        if source is not None and source not in designated:
            designated[source] = j
    return designated


def _source(inst: Instruction) -> Source | None:
    """The kernel output whose bytes ``inst`` is, or None for parameters and constants."""
    if inst.opcode in _ALIASING:
        return _source(inst.operands[0])
    if inst.opcode is Opcode.GET_TUPLE_ELEMENT:
        assert isinstance(inst.attrs, TupleIndex)
        tuple_value = inst.operands[0]
        if tuple_value.opcode is Opcode.TUPLE:
            return _source(tuple_value.operands[inst.attrs.index])
        if tuple_value.opcode in NO_KERNEL:
            return None
        return (id(tuple_value), inst.attrs.index)
    if inst.opcode in NO_KERNEL:
        return None
    return (id(inst), 0)


def _locate(inst: Instruction, result: BufferAssignment, designated: dict[Source, int]) -> Location:
    opcode = inst.opcode
    if opcode is Opcode.PARAMETER:
        return Buffer(BufferKind.ARG, parameter_number(inst), size=inst.array_shape.byte_size)
    if opcode is Opcode.CONSTANT:
        result.constants.append(inst)
        return Buffer(
            BufferKind.CONSTANT, len(result.constants) - 1, size=inst.array_shape.byte_size
        )
    if opcode is Opcode.TUPLE:
        return tuple(result.location(op) for op in inst.operands)
    if opcode is Opcode.GET_TUPLE_ELEMENT:
        assert isinstance(inst.attrs, TupleIndex)
        location = result.location(inst.operands[0])
        assert isinstance(location, tuple)
        return location[inst.attrs.index]
    if opcode in _ALIASING:
        return result.location(inst.operands[0])
    result.kernels.append(inst)
    buffers = [
        _output_buffer(shape, designated.get((id(inst), k)), result)
        for k, shape in enumerate(output_shapes(inst))
    ]
    return tuple(buffers) if inst.is_tuple else buffers[0]


def _output_buffer(shape: Shape, result_index: int | None, result: BufferAssignment) -> Buffer:
    if result_index is not None:
        return Buffer(BufferKind.RESULT, result_index, size=shape.byte_size)
    offset = -(-result.temp_bytes // ALIGN) * ALIGN
    result.temp_bytes = offset + shape.byte_size
    return Buffer(BufferKind.TEMP, offset=offset, size=shape.byte_size)
