"""Buffer assignment for the entry computation: where every instruction's value lives.

Arguments and results are the caller's buffers; constants are read-only globals; everything
else a kernel computes lives in the caller's temp buffer. The steps:

1. Order: kernels run in the entry computation's instruction order, which is the schedule
   (the ``schedule`` pass, ``aotc/passes/schedule.py``, sets it; buffer assignment never
   reorders). Instructions the root does not need get no kernel.
2. Results: the producer of each result writes straight into the result buffer; results that
   are parameters, constants, or values already written to another result are copied at the
   end. ``reshape`` and ``bitcast`` alias their operand's buffer (row-major bytes are the
   same), and ``tuple`` / ``get-tuple-element`` only name buffers.
3. Allocations and liveness (the memory model of ``aotc/hlo/memory.py``): each other kernel
   output gets an allocation, live from its kernel to the last kernel reading it (through
   any alias). An elementwise kernel or a fusion whose operand dies at it, has the same byte
   size and is read only at the output's own index, writes *in place* into that operand's
   allocation.
4. Packing: allocations get 64-byte aligned offsets by best fit (largest first; each takes
   the smallest gap between allocations live at the same time that fits it), so allocations
   with disjoint lifetimes share bytes. The packing is compared with ``peak_live_bytes``,
   the largest total of (aligned) allocations live at one time, which no packing can beat.
5. Scratch: kernels that need working memory (a GEMM's packed panels) say how much through
   ``scratch_size``; kernels run one after another, so they share one region of the largest
   size, an allocation live from the first kernel to the last (packed and counted in
   ``peak_live_bytes`` like any other).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum

from aotc.abi import ALIGN
from aotc.errors import CodegenError
from aotc.hlo.fusion_plan import recorded_plan
from aotc.hlo.ir import (
    ELEMENTWISE,
    Computation,
    Instruction,
    Opcode,
    TupleIndex,
    parameter_number,
)
from aotc.hlo.memory import ALIASING, NO_BUFFER, aligned, output_shapes, value_source
from aotc.hlo.shape import Shape


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


@dataclass(eq=False)
class Allocation:
    """Bytes of the temp buffer holding one or more values with chained lifetimes."""

    size: int  # aligned
    start: int  # the kernel (schedule step) that first writes it
    end: int  # the last kernel that reads it
    offset: int = 0
    raw: int = -1  # unaligned bytes (default: size); the last allocation needs no padding

    def __post_init__(self) -> None:
        if self.raw < 0:
            self.raw = self.size

    def overlaps(self, other: Allocation) -> bool:
        return self.start <= other.end and other.start <= self.end


@dataclass
class BufferAssignment:
    """Where each value of the entry computation lives, and what code must run, in order."""

    locations: dict[int, Location] = field(default_factory=dict)
    kernels: list[Instruction] = field(default_factory=list)
    constants: list[Instruction] = field(default_factory=list)
    copies: list[ResultCopy] = field(default_factory=list)
    temp_bytes: int = 0
    peak_live_bytes: int = 0  # lower bound on temp_bytes for this schedule
    allocations: list[Allocation] = field(default_factory=list)
    in_place: set[int] = field(default_factory=set)  # ids of kernels writing over an operand
    scratch: Buffer | None = None  # the kernels' shared scratch region, if any needs one

    def location(self, inst: Instruction) -> Location:
        return self.locations[id(inst)]

    def buffer(self, inst: Instruction) -> Buffer:
        location = self.locations[id(inst)]
        assert isinstance(location, Buffer), f"{inst} has a tuple location"
        return location


Source = tuple[int, int]  # (id of the writing instruction, output number)


ScratchSize = Callable[[Instruction], int]


def assign_buffers(
    comp: Computation,
    scratch_size: ScratchSize | None = None,
    late: frozenset[int] = frozenset(),
) -> BufferAssignment:
    """Assign buffers for running ``comp``'s kernels in its instruction order (the schedule).

    ``scratch_size(kernel)`` is the scratch bytes each kernel needs (default: none). The
    results in ``late`` are copied after the last kernel, never written by one: their buffer
    is an argument (an updated variable) that kernels may still read.
    """
    root = comp.root
    if root.opcode is not Opcode.TUPLE:
        raise CodegenError(f"the entry root %{root.name} must be a tuple of the results")
    order = scheduled(comp)
    designated = _designate_results(root, late)
    result = BufferAssignment(kernels=[i for i in order if i.opcode not in NO_BUFFER])
    allocs = _allocate(result, designated, _last_uses(result.kernels, root))
    result.allocations = list(dict.fromkeys(allocs.values()))
    scratch = _scratch_allocation(result.kernels, scratch_size)
    if scratch is not None:
        result.allocations.append(scratch)
    result.temp_bytes = pack(result.allocations)
    if scratch is not None:
        result.scratch = Buffer(BufferKind.TEMP, offset=scratch.offset, size=scratch.raw)
    result.peak_live_bytes = peak_live_bytes(result.allocations)
    for inst in order:
        result.locations[id(inst)] = _locate(inst, result, designated, allocs)
    for j, value in enumerate(root.operands):
        if designated.get(_source(value) or (0, -1)) != j:
            result.copies.append(ResultCopy(j, result.buffer(value), value.array_shape))
    return result


def scheduled(comp: Computation) -> list[Instruction]:
    """``comp``'s instructions in their order, less those the root does not need."""
    live = {id(i) for i in comp.post_order()}
    return [i for i in comp.instructions if id(i) in live]


