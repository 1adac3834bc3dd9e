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

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from aotc.hlo.builder import NameUniquer
from aotc.hlo.fusion_plan import (
    ELEMENTAL,
    MAX_FUSION_DEPTH,
    FusionPlan,
    keeps_plan,
    outlined,
    plan_group,
)
from aotc.hlo.ir import (
    Computation,
    FusionAttrs,
    Instruction,
    Module,
    Opcode,
    ParameterAttrs,
    post_order_within,
)
from aotc.hlo.memory import ALIASING
from aotc.hlo.opcodes import CONTRACTIONS, EXPENSIVE
from aotc.passes.rewrite import module_names

#: Producers worth duplicating into several groups: they compute nothing.
CHEAP = frozenset({Opcode.BROADCAST, Opcode.RESHAPE, Opcode.BITCAST, Opcode.IOTA, Opcode.CONSTANT})


@dataclass
class FusionGroup:
    """A proposed fusion: its root, its members (root included) and how to emit it.

    ``absorbed`` holds the members nothing outside the group uses, directly or through a
    duplicated member. Adding a member only ever absorbs more, so it is kept up to date as
    the group grows instead of being recomputed for every candidate.
    """

    root: Instruction
    members: list[Instruction]
    plan: FusionPlan
    users: dict[int, list[Instruction]] = field(repr=False)  # of the whole computation
    limit: int = field(repr=False)  # members at most: the fused emitter's depth bound holds
    absorbed: set[int] = field(init=False)

    def __post_init__(self) -> None:
        self._ids = {id(m) for m in self.members}
        self.expensive = sum(m.opcode in EXPENSIVE for m in self.members[1:])  # root not
        self.absorbed = {id(self.root)}
        self._absorb(self.members)

    def ids(self) -> set[int]:
        return self._ids

    def add(self, extra: Sequence[Instruction]) -> None:
        self.members.extend(extra)
        self._ids.update(id(m) for m in extra)
        self.expensive += sum(m.opcode in EXPENSIVE for m in extra)
        self._absorb(extra)

    def _absorb(self, candidates: Iterable[Instruction]) -> None:
        pending = list(candidates)
        while pending:
            m = pending.pop()
            if id(m) in self.absorbed or not all(id(u) in self.absorbed for u in self.users[id(m)]):
                continue
            self.absorbed.add(id(m))
            pending.extend(op for op in m.operands if id(op) in self._ids)  # may follow now


@dataclass(frozen=True)
class Fusion:
    """Fuse elementwise chains, reductions with their producers and consumers, and dot
    and convolution epilogues into ``fusion`` instructions (kLoop, kInput, kOutput)."""

    name: str = "fusion"
    max_members: int = 128  # bounds compile time of one kernel, not correctness

    def __post_init__(self) -> None:
        if not 1 <= self.max_members <= MAX_FUSION_DEPTH:
            raise ValueError(f"max_members must be in 1..{MAX_FUSION_DEPTH}")

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
        plan = plan_group([inst], inst)
        if plan is None:
            continue  # no group with this root is compilable (e.g. a variadic reduce)
        group = _grow(FusionGroup(inst, [inst], plan, users, max_members), group_of)
        if len(group.members) > 1:
            groups.append(group)
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


def _grow(group: FusionGroup, group_of: dict[int, FusionGroup]) -> FusionGroup:
    # Rounds over the members, as XLA's fusion does; only members with a producer that may
    # still join are visited, so a long chain costs its length, not its length squared.
    pending = list(group.members)
    while pending and len(group.members) < group.limit:
        count = len(group.members)
        for producer in [p for m in pending for p in dict.fromkeys(m.operands)]:
            if len(group.members) >= group.limit:
                break
            _try_add(group, producer, group_of)
        if len(group.members) == count:
            break
        candidates = [*pending, *group.members[count:]]
        pending = [m for m in candidates if _may_grow_from(group, m, group_of)]
    return group


