"""Scattering with runtime indices: ScatterNd and TensorScatterUpdate/Add/Sub/Max/Min (HLO
``scatter``).

Indices ``[..., depth]`` address the first ``depth`` dims of the output; each index vector
takes one slice of the updates (the updates' dims after the indices' batch dims). Repeated
indices fold in index order, as XLA applies them: ScatterNd and TensorScatterAdd add up,
Sub subtracts each, Max/Min keep the extreme, TensorScatterUpdate keeps the last update
(TF leaves the choice unspecified). An index out of range drops its update slice, as XLA
(and so tfcompile) does; TensorFlow's CPU kernels report an error instead.
"""

from __future__ import annotations

from collections.abc import Callable

from aotc.errors import ShapeError
from aotc.frontend.node import Node
from aotc.frontend.ops.array import constant_ints
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.ir import Computation, Instruction, Opcode, ScatterAttrs
from aotc.hlo.shape import PrimitiveType, Shape

#: How a TF scatter folds an update into the current value (None: the update replaces it).
_FOLDS: dict[str, Opcode | None] = {
    "TensorScatterUpdate": None,
    "TensorScatterAdd": Opcode.ADD,
    "TensorScatterSub": Opcode.SUBTRACT,
    "TensorScatterMax": Opcode.MAXIMUM,
    "TensorScatterMin": Opcode.MINIMUM,
}
_OUT_OF_RANGE = "indices out of range drop their update (XLA; TF's CPU kernel errs)"


def nd_scatter_attrs(operand: Shape, indices: Shape, updates: Shape) -> ScatterAttrs:
    """TF's ``[..., depth]`` indices into the first ``depth`` dims, one slice per vector."""
    depth = indices.dims[-1] if indices.rank else 0
    batch = indices.rank - 1
    if indices.rank == 0 or depth > operand.rank:
        raise ShapeError(f"indices {indices} need a last dimension of at most {operand.rank}")
    if updates.dims != indices.dims[:-1] + operand.dims[depth:]:
        want = list(indices.dims[:-1] + operand.dims[depth:])
        raise ShapeError(f"updates {updates} must have the shape {want} for indices {indices}")
    indexed = tuple(range(depth))
    window = tuple(range(batch, updates.rank))
    return ScatterAttrs(window, indexed, indexed, batch)


def update_computation(
    module: ModuleBuilder, fold: Opcode | None, dtype: PrimitiveType
) -> Computation:
    """``(current, update) -> fold(current, update)``, or ``-> update`` for None."""
    kind = fold.value if fold is not None else "assign"

    def make(b: ComputationBuilder) -> Instruction:
        current = b.parameter(0, Shape(dtype), "current")
        update = b.parameter(1, Shape(dtype), "update")
        return update if fold is None else b.binary(fold, current, update)

    return module.cached_computation(
        ("scatter", kind, dtype), f"scatter_{kind}_{dtype.value}", make
    )


def nd_scatter(
    ctx: TranslationContext,
    fold: Opcode | None,
    tensor: Instruction,
    indices: Instruction,
    updates: Instruction,
) -> Instruction:
    """TF's scatter of ``updates`` into ``tensor`` at ``[..., depth]`` ``indices``."""
    attrs = nd_scatter_attrs(tensor.array_shape, indices.array_shape, updates.array_shape)
    comp = update_computation(ctx.module, fold, tensor.array_shape.dtype)
    return ctx.builder.scatter([tensor], indices, [updates], attrs, comp)


@translates("ScatterNd", note=f"constant shape; repeated indices add up; {_OUT_OF_RANGE}")
def scatter_nd(
    ctx: TranslationContext,
    node: Node,
    indices: Instruction,
    updates: Instruction,
    shape: Instruction,
) -> Instruction:
    dims = constant_ints(ctx, shape, "shape input (input 2)")
    zeros = ctx.builder.broadcast(ctx.scalar(0, updates.array_shape.dtype), dims, [])
    return nd_scatter(ctx, Opcode.ADD, zeros, indices, updates)


def _tensor_scatter(fold: Opcode | None) -> Callable[..., Instruction]:
    def translate(
        ctx: TranslationContext,
        node: Node,
        tensor: Instruction,
        indices: Instruction,
        updates: Instruction,
    ) -> Instruction:
        return nd_scatter(ctx, fold, tensor, indices, updates)

    return translate


for _op, _fold in _FOLDS.items():
    _rule = "the last repeated index wins" if _fold is None else "repeated indices fold in order"
    translates(_op, note=f"{_rule}; {_OUT_OF_RANGE}")(_tensor_scatter(_fold))
