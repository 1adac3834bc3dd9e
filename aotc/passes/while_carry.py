"""A while loop's tuple carry, as passes rewrite it: invariant and live elements, and rebuilding
the loop with elements dropped or values added.

Only loops in the form JAX and the TensorFlow front end emit are rewritten (``CarriedLoop``):
the carry is a tuple that the caller, the condition and the body read only through
``get-tuple-element``, and the body's root is a ``tuple`` instruction. Parameters, loops and
users are changed in place, so every instruction keeps its identity and name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aotc.hlo.builder import NameUniquer
from aotc.hlo.ir import CONTROL_FLOW, Computation, Instruction, Opcode, TupleIndex
from aotc.hlo.shape import TupleShape
from aotc.passes.rewrite import insert_before, remove_dead, replace_all_uses


@dataclass
class CarriedLoop:
    """A ``while`` of ``caller`` whose tuple carry is read only element by element."""

    inst: Instruction
    caller: Computation

    @property
    def condition(self) -> Computation:
        return self.inst.called[0]

    @property
    def body(self) -> Computation:
        return self.inst.called[1]

    @property
    def size(self) -> int:
        assert isinstance(self.inst.shape, TupleShape)
        return len(self.inst.shape.elements)

    def element_reads(self, comp: Computation) -> list[Instruction]:
        """The live ``get-tuple-element`` reads of the carry in ``comp`` (caller, condition or
        body)."""
        carry = self.inst if comp is self.caller else comp.parameters[0]
        return [i for i in comp.post_order() if i.operands and i.operands[0] is carry]

    def invariant(self) -> set[int]:
        """Elements the body passes through unchanged."""
        root, param = self.body.root, self.body.parameters[0]
        return {k for k, v in enumerate(root.operands) if _index(v, param) == k}

    def init(self, k: int, names: NameUniquer) -> Instruction:
        """The caller's value of element ``k`` before the loop (a new read, placed before it)."""
        start = self.inst.operands[0]
        if start.opcode is Opcode.TUPLE:
            return start.operands[k]
        read = _get(start, k, names)
        insert_before(self.caller, self.inst, [read])
        return read


def carried_loop(caller: Computation, inst: Instruction) -> CarriedLoop | None:
    """``inst`` as a ``CarriedLoop``, or None when its carry is not in that form."""
    if inst.opcode is not Opcode.WHILE or not isinstance(inst.shape, TupleShape):
        return None
    loop = CarriedLoop(inst, caller)
    if loop.body.root.opcode is not Opcode.TUPLE or caller.root is inst:
        return None
    carries = [(caller, inst), *((c, c.parameters[0]) for c in (loop.condition, loop.body))]
    for comp, carry in carries:
        users = comp.users().get(id(carry), [])
        if comp.root is carry or any(u.opcode is not Opcode.GET_TUPLE_ELEMENT for u in users):
            return None
    return loop


def invariant_instructions(loop: CarriedLoop) -> dict[int, Instruction]:
    """Body instructions whose value is the same in every iteration."""
    body, passed = loop.body, loop.invariant()
    param = body.parameters[0]
    invariant: dict[int, Instruction] = {}
    for inst in body.post_order():
        if inst.opcode is Opcode.GET_TUPLE_ELEMENT and inst.operands[0] is param:
            if inst.attrs_as(TupleIndex).index in passed:
                invariant[id(inst)] = inst
        elif inst.opcode is Opcode.PARAMETER or inst.opcode in CONTROL_FLOW or inst.is_tuple:
            continue
        elif all(id(o) in invariant for o in inst.operands):
            invariant[id(inst)] = inst
    return invariant


def _index(inst: Instruction, carry: Instruction) -> int | None:
    if inst.opcode is not Opcode.GET_TUPLE_ELEMENT or inst.operands[0] is not carry:
        return None
    return inst.attrs_as(TupleIndex).index


