"""Common subexpression elimination by structural equality."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import ClassVar

from aotc.hlo.ir import Instruction, Module, Opcode
from aotc.hlo.opcodes import COMMUTATIVE
from aotc.passes.literals import raw_bytes
from aotc.passes.rewrite import RewriteContext, rewrite_module

#: Float max/min of +0.0 and -0.0 may return either zero, depending on operand order.
_ORDERED_FOR_FLOATS = frozenset({Opcode.MAXIMUM, Opcode.MINIMUM})

Key = tuple[object, ...]


@dataclass(frozen=True)
class CSE:
    """Replace an instruction by an earlier one with equal opcode, shape, operands (by
    identity, in any order for commutative ops), attributes, literal bytes and callees.

    Equal constants merge too; literals are compared by a digest of their bytes, so big
    weights cost one hash each. Parameters never merge.
    """

    name: ClassVar[str] = "cse"

    def run(self, module: Module) -> bool:
        seen: dict[tuple[int, Key], Instruction] = {}

        def merge(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
            key = structural_key(inst)
            if key is None:
                return None
            return seen.setdefault((id(ctx.comp), key), inst)

        return rewrite_module(module, merge)


def structural_key(inst: Instruction) -> Key | None:
    """A hashable key equal for structurally equal instructions; None for parameters."""
    if inst.opcode is Opcode.PARAMETER:
        return None
    operands = [id(o) for o in inst.operands]
    if inst.opcode in COMMUTATIVE and not (
        inst.opcode in _ORDERED_FOR_FLOATS and inst.array_shape.dtype.is_float
    ):
        operands.sort()
    return (
        inst.opcode,
        inst.shape,
        tuple(operands),
        inst.attrs,
        literal_digest(inst),
        tuple(id(c) for c in inst.called),
    )


def literal_digest(inst: Instruction) -> bytes | None:
    if inst.literal is None:
        return None
    return hashlib.blake2b(raw_bytes(inst.literal), digest_size=20).digest()
