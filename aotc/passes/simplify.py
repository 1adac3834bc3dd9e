"""The algebraic simplifier: local rewrites, as a table of small rules per opcode.

Each rule takes the rewrite context and one instruction and returns a replacement or ``None``
(see ``aotc.passes.rewrite``). Rules for dots live in ``simplify_dot``, for convolutions in
``simplify_conv``, the folding of batch-norm-style scales and biases into weights in
``fold_batchnorm`` (which reassociates float arithmetic after a dot or convolution). The
other float rules keep results bit-exact except where noted: ``x * 0`` is not folded for
floats (NaN and inf), while ``x + 0 -> x`` maps ``-0.0`` to ``-0.0`` rather than ``+0.0``,
as XLA does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from aotc.hlo.ir import (
    ELEMENTWISE,
    Dimensions,
    Instruction,
    Module,
    Opcode,
    SliceAttrs,
    TupleIndex,
)
from aotc.hlo.loop_analysis import scalar_constant
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.passes import fold_batchnorm
from aotc.passes.rewrite import RewriteContext, Rule, first_match, rewrite_module, splat_value
from aotc.passes.simplify_conv import CONV_RULES
from aotc.passes.simplify_dot import DOT_RULES


@dataclass(frozen=True)
class AlgebraicSimplifier:
    """Apply the first matching rule of ``RULES`` to each instruction, once per run (run it in
    a ``FixedPoint`` to reach a fixed point)."""

    name: ClassVar[str] = "simplify"

    def run(self, module: Module) -> bool:
        return rewrite_module(module, _apply)


def _apply(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    rules = _BY_OPCODE.get(inst.opcode)
    return rules(ctx, inst) if rules else None


# ---- helpers -------------------------------------------------------------------------------


def _is(inst: Instruction, value: int) -> bool:
    """Whether every element of ``inst`` is the constant ``value`` (0 matches -0.0)."""
    splat = splat_value(inst)
    return splat is not None and bool(splat == value)


def _dims(inst: Instruction) -> tuple[int, ...]:
    return inst.attrs_as(Dimensions).dimensions


# ---- elementwise identities ----------------------------------------------------------------


def add_zero(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``x + 0 -> x``, ``0 + x -> x``."""
    x, y = inst.operands
    return x if _is(y, 0) else y if _is(x, 0) else None


