"""Which groups of instructions the fused emitter can compile, and how: the fusion *plan*.

The fusion pass proposes groups (a root plus producers) and keeps a group only when
``plan_group`` accepts it; it records the plan on the ``fusion`` instruction it makes
(``FusionAttrs.plan``), and the fused emitter (``aotc/codegen/kernels/fusion.py``) and buffer
assignment read it back instead of planning again. The parser derives the plan of a fusion it
reads from the fused computation (``plan_fusions``): planning is deterministic, so a printed
fusion parses back to the same plan. The plan names instructions of the fused computation;
passes leave fused computations alone (``aotc/passes/rewrite.py``), and the verifier checks
that a plan names only instructions its computation still has.

Three shapes of group are accepted (and a fourth, attention, from ``attention_plan.py`` for
the fused computations ``passes/attention.py`` outlines: ``FusionPlan.attention``, kCustom):

* **loop** (kLoop, or kInput when the root is a reduce): every member is computed element by
  element from the root's index; a root reduce folds its operand's generated elements.
* **row** (kInput): the group contains reduces that are not the root. All of them reduce the
  trailing dimensions of their operand to the same kept shape ``K`` (rank ``k``). The kernel
  loops over ``K``; for each row it first computes the *cached* members (the reduces and the
  elementwise ops on ``K`` that consume them) once, then the rest of the root. A cached value
  may only be read at the row index: by another cached member, by a *boundary* broadcast
  ``broadcast(dimensions={0..k-1})`` whose users are index-preserving (elementwise) up to the
  root or a reduce's operand, or by a root of shape ``K``. An expensive member read in more
  than one of the row's loops (softmax's exp: by the sum and by the root) is a *row* member:
  the first reduce loop reading it stores each element in a row buffer and the later loops
  read them back, so it is computed once. Softmax and layer norm become one kernel each.
* **output** (kOutput): one dot or convolution (a *contraction*) whose only user is an
  elementwise chain up to the root; its kernel applies that epilogue to each accumulated
  element before the store (in the GEMM tile store on the fast paths). The contraction's
  operands are fusion parameters, never fused, except that a convolution's input may be an
  output fusion nested in the group, read by nothing else (``aotc/passes/expand_fusion.py``),
  or a parameter times a broadcast factor per feature (squeeze-and-excitation's scale).

Expensive members (exp, divide, ...) must be computed once per element: never under an
expanding broadcast, and never from two loops of a row group (the reduce loop and the outer
loop) -- recomputing them there is not free the way a common subexpression in one loop is --
unless they are row members (their row of at most ``MAX_ROW_ELEMENTS`` is kept, not redone).

The fused emitter composes element generators, one call per level of operands, so a fused
computation more than ``MAX_FUSION_DEPTH`` instructions deep has no plan (the call inliner
then inlines it and the fusion pass, whose groups are smaller, fuses it again).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace

from aotc.hlo.attention_plan import AttentionPlan, plan_attention
from aotc.hlo.ir import (
    Computation,
    ConvAttrs,
    Dimensions,
    FusionAttrs,
    FusionKind,
    Instruction,
    Module,
    Opcode,
    parameter_number,
    post_order_within,
)
from aotc.hlo.opcodes import CONTRACTIONS, DATA_MOVEMENT, ELEMENTWISE, EXPENSIVE

#: The longest operand path in a fused computation that has a plan: composing its element
#: generators nests a few Python frames per level, and this keeps them far from the limit.
MAX_FUSION_DEPTH = 200

#: Operands a member may have at most (a concatenation of thousands of tensors has more): the
#: fused emitter writes one loop per concatenated operand into one LLVM function, whose
#: optimization costs time quadratic in them. Codegen splits an unfused one into parts.
MAX_FUSED_OPERANDS = 32

#: Opcodes a loop or row group may contain (the elemental emitter has generators for them).
ELEMENTAL = ELEMENTWISE | DATA_MOVEMENT | {Opcode.IOTA, Opcode.CONSTANT}


@dataclass(frozen=True)
class FusionPlan:
    """How to emit a group: its fusion kind, for row groups the cached members, for output
    fusions the contraction, and the parameters whose buffer the output may overwrite."""

    kind: FusionKind
    row_rank: int = 0  # k: the number of leading root dimensions looped over per row
    cached: tuple[Instruction, ...] = ()  # computed once per row, in post-order
    rows: tuple[Instruction, ...] = ()  # kept in a row buffer by the first loop computing them
    dot: Instruction | None = None  # an output fusion's contraction (dot or convolution)
    in_place: frozenset[int] = frozenset()  # parameter numbers, once outlined (``outlined``)
    attention: AttentionPlan | None = None  # a kCustom fusion of attention (its own kernel)

    def named(self) -> tuple[Instruction, ...]:
        """The instructions the plan refers to."""
        dots = () if self.attention is None else self.attention.named()
        return (*self.cached, *self.rows, *(() if self.dot is None else (self.dot,)), *dots)

    def remapped(self, copies: Mapping[int, Instruction]) -> FusionPlan:
        """The same plan over copies of its instructions (``id(original) -> copy``)."""
        dot = None if self.dot is None else copies[id(self.dot)]
        cached = tuple(copies[id(m)] for m in self.cached)
        rows = tuple(copies[id(m)] for m in self.rows)
        attention = None if self.attention is None else self.attention.remapped(copies)
        return replace(self, cached=cached, rows=rows, dot=dot, attention=attention)


class _Group:
    """The members of a proposed group with users restricted to the group."""

    def __init__(self, members: Collection[Instruction], root: Instruction):
        self.root = root
        self.ids = {id(m) for m in members}
        self.order = post_order_within(root, members)
        self.users: dict[int, list[Instruction]] = {id(m): [] for m in members}
        for m in self.order:
            for op in dict.fromkeys(m.operands):
                if id(op) in self.ids:
                    self.users[id(op)].append(m)

    def has(self, inst: Instruction) -> bool:
        return id(inst) in self.ids


def plan_computation(comp: Computation) -> FusionPlan | None:
    """The plan of a fused computation (its parameters are not members), or None."""
    members = [i for i in comp.instructions if i.opcode is not Opcode.PARAMETER]
    if _depth(comp.root, members) > MAX_FUSION_DEPTH:
        return None
    attention = plan_attention(comp)
    if attention is not None:
        return FusionPlan(FusionKind.CUSTOM, attention=attention)
    plan = plan_group(members, comp.root)
    return outlined(comp, plan) if plan is not None else None


def _depth(root: Instruction, members: Collection[Instruction]) -> int:
    """The number of members on the longest operand path from ``root``."""
    ids = {id(m) for m in members}
    depth: dict[int, int] = {}
    for m in post_order_within(root, members):
        depth[id(m)] = 1 + max((depth[id(op)] for op in m.operands if id(op) in ids), default=0)
    return depth.get(id(root), 0)


def outlined(comp: Computation, plan: FusionPlan) -> FusionPlan:
    """``plan`` (over ``comp``'s instructions) completed with ``comp``'s in-place parameters."""
    return replace(plan, in_place=frozenset(_in_place_parameters(comp, plan)))


def plan_fusions(module: Module) -> None:
    """Record on every fusion of ``module`` the plan of its fused computation (the parser's
    step). The plan's kind is the one recorded: XLA's CPU backend, for one, calls reduce
    fusions kLoop, and aotc emits what the plan says. Fusions that the fused emitter cannot
    compile keep no plan; codegen refuses them by name."""
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode is Opcode.FUSION and len(inst.called) == 1:  # else: the verifier
                plan = plan_computation(inst.called[0])
                kind = plan.kind if plan is not None else inst.attrs_as(FusionAttrs).kind
                inst.attrs = FusionAttrs(kind, plan)


def recorded_plan(fusion: Instruction) -> FusionPlan | None:
    """The plan recorded on a ``fusion`` instruction, or None."""
    return fusion.attrs_as(FusionAttrs).plan


def plan_problem(fusion: Instruction) -> str | None:
    """What is wrong with a fusion's recorded plan (for the verifier), or None.

    A plan naming an instruction its computation no longer has means a pass changed the fused
    computation after planning; emitting by that plan would be wrong.
    """
    attrs = fusion.attrs_as(FusionAttrs)
    if attrs.plan is None:
        return None
    if attrs.plan.kind is not attrs.kind:
        return f"kind={attrs.kind.value} but its fusion plan is {attrs.plan.kind.value}"
    comp = fusion.called[0]
    present = {id(i) for i in comp.instructions}
    missing = [m for m in attrs.plan.named() if id(m) not in present]
    if missing:
        return f"its fusion plan names %{missing[0].name}, which {comp.name} does not contain"
    return None


def plan_group(members: Collection[Instruction], root: Instruction) -> FusionPlan | None:
    """How the fused emitter would compile ``members`` (including ``root``), or None."""
    if any(m.is_tuple for m in members):
        return None
    group = _Group(members, root)
    dots = [m for m in group.order if m.opcode in CONTRACTIONS]
    reduces = [m for m in group.order if m.opcode is Opcode.REDUCE]
    if dots:
        return _output_plan(group, dots) if not reduces else None
    if any(not _elemental_or_reduce(m) for m in group.order):
        return None
    inner = [r for r in reduces if r is not root]
    if not inner:
        plan = FusionPlan(FusionKind.INPUT if reduces else FusionKind.LOOP)
    else:
        plan_or_none = _row_plan(group, inner)
        if plan_or_none is None:
            return None
        plan = _with_row_members(group, plan_or_none)
    return plan if _expensive_ok(group, plan) else None


def keeps_plan(
    plan: FusionPlan, producer: Instruction, reads_members: bool, expensive_members: bool
) -> bool:
    """Whether ``plan_group`` would give a loop ``plan`` back unchanged with ``producer`` added.

    True for a cheap elemental producer (no reduce, nothing expensive) of a loop plan (no dot,
    no cached rows) when it reads no member, so no member's loops or recomputation change, or
    when no member but the root is expensive, so no recomputation can matter. The fusion pass
    asks this first, so growing a group along a chain costs O(1) per member.
    """
    return (
        plan.dot is None
        and not plan.cached
        and not producer.is_tuple
        and producer.opcode in ELEMENTAL
        and producer.opcode not in EXPENSIVE
        and _elemental_or_reduce(producer)
        and not (reads_members and expensive_members)
    )


def _elemental_or_reduce(inst: Instruction) -> bool:
    if len(inst.operands) > MAX_FUSED_OPERANDS:
        return False
    if inst.opcode is Opcode.REDUCE:
        return len(inst.operands) == 2
    if inst.opcode is Opcode.CONSTANT:
        return inst.array_shape.size == 1
    return inst.opcode in ELEMENTAL


# ---- output fusion ---------------------------------------------------------------------------


def _output_plan(group: _Group, dots: list[Instruction]) -> FusionPlan | None:
    if len(dots) != 1 or dots[0] is group.root:
        return None
    dot = dots[0]
    fused_input = _nested_producer(group, dot) or next(iter(_input_scale(group, dot)), None)
    if any(group.has(op) and op is not fused_input for op in dot.operands):
        return None
    if not _index_preserving_to(group, dot, lambda u: False):
        return None
    others = [m for m in group.order if m is not dot and m is not fused_input]
    if any(not _elemental_or_reduce(m) or m.opcode is Opcode.REDUCE for m in others):
        return None
    plan = FusionPlan(FusionKind.OUTPUT, dot=dot)
    return plan if _expensive_ok(group, plan) else None


def _nested_producer(group: _Group, dot: Instruction) -> Instruction | None:
    """The output fusion nested as a convolution's input (the expand fusion pass), if any: a
    member read only by the convolution, whose operands are parameters."""
    producer = dot.operands[0]
    if dot.opcode is not Opcode.CONVOLUTION or producer.opcode is not Opcode.FUSION:
        return None
    if not group.has(producer) or group.users[id(producer)] != [dot] or dot.operands[1] is producer:
        return None
    plan = recorded_plan(producer)
    if plan is None or plan.kind is not FusionKind.OUTPUT:
        return None
    return producer if not any(group.has(op) for op in producer.operands) else None


def _input_scale(group: _Group, dot: Instruction) -> list[Instruction]:
    """The members scaling a convolution's input per feature, the input's multiply first
    (squeeze-and-excitation: ``x * broadcast(s)``, ``s`` an outside operand or its reshape
    with one element per feature, read by nothing else); [] if none."""
    product = dot.operands[0]
    if dot.opcode is not Opcode.CONVOLUTION or product.opcode is not Opcode.MULTIPLY:
        return []
    if not group.has(product) or group.users[id(product)] != [dot]:
        return []
    x, scale = product.operands
    if scale.opcode is not Opcode.BROADCAST:
        x, scale = scale, x
    if group.has(x) or not group.has(scale) or group.users[id(scale)] != [product]:
        return []
    members = [product, scale]
    source = scale.operands[0]
    if source.opcode is Opcode.RESHAPE and group.has(source):
        if group.users[id(source)] != [scale]:
            return []
        members.append(source)
        source = source.operands[0]
    feature = dot.attrs_as(ConvAttrs).dims.input_feature
    mapped = scale.attrs_as(Dimensions).dimensions
    per_feature = feature in mapped and source.array_shape.size == x.array_shape.dims[feature]
    return members if per_feature and not group.has(source) else []


def _index_preserving_to(
    group: _Group, start: Instruction, is_end: Callable[[Instruction], bool]
) -> bool:
    """Every path from ``start`` up to the root (or an ``is_end`` user) is elementwise.

    Each user is checked once: following every path would cost exponential time in a
    group where members are read twice (``add(x, x)``) on the way up.
    """
    pending, seen = [start], {id(start)}
    while pending:
        inst = pending.pop()
        for user in group.users[id(inst)]:
            if is_end(user) or id(user) in seen:
                continue
            if user.opcode not in ELEMENTWISE or user.array_shape.dims != start.array_shape.dims:
                return False
            seen.add(id(user))
            pending.append(user)
    return True


# ---- row groups ------------------------------------------------------------------------------


def _row_plan(group: _Group, inner: list[Instruction]) -> FusionPlan | None:
    k = inner[0].array_shape.rank
    row_dims = inner[0].array_shape.dims
    reduces = [m for m in group.order if m.opcode is Opcode.REDUCE]
    if any(not _reduces_trailing(r, row_dims) for r in reduces):
        return None
    root_dims = group.root.array_shape.dims
    if group.root.opcode is not Opcode.REDUCE and root_dims[:k] != row_dims:
        return None
    cached = _cached_members(group, inner, row_dims)
    if not _cached_reads_ok(group, cached, k):
        return None
    cached_in_order = tuple(m for m in group.order if m in cached)
    return FusionPlan(FusionKind.INPUT, row_rank=k, cached=cached_in_order)


def _reduces_trailing(reduce: Instruction, row_dims: tuple[int, ...]) -> bool:
    rank = reduce.operands[0].array_shape.rank
    k = len(row_dims)
    reduced = reduce.attrs_as(Dimensions).dimensions
    return reduce.array_shape.dims == row_dims and reduced == tuple(range(k, rank))


def _cached_members(
    group: _Group, inner: list[Instruction], row_dims: tuple[int, ...]
) -> set[Instruction]:
    """The inner reduces and the elementwise ops on the row shape computed from them."""
    cached: set[Instruction] = set(inner)
    changed = True
    while changed:
        changed = False
        for m in group.order:
            if m in cached or m is group.root or m.opcode not in ELEMENTWISE:
                continue
            if m.array_shape.dims == row_dims and any(op in cached for op in m.operands):
                cached.add(m)
                changed = True
    return cached


def _cached_reads_ok(group: _Group, cached: set[Instruction], k: int) -> bool:
    row_root = group.root.opcode is not Opcode.REDUCE and group.root.array_shape.rank == k
    for m in cached:
        for user in group.users[id(m)]:
            if user in cached or (user is group.root and row_root):
                continue
            if not _is_boundary(user, k) or not _boundary_reads_row(group, user):
                return False
    return True


def _is_boundary(inst: Instruction, k: int) -> bool:
    if inst.opcode is not Opcode.BROADCAST:
        return False
    return inst.attrs_as(Dimensions).dimensions == tuple(range(k))


def _boundary_reads_row(group: _Group, broadcast: Instruction) -> bool:
    """The broadcast is read at an index whose first k entries are the row index."""

    def reads_input(user: Instruction) -> bool:
        return user.opcode is Opcode.REDUCE

    if not _index_preserving_to(group, broadcast, reads_input):
        return False
    return all(_feeds_reduce_input(group, broadcast, u) for u in _reduce_users(group, broadcast))


def _reduce_users(group: _Group, start: Instruction) -> Iterable[tuple[Instruction, Instruction]]:
    """(value, reduce) pairs where an elementwise descendant of ``start`` feeds a reduce."""
    pending, seen = [start], set()
    while pending:
        inst = pending.pop()
        if id(inst) in seen:
            continue
        seen.add(id(inst))
        for user in group.users[id(inst)]:
            if user.opcode is Opcode.REDUCE:
                yield inst, user
            else:
                pending.append(user)


def _feeds_reduce_input(
    group: _Group, start: Instruction, pair: tuple[Instruction, Instruction]
) -> bool:
    value, reduce = pair
    return reduce.operands[0] is value and reduce.operands[1] is not value


#: Elements of a row member's row at most: its buffer (on the stack) stays well inside L1.
MAX_ROW_ELEMENTS = 4096


def _with_row_members(group: _Group, plan: FusionPlan) -> FusionPlan:
    """``plan`` with the expensive members that several loops of a row read, where each can
    be kept in a row buffer (``_row_member``), as row members."""
    if _expensive_ok(group, plan):
        return plan
    cached = {id(m) for m in plan.cached}
    contexts = _contexts(group, plan, cached)
    rows = tuple(
        m
        for m in group.order
        if m.opcode in EXPENSIVE
        and id(m) not in cached
        and len(contexts[id(m)][0]) > 1
        and _row_member(group, m, plan.row_rank)
    )
    return replace(plan, rows=rows)


def _row_member(group: _Group, m: Instruction, k: int) -> bool:
    """``m`` is read at the loop's own index wherever it is read: every path from it to the
    root or to a reduce's operand is elementwise on its shape, which is the root's (so a
    reduce loop reading it covers its whole row), and its row fits a buffer."""
    dims = m.array_shape.dims
    if m is group.root or dims != group.root.array_shape.dims:
        return False
    row = 1
    for size in dims[k:]:
        row *= size
    if row > MAX_ROW_ELEMENTS:
        return False

    def reads_input(user: Instruction) -> bool:
        return user.opcode is Opcode.REDUCE

    if not _index_preserving_to(group, m, reads_input):
        return False
    return all(_feeds_reduce_input(group, m, pair) for pair in _reduce_users(group, m))


# ---- recomputation of expensive members ------------------------------------------------------


def _expensive_ok(group: _Group, plan: FusionPlan) -> bool:
    """No expensive member is computed more than once per element of its value."""
    cached = {id(m) for m in plan.cached}
    contexts = _contexts(group, plan, cached)
    for m in group.order:
        where, again = contexts[id(m)]
        once = not again and len(where) <= 1
        if m.opcode in EXPENSIVE and m is not plan.dot and id(m) not in cached and not once:
            return False
    return True


def _contexts(
    group: _Group, plan: FusionPlan, cached: set[int]
) -> dict[int, tuple[set[str], bool]]:
    """Per member: the loops it is computed in, and whether one computes it repeatedly. A row
    member is computed in one place (the first loop reading it); the others read its buffer."""
    rows = {id(m) for m in plan.rows}
    contexts: dict[int, set[str]] = {}
    repeated: dict[int, bool] = {}
    for m in reversed(group.order):
        if id(m) in rows:
            contexts[id(m)], repeated[id(m)] = {f"row:{m.name}"}, False
        else:
            contexts[id(m)], repeated[id(m)] = _context(group, m, plan, cached, contexts, repeated)
    return {key: (where, repeated[key]) for key, where in contexts.items()}


def _context(
    group: _Group,
    m: Instruction,
    plan: FusionPlan,
    cached: set[int],
    contexts: dict[int, set[str]],
    repeated: dict[int, bool],
) -> tuple[set[str], bool]:
    """The loops ``m`` is computed in, and whether one of them computes it repeatedly."""
    if m is group.root:
        return {"root"}, False
    where: set[str] = set()
    again = False
    for user in group.users[id(m)]:
        if user.opcode is Opcode.REDUCE:
            where.add(f"loop:{user.name}")
        elif id(user) in cached:
            where.add("row")
        else:
            where |= contexts[id(user)]
            again = again or repeated[id(user)] or _reuses_operand(user, m)
    if id(m) in cached:
        return {"row"}, False
    return where, again


def _reuses_operand(user: Instruction, operand: Instruction) -> bool:
    """Whether ``user`` reads some element of ``operand`` more than once."""
    if user.opcode is Opcode.BROADCAST:
        return user.array_shape.size > operand.array_shape.size
    return user.opcode in (Opcode.DOT, Opcode.CONVOLUTION, Opcode.REDUCE_WINDOW)


def _in_place_parameters(comp: Computation, plan: FusionPlan) -> set[int]:
    """Numbers of the parameters whose buffer the fusion's output may overwrite.

    Each element of such a parameter is read only while computing the output element at the
    same index (or, in a row group, the same row, before the row is written): every path from
    it to the root is elementwise, except that row groups may also feed it to a reduce.
    """
    root = comp.root
    if root.opcode is Opcode.REDUCE or root.is_tuple:
        return set()
    if plan.dot is not None and plan.dot.opcode is Opcode.CONVOLUTION:
        return set()  # implicit GEMM keeps partial sums in the output across K blocks
    members = [i for i in comp.instructions if i.opcode is not Opcode.PARAMETER]
    group = _Group([*members, *comp.parameters], root)

    def is_end(user: Instruction) -> bool:
        return bool(plan.cached) and user.opcode is Opcode.REDUCE

    return {
        parameter_number(p)
        for p in comp.parameters
        if p.array_shape.dims == root.array_shape.dims and _local_reads(group, p, is_end, plan)
    }


def _local_reads(
    group: _Group, param: Instruction, is_end: Callable[[Instruction], bool], plan: FusionPlan
) -> bool:
    if plan.dot is not None and any(u is plan.dot for u in group.users[id(param)]):
        return False
    if param is group.root:
        return False
    return _index_preserving_to(group, param, is_end)
