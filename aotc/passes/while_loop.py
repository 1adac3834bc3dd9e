"""While-loop simplification, as XLA's ``WhileLoopSimplifier`` and loop-invariant code motion.

Per loop, in every computation that runs instructions in sequence:

* a trip count proven 0 (``loop_analysis.trip_count``) leaves the initial carry; proven 1, one
  inlined copy of the body; another proven count is recorded (``WhileAttrs``);
* the loop's results that the body passes through unchanged are read from the initial carry;
* invariant carry elements that start as constants (or splats) become constants in the
  condition and body, where later passes see them (a dot with constant weights packs them
  at compile time);
* a dot of one row of an invariant element, indexed by a loop counter, becomes a row of the
  dot of the whole element (``loop_projection``: an RNN's input projection ``x_t @ W``), which
  is invariant work;
* invariant work in the body (computed from constants and invariant elements only) is done
  once before the loop and carried in as a new element;
* carry elements nothing needs (not read after the loop, by the condition, or to compute
  another needed element) are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from aotc.hlo.builder import NameUniquer
from aotc.hlo.ir import (
    Computation,
    Instruction,
    Module,
    Opcode,
    TupleIndex,
    WhileAttrs,
)
from aotc.hlo.loop_analysis import trip_count
from aotc.passes.call_inliner import inline_calls
from aotc.passes.dce import remove_unreachable_computations
from aotc.passes.loop_projection import project_before_loop
from aotc.passes.rewrite import (
    copy_instructions,
    insert_before,
    module_names,
    remove_dead,
    replace_all_uses,
)
from aotc.passes.while_carry import (
    CarriedLoop,
    carried_loop,
    invariant_instructions,
    live_elements,
    rebuild,
)

#: Invariant instructions not worth a carry element of their own: they compute (almost)
#: nothing, and hoisted they would keep a buffer live through the loop.
_CHEAP = frozenset({
    Opcode.CONSTANT, Opcode.GET_TUPLE_ELEMENT, Opcode.BROADCAST, Opcode.RESHAPE,
    Opcode.BITCAST, Opcode.IOTA,
})  # fmt: skip


@dataclass(frozen=True)
class WhileLoopSimplifier:
    """Remove loops of 0 or 1 trips, sink constants, hoist invariant code, drop dead carry."""

    name: ClassVar[str] = "while-simplify"

    def run(self, module: Module) -> bool:
        names = module_names(module)
        gone: set[int] = set()  # conditions and bodies of loops this run removed
        changed = False
        for comp in module.sequential_computations():
            if id(comp) in gone:
                continue  # its loops' bodies are shared with the inlined copies now
            for inst in [i for i in comp.instructions if i.opcode is Opcode.WHILE]:
                changed |= _simplify(comp, inst, names, gone)
        if changed:
            remove_unreachable_computations(module)
        return changed


def _simplify(comp: Computation, inst: Instruction, names: NameUniquer, gone: set[int]) -> bool:
    trips = trip_count(inst)
    if trips is not None and trips <= 1:
        gone.update(id(c) for c in inst.called)
        _replace_by_trips(comp, inst, trips, names)
        return True
    changed = _annotate(inst, trips)
    loop = carried_loop(comp, inst)
    if loop is None:
        return changed
    changed |= _forward_invariant_results(loop, names)
    changed |= _sink_constants(loop, names)
    changed |= project_before_loop(loop, names)  # makes invariant work for the next step
    changed |= _hoist_invariant_code(loop, names)
    return _drop_dead_elements(loop, names) or changed


def _annotate(loop: Instruction, trips: int | None) -> bool:
    """Record a proven trip count on the loop (for the report and the dumps)."""
    attrs = WhileAttrs(trips)
    if trips is None or loop.attrs == attrs:
        return False
    loop.attrs = attrs
    return True


def _replace_by_trips(comp: Computation, loop: Instruction, trips: int, names: NameUniquer) -> None:
    """No trip: the loop's value is its initial carry. One trip: the body applied to it."""
    if trips == 0:
        replace_all_uses(comp, loop, loop.operands[0])
        remove_dead(comp)
        return
    body = loop.called[1]
    call = Instruction(names.get("call"), Opcode.CALL, loop.shape, loop.operands, called=[body])
    insert_before(comp, loop, [call])
    replace_all_uses(comp, loop, call)
    inline_calls(comp, names)


def _reads_of(loop: CarriedLoop, comp: Computation, k: int) -> list[Instruction]:
    return [r for r in loop.element_reads(comp) if r.attrs_as(TupleIndex).index == k]


