"""Call-graph flattening, as XLA's ``FlattenCallGraph``: one caller per control-flow callee.

After inlining, two loops may share a body (a helper with a loop, inlined twice). Passes
rewrite a loop's body and condition in place, and codegen gives a body's values buffers that
belong to its loop, so each loop, branch and call gets a computation of its own: a callee
already claimed by another instruction is cloned. Fused computations and reducers, embedded
in one kernel, stay shared. Cloning is refused when the copies would be too many
(``expansion.py``); CSE, run before, merges loops with the same operands and computations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from aotc.hlo.ir import CONTROL_FLOW, Computation, Module
from aotc.passes.expansion import check_expansion
from aotc.passes.rewrite import clone_computation, module_names


@dataclass(frozen=True)
class FlattenCallGraph:
    """Clone each control-flow computation that more than one instruction calls."""

    name: ClassVar[str] = "flatten-call-graph"

    def run(self, module: Module) -> bool:
        check_expansion(module)
        names = module_names(module)
        claimed: set[int] = {id(module.entry)}
        pending: list[Computation] = [module.entry]
        changed = False
        while pending:  # iterative: loops nest to any depth
            comp = pending.pop()
            for inst in comp.instructions:
                if inst.opcode not in CONTROL_FLOW:
                    continue
                for k, callee in enumerate(inst.called):
                    if id(callee) in claimed:
                        callee = module.add_computation(clone_computation(callee, names))
                        inst.called[k] = callee
                        changed = True
                    claimed.add(id(callee))
                    pending.append(callee)
        return changed