def subtract_zero(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``x - 0 -> x``."""
    x, y = inst.operands
    return x if _is(y, 0) else None


def multiply_one(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``x * 1 -> x``, ``1 * x -> x``."""
    x, y = inst.operands
    return x if _is(y, 1) else y if _is(x, 1) else None


def multiply_zero(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``x * 0 -> 0`` for integers only: for floats NaN * 0 and inf * 0 are NaN."""
    if not inst.array_shape.dtype.is_integral:
        return None
    x, y = inst.operands
    return y if _is(y, 0) else x if _is(x, 0) else None


def divide_one(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``x / 1 -> x``."""
    x, y = inst.operands
    return x if _is(y, 1) else None


# ---- conversions ---------------------------------------------------------------------------


def convert_same_type(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``convert(x: T) -> T`` is ``x``."""
    x = inst.operands[0]
    return x if x.shape == inst.shape else None


def convert_exact_chain(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``convert(convert(x: A -> B) -> C) -> convert(x: A -> C)`` when A -> B is exact: B then
    holds x's value, and conversions depend on the value only. With C == A it is ``x``."""
    inner = inst.operands[0]
    if inner.opcode is not Opcode.CONVERT:
        return None
    x = inner.operands[0]
    if not is_exact_conversion(x.array_shape.dtype, inner.array_shape.dtype):
        return None
    if x.shape == inst.shape:
        return x
    return ctx.b.convert(x, inst.array_shape.dtype)


def is_exact_conversion(src: PrimitiveType, dst: PrimitiveType) -> bool:
    """Whether converting every value of ``src`` to ``dst`` keeps it (widening)."""
    if src == dst or src is PrimitiveType.PRED:
        return True
    a, b = np.dtype(src.numpy), np.dtype(dst.numpy)
    if dst.is_float and src.is_integral:
        return bool(np.finfo(b).nmant + 1 >= a.itemsize * 8 - src.is_signed_int)
    return dst is not PrimitiveType.PRED and bool(np.can_cast(a, b, "safe"))


# ---- data movement -------------------------------------------------------------------------


def same_shape_reshape(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``reshape(x) -> x`` when the shape does not change."""
    x = inst.operands[0]
    return x if x.shape == inst.shape else None


def reshape_of_reshape(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``reshape(reshape(x)) -> reshape(x)``."""
    inner = inst.operands[0]
    if inner.opcode is not Opcode.RESHAPE:
        return None
    return ctx.b.reshape(inner.operands[0], inst.array_shape.dims)


def reshape_of_elementwise(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``reshape(f(reshape(x), splat)) -> f(x, splat)`` for an elementwise ``f`` used only
    there (or a chain of such ``f``, one per run), when the reshape only adds or drops
    dimensions of size 1 (TF's ``keepdims``) and moving it inwards ends at reshapes from its
    own shape, which cancel: a per-row value (layer norm's ``rsqrt(var + eps)``) stays on the
    rows it was reduced to, where a row fusion computes it once per row. Where it would not
    cancel it stays put: an ``f`` on another shape would not be merged with a twin by CSE."""
    f = inst.operands[0]
    dims = inst.array_shape.dims
    if not _same_but_unit_dims(f.array_shape.dims, dims) or not _cancels(ctx, f, dims, 0):
        return None
    operands = [_reshaped(ctx, op, dims) for op in f.operands]
    shape = Shape(f.array_shape.dtype, dims)
    return ctx.b.add(
        Instruction(ctx.b.names.get(f.opcode.value), f.opcode, shape, operands, f.attrs)
    )


#: Elementwise ops a reshape moves through at most on its way to the reshape it cancels.
_MAX_SINK = 8


def _same_but_unit_dims(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return [d for d in a if d != 1] == [d for d in b if d != 1]


def _cancels(ctx: RewriteContext, f: Instruction, dims: tuple[int, ...], depth: int) -> bool:
    """A reshape to ``dims`` moved inwards through ``f`` (elementwise, used once, every operand
    of its shape: clamp's scalar bounds have no rows) meets only reshapes from ``dims``."""
    if f.opcode not in ELEMENTWISE or f.is_tuple or ctx.use_count(f) != 1 or depth > _MAX_SINK:
        return False
    if any(op.array_shape.dims != f.array_shape.dims for op in f.operands):
        return False
    return all(_meets(ctx, op, dims, depth) for op in f.operands)


def _meets(ctx: RewriteContext, op: Instruction, dims: tuple[int, ...], depth: int) -> bool:
    if op.opcode is Opcode.RESHAPE:
        return op.operands[0].array_shape.dims == dims
    return splat_value(op) is not None or _cancels(ctx, op, dims, depth + 1)


def _reshaped(ctx: RewriteContext, op: Instruction, dims: tuple[int, ...]) -> Instruction:
    source = op.operands[0] if op.operands else op
    if op.opcode is Opcode.RESHAPE and source.array_shape.dims == dims:
        return source  # the reshape cancels
    if op.opcode is Opcode.BROADCAST and source.array_shape.rank == 0:
        return ctx.b.broadcast(source, dims, ())
    return ctx.b.reshape(op, dims)  # moves on inwards in the next run


def identity_transpose(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``transpose(x, {0,1,...}) -> x``."""
    return inst.operands[0] if _dims(inst) == tuple(range(len(_dims(inst)))) else None


def transpose_as_reshape(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``transpose(x, p) -> reshape(x)`` when ``p`` moves only dimensions of size 1: the
    elements stay in their order (XLA's transpose-is-bitcast), so no kernel copies them (a
    Keras RNN's batch-1 input ``[1, T, F] -> [T, 1, F]`` was one, compiled at every cpu level)."""
    x = inst.operands[0]
    moved = [d for d in _dims(inst) if x.array_shape.dims[d] != 1]
    return ctx.b.reshape(x, inst.array_shape.dims) if moved == sorted(moved) else None


def transpose_of_transpose(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``transpose(transpose(x, p), q) -> transpose(x, p[q])``."""
    inner = inst.operands[0]
    if inner.opcode is not Opcode.TRANSPOSE:
        return None
    p = _dims(inner)
    return ctx.b.transpose(inner.operands[0], [p[i] for i in _dims(inst)])


def splat_constant(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """A constant of equal elements -> ``broadcast(scalar constant)``: one value to store."""
    assert inst.literal is not None
    splat = splat_value(inst)
    if inst.literal.size <= 1 or splat is None:
        return None
    scalar = ctx.b.constant(np.asarray(splat, inst.literal.dtype))
    return ctx.b.broadcast(scalar, inst.array_shape.dims, ())


def identity_broadcast(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``broadcast(x)`` to x's own shape, dimensions in order, is ``x``."""
    x = inst.operands[0]
    in_order = _dims(inst) == tuple(range(inst.array_shape.rank))
    return x if x.shape == inst.shape and in_order else None


def broadcast_of_broadcast(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``broadcast(broadcast(x, d1), d2) -> broadcast(x, d2[d1])``."""
    inner = inst.operands[0]
    if inner.opcode is not Opcode.BROADCAST:
        return None
    outer = _dims(inst)
    dims = [outer[d] for d in _dims(inner)]
    return ctx.b.broadcast(inner.operands[0], inst.array_shape.dims, dims)


def _slice(inst: Instruction) -> SliceAttrs:
    return inst.attrs_as(SliceAttrs)


def full_slice(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """A slice that keeps the whole operand is the operand."""
    x = inst.operands[0]
    return x if x.shape == inst.shape and all(s == 1 for s in _slice(inst).strides) else None


def slice_of_slice(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``slice(slice(x))`` -> one slice: starts and strides compose."""
    inner = inst.operands[0]
    if inner.opcode is not Opcode.SLICE:
        return None
    a, b = _slice(inner), _slice(inst)
    starts = [s1 + s2 * t1 for s1, s2, t1 in zip(a.starts, b.starts, a.strides, strict=True)]
    strides = [t1 * t2 for t1, t2 in zip(a.strides, b.strides, strict=True)]
    limits = [
        s + (n - 1) * t + 1 for s, n, t in zip(starts, inst.array_shape.dims, strides, strict=True)
    ]
    limits = [max(lim, s) for lim, s in zip(limits, starts, strict=True)]  # empty dims
    return ctx.b.slice(inner.operands[0], starts, limits, strides)


def dynamic_slice_constant_starts(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """A dynamic slice at constant start indices is a slice (at the clamped starts)."""
    x, *indices = inst.operands
    values = [scalar_constant(i) for i in indices]
    if any(v is None for v in values):
        return None
    sizes = inst.array_shape.dims
    starts = [
        min(max(v or 0, 0), n - s)
        for v, n, s in zip(values, x.array_shape.dims, sizes, strict=True)
    ]
    return ctx.b.slice(x, starts, [s + n for s, n in zip(starts, sizes, strict=True)])


def whole_update(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """An update as large as the operand replaces all of it (its starts clamp to 0)."""
    x, update = inst.operands[:2]
    return update if update.shape == x.shape else None


def element_of_tuple(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``get-tuple-element(tuple(a, b), 1) -> b``."""
    t = inst.operands[0]
    return t.operands[inst.attrs_as(TupleIndex).index] if t.opcode is Opcode.TUPLE else None


def tuple_of_elements(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``tuple(get-tuple-element(t, 0), ..., get-tuple-element(t, n-1)) -> t``, but not for a
    root: the entry's and a loop body's roots stay tuple instructions."""
    first = inst.operands[0] if inst.operands else None
    if first is None or first.opcode is not Opcode.GET_TUPLE_ELEMENT or inst is ctx.comp.root:
        return None
    t = first.operands[0]
    for k, x in enumerate(inst.operands):
        if x.opcode is not Opcode.GET_TUPLE_ELEMENT or x.operands[0] is not t:
            return None
        if x.attrs_as(TupleIndex).index != k:
            return None
    return t if t.shape == inst.shape else None


def single_concatenate(ctx: RewriteContext, inst: Instruction) -> Instruction | None:
    """``concatenate(x) -> x``."""
    return inst.operands[0] if len(inst.operands) == 1 else None


#: The rules, tried in order per opcode.
RULES: dict[Opcode, list[Rule]] = {
    Opcode.ADD: [add_zero, *fold_batchnorm.ADD_RULES],
    Opcode.SUBTRACT: [subtract_zero, *fold_batchnorm.SUBTRACT_RULES],
    Opcode.MULTIPLY: [multiply_one, multiply_zero, *fold_batchnorm.MULTIPLY_RULES],
    Opcode.DIVIDE: [divide_one],
    Opcode.CONVERT: [convert_same_type, convert_exact_chain],
    Opcode.RESHAPE: [same_shape_reshape, reshape_of_reshape, reshape_of_elementwise],
    Opcode.TRANSPOSE: [identity_transpose, transpose_as_reshape, transpose_of_transpose],
    Opcode.CONSTANT: [splat_constant],
    Opcode.BROADCAST: [identity_broadcast, broadcast_of_broadcast],
    Opcode.SLICE: [full_slice, slice_of_slice],
    Opcode.CONCATENATE: [single_concatenate],
    Opcode.DYNAMIC_SLICE: [dynamic_slice_constant_starts],
    Opcode.DYNAMIC_UPDATE_SLICE: [whole_update],
    Opcode.GET_TUPLE_ELEMENT: [element_of_tuple],
    Opcode.TUPLE: [tuple_of_elements],
    Opcode.DOT: DOT_RULES,
    Opcode.CONVOLUTION: CONV_RULES,
}

_BY_OPCODE: dict[Opcode, Rule] = {op: first_match(rules) for op, rules in RULES.items()}
