"""Simplifier rules that fold per-feature scales and biases into constant weights.

Inference graphs apply batch normalization (and other affine layers) after a dot or a
convolution as a multiply and an add by constants that vary along the output feature
dimension only. These rules move the scale into the weights and merge the biases:

    (x . W) * s            -> x . (W * s)                      s along W's output features
    (y + b1) * s           -> y * s + (b1 * s)                 y a dot or convolution
    (y + b1) + b2          -> y + (b1 + b2)                    floats: y a dot or convolution
    y - c                  -> y + (-c)                         exact

so ``(x . W + b1) * s + b2`` becomes ``x . W' + b'``. The new weights and biases are computed
here with numpy. These rewrites reassociate float arithmetic after a dot or convolution, as
batch-norm folding does in every inference compiler; they never apply elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from aotc.hlo.builder import ComputationBuilder
from aotc.hlo.ir import ConvAttrs, Dimensions, DotDims, Instruction, Opcode
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.passes.rewrite import RewriteContext, Rule, clone_with_operands, constant_like

_LINEAR = frozenset({Opcode.DOT, Opcode.CONVOLUTION})


def _pairs(inst: Instruction) -> list[tuple[Instruction, Instruction]]:
    a, b = inst.operands
    return [(a, b), (b, a)]


def feature_vector(inst: Instruction, dim: int) -> np.ndarray | None:
    """The 1-d ``v`` with ``inst == broadcast(v, dimensions={dim})``, for a constant or a
    broadcast of a constant; ``None`` if ``inst`` varies along another dimension."""
    shape = inst.array_shape
    if inst.opcode is Opcode.BROADCAST:
        x = inst.operands[0]
        if x.opcode is not Opcode.CONSTANT or x.literal is None:
            return None
        if x.array_shape.rank == 0:
            return np.full(shape.dims[dim], x.literal)
        return x.literal if inst.attrs_as(Dimensions).dimensions == (dim,) else None
    if inst.opcode is not Opcode.CONSTANT or inst.literal is None:
        return None
    return _vector_along(inst.literal, dim)


def _vector_along(value: np.ndarray, dim: int) -> np.ndarray | None:
    v = value[tuple(slice(None) if i == dim else 0 for i in range(value.ndim))]
    spread = np.broadcast_to(_along(v, value.ndim, dim), value.shape)
    return np.array(v) if spread.tobytes() == value.tobytes() else None


def _along(v: np.ndarray, rank: int, dim: int) -> np.ndarray:
    """``v`` reshaped to rank ``rank``, running along ``dim``."""
    return v.reshape([v.size if i == dim else 1 for i in range(rank)])


def _broadcast_vector(
    b: ComputationBuilder, v: np.ndarray, like: Instruction, dim: int
) -> Instruction:
    return b.broadcast(constant_like(b, v, like), like.array_shape.dims, (dim,))


def _is_numeric(inst: Instruction) -> bool:
    return isinstance(inst.shape, Shape) and inst.shape.dtype is not PrimitiveType.PRED


# ---- which weights a dot or convolution output runs along ------------------------------------


def _free_dims(rank: int, batch: tuple[int, ...], contracting: tuple[int, ...]) -> list[int]:
    return [d for d in range(rank) if d not in batch and d not in contracting]


def weight_axes(y: Instruction) -> list[tuple[int, int, int]]:
    """``(output dim, operand index, operand dim)`` for each output dimension of a dot or a
    convolution that runs along one dimension of a constant operand."""
    if y.opcode is Opcode.CONVOLUTION:
        conv, kernel_is_constant = y.attrs_as(ConvAttrs), y.operands[1].opcode is Opcode.CONSTANT
        if conv.batch_group_count != 1 or not kernel_is_constant:
            return []
        return [(conv.dims.output_feature, 1, conv.dims.kernel_output_feature)]
    d = y.attrs_as(DotDims)
    lhs_free = _free_dims(y.operands[0].array_shape.rank, d.lhs_batch, d.lhs_contracting)
    rhs_free = _free_dims(y.operands[1].array_shape.rank, d.rhs_batch, d.rhs_contracting)
    first_rhs = len(d.lhs_batch) + len(lhs_free)
    axes = [(first_rhs + i, 1, k) for i, k in enumerate(rhs_free)]
    axes += [(len(d.lhs_batch) + i, 0, k) for i, k in enumerate(lhs_free)]
    return [a for a in axes if y.operands[a[1]].opcode is Opcode.CONSTANT]


# ---- rules -----------------------------------------------------------------------------------


def scale_into_weights(ctx: RewriteContext, mul: Instruction) -> Instruction | None:
    """``(x . W) * s -> x . (W * s)`` when ``s`` varies only along W's output features."""
    for y, s in _pairs(mul):
        if y.opcode not in _LINEAR or ctx.use_count(y) != 1 or not _is_numeric(y):
            continue
        for out_dim, index, axis in weight_axes(y):
            v = feature_vector(s, out_dim)
            if v is None:
                continue
            w = y.operands[index]
            assert w.literal is not None
            with np.errstate(all="ignore"):
                scaled = w.literal * _along(v, w.literal.ndim, axis)
            operands = list(y.operands)
            operands[index] = constant_like(ctx.b, scaled, w)
            return clone_with_operands(ctx.b, y, operands)
    return None