def _forward_invariant_results(loop: CarriedLoop, names: NameUniquer) -> bool:
    """After the loop, an element the body passes through is its value before the loop."""
    changed = False
    for k in sorted(loop.invariant()):
        for read in _reads_of(loop, loop.caller, k):
            replace_all_uses(loop.caller, read, loop.init(k, names))
            changed = True
    return changed


def _sink_constants(loop: CarriedLoop, names: NameUniquer) -> bool:
    start = loop.inst.operands[0]
    if start.opcode is not Opcode.TUPLE:
        return False
    changed = False
    for k in sorted(loop.invariant()):
        value = _constant_closure(start.operands[k])
        for comp in (loop.condition, loop.body) if value else ():
            # The body's root keeps passing the element through (it is dead after this).
            kept = (loop.body.root, k) if comp is loop.body else None
            reads = [r for r in _reads_of(loop, comp, k) if _uses(comp, r, kept)]
            if reads:
                copies = copy_instructions(value, {}, names)
                comp.instructions[1:1] = copies  # after the (one) parameter
                for read in reads:
                    _replace_uses(comp, read, copies[-1], kept)
                changed = True
    return changed


def _constant_closure(inst: Instruction) -> list[Instruction]:
    """``[constant]`` or ``[constant, broadcast]`` when ``inst`` is one (a splat), else []."""
    if inst.opcode is Opcode.CONSTANT:
        return [inst]
    if inst.opcode is Opcode.BROADCAST and inst.operands[0].opcode is Opcode.CONSTANT:
        return [inst.operands[0], inst]
    return []


_Use = tuple[Instruction, int]  # (user, operand number)


def _uses(comp: Computation, value: Instruction, kept: _Use | None) -> bool:
    """Whether anything in ``comp`` reads ``value`` but the use ``kept``."""
    return any(
        o is value and (inst, n) != kept
        for inst in comp.instructions
        for n, o in enumerate(inst.operands)
    )


def _replace_uses(comp: Computation, old: Instruction, new: Instruction, kept: _Use | None) -> None:
    """Every use of ``old`` in ``comp`` but ``kept`` reads ``new``."""
    for inst in comp.instructions:
        if any(o is old for o in inst.operands):
            inst.operands = [
                new if o is old and (inst, n) != kept else o for n, o in enumerate(inst.operands)
            ]
    if comp.root is old:
        comp.root = new


def _hoist_invariant_code(loop: CarriedLoop, names: NameUniquer) -> bool:
    body = loop.body
    invariant = invariant_instructions(loop)
    hoisted = _worth_hoisting(body, invariant)
    if not hoisted:
        return False
    needed = _needed(hoisted, invariant)
    param = body.parameters[0]
    mapping = {
        id(r): loop.init(r.attrs_as(TupleIndex).index, names)
        for r in needed
        if r.opcode is Opcode.GET_TUPLE_ELEMENT and r.operands[0] is param
    }
    work = [i for i in needed if id(i) not in mapping]
    insert_before(loop.caller, loop.inst, copy_instructions(work, mapping, names))
    added = [mapping[id(h)] for h in hoisted]
    rebuild(loop, range(loop.size), names, added, hoisted)
    return True


def _worth_hoisting(body: Computation, invariant: dict[int, Instruction]) -> list[Instruction]:
    """The invariant values the rest of the body reads, in post order; a cheap one (a
    broadcast) stays in the body, and the values it reads are hoisted instead."""
    users = body.users()
    outputs = {id(v) for v in body.root.operands}
    pending = [
        i
        for i in invariant.values()
        if id(i) in outputs or any(id(u) not in invariant for u in users[id(i)])
    ]
    chosen: set[int] = set()
    while pending:
        inst = pending.pop()
        if inst.opcode not in _CHEAP:
            chosen.add(id(inst))
        else:  # get-tuple-element and constants read nothing invariant: they stop here
            pending.extend(o for o in inst.operands if id(o) in invariant)
    return [i for i in invariant.values() if id(i) in chosen]


def _needed(roots: list[Instruction], invariant: dict[int, Instruction]) -> list[Instruction]:
    """``roots`` and the invariant instructions they are computed from, operands first."""
    wanted = {id(r) for r in roots}
    pending = list(roots)
    while pending:
        for op in pending.pop().operands:
            if id(op) not in wanted:
                wanted.add(id(op))
                pending.append(op)
    return [i for i in invariant.values() if id(i) in wanted]  # post order kept


def _drop_dead_elements(loop: CarriedLoop, names: NameUniquer) -> bool:
    live = live_elements(loop)
    if len(live) == loop.size:
        return False
    rebuild(loop, sorted(live), names)
    return True