def _may_grow_from(
    group: FusionGroup, member: Instruction, group_of: dict[int, FusionGroup]
) -> bool:
    """Whether a producer of ``member`` is outside every group and could ever join."""
    ids = group.ids()
    return any(
        id(op) not in ids and id(op) not in group_of and _may_join(op) for op in member.operands
    )


def _try_add(group: FusionGroup, producer: Instruction, group_of: dict[int, FusionGroup]) -> bool:
    """Add ``producer``, or if that alone is not compilable, it with all it can pull in.

    The second try matters for row groups: ``rsqrt`` under a broadcast is only acceptable
    once the reduce below it joins too, which makes the broadcast a row boundary.
    """
    if not _joinable(group, producer, group_of):
        return False
    for extra in _extras(group, producer, group_of):
        plan = _plan_with(group, extra)
        if plan is not None:
            group.add(extra)
            group.plan = plan
            return True
    return False


def _extras(
    group: FusionGroup, producer: Instruction, group_of: dict[int, FusionGroup]
) -> Iterator[list[Instruction]]:
    yield [producer]
    cheap = _cheap_below(group, producer, group_of)
    if cheap:  # a convolution's input scaled per feature joins whole: multiply, broadcast
        yield [producer, *cheap]
    yield _closure(group, producer, group_of)  # only when the producer alone failed
    # then without what an expensive member below needs: a normalization (a sum's inverse)
    # joins its consumer even where the exp it sums cannot join both loops
    yield _closure(group, producer, group_of, below_expensive=False)


def _cheap_below(
    group: FusionGroup, producer: Instruction, group_of: dict[int, FusionGroup]
) -> list[Instruction]:
    """The cheap producers (broadcast, reshape, ...) below ``producer`` that may join."""
    found: list[Instruction] = []
    pending = [producer]
    while pending:
        for op in dict.fromkeys(pending.pop().operands):
            if op.opcode in CHEAP and op not in found and _joinable(group, op, group_of):
                found.append(op)
                pending.append(op)
    return found


def _plan_with(group: FusionGroup, extra: list[Instruction]) -> FusionPlan | None:
    if len(extra) == 1:
        reads_members = any(id(op) in group.ids() for op in extra[0].operands)
        if keeps_plan(group.plan, extra[0], reads_members, group.expensive > 0):
            return group.plan  # what plan_group would say, without walking the whole group
    return plan_group([*group.members, *extra], group.root)


def _joinable(group: FusionGroup, producer: Instruction, group_of: dict[int, FusionGroup]) -> bool:
    if id(producer) in group.ids() or id(producer) in group_of or not _may_join(producer):
        return False
    if producer.opcode in CHEAP:
        return True
    # Users that are duplicates (kept outside too) would keep the original alive as well.
    return all(id(u) in group.absorbed for u in group.users[id(producer)])


def _closure(
    group: FusionGroup,
    producer: Instruction,
    group_of: dict[int, FusionGroup],
    below_expensive: bool = True,
) -> list[Instruction]:
    """``producer`` and every producer below it that could join along with it (without
    ``below_expensive``: no expensive elementwise one but ``producer``). A contraction never
    joins a closure holding a reduce: no plan has both (softmax over a dot's output)."""
    trial = FusionGroup(
        group.root, [*group.members, producer], group.plan, group.users, group.limit
    )
    pending = [producer]
    reduces = any(m.opcode is Opcode.REDUCE for m in trial.members)
    while pending and len(trial.members) < min(2 * len(group.members) + 64, group.limit):
        for op in dict.fromkeys(pending.pop().operands):
            if (reduces and op.opcode in CONTRACTIONS) or (
                not below_expensive and op.opcode in EXPENSIVE and op.opcode in ELEMENTAL
            ):
                continue
            if _joinable(trial, op, group_of):
                reduces = reduces or op.opcode is Opcode.REDUCE
                trial.add([op])
                pending.append(op)
    return trial.members[len(group.members) :]


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
    return post_order_within(group.root, group.members)


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