def _common_vectors(
    a: Instruction, b: Instruction, dims: Iterable[int]
) -> tuple[int, np.ndarray, np.ndarray] | None:
    """``(dim, va, vb)``: both ``a`` and ``b`` are feature vectors along one of ``dims``."""
    for dim in dims:
        va, vb = feature_vector(a, dim), feature_vector(b, dim)
        if va is not None and vb is not None:
            return dim, va, vb
    return None


def scale_over_bias(ctx: RewriteContext, mul: Instruction) -> Instruction | None:
    """``(y + b1) * s -> y * s + b1 * s`` for ``y`` a dot or convolution, so that the scale
    can move into y's weights next."""
    for add, s in _pairs(mul):
        if add.opcode is not Opcode.ADD or ctx.use_count(add) != 1 or not _is_numeric(add):
            continue
        for y, bias in _pairs(add):
            weight_dims = [axis[0] for axis in weight_axes(y)] if y.opcode in _LINEAR else []
            found = _common_vectors(bias, s, weight_dims)
            if found is not None:
                dim, v_bias, v_scale = found
                with np.errstate(all="ignore"):
                    product = v_bias * v_scale
                scaled = ctx.b.binary(Opcode.MULTIPLY, y, s)
                return ctx.b.binary(Opcode.ADD, scaled, _broadcast_vector(ctx.b, product, mul, dim))
    return None


def merge_biases(ctx: RewriteContext, add: Instruction) -> Instruction | None:
    """``(y + b1) + b2 -> y + (b1 + b2)`` for per-feature constants ``b1``, ``b2``.

    Regrouping float additions is not exact (``(x + 2**23 + 2**22) - ...`` cancels), so for
    floats ``y`` must be a dot or convolution: the batch-norm shift this rule exists for.
    """
    floats = add.array_shape.dtype.is_float
    for inner, b2 in _pairs(add):
        if inner.opcode is not Opcode.ADD or ctx.use_count(inner) != 1 or not _is_numeric(add):
            continue
        for y, b1 in _pairs(inner):
            if y.opcode in (Opcode.CONSTANT, Opcode.BROADCAST):
                continue  # constant folding's job
            if floats and y.opcode not in _LINEAR:
                continue
            found = _common_vectors(b1, b2, range(add.array_shape.rank))
            if found is not None:
                dim, v1, v2 = found
                with np.errstate(all="ignore"):
                    total = v1 + v2
                return ctx.b.binary(Opcode.ADD, y, _broadcast_vector(ctx.b, total, add, dim))
    return None


def subtract_constant(ctx: RewriteContext, sub: Instruction) -> Instruction | None:
    """``y - c -> y + (-c)`` for a constant or a broadcast constant ``c`` (exact)."""
    y, c = sub.operands
    const = c.operands[0] if c.opcode is Opcode.BROADCAST else c
    if const.opcode is not Opcode.CONSTANT or const.literal is None or not _is_numeric(sub):
        return None
    with np.errstate(all="ignore"):
        negated = constant_like(ctx.b, -const.literal, const)
    if c is not const:
        negated = clone_with_operands(ctx.b, c, [negated])
    return ctx.b.binary(Opcode.ADD, y, negated)


MULTIPLY_RULES: list[Rule] = [scale_into_weights, scale_over_bias]
ADD_RULES: list[Rule] = [merge_biases]
SUBTRACT_RULES: list[Rule] = [subtract_constant]
