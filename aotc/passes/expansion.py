"""How big a module gets once its call graph is expanded, checked before expanding it.

The call inliner copies a computation into every ``call`` of it, and flattening gives every
loop, branch and call a computation of its own: a module in which each computation calls the
one below twice expands to ``2**depth`` copies of the innermost one. (Repeated calls with the
same operands are merged first, by CSE, so that common case stays linear.) Both passes refuse,
before copying anything, a module that would exceed ``MAX_EXPANDED_INSTRUCTIONS``, naming the
computation that grows past it.
"""

from __future__ import annotations

from aotc.errors import HloError
from aotc.hlo.fusion_plan import recorded_plan
from aotc.hlo.ir import CONTROL_FLOW, Computation, Instruction, Module, Opcode

#: Instructions the expanded module may have at most: about a minute of compile time.
MAX_EXPANDED_INSTRUCTIONS = 1 << 19


def check_expansion(module: Module) -> None:
    """Refuse ``module`` if inlining its calls and flattening its call graph gives more than
    ``MAX_EXPANDED_INSTRUCTIONS`` instructions (an upper bound: parameters are counted)."""
    sizes: dict[int, int] = {}
    for comp in [*module.called_computations(), module.entry]:  # callees first
        sizes[id(comp)] = sum(_expanded(inst, sizes) for inst in comp.instructions)
        if sizes[id(comp)] > MAX_EXPANDED_INSTRUCTIONS:
            _refuse(module, comp, sizes[id(comp)])


def _expanded(inst: Instruction, sizes: dict[int, int]) -> int:
    """``inst``'s instructions after expansion: itself, or what it inlines, plus the copies
    of the loops', branches' and calls' computations it gets."""
    if inst.opcode is Opcode.CALL or (inst.opcode is Opcode.FUSION and recorded_plan(inst) is None):
        return sum(sizes[id(c)] for c in inst.called)
    if inst.opcode in CONTROL_FLOW:
        return 1 + sum(sizes[id(c)] for c in inst.called)
    return 1


def _refuse(module: Module, comp: Computation, size: int) -> None:
    where = "the entry computation" if comp is module.entry else f"computation {comp.name}"
    raise HloError(
        f"{where} expands to {size} instructions once its calls are inlined and every loop, "
        f"branch and call gets a computation of its own; aotc refuses more than "
        f"{MAX_EXPANDED_INSTRUCTIONS} (it would compile for many minutes)"
    )
