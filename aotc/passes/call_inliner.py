"""Call inlining, as XLA's ``CallInliner``: every ``call`` becomes the instructions it calls.

JAX emits a ``call`` for every inner jitted function (``jax.nn.relu``, a model's layers); run
first, this pass leaves flat computations for every later pass to see whole. Calls inside the
copies are inlined in the same walk (a worklist, not recursion), so nested helpers flatten at
once; computations nothing calls any more are dropped. A module whose expansion would be too
big is refused first (``expansion.py``); CSE runs before, so repeated calls with the same
operands are inlined once.

A ``fusion`` read from HLO text that the fused emitter has no plan for (XLA's multi-output
fusions, fusions deeper than ``MAX_FUSION_DEPTH``, fusions of fusions) is a call too: it is
inlined, and the fusion pass fuses its instructions again by aotc's own plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from aotc.hlo.builder import NameUniquer
from aotc.hlo.fusion_plan import recorded_plan
from aotc.hlo.ir import Computation, Instruction, Module, Opcode, parameter_number
from aotc.passes.dce import remove_unreachable_computations
from aotc.passes.expansion import check_expansion
from aotc.passes.rewrite import copy_instructions, module_names, remove_dead


@dataclass(frozen=True)
class CallInliner:
    """Replace each ``call``, and each fusion without a plan, by a copy of its computation's
    instructions."""

    name: ClassVar[str] = "call-inliner"

    def run(self, module: Module) -> bool:
        check_expansion(module)
        names = module_names(module)
        changed = False
        for comp in module.sequential_computations():
            changed |= inline_calls(comp, names)
        return remove_unreachable_computations(module) or changed


def inline_calls(comp: Computation, names: NameUniquer) -> bool:
    """Inline every ``call`` of ``comp``, and the calls its copies contain, where it stood."""
    pending = list(reversed(comp.instructions))
    placed: list[Instruction] = []
    # id(call) -> (the call, the copy of its root): the call is kept alive with its entry, or
    # a later copy could be given its id and be taken for it
    forward: dict[int, tuple[Instruction, Instruction]] = {}
    while pending:
        inst = pending.pop()
        if any(id(o) in forward for o in inst.operands):  # _resolve checks identity
            inst.operands = [_resolve(forward, o) for o in inst.operands]
        if not _inlined(inst):
            placed.append(inst)
            continue
        callee = inst.called[0]
        mapping = {id(p): inst.operands[parameter_number(p)] for p in callee.parameters}
        body = [i for i in callee.instructions if i.opcode is not Opcode.PARAMETER]
        pending.extend(reversed(copy_instructions(body, mapping, names)))
        forward[id(inst)] = (inst, mapping[id(callee.root)])
    if not forward:
        return False
    comp.instructions = placed
    comp.root = _resolve(forward, comp.root)
    remove_dead(comp)
    return True


def _inlined(inst: Instruction) -> bool:
    if inst.opcode is Opcode.FUSION:
        return recorded_plan(inst) is None
    return inst.opcode is Opcode.CALL


def _resolve(forward: dict[int, tuple[Instruction, Instruction]], inst: Instruction) -> Instruction:
    """What stands for ``inst`` now: a call's root copy, which may itself be a call."""
    while id(inst) in forward and forward[id(inst)][0] is inst:
        inst = forward[id(inst)][1]
    return inst
