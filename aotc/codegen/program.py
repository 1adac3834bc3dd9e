"""The entry's program: its kernels in schedule order, loops and conditionals as markers around
the steps of their computations, flattened into one list.

The same list is the emitter's instruction stream and buffer assignment's timeline (a value is
live from the step that writes it to the last step that reads it). A loop ``w`` becomes

    CarryIn(w, k)...   the initial carry into the carry buffers (one per element)
    LoopStart(w)       the loop header
    <condition steps>
    LoopTest(w)        leave the loop unless the condition's predicate holds
    <body steps>
    Stage(w, k)...     elements the body returns at another position, copied aside first
    CarryOut(w, k)...  the body's results into the carry buffers
    LoopEnd(w)         back to the header

and a conditional ``c`` becomes ``BranchStart(c)``, each branch's steps followed by its
``BranchOut(c, i, k)`` copies (branches after the first open with ``BranchNext``), and
``BranchEnd(c)``. Buffer assignment drops the copies it makes unnecessary by letting producers
write the target buffer directly. Nested computations are expanded by an explicit stack, so
loops nest to any depth without recursion.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass

from aotc.errors import CodegenError
from aotc.hlo.ir import Computation, Instruction, Opcode, TupleIndex
from aotc.hlo.memory import NO_BUFFER
from aotc.hlo.shape import Shape, TupleShape

#: A value's buffer: (id of the instruction writing it, output number), or a staging copy's.
Key = Hashable


@dataclass(frozen=True)
class Kernel:
    inst: Instruction


@dataclass(frozen=True)
class CarryIn:
    loop: Instruction
    element: int


@dataclass(frozen=True)
class LoopStart:
    loop: Instruction


@dataclass(frozen=True)
class LoopTest:
    loop: Instruction


@dataclass(frozen=True)
class Stage:
    loop: Instruction
    element: int


@dataclass(frozen=True)
class CarryOut:
    loop: Instruction
    element: int


@dataclass(frozen=True)
class LoopEnd:
    loop: Instruction


@dataclass(frozen=True)
class BranchStart:
    cond: Instruction


@dataclass(frozen=True)
class BranchNext:
    cond: Instruction
    branch: int


@dataclass(frozen=True)
class BranchOut:
    cond: Instruction
    branch: int
    element: int


@dataclass(frozen=True)
class BranchEnd:
    cond: Instruction


Step = (
    Kernel
    | CarryIn
    | LoopStart
    | LoopTest
    | Stage
    | CarryOut
    | LoopEnd
    | BranchStart
    | BranchNext
    | BranchOut
    | BranchEnd
)


def scheduled(comp: Computation) -> list[Instruction]:
    """``comp``'s instructions in their order (the schedule), less those its root does not
    need."""
    live = {id(i) for i in comp.post_order()}
    return [i for i in comp.instructions if id(i) in live]


def linearize(entry: Computation) -> list[Step]:
    """The steps of running ``entry``, nested computations expanded where they run."""
    steps: list[Step] = []
    claimed: set[int] = set()
    stack: list[Iterator[Step | Computation]] = [_computation_steps(entry)]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
        elif isinstance(item, Computation):
            if id(item) in claimed:
                raise CodegenError(
                    f"computation {item.name} is run by two instructions; codegen needs one "
                    "computation per loop and branch (the flatten-call-graph pass)"
                )
            claimed.add(id(item))
            stack.append(_computation_steps(item))
        else:
            steps.append(item)
    return steps


def _computation_steps(comp: Computation) -> Iterator[Step | Computation]:
    for inst in scheduled(comp):
        if inst.opcode is Opcode.WHILE:
            yield from _loop_steps(inst)
        elif inst.opcode is Opcode.CONDITIONAL:
            yield from _conditional_steps(inst)
        elif inst.opcode is Opcode.CALL:
            raise CodegenError(
                f"call %{inst.name} reached codegen; calls are inlined (the call-inliner pass)"
            )
        elif inst.opcode not in NO_BUFFER:
            yield Kernel(inst)


def _loop_steps(loop: Instruction) -> Iterator[Step | Computation]:
    condition, body = loop.called
    count = len(element_shapes(loop))
    yield from (CarryIn(loop, k) for k in range(count))
    yield LoopStart(loop)
    yield condition
    yield LoopTest(loop)
    yield body
    yield from (Stage(loop, k) for k in range(count))
    yield from (CarryOut(loop, k) for k in range(count))
    yield LoopEnd(loop)


def _conditional_steps(cond: Instruction) -> Iterator[Step | Computation]:
    count = len(element_shapes(cond))
    yield BranchStart(cond)
    for i, branch in enumerate(cond.called):
        if i:
            yield BranchNext(cond, i)
        yield branch
        yield from (BranchOut(cond, i, k) for k in range(count))
    yield BranchEnd(cond)


def element_shapes(inst: Instruction) -> list[Shape]:
    """The arrays of a value: itself, or the elements of its (flat) tuple shape."""
    shape = inst.shape
    if not isinstance(shape, TupleShape):
        return [shape]
    if not all(isinstance(s, Shape) for s in shape.elements):
        raise CodegenError(f"%{inst.name} has the nested tuple shape {shape}; codegen needs flat")
    return list(shape.elements)  # type: ignore[arg-type]


class Values:
    """Which buffer each value is: kernel outputs, through aliases (reshape, bitcast, tuples),
    a loop's parameters (its carry buffers) and a branch's parameter (the operand's buffer)."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self.carrier: dict[int, Instruction] = {}  # id(loop computation's parameter) -> loop
        self.passed: dict[int, Instruction] = {}  # id(branch parameter) -> the operand
        for step in steps:
            if isinstance(step, LoopStart):
                for comp in step.loop.called:
                    for param in comp.parameters:
                        self.carrier[id(param)] = step.loop
            elif isinstance(step, BranchStart):
                for i, branch in enumerate(step.cond.called):
                    for param in branch.parameters:
                        self.passed[id(param)] = step.cond.operands[1 + i]

    def key(self, inst: Instruction, element: int | None = None) -> Key | None:
        """The buffer of ``inst`` (of its tuple element ``element``), or None for arguments
        and constants, which live where they are."""
        while True:
            opcode = inst.opcode
            if opcode in (Opcode.RESHAPE, Opcode.BITCAST):
                inst = inst.operands[0]
            elif opcode is Opcode.GET_TUPLE_ELEMENT:
                assert element is None, f"nested tuple element read at {inst}"
                inst, element = inst.operands[0], inst.attrs_as(TupleIndex).index
            elif opcode is Opcode.TUPLE and element is not None:
                inst, element = inst.operands[element], None
            elif opcode is Opcode.PARAMETER and id(inst) in self.passed:
                inst = self.passed[id(inst)]
            elif opcode is Opcode.PARAMETER and id(inst) in self.carrier:
                return (id(self.carrier[id(inst)]), element or 0)
            elif opcode in (Opcode.PARAMETER, Opcode.CONSTANT):
                return None
            else:
                assert element is not None or not inst.is_tuple, f"a whole tuple: {inst}"
                return (id(inst), element or 0)

    def element(self, inst: Instruction, k: int) -> Key | None:
        """The buffer of element ``k`` of ``inst`` (``inst`` itself if it is an array)."""
        return self.key(inst, k) if inst.is_tuple else self.key(inst)
