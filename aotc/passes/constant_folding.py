"""Constant folding with the reference evaluator."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from aotc.errors import AotcError
from aotc.hlo.evaluate import evaluate_computation
from aotc.hlo.ir import CONTROL_FLOW, Computation, Instruction, Module, Opcode
from aotc.hlo.opcodes import LEAVES
from aotc.hlo.shape import Shape
from aotc.passes.literals import all_equal
from aotc.passes.rewrite import RewriteContext, constant_like, rewrite_module

_CONSTANT_OPERANDS = frozenset({Opcode.CONSTANT, Opcode.IOTA})


@dataclass(frozen=True)
class ConstantFolding:
    """Evaluate array instructions whose operands are all constants, iotas or broadcasts of
    constants, and replace them by a constant.

    A result of more than ``max_elements`` elements stays unfolded. A result whose elements
    are all equal becomes ``broadcast(scalar constant)``, the form the simplifier keeps splats
    in; any other result larger than both ``small_elements`` and the constants it is computed
    from stays unfolded too: folding must not materialise a big constant from a small one (a
    broadcast, a pad).
    """

    name: ClassVar[str] = "constant-folding"
    max_elements: int = 1 << 20
    small_elements: int = 64

    def run(self, module: Module) -> bool:
        return rewrite_module(module, self._fold)

    def _fold(self, ctx: RewriteContext, inst: Instruction) -> Instruction | None:
        if not self._foldable(inst):
            return None
        try:
            value = evaluate_computation(Computation("fold", [inst], inst), [])
        except AotcError:
            return None  # leave it to the compiled code to evaluate (or report)
        assert isinstance(value, np.ndarray)
        flat = value.reshape(-1)
        if flat.size > 1 and all_equal(flat):
            scalar = constant_like(ctx.b, flat[0], inst)
            return ctx.b.broadcast(scalar, inst.array_shape.dims, ())
        sources = sum(_source(o).array_shape.size for o in inst.operands)
        if flat.size > max(self.small_elements, sources):
            return None
        return constant_like(ctx.b, value, inst)

    def _foldable(self, inst: Instruction) -> bool:
        if inst.opcode in LEAVES or not isinstance(inst.shape, Shape):
            return False
        if inst.opcode in CONTROL_FLOW:
            return False  # a loop may run long, or forever; a known branch is inlined
        if _is_scalar_broadcast(inst):
            return False  # already the canonical splat
        constant = all(_source(o).opcode in _CONSTANT_OPERANDS for o in inst.operands)
        return constant and inst.shape.size <= self.max_elements


def _source(inst: Instruction) -> Instruction:
    """The constant a broadcast of a constant broadcasts, else ``inst``."""
    if inst.opcode is Opcode.BROADCAST and inst.operands[0].opcode is Opcode.CONSTANT:
        return inst.operands[0]
    return inst


def _is_scalar_broadcast(inst: Instruction) -> bool:
    source = _source(inst)
    return source is not inst and source.array_shape.rank == 0
