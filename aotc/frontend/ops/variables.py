"""Variable reads and updates (aotc/frontend/variables.py has the program-order semantics).

A translator of these ops receives the variable's current value in place of the handle or
reference input (``VariableState.value_of``); an update makes its result the current value.
"""

from __future__ import annotations

from functools import partial

from aotc.errors import UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.frontend.variables import REF_UPDATE_OPS, UPDATE_OPS
from aotc.hlo.ir import Instruction, Opcode

_DECLARED = "a variable declared in the config (`variables:` or tfcompile's `variable`)"


@translates("VarHandleOp", "VariableV2", "Variable", note=_DECLARED)
def variable(ctx: TranslationContext, node: Node) -> Instruction:
    # Declared variables are entry parameters, so this runs only for undeclared ones, which
    # check_variables reports (all of them, in one error) before translation starts.
    raise UnsupportedError(f"{node.label} is not declared as a variable in the config")


@translates("ReadVariableOp", note="the variable's value at this point of the program")
def read_variable(ctx: TranslationContext, node: Node, current: Instruction) -> Instruction:
    return current


def update_variable(
    combine: Opcode | None,
    ctx: TranslationContext,
    node: Node,
    current: Instruction,
    value: Instruction,
) -> list[Instruction]:
    assert ctx.variables is not None
    new = value if combine is None else ctx.builder.binary(combine, current, value)
    ctx.variables.update(node, new)
    return [new] if node.op in REF_UPDATE_OPS else []


for _op, _combine in UPDATE_OPS.items():
    translates(_op, note="in place on a declared, writable variable")(
        partial(update_variable, _combine)
    )
