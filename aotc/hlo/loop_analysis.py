"""What can be known about a while loop before it runs: its induction variable and trip count.

The pattern is the one JAX's ``fori_loop`` and ``scan`` (and TensorFlow's loop counters) emit,
and XLA's ``while_loop_analysis`` matches: a carry element ``i`` that starts as a constant, that
the body steps by a constant (``i + c`` or ``i - c``), and that the condition compares with a
constant (``i < n``, ``n > i``, ...). A constant may also be a carry element the body passes
through unchanged and that starts as a constant (TensorFlow carries the limit and step of
``tf.range``). The trip count follows in closed form, and only when no
value the counter takes on the way overflows its type (wrapping counters are not matched).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from aotc.hlo.ir import (
    CompareAttrs,
    ComparisonDirection,
    Computation,
    Instruction,
    Opcode,
    TupleIndex,
)
from aotc.hlo.shape import Shape

_SWAPPED = {
    ComparisonDirection.LT: ComparisonDirection.GT,
    ComparisonDirection.LE: ComparisonDirection.GE,
    ComparisonDirection.GT: ComparisonDirection.LT,
    ComparisonDirection.GE: ComparisonDirection.LE,
    ComparisonDirection.EQ: ComparisonDirection.EQ,
    ComparisonDirection.NE: ComparisonDirection.NE,
}


@dataclass(frozen=True)
class InductionVariable:
    """Carry element ``index`` starts at ``init``, steps by ``step``; the loop runs while
    ``i <direction> bound``. ``low``/``high`` is the range of the counter's type."""

    index: int
    init: int
    step: int
    direction: ComparisonDirection
    bound: int
    low: int
    high: int


def scalar_constant(inst: Instruction) -> int | None:
    """The value of an integer scalar constant, else None."""
    if inst.opcode is not Opcode.CONSTANT or inst.literal is None or inst.literal.ndim != 0:
        return None
    if inst.literal.dtype.kind not in "iu":
        return None
    return int(inst.literal[()])


def tuple_index_of(inst: Instruction, tuple_value: Instruction) -> int | None:
    """k when ``inst`` is ``get-tuple-element(tuple_value), index=k``, else None."""
    if inst.opcode is not Opcode.GET_TUPLE_ELEMENT or inst.operands[0] is not tuple_value:
        return None
    return inst.attrs_as(TupleIndex).index


def induction_variable(loop: Instruction) -> InductionVariable | None:
    """The loop's counter, if its condition, body and initial value have the pattern."""
    condition, body = loop.called
    init = loop.operands[0]
    return loop_counter(init.operands if init.opcode is Opcode.TUPLE else None, condition, body)


def loop_counter(
    init: Sequence[Instruction] | None, condition: Computation, body: Computation
) -> InductionVariable | None:
    """The counter of a loop not built yet: ``init`` is its carry's initial elements (None
    when they are not known one by one)."""
    constants = _Constants(init, body)
    compared = _compared_counter(condition, constants)
    if compared is None or init is None:
        return None
    index, direction, bound = compared
    step = counter_step(body, index, constants)
    start = scalar_constant(init[index])
    if step is None or start is None:
        return None
    shape = condition.parameters[0].shape
    counter = shape.elements[index]  # type: ignore[union-attr]
    assert isinstance(counter, Shape)
    info = np.iinfo(counter.dtype.numpy)
    return InductionVariable(index, start, step, direction, bound, int(info.min), int(info.max))


class _Constants:
    """Integer scalar constants as a loop's condition or body sees them: constant
    instructions, and reads of carry elements the body passes through that start as one."""

    def __init__(self, init: Sequence[Instruction] | None, body: Computation) -> None:
        self._values: dict[int, int] = {}
        root, param = body.root, body.parameters[0]
        if init is None or root.opcode is not Opcode.TUPLE:
            return
        for k, (start, result) in enumerate(zip(init, root.operands, strict=False)):
            value = scalar_constant(start)
            if value is not None and tuple_index_of(result, param) == k:
                self._values[k] = value

    def value(self, inst: Instruction, param: Instruction) -> int | None:
        value = scalar_constant(inst)
        if value is not None:
            return value
        index = tuple_index_of(inst, param)
        return None if index is None else self._values.get(index)


def _compared_counter(
    condition: Computation, constants: _Constants
) -> tuple[int, ComparisonDirection, int] | None:
    """(k, direction, n) when the condition's root is ``gte(param, k) <direction> n``."""
    root, param = condition.root, condition.parameters[0]
    if root.opcode is not Opcode.COMPARE:
        return None
    direction = root.attrs_as(CompareAttrs).direction
    lhs, rhs = root.operands
    if constants.value(lhs, param) is not None:  # n > i is i < n
        lhs, rhs, direction = rhs, lhs, _SWAPPED[direction]
    index, bound = tuple_index_of(lhs, param), constants.value(rhs, param)
    if index is None or bound is None:
        return None
    return index, direction, bound


def counter_step(body: Computation, index: int, constants: _Constants | None = None) -> int | None:
    """c when the body's root tuple holds ``gte(param, index) + c`` (or ``- c``) at index."""
    root, param = body.root, body.parameters[0]
    if root.opcode is not Opcode.TUPLE:
        return None
    known = constants if constants is not None else _Constants(None, body)
    update = root.operands[index]
    if update.opcode not in (Opcode.ADD, Opcode.SUBTRACT):
        return None
    counter, constant = update.operands
    if update.opcode is Opcode.ADD and known.value(counter, param) is not None:
        counter, constant = constant, counter
    step = known.value(constant, param)
    if step is None or tuple_index_of(counter, param) != index:
        return None
    return step if update.opcode is Opcode.ADD else -step


def trip_count(loop: Instruction) -> int | None:
    """How many times the body runs, when the induction variable pattern proves it."""
    iv = induction_variable(loop)
    return None if iv is None else count_trips(iv)


def count_trips(iv: InductionVariable) -> int | None:
    """Iterations until ``i <direction> bound`` fails, or None if the counter would overflow
    (or never stop) first."""
    trips = _closed_form(iv.init, iv.step, iv.direction, iv.bound)
    if trips is None:
        return None
    last = iv.init + trips * iv.step  # the value that ends the loop: the body computed it
    return trips if iv.low <= last <= iv.high else None


def _closed_form(init: int, step: int, direction: ComparisonDirection, bound: int) -> int | None:
    runs = {
        ComparisonDirection.LT: init < bound,
        ComparisonDirection.LE: init <= bound,
        ComparisonDirection.GT: init > bound,
        ComparisonDirection.GE: init >= bound,
        ComparisonDirection.EQ: init == bound,
        ComparisonDirection.NE: init != bound,
    }[direction]
    if not runs:
        return 0
    distance = bound - init
    if direction is ComparisonDirection.EQ:
        return 1 if step != 0 else None
    if direction is ComparisonDirection.NE:
        exact = step != 0 and distance % step == 0 and distance // step > 0
        return distance // step if exact else None
    if direction in (ComparisonDirection.LT, ComparisonDirection.LE) and step > 0:
        inclusive = direction is ComparisonDirection.LE
        return (distance + inclusive + step - 1) // step
    if direction in (ComparisonDirection.GT, ComparisonDirection.GE) and step < 0:
        inclusive = direction is ComparisonDirection.GE
        return (-distance + inclusive - step - 1) // -step
    return None  # the counter moves away from the bound: it only stops by wrapping around
