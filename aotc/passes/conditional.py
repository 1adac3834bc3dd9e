"""Conditional simplification: a branch known at compile time replaces the conditional.

A ``conditional`` on a constant selector (after constant folding: a pred or an index, which
picks the last branch when out of range) or with one branch runs that branch, inlined where the
conditional was, as XLA's ``ConditionalSimplifier`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from aotc.hlo.ir import Computation, Instruction, Module, Opcode
from aotc.passes.call_inliner import inline_calls
from aotc.passes.dce import remove_unreachable_computations
from aotc.passes.rewrite import insert_before, module_names, replace_all_uses


@dataclass(frozen=True)
class ConditionalSimplifier:
    """Inline the branch a conditional always takes."""

    name: ClassVar[str] = "conditional-simplify"

    def run(self, module: Module) -> bool:
        names = module_names(module)
        changed = False
        for comp in module.sequential_computations():
            calls = [_as_call(comp, i, names.get("call")) for i in _known(comp)]
            if calls:
                inline_calls(comp, names)
                changed = True
        return remove_unreachable_computations(module) or changed


def _known(comp: Computation) -> list[tuple[Instruction, int]]:
    """The conditionals of ``comp`` whose branch is known, with that branch."""
    found = []
    for inst in comp.instructions:
        if inst.opcode is Opcode.CONDITIONAL:
            branch = known_branch(inst)
            if branch is not None:
                found.append((inst, branch))
    return found


def known_branch(inst: Instruction) -> int | None:
    """The branch ``inst`` takes whatever its operands, if that is known."""
    last = len(inst.called) - 1
    if last == 0:
        return 0
    selector = inst.operands[0]
    if selector.opcode is not Opcode.CONSTANT or selector.literal is None:
        return None
    value = selector.literal[()]
    if selector.literal.dtype.kind == "b":
        return 0 if value else 1
    return int(value) if 0 <= int(value) <= last else last


def _as_call(comp: Computation, known: tuple[Instruction, int], name: str) -> Instruction:
    """Replace the conditional by a ``call`` of its branch (which ``inline_calls`` inlines)."""
    inst, branch = known
    operand = inst.operands[1 + branch]
    call = Instruction(name, Opcode.CALL, inst.shape, [operand], called=[inst.called[branch]])
    insert_before(comp, inst, [call])
    replace_all_uses(comp, inst, call)
    return call
