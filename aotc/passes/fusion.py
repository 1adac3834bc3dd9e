"""Instruction fusion: groups of instructions become XLA ``fusion`` instructions.

Like XLA's instruction fusion, the pass walks each computation that runs its instructions as
kernels (the entry, loop bodies, branches: ``Module.sequential_computations``) consumers first. Each
instruction not yet inside a group starts one (as its root) and pulls in producers, operands of
members, while the group stays compilable (``aotc/hlo/fusion_plan.py``: ``plan_group``):

* a producer joins only when every user of it is in the group (so nothing is computed twice),
  except cheap ones -- broadcast, reshape, bitcast, iota, scalar constants -- which are
  duplicated into the group and kept for their other users;
* parameters, tuples, get-tuple-element and non-scalar constants never join (they are buffers);
* a dot or convolution joins the group of its only user as an output fusion (the epilogue);
  its operands stay outside; a reduce joins its consumers as a row group (softmax, layer norm).

Each group with more than one member is outlined into a fused computation whose parameters are
the group's outside operands, in order of first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from aotc.hlo.builder import NameUniquer
from aotc.hlo.fusion_plan import ELEMENTAL, FusionPlan, outlined, plan_group
from aotc.hlo.ir import (
    Computation,
    FusionAttrs,
    FusionKind,
    Instruction,
    Module,
    Opcode,
    ParameterAttrs,
)
from aotc.hlo.memory import ALIASING
from aotc.hlo.opcodes import CONTRACTIONS
from aotc.passes.rewrite import module_names

#: Producers worth duplicating into several groups: they compute nothing.
CHEAP = frozenset({Opcode.BROADCAST, Opcode.RESHAPE, Opcode.BITCAST, Opcode.IOTA, Opcode.CONSTANT})


@dataclass
class FusionGroup:
    """A proposed fusion: its root, its members (root included) and how to emit it."""

    root: Instruction
    members: list[Instruction]
    plan: FusionPlan
    absorbed: set[int] = field(default_factory=set)  # members no one outside uses

    def ids(self) -> set[int]:
        return {id(m) for m in self.members}


@dataclass(frozen=True)
class Fusion:
    """Fuse elementwise chains, reductions with their producers and consumers, and dot
    and convolution epilogues into ``fusion`` instructions (kLoop, kInput, kOutput)."""

    name: str = "fusion"
    max_members: int = 128  # bounds compile time of one kernel, not correctness

    def run(self, module: Module) -> bool:
        changed = False
        for comp in module.sequential_computations():  # loop bodies and branches too
            groups = find_groups(comp, self.max_members)
            if groups:
                outline_groups(module, comp, groups)
                changed = True
        return changed


def find_groups(comp: Computation, max_members: int = 128) -> list[FusionGroup]:
    """The groups to fuse in ``comp``, consumers first; single instructions are left alone."""
    users = comp.users()
    group_of: dict[int, FusionGroup] = {}
    groups: list[FusionGroup] = []
    for inst in reversed(comp.post_order()):
        if id(inst) in group_of or not _starts_group(inst) or _dead(inst, users, group_of):
            continue
        group = _grow(inst, users, group_of, max_members)
        if len(group.members) > 1:
            groups.append(group)
            group.absorbed = _absorbed(group, users)
            for m in group.members:
                if id(m) in group.absorbed:
                    group_of[id(m)] = group
    return groups


def _starts_group(inst: Instruction) -> bool:
    # Aliases (reshape, bitcast) run no kernel: a group never starts at them.
    if inst.opcode in ALIASING or inst.opcode is Opcode.CONSTANT or inst.is_tuple:
        return False
    return inst.opcode in ELEMENTAL or inst.opcode is Opcode.REDUCE


def _dead(
    inst: Instruction, users: dict[int, list[Instruction]], group_of: dict[int, FusionGroup]
) -> bool:
    """Every user computes ``inst`` inside its own group (it was duplicated there)."""
    inst_users = users[id(inst)]
    return bool(inst_users) and all(
        id(u) in group_of and id(inst) in group_of[id(u)].ids() for u in inst_users
    )


def _grow(
    root: Instruction,
    users: dict[int, list[Instruction]],
    group_of: dict[int, FusionGroup],
    max_members: int,
) -> FusionGroup:
    group = FusionGroup(root, [root], FusionPlan(FusionKind.LOOP))
    changed = True
    while changed and len(group.members) < max_members:
        changed = False
        for member in list(group.members):
            for producer in dict.fromkeys(member.operands):
                if _try_add(group, producer, users, group_of):
                    changed = True
    return group


def _try_add(
    group: FusionGroup,
    producer: Instruction,
    users: dict[int, list[Instruction]],
    group_of: dict[int, FusionGroup],
) -> bool:
    """Add ``producer``, or if that alone is not compilable, it with all it can pull in.

    The second try matters for row groups: ``rsqrt`` under a broadcast is only acceptable
    once the reduce below it joins too, which makes the broadcast a row boundary.
    """
    if not _joinable(group, producer, users, group_of):
        return False
    for extra in ([producer], _closure(group, producer, users, group_of)):
        plan = plan_group([*group.members, *extra], group.root)
        if plan is not None:
            group.members.extend(extra)
            group.plan = plan
            return True
    return False


def _joinable(
    group: FusionGroup,
    producer: Instruction,
    users: dict[int, list[Instruction]],
    group_of: dict[int, FusionGroup],
) -> bool:
    if id(producer) in group.ids() or id(producer) in group_of or not _may_join(producer):
        return False
    if producer.opcode in CHEAP:
        return True
    # Users that are duplicates (kept outside too) would keep the original alive as well.
    absorbed = _absorbed(group, users)
    return all(id(u) in absorbed for u in users[id(producer)])


def _closure(
    group: FusionGroup,
    producer: Instruction,
    users: dict[int, list[Instruction]],
    group_of: dict[int, FusionGroup],
) -> list[Instruction]:
    """``producer`` and every producer below it that could join along with it."""
    trial = FusionGroup(group.root, [*group.members, producer], group.plan)
    pending = [producer]
    while pending and len(trial.members) < 2 * len(group.members) + 64:
        for op in dict.fromkeys(pending.pop().operands):
            if _joinable(trial, op, users, group_of):
                trial.members.append(op)
                pending.append(op)
    return trial.members[len(group.members) :]


def _absorbed(group: FusionGroup, users: dict[int, list[Instruction]]) -> set[int]:
    """Members nothing outside the group uses, directly or through a duplicated member."""
    absorbed = {id(group.root)}
    for m in reversed(_ordered(group)):
        if m is not group.root and all(id(u) in absorbed for u in users[id(m)]):
            absorbed.add(id(m))
    return absorbed


def _may_join(inst: Instruction) -> bool:
    if inst.is_tuple:
        return False
    if inst.opcode is Opcode.CONSTANT:
        return inst.array_shape.size == 1
    return inst.opcode in ELEMENTAL or inst.opcode is Opcode.REDUCE or inst.opcode in CONTRACTIONS


# ---- outlining -------------------------------------------------------------------------------


def outline_groups(module: Module, comp: Computation, groups: Sequence[FusionGroup]) -> None:
    """Replace each group of ``comp`` by a ``fusion`` calling a new computation, then drop
    dead code."""
    names = module_names(module)
    replacement: dict[int, Instruction] = {}
    fusions = [_outline(module, g, names) for g in groups]
    for group, fusion in zip(groups, fusions, strict=True):
        replacement[id(group.root)] = fusion
    for inst in [*comp.instructions, *fusions]:
        inst.operands = [replacement.get(id(op), op) for op in inst.operands]
    comp.root = replacement.get(id(comp.root), comp.root)
    comp.instructions = comp.post_order()


def _outline(module: Module, group: FusionGroup, names: NameUniquer) -> Instruction:
    ids = group.ids()
    members = _ordered(group)
    params: dict[int, Instruction] = {}
    clones: dict[int, Instruction] = {}
    for m in members:
        operands = [clones.get(id(op)) or _param(op, params, names) for op in m.operands]
        # A duplicated producer stays in the entry too; names are unique module-wide.
        name = m.name if id(m) in group.absorbed else names.get(m.name)
        clones[id(m)] = Instruction(
            name, m.opcode, m.shape, operands, m.attrs, m.literal, list(m.called)
        )
    outside = _outside_operands(members, ids)
    kind = group.plan.kind
    comp_name = names.get(f"fused_{kind.value[1:].lower()}")
    comp = Computation(comp_name, [*params.values(), *clones.values()], clones[id(group.root)])
    module.add_computation(comp)
    plan = outlined(comp, group.plan.remapped(clones))  # planned once, while growing the group
    return Instruction(
        names.get("fusion"),
        Opcode.FUSION,
        group.root.shape,
        outside,
        FusionAttrs(kind, plan),
        called=[comp],
    )


def _ordered(group: FusionGroup) -> list[Instruction]:
    ids = group.ids()
    sub = Computation("group", group.members, group.root)
    return [i for i in sub.post_order() if id(i) in ids]


def _param(operand: Instruction, params: dict[int, Instruction], names: NameUniquer) -> Instruction:
    if id(operand) not in params:
        number = len(params)
        params[id(operand)] = Instruction(
            names.get(f"param_{number}"),
            Opcode.PARAMETER,
            operand.shape,
            attrs=ParameterAttrs(number),
        )
    return params[id(operand)]


def _outside_operands(members: Sequence[Instruction], ids: set[int]) -> list[Instruction]:
    """Operands from outside the group, in the order ``_param`` numbered them."""
    seen: dict[int, Instruction] = {}
    for m in members:
        for op in m.operands:
            if id(op) not in ids:
                seen.setdefault(id(op), op)
    return list(seen.values())
