"""TensorLists whose length is known only at run time: a buffer plus a length counter.

A list pushed to or popped from inside a loop body changes length every iteration, but a loop
carry must keep its shape. Such a list is held as a buffer of ``capacity`` rows (its most
elements, from ``max_num_elements`` or from the loop's trip count) and an s32 ``length``
carried next to it. Inside a body the length is also tracked as an offset from the length the
list had when the iteration began, so the loop can bound the list (``peak``) and, when the trip
count is a constant, know its length after the loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from aotc.errors import ShapeError
from aotc.hlo.builder import ComputationBuilder
from aotc.hlo.ir import Computation, Instruction
from aotc.hlo.shape import AnyShape, PrimitiveType, Shape

S32 = PrimitiveType.S32


@dataclass(frozen=True)
class RuntimeLength:
    """The length of a list buffer: ``length`` elements of its rows are the list. ``base`` is
    the length at the start of the loop iteration and ``offset`` is ``length - base`` when
    known statically (pushes and pops only), else None."""

    length: Instruction
    base: Instruction | None = None
    offset: int | None = None
    writes: tuple[Instruction, ...] = ()  # offset None: length is max(base, each write + 1)

    def written(self, index: Instruction, length: Instruction) -> RuntimeLength:
        """After a write at ``index`` that grows the list to ``length`` (``max``)."""
        if self.base is not None and (self.offset == 0 or self.writes):
            return RuntimeLength(length, self.base, None, (*self.writes, index))
        return RuntimeLength(length)

    def moved(self, length: Instruction, step: int) -> RuntimeLength:
        """After a push (``step`` 1) or a pop (-1) made it ``length``."""
        if self.offset is None:
            return RuntimeLength(length)
        return RuntimeLength(length, self.base, self.offset + step)


@dataclass(frozen=True)
class ListStep:
    """What one iteration of a loop body does to a carried list of run-time length: changes
    its length by ``offset`` (None: not statically), reaching at most ``peak`` elements above
    its starting length on the way, or grows it by writes at the ``writes`` indices."""

    offset: int | None
    peak: int
    writes: tuple[Instruction, ...]


class ListLengths:
    """Per translation (shared with the function bodies it translates): which list buffers
    have a run-time length, each list's ``max_num_elements``, and the most elements each
    iteration's lists reach above their starting length. Keys are instruction ids, kept with
    the instruction so that an id is never reused for another value."""

    def __init__(self) -> None:
        self._runtime: dict[int, tuple[Instruction, RuntimeLength]] = {}
        self._capacity: dict[int, tuple[Instruction, int]] = {}
        self._peaks: dict[int, tuple[Instruction, int]] = {}
        self._steps: dict[int, tuple[Computation, list[ListStep]]] = {}

    def runtime(self, buffer: Instruction) -> RuntimeLength | None:
        held = self._runtime.get(id(buffer))
        return held[1] if held is not None and held[0] is buffer else None

    def set_runtime(self, buffer: Instruction, length: RuntimeLength) -> Instruction:
        """Record that ``buffer`` holds a list of ``length`` (and raise its base's peak)."""
        self._runtime[id(buffer)] = (buffer, length)
        if length.base is not None and length.offset is not None:
            self.reach(length.base, length.offset)
        return buffer

    def reach(self, base: Instruction, offset: int) -> None:
        """A list that started the iteration at ``base`` held ``offset`` more elements."""
        self._peaks[id(base)] = (base, max(self.peak(base), offset))

    def peak(self, base: Instruction) -> int:
        """The most elements above ``base`` that a list starting the iteration at ``base``
        reached."""
        held = self._peaks.get(id(base))
        return held[1] if held is not None and held[0] is base else 0

    def step(self, result: Instruction, base: Instruction) -> ListStep:
        """What a body did to the list it returns as ``result`` that began at ``base``."""
        held = self.runtime(result)
        if held is None or held.base is not base:
            return ListStep(None, 0, ())
        return ListStep(held.offset, self.peak(base), held.writes)

    def set_steps(self, body: Computation, steps: list[ListStep]) -> None:
        self._steps[id(body)] = (body, steps)

    def steps(self, body: Computation) -> list[ListStep]:
        """The ``step`` of each list of run-time length ``body`` carries, in order."""
        held = self._steps.get(id(body))
        assert held is not None and held[0] is body
        return held[1]

    def capacity(self, tensor_list: Instruction) -> int | None:
        """The list's ``max_num_elements``, when it was given."""
        held = self._capacity.get(id(tensor_list))
        return held[1] if held is not None and held[0] is tensor_list else None

    def set_capacity(self, tensor_list: Instruction, capacity: int | None) -> Instruction:
        if capacity is not None:
            self._capacity[id(tensor_list)] = (tensor_list, capacity)
        return tensor_list

    def inherit(self, new: Instruction, old: Instruction) -> Instruction:
        """``new`` is ``old`` changed: it keeps ``old``'s ``max_num_elements``."""
        return self.set_capacity(new, self.capacity(old))


def as_runtime(
    b: ComputationBuilder, lists: ListLengths, value: Instruction, carried: AnyShape
) -> tuple[Instruction, Instruction]:
    """A loop body's result for a carried list of run-time length: its buffer of the carry's
    shape and its length. A list of static length (made afresh in the body) is padded."""
    held = lists.runtime(value)
    if held is not None:
        return value, held.length
    assert isinstance(carried, Shape)
    return padded(b, value, carried.dims[0]), b.constant(value.array_shape.dims[0], S32)


def padded(b: ComputationBuilder, buffer: Instruction, capacity: int) -> Instruction:
    """A list's ``buffer`` as one of ``capacity`` rows, zeros after its own."""
    dims = buffer.array_shape.dims
    if dims[0] > capacity:
        raise ShapeError(f"a list of {dims[0]} elements does not fit the {capacity} of the loop")
    if dims[0] == capacity:
        return buffer
    zero = b.constant(0, buffer.array_shape.dtype)
    zeros = b.broadcast(zero, (capacity, *dims[1:]), [])
    if dims[0] == 0:
        return zeros
    return b.dynamic_update_slice(zeros, buffer, [b.constant(0, S32)] * len(dims))