def _designate_results(root: Instruction, late: frozenset[int]) -> dict[Source, int]:
    """Which kernel output writes straight into which result (first come, first served)."""
    designated: dict[Source, int] = {}
    for j, value in enumerate(root.operands):
        if value.is_tuple:
            raise CodegenError(f"result {j} (%{value.name}) is a tuple; results must be arrays")
        source = _source(value)
        if source is not None and source not in designated and j not in late:
            designated[source] = j
    return designated


def _source(inst: Instruction) -> Source | None:
    """The kernel output whose bytes ``inst`` is, or None for parameters and constants."""
    source = value_source(inst)
    return (id(source[0]), source[1]) if source is not None else None


def _read_sources(inst: Instruction) -> Iterable[Source]:
    """The kernel outputs ``inst`` reads (all elements of tuple-valued operands)."""
    for op in inst.operands:
        if op.opcode is Opcode.TUPLE:
            yield from _read_sources(op)
        elif (s := _source(op)) is not None:
            yield s
        elif op.is_tuple and op.opcode not in NO_BUFFER:
            yield from ((id(op), k) for k in range(len(output_shapes(op))))


# ---- liveness and allocations ----------------------------------------------------------------


def _last_uses(kernels: Sequence[Instruction], root: Instruction) -> dict[Source, int]:
    """The schedule step of the last kernel reading each output; results live to the end."""
    last: dict[Source, int] = {}
    for t, inst in enumerate(kernels):
        for k in range(len(output_shapes(inst))):
            last[(id(inst), k)] = t
        for s in _read_sources(inst):
            last[s] = t
    for s in _read_sources(root):
        last[s] = len(kernels)  # copied to a result after the last kernel
    return last


def _allocate(
    result: BufferAssignment, designated: dict[Source, int], last: dict[Source, int]
) -> dict[Source, Allocation]:
    """An allocation for every kernel output not written to a result, sharing in place."""
    allocs: dict[Source, Allocation] = {}
    for t, inst in enumerate(result.kernels):
        reusable = _in_place_candidates(inst, t, allocs, last)
        for k, shape in enumerate(output_shapes(inst)):
            source = (id(inst), k)
            if source in designated:
                continue
            alloc = reusable.pop(0) if reusable and not inst.is_tuple else None
            if alloc is None:
                alloc = Allocation(aligned(shape.byte_size), t, t, raw=shape.byte_size)
            else:
                result.in_place.add(id(inst))
            alloc.end = max(alloc.end, last[source])
            allocs[source] = alloc
    return allocs


def _in_place_candidates(
    inst: Instruction, t: int, allocs: dict[Source, Allocation], last: dict[Source, int]
) -> list[Allocation]:
    """Allocations of operands that ``inst`` may overwrite: they die here, same size."""
    found: list[Allocation] = []
    for number in _overwritable_operands(inst):
        source = _source(inst.operands[number])
        alloc = allocs.get(source) if source is not None else None
        if alloc is None or alloc.end != t or alloc in found:
            continue
        if alloc.size == aligned(inst.array_shape.byte_size):
            found.append(alloc)
    return found