def _get(
    carry: Instruction, k: int, names: NameUniquer, shape: TupleShape | None = None
) -> Instruction:
    """A read of element ``k`` of ``carry`` (whose shape is, or is about to be, ``shape``)."""
    elements = (shape or carry.shape).elements  # type: ignore[union-attr]
    name = names.get("get-tuple-element")
    return Instruction(name, Opcode.GET_TUPLE_ELEMENT, elements[k], [carry], TupleIndex(k))


def live_elements(loop: CarriedLoop) -> set[int]:
    """Elements the caller reads after the loop, the condition reads, or the body needs to
    compute a live element."""
    live = {_read_index(r) for r in loop.element_reads(loop.caller)}
    live |= {_read_index(r) for r in loop.element_reads(loop.condition)}
    needs = _elements_needed(loop.body)
    pending = list(live)
    while pending:
        for k in needs[pending.pop()]:
            if k not in live:
                live.add(k)
                pending.append(k)
    return live


def _read_index(read: Instruction) -> int:
    return read.attrs_as(TupleIndex).index


def _elements_needed(body: Computation) -> list[set[int]]:
    """Per element of the body's root tuple: the carry elements its value is computed from."""
    param = body.parameters[0]
    masks: dict[int, int] = {}  # id -> bit k set when the value depends on element k
    for inst in body.post_order():
        k = _index(inst, param)
        mask = 1 << k if k is not None else 0
        for op in inst.operands:
            mask |= masks.get(id(op), 0)
        masks[id(inst)] = mask
    bits = [masks[id(v)] for v in body.root.operands]
    return [{k for k in range(mask.bit_length()) if mask >> k & 1} for mask in bits]


def rebuild(
    loop: CarriedLoop,
    keep: Sequence[int],
    names: NameUniquer,
    added: Sequence[Instruction] = (),
    replaced: Sequence[Instruction] = (),
) -> None:
    """Carry elements ``keep`` (in order), then the caller's values ``added``, which the body
    passes through and reads where it computed ``replaced`` (one each) before.

    Elements left out must be dead (``live_elements``): nothing may read them any more.
    """
    old = loop.inst.shape
    assert isinstance(old, TupleShape)
    shape = TupleShape((*(old.elements[k] for k in keep), *(v.shape for v in added)))
    renumber = {k: i for i, k in enumerate(keep)}
    _rebuild_body(loop.body, keep, renumber, shape, replaced, names)
    _renumber_reads(loop.condition, loop.condition.parameters[0], renumber, shape)
    start = [*(loop.init(k, names) for k in keep), *added]
    init = Instruction(names.get("tuple"), Opcode.TUPLE, shape, start)
    insert_before(loop.caller, loop.inst, [init])
    loop.inst.operands = [init]
    _renumber_reads(loop.caller, loop.inst, renumber, shape)


def _rebuild_body(
    body: Computation,
    keep: Sequence[int],
    renumber: dict[int, int],
    shape: TupleShape,
    replaced: Sequence[Instruction],
    names: NameUniquer,
) -> None:
    param = body.parameters[0]
    reads = [_get(param, len(keep) + j, names, shape) for j in range(len(replaced))]
    body.instructions[1:1] = reads  # after the parameter; new reads keep their numbers
    for value, read in zip(replaced, reads, strict=True):
        replace_all_uses(body, value, read)
    outputs = [*(body.root.operands[k] for k in keep), *reads]
    root = Instruction(names.get("tuple"), Opcode.TUPLE, shape, outputs)
    body.instructions.append(root)
    body.root = root
    fresh = {id(r) for r in reads}
    remove_dead(body)
    _renumber_reads(body, param, renumber, shape, skip=fresh)


def _renumber_reads(
    comp: Computation,
    carry: Instruction,
    renumber: dict[int, int],
    shape: TupleShape,
    skip: set[int] | None = None,
) -> None:
    """Give ``carry`` its new ``shape`` and its element reads in ``comp`` their new indices;
    reads of dropped elements must be dead (they are removed)."""
    remove_dead(comp)
    carry.shape = shape
    for inst in comp.instructions:
        if _index(inst, carry) is not None and id(inst) not in (skip or ()):
            inst.attrs = TupleIndex(renumber[_read_index(inst)])
