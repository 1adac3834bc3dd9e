"""Cumulative sums and products (Cumsum, Cumprod) with ``exclusive`` and ``reverse``.

XLA lowers these to a ``reduce-window`` whose window spans the whole axis, padded low, which
costs O(n^2) per row when emitted naively. Here they are a Hillis-Steele scan built from ops
every backend stage already handles: ceil(log2 n) rounds of ``x + shift(x, 2^k)``, where a
shift is a ``slice`` and a ``pad`` with the identity. Integer results are exact (wrapping, as
TF's); float results differ from TF's sequential sums only by rounding, and the tree-shaped
sums are, if anything, more accurate.
"""

from __future__ import annotations

from functools import partial

from aotc.frontend.node import Node
from aotc.frontend.ops.array import constant_axis
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.builder import ComputationBuilder
from aotc.hlo.ir import Instruction, Opcode, PadDim


def _shift(
    b: ComputationBuilder, x: Instruction, dim: int, by: int, fill: Instruction
) -> Instruction:
    """``x`` moved ``by`` places up along ``dim``, the first ``by`` places set to ``fill``."""
    dims = x.array_shape.dims
    limits = [n - by if d == dim else n for d, n in enumerate(dims)]
    head = b.slice(x, [0] * len(dims), limits)
    return b.pad(head, fill, [PadDim(by if d == dim else 0, 0) for d in range(len(dims))])


def scan(
    b: ComputationBuilder,
    x: Instruction,
    dim: int,
    opcode: Opcode,
    identity: Instruction,
    exclusive: bool,
) -> Instruction:
    """Inclusive (or exclusive) prefix combination of ``x`` along ``dim`` with ``opcode``."""
    n = x.array_shape.dims[dim]
    if exclusive and n:
        x = _shift(b, x, dim, 1, identity)
    step = 1
    while step < n:
        x = b.binary(opcode, x, _shift(b, x, dim, step, identity))
        step *= 2
    return x


def cumulative(
    opcode: Opcode,
    identity: int,
    ctx: TranslationContext,
    node: Node,
    x: Instruction,
    axis: Instruction,
) -> Instruction:
    b = ctx.builder
    dim = constant_axis(ctx, axis, x.array_shape.rank)
    reverse = node.bool_attr("reverse", False)
    if reverse:
        x = b.reverse(x, [dim])
    fill = ctx.scalar(identity, x.array_shape.dtype)
    result = scan(b, x, dim, opcode, fill, node.bool_attr("exclusive", False))
    return b.reverse(result, [dim]) if reverse else result


translates("Cumsum", note="constant axis; exclusive, reverse")(partial(cumulative, Opcode.ADD, 0))
translates("Cumprod", note="constant axis; exclusive, reverse")(
    partial(cumulative, Opcode.MULTIPLY, 1)
)
