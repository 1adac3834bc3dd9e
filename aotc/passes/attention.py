"""Attention fusion: ``softmax(Q K^T) V`` and the head transposes around it become one kernel.

After the fusion pass a transformer's attention is seven kernels: three loop fusions adding
each head's bias and transposing Q, K and V out of the Q/K/V GEMM's output, the score dot,
the softmax row fusion, the dot with V and a transpose back. This pass finds a ``dot`` whose
lhs is (reshapes of) a row fusion fed by (reshapes of) another dot, takes in the data
movement feeding both dots (unfused reshapes, transposes, slices, broadcasts and loop fusions
of only those and adds, each read by nothing else) and the data movement the result goes
through, and outlines them as one ``kCustom`` fusion, kept only where
``hlo/attention_plan.plan_attention`` accepts its computation (else nothing changes). The
kernel (``codegen/kernels/attention.py``) keeps each head's score rows in cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from aotc.hlo.attention_plan import BIJECTIONS, MOVES, plan_attention
from aotc.hlo.builder import NameUniquer
from aotc.hlo.fusion_plan import FusionPlan
from aotc.hlo.ir import (
    Computation,
    FusionAttrs,
    FusionKind,
    Instruction,
    Module,
    Opcode,
    ParameterAttrs,
    parameter_number,
    post_order_within,
)
from aotc.passes.rewrite import copy_instructions, module_names

_RESHAPES = frozenset((Opcode.RESHAPE, Opcode.BITCAST))

Users = dict[int, list[Instruction]]


@dataclass(frozen=True)
class AttentionFusion:
    """Outline each attention block (score dot, softmax, value dot, the data movement
    around them) as one fusion with an attention plan."""

    name: ClassVar[str] = "attention-fusion"

    def run(self, module: Module) -> bool:
        names = module_names(module)
        changed = False
        for comp in module.sequential_computations():
            for dot in [i for i in comp.instructions if i.opcode is Opcode.DOT]:
                changed |= _fuse(module, comp, dot, names)
        return changed


def _fuse(module: Module, comp: Computation, dot: Instruction, names: NameUniquer) -> bool:
    users = comp.users()
    if id(dot) not in users:  # taken into an earlier attention fusion
        return False
    group = _group(dot, users)
    if group is None:
        return False
    members, root = group
    fusion = _outlined(module, members, root, names)
    if fusion is None:
        return False
    for inst in comp.instructions:
        inst.operands = [fusion if op is root else op for op in inst.operands]
    if comp.root is root:
        comp.root = fusion
    comp.instructions = comp.post_order()
    return True


def _group(dot2: Instruction, users: Users) -> tuple[list[Instruction], Instruction] | None:
    """The members of the attention block whose value dot is ``dot2``, and its root."""
    members = [dot2]
    side = next((k for k in (0, 1) if _is_row_fusion(_through(dot2.operands[k], users, []))), None)
    if side is None:
        return None
    softmax = _through(dot2.operands[side], users, members)
    if not _once(softmax, users):
        return None
    members.append(softmax)
    scores = [op for op in softmax.operands if _through(op, users, []).opcode is Opcode.DOT]
    if len(scores) != 1:
        return None
    dot1 = _through(scores[0], users, members)
    if not _once(dot1, users):
        return None
    members.append(dot1)
    others = [op for op in softmax.operands if op is not scores[0]]
    _take_producers([*dot1.operands, dot2.operands[1 - side], *others], users, members)
    root = dot2
    while _once(root, users) and _is_move(users[id(root)][0], BIJECTIONS, single_input=True):
        root = users[id(root)][0]
        members.append(root)
    return members, root


def _through(inst: Instruction, users: Users, chain: list[Instruction]) -> Instruction:
    """``inst`` below reshapes read once (appended to ``chain``)."""
    while inst.opcode in _RESHAPES and _once(inst, users):
        chain.append(inst)
        inst = inst.operands[0]
    return inst


def _once(inst: Instruction, users: Users) -> bool:
    return len(users.get(id(inst), ())) == 1


def _is_row_fusion(inst: Instruction) -> bool:
    if inst.opcode is not Opcode.FUSION:
        return False
    plan = inst.attrs_as(FusionAttrs).plan
    return plan is not None and plan.kind is FusionKind.INPUT and bool(plan.cached)


def _take_producers(start: list[Instruction], users: Users, members: list[Instruction]) -> None:
    """Add the data movement (and loop fusions of data movement and adds) feeding ``start``,
    read by nothing else, to ``members``."""
    ids = {id(m) for m in members}
    pending = list(start)
    while pending:
        inst = pending.pop()
        if id(inst) in ids or not _once(inst, users):
            continue
        if not _is_move(inst, MOVES | {Opcode.ADD}, single_input=False):
            continue
        ids.add(id(inst))
        members.append(inst)
        pending.extend(inst.operands)


def _is_move(inst: Instruction, opcodes: frozenset[Opcode], single_input: bool) -> bool:
    """An unfused op of ``opcodes`` (not ``add``: only inside loop fusions), or a loop fusion
    of only those (with one parameter where ``single_input``)."""
    if inst.opcode in opcodes - {Opcode.ADD}:
        return True
    if inst.opcode is not Opcode.FUSION or inst.attrs_as(FusionAttrs).kind is not FusionKind.LOOP:
        return False
    body = inst.called[0]
    if single_input and len(body.parameters) != 1:
        return False
    return all(i.opcode in opcodes or i.opcode is Opcode.PARAMETER for i in body.instructions)


def _outlined(
    module: Module, members: list[Instruction], root: Instruction, names: NameUniquer
) -> Instruction | None:
    """The fusion computing ``root`` from ``members`` (loop fusions among them inlined), or
    None when its computation has no attention plan."""
    ids = {id(m) for m in members}
    mapping: dict[int, Instruction] = {}
    params: list[Instruction] = []
    outside: list[Instruction] = []
    body: list[Instruction] = []
    for m in post_order_within(root, members):
        for op in m.operands:
            if id(op) not in ids and id(op) not in mapping:
                number = len(params)
                mapping[id(op)] = Instruction(names.get(f"param_{number}"), Opcode.PARAMETER,
                                              op.shape, attrs=ParameterAttrs(number))  # fmt: skip
                params.append(mapping[id(op)])
                outside.append(op)
        if m.opcode is Opcode.FUSION:
            callee = m.called[0]
            inner = {id(p): mapping[id(m.operands[parameter_number(p)])] for p in callee.parameters}
            nodes = [i for i in callee.post_order() if i.opcode is not Opcode.PARAMETER]
            body.extend(copy_instructions(nodes, inner, names))
            mapping[id(m)] = inner[id(callee.root)]
        else:
            body.extend(copy_instructions([m], mapping, names))
    comp = Computation(names.get("fused_attention"), [*params, *body], mapping[id(root)])
    plan = plan_attention(comp)
    if plan is None:
        return None
    module.add_computation(comp)
    attrs = FusionAttrs(FusionKind.CUSTOM, FusionPlan(FusionKind.CUSTOM, attention=plan))
    return Instruction(names.get("fusion"), Opcode.FUSION, root.shape, outside, attrs,
                       called=[comp])  # fmt: skip