def _overwritable_operands(inst: Instruction) -> list[int]:
    """Operands read only at the output element's own index, with the output's dims."""
    if inst.is_tuple:
        return []
    if inst.opcode in ELEMENTWISE:
        numbers = list(range(len(inst.operands)))
    elif inst.opcode is Opcode.FUSION:
        plan = recorded_plan(inst)
        numbers = sorted(plan.in_place) if plan is not None else []
    else:
        return []
    dims = inst.array_shape.dims
    same = [
        n
        for n in numbers
        if inst.operands[n].array_shape.byte_size == inst.array_shape.byte_size
        and inst.operands[n].array_shape.dims == dims
    ]
    return same


def _scratch_allocation(
    kernels: Sequence[Instruction], scratch_size: ScratchSize | None
) -> Allocation | None:
    """The shared scratch region, live throughout: the largest any kernel asks for."""
    size = max((scratch_size(k) for k in kernels), default=0) if scratch_size else 0
    if size <= 0:
        return None
    return Allocation(aligned(size), 0, len(kernels), raw=size)


# ---- packing ---------------------------------------------------------------------------------


def pack(allocations: Sequence[Allocation]) -> int:
    """Give every allocation an aligned offset (best fit); returns the bytes used.

    Two orders are tried -- largest first, and by start time -- and the smaller kept.
    """
    orders = [
        sorted(allocations, key=lambda a: (-a.size, a.start)),
        sorted(allocations, key=lambda a: (a.start, -a.size)),
    ]
    best: tuple[int, list[int]] | None = None
    for order in orders:
        total = _best_fit(order)
        if best is None or total < best[0]:
            best = (total, [a.offset for a in allocations])
    if best is None:
        return 0
    for alloc, offset in zip(allocations, best[1], strict=True):
        alloc.offset = offset
    return best[0]


def _best_fit(order: Sequence[Allocation]) -> int:
    placed: list[Allocation] = []
    total = 0
    for alloc in order:
        alloc.offset = _best_gap(alloc, [p for p in placed if p.overlaps(alloc)])
        placed.append(alloc)
        total = max(total, alloc.offset + alloc.raw)
    return total


def _best_gap(alloc: Allocation, live: list[Allocation]) -> int:
    """The offset of the smallest gap among ``live`` allocations that holds ``alloc``."""
    best: tuple[int, int] | None = None  # (gap size, offset)
    cursor = 0
    for other in sorted(live, key=lambda a: a.offset):
        gap = other.offset - cursor
        if gap >= alloc.size and (best is None or gap < best[0]):
            best = (gap, cursor)
        cursor = max(cursor, other.offset + other.size)
    return best[1] if best is not None else cursor


def peak_live_bytes(allocations: Sequence[Allocation]) -> int:
    """The most bytes live at one schedule step: a lower bound for any aligned packing.

    Allocations live together occupy disjoint aligned ranges; only the topmost one may skip
    its padding, so the one with the most padding is counted without it.
    """
    steps = sorted({a.start for a in allocations})
    return max(
        (_live_bytes([a for a in allocations if a.start <= t <= a.end]) for t in steps), default=0
    )


def _live_bytes(live: Sequence[Allocation]) -> int:
    return sum(a.size for a in live) - max((a.size - a.raw for a in live), default=0)


# ---- locations -------------------------------------------------------------------------------


def _locate(
    inst: Instruction,
    result: BufferAssignment,
    designated: dict[Source, int],
    allocs: dict[Source, Allocation],
) -> Location:
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
        location = result.location(inst.operands[0])
        assert isinstance(location, tuple)
        return location[inst.attrs_as(TupleIndex).index]
    if opcode in ALIASING:
        return result.location(inst.operands[0])
    buffers = [
        _output_buffer((id(inst), k), shape, designated, allocs)
        for k, shape in enumerate(output_shapes(inst))
    ]
    return tuple(buffers) if inst.is_tuple else buffers[0]


def _output_buffer(
    source: Source, shape: Shape, designated: dict[Source, int], allocs: dict[Source, Allocation]
) -> Buffer:
    if source in designated:
        return Buffer(BufferKind.RESULT, designated[source], size=shape.byte_size)
    return Buffer(BufferKind.TEMP, offset=allocs[source].offset, size=shape.byte_size)


__all__ = ["ALIGN", "Allocation", "Buffer", "BufferAssignment", "BufferKind", "assign_buffers"]
