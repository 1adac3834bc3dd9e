"""Helpers for passes that rewrite instructions: uses, dead code, names, and a rule engine.

``rewrite_computation`` visits a computation's instructions in order and offers each one to a
rule function. A rule returns a replacement (an existing instruction, or new ones built with
``ctx.b``) or ``None``. Uses are forwarded lazily: an instruction's operands are redirected to
their replacements just before it is visited, so a whole pass costs one walk. New instructions
are placed just before the instruction they replace, which keeps def-before-use order, and
instructions left dead are removed at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from aotc.hlo.builder import ComputationBuilder, NameUniquer
from aotc.hlo.ir import Computation, Instruction, Module, Opcode
from aotc.passes.literals import all_equal


def module_names(module: Module) -> NameUniquer:
    """A name source that knows every computation and instruction name in ``module``."""
    names = NameUniquer()
    for comp in module.computations:
        names.get(comp.name)
        for inst in comp.instructions:
            names.get(inst.name)
    return names


def copy_instructions(
    instructions: Iterable[Instruction], mapping: dict[int, Instruction], names: NameUniquer
) -> list[Instruction]:
    """Copies of ``instructions`` (in def-before-use order) under fresh names, reading the
    copies of each other; ``mapping`` (id -> instruction) gives what stands for the rest (a
    callee's parameters) and receives every copy."""
    copies = []
    for inst in instructions:
        operands = [mapping[id(o)] for o in inst.operands]
        copy = Instruction(
            names.get(inst.name),
            inst.opcode,
            inst.shape,
            operands,
            inst.attrs,
            inst.literal,
            list(inst.called),
        )
        mapping[id(inst)] = copy
        copies.append(copy)
    return copies


def clone_computation(comp: Computation, names: NameUniquer) -> Computation:
    """A copy of ``comp`` with fresh names; the computations it calls stay shared."""
    mapping: dict[int, Instruction] = {}
    copies = copy_instructions(comp.instructions, mapping, names)
    return Computation(names.get(comp.name), copies, mapping[id(comp.root)])


def insert_before(comp: Computation, anchor: Instruction, new: Sequence[Instruction]) -> None:
    """Place ``new`` just before ``anchor`` in ``comp``'s instruction order."""
    at = next(i for i, inst in enumerate(comp.instructions) if inst is anchor)
    comp.instructions[at:at] = list(new)


def replace_all_uses(comp: Computation, old: Instruction, new: Instruction) -> None:
    """Make every user of ``old`` in ``comp`` (and the root) read ``new`` instead."""
    for inst in comp.instructions:
        if any(o is old for o in inst.operands):
            inst.operands = [new if o is old else o for o in inst.operands]
    if comp.root is old:
        comp.root = new


def remove_dead(comp: Computation) -> bool:
    """Drop instructions the root does not need (parameters stay); returns whether any went."""
    live = {id(i) for i in comp.post_order()}
    kept = [i for i in comp.instructions if id(i) in live]
    changed = len(kept) != len(comp.instructions)
    comp.instructions = kept
    return changed


def user_counts(comp: Computation) -> dict[int, int]:
    """id(instruction) -> number of distinct users, counting being the root as one use."""
    counts = {key: len(users) for key, users in comp.users().items()}
    counts[id(comp.root)] = counts.get(id(comp.root), 0) + 1
    return counts


def clone_with_operands(
    b: ComputationBuilder, inst: Instruction, operands: Iterable[Instruction]
) -> Instruction:
    """A copy of ``inst`` (same opcode, shape, attrs, callees) reading ``operands``."""
    clone = Instruction(
        b.names.get(inst.opcode.value),
        inst.opcode,
        inst.shape,
        list(operands),
        inst.attrs,
        inst.literal,
        list(inst.called),
    )
    return b.add(clone)


def constant_like(b: ComputationBuilder, value: np.ndarray, like: Instruction) -> Instruction:
    """A constant holding ``value`` in ``like``'s element type."""
    return b.constant(np.asarray(value, like.array_shape.dtype.numpy))


def splat_value(inst: Instruction) -> np.ndarray | None:
    """The one value every element has, for a constant or a broadcast of a constant."""
    while inst.opcode is Opcode.BROADCAST:
        inst = inst.operands[0]
    if inst.opcode is not Opcode.CONSTANT or inst.literal is None or inst.literal.size == 0:
        return None
    if not all_equal(inst.literal):
        return None
    return inst.literal.reshape(-1)[0]


# ---- the rule engine ---------------------------------------------------------------------------


@dataclass
class RewriteContext:
    """What a rule sees besides the instruction: a builder for new code and use counts.

    Use counts are taken when the walk starts; rules use them only to decide whether a
    rewrite pays (duplicating a dot that has other users), never for correctness.
    """

    comp: Computation
    b: ComputationBuilder
    uses: dict[int, int]

    def use_count(self, inst: Instruction) -> int:
        return self.uses.get(id(inst), 0)


Rule = Callable[[RewriteContext, Instruction], "Instruction | None"]


def rewrite_computation(comp: Computation, names: NameUniquer, rule: Rule) -> bool:
    """Offer each instruction of ``comp`` to ``rule`` once, in order; True if any changed."""
    ctx = RewriteContext(comp, ComputationBuilder(comp.name, names), user_counts(comp))
    forward: dict[int, Instruction] = {}
    placed: list[Instruction] = []
    for inst in comp.instructions:
        if any(id(o) in forward for o in inst.operands):
            inst.operands = [forward.get(id(o), o) for o in inst.operands]
        ctx.b.instructions = []
        new = rule(ctx, inst)
        placed += ctx.b.instructions
        placed.append(inst)
        if new is not None and new is not inst:
            assert new.shape == inst.shape, f"rule replaced {inst} by {new}"
            forward[id(inst)] = new
    if not forward:
        return False
    comp.instructions = placed
    comp.root = forward.get(id(comp.root), comp.root)
    remove_dead(comp)
    return True


def rewrite_module(module: Module, rule: Rule) -> bool:
    """``rewrite_computation`` on every computation of ``module`` but fused ones."""
    names = module_names(module)
    changed = False
    for comp in nonfusion_computations(module):
        changed |= rewrite_computation(comp, names, rule)
    return changed


def nonfusion_computations(module: Module) -> list[Computation]:
    """The computations passes rewrite, as XLA's ``MakeNonfusionComputations``: a fused
    computation belongs to its fusion, whose recorded plan names its instructions."""
    fused = {
        id(callee)
        for comp in module.computations
        for inst in comp.instructions
        if inst.opcode is Opcode.FUSION
        for callee in inst.called
    }
    return [c for c in module.computations if id(c) not in fused]


def first_match(rules: Iterable[Rule]) -> Rule:
    """One rule that tries ``rules`` in order and returns the first rewrite found."""
    table = list(rules)

    def apply(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
        for rule in table:
            ctx.b.instructions = []
            new = rule(ctx, inst)
            if new is not None:
                return new
        ctx.b.instructions = []
        return None

    return apply
