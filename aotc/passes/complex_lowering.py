"""Complex numbers as reals: every c64 (c128) value becomes its real form ``f32[d..., 2]``.

Codegen knows no complex type. This pass rewrites the entry computation so that a complex
value ``z[d...]`` is an ``f32[d..., 2]`` of ``(re, im)`` pairs (``complex_parts.py``): the
bytes of C's ``float _Complex``, so a complex argument or result keeps its layout and the
C header's byte sizes (``8 * elements`` for c64). Elementwise complex arithmetic becomes
arithmetic on the parts, data movement gains the trailing dimension, ``fft`` becomes dots
with DFT matrices (``fft_lowering.py``). It runs before the simplifier, so constant
matrices fold and the parts' slices and concatenations fuse.

Complex values are supported in the entry computation (after call inlining, that is every
straight-line model); one in a loop, a branch, a reducer or a comparator, or an opcode
without a rule here (a complex ``reduce``, ``log``, ``compare``, ``convolution``), is an
error naming the instruction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from aotc.errors import UnsupportedError
from aotc.hlo.builder import ComputationBuilder
from aotc.hlo.ir import (
    Computation,
    Dimensions,
    DotDims,
    Instruction,
    Module,
    Opcode,
    PadAttrs,
    PadDim,
    SliceAttrs,
    TupleIndex,
)
from aotc.hlo.shape import has_complex, real_form
from aotc.passes.complex_parts import (
    abs_value,
    conjugate,
    drop_unit,
    exponential,
    join,
    multiply,
    parts,
    splat,
    with_unit,
)
from aotc.passes.fft_lowering import lower_fft
from aotc.passes.rewrite import module_names, nonfusion_computations

Rule = Callable[[ComputationBuilder, Instruction, list[Instruction]], Instruction]

#: Opcodes that are complex by nature, whatever their operand types.
_COMPLEX_OPCODES = frozenset({Opcode.COMPLEX, Opcode.REAL, Opcode.IMAG, Opcode.FFT})


@dataclass(frozen=True)
class ComplexLowering:
    """Rewrite complex values into their real form (see the module docstring)."""

    name: str = "complex-lowering"

    def run(self, module: Module) -> bool:
        comps = nonfusion_computations(module)
        if not any(_involves_complex(i) for c in comps for i in c.instructions):
            return False
        for comp in comps:
            if comp is not module.entry:
                _refuse_complex(comp)
        _lower_computation(
            module.entry, ComputationBuilder(module.entry.name, module_names(module))
        )
        return True


def _involves_complex(inst: Instruction) -> bool:
    return (
        inst.opcode in _COMPLEX_OPCODES
        or has_complex(inst.shape)
        or any(has_complex(o.shape) for o in inst.operands)
    )


def _refuse_complex(comp: Computation) -> None:
    for inst in comp.instructions:
        if _involves_complex(inst):
            raise UnsupportedError(
                f"{inst.opcode.value} %{inst.name} in computation {comp.name}: aotc computes "
                "complex numbers only outside loops, branches and called computations"
            )


def _lower_computation(comp: Computation, b: ComputationBuilder) -> None:
    """Rebuild ``comp`` in order: real instructions kept (reading the lowered values), each
    complex one replaced by its rule's real-form instructions."""
    lowered: dict[int, Instruction] = {}
    for inst in comp.post_order():
        operands = [lowered.get(id(o), o) for o in inst.operands]
        if not _involves_complex(inst):
            inst.operands = operands
            b.add(inst)
            continue
        rule = _RULES.get(inst.opcode)
        if rule is None:
            raise UnsupportedError(_unsupported(inst))
        lowered[id(inst)] = rule(b, inst, operands)
    comp.instructions = b.instructions
    comp.root = lowered.get(id(comp.root), comp.root)


def _unsupported(inst: Instruction) -> str:
    types = ", ".join(sorted({str(o.shape) for o in inst.operands} | {str(inst.shape)}))
    return (
        f"{inst.opcode.value} %{inst.name} ({types}): aotc does not compute this opcode on "
        f"complex numbers; it supports {', '.join(sorted(op.value for op in _RULES))}"
    )


# ---- rules: (builder, original instruction, lowered operands) -> lowered result ------------


def _parameter(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    if inst.is_tuple:
        raise UnsupportedError(f"parameter %{inst.name}: a tuple holding complex values")
    # The same name and bytes: the caller's buffer is unchanged; the original leaves the
    # computation (rules still read the original operands' shapes).
    shape = real_form(inst.array_shape)
    return b.add(Instruction(inst.name, Opcode.PARAMETER, shape, [], inst.attrs))


def _constant(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    shape = inst.array_shape
    assert inst.literal is not None
    pairs = np.ascontiguousarray(inst.literal).view(shape.dtype.component.numpy)
    return b.constant(pairs.reshape(real_form(shape).dims))


def _same(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    """Parts computed alike: add, subtract, negate, copy."""
    if len(ops) == 1:
        return b.unary(inst.opcode, ops[0])
    return b.binary(inst.opcode, ops[0], ops[1])


def _multiply(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    return multiply(b, ops[0], ops[1])


def _divide(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    """``x / y = x conj(y) / |y|^2`` (C's formula without Annex G's scaling)."""
    x, y = ops
    yr, yi = parts(b, y)
    norm = b.binary(
        Opcode.ADD, b.binary(Opcode.MULTIPLY, yr, yr), b.binary(Opcode.MULTIPLY, yi, yi)
    )
    re, im = parts(b, multiply(b, x, conjugate(b, y)))
    return join(b, b.binary(Opcode.DIVIDE, re, norm), b.binary(Opcode.DIVIDE, im, norm))


def _dot(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    """``(A + Bi)(C + Di) = (AC - BD) + (AD + BC)i``: four real dots (two with a real operand)."""
    dims = inst.attrs_as(DotDims)
    (ar, ai), (br, bi) = (_real_parts(b, o, x) for o, x in zip(inst.operands, ops, strict=True))
    re = b.dot(ar, br, dims)
    im = None
    if ai is not None and bi is not None:
        re = b.binary(Opcode.SUBTRACT, re, b.dot(ai, bi, dims))
    for x, y in [(ar, bi), (ai, br)]:
        if x is not None and y is not None:
            term = b.dot(x, y, dims)
            im = term if im is None else b.binary(Opcode.ADD, im, term)
    assert im is not None  # one operand at least is complex
    return join(b, with_unit(b, re), with_unit(b, im))


def _real_parts(
    b: ComputationBuilder, original: Instruction, x: Instruction
) -> tuple[Instruction, Instruction | None]:
    """A dot operand's real and imaginary parts (None for a real operand's)."""
    if not original.array_shape.dtype.is_complex:
        return x, None
    re, im = parts(b, x)
    return drop_unit(b, re), drop_unit(b, im)


def _abs(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    return abs_value(b, ops[0])


def _exp(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    return exponential(b, ops[0])


def _part(index: int) -> Rule:
    def rule(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
        if not inst.operands[0].array_shape.dtype.is_complex:  # XLA: re x = x, im x = 0
            return ops[0] if index == 0 else splat(b, 0.0, ops[0])
        return drop_unit(b, parts(b, ops[0])[index])

    return rule


def _complex(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    return join(b, with_unit(b, ops[0]), with_unit(b, ops[1]))


def _convert(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    source, target = inst.operands[0].array_shape.dtype, inst.array_shape.dtype
    if not target.is_complex:
        raise UnsupportedError(f"convert %{inst.name}: from {source.value} to {target.value}")
    x = ops[0]
    if x.array_shape.dtype is not target.component:
        x = b.convert(x, target.component)
    if source.is_complex:
        return x
    return join(b, with_unit(b, x), splat(b, 0.0, with_unit(b, x)))


def _broadcast(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    out = inst.array_shape
    dims = inst.attrs_as(Dimensions).dimensions
    return b.broadcast(ops[0], real_form(out).dims, [*dims, out.rank])


def _reshape(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    return b.reshape(ops[0], real_form(inst.array_shape).dims)


def _transpose(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    perm = inst.attrs_as(Dimensions).dimensions
    return b.transpose(ops[0], [*perm, len(perm)])


def _reverse(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    return b.reverse(ops[0], inst.attrs_as(Dimensions).dimensions)


def _concatenate(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    return b.concatenate(ops, inst.attrs_as(Dimensions).dimensions[0])


def _slice(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    s = inst.attrs_as(SliceAttrs)
    return b.slice(ops[0], [*s.starts, 0], [*s.limits, 2], [*s.strides, 1])


def _pad(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    """Each part padded with its part of the padding value."""
    x, value = ops
    dims = [*inst.attrs_as(PadAttrs).dims, PadDim(0, 0, 0)]
    padded = [
        b.pad(part, drop_unit(b, value_part), dims)
        for part, value_part in zip(parts(b, x), parts(b, value), strict=True)
    ]
    return join(b, *padded)


def _select(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    pred, on_true, on_false = ops
    shape = on_true.array_shape
    if pred.array_shape.rank:
        pred = b.broadcast(pred, shape.dims, list(range(shape.rank - 1)))
    return b.select(pred, on_true, on_false)


def _tuple(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    return b.tuple(ops)


def _get_tuple_element(
    b: ComputationBuilder, inst: Instruction, ops: list[Instruction]
) -> Instruction:
    return b.get_tuple_element(ops[0], inst.attrs_as(TupleIndex).index)


def _fft(b: ComputationBuilder, inst: Instruction, ops: list[Instruction]) -> Instruction:
    return lower_fft(b, inst, ops[0])


_RULES: dict[Opcode, Rule] = {
    Opcode.PARAMETER: _parameter,
    Opcode.CONSTANT: _constant,
    Opcode.ADD: _same,
    Opcode.SUBTRACT: _same,
    Opcode.NEGATE: _same,
    Opcode.COPY: _same,
    Opcode.MULTIPLY: _multiply,
    Opcode.DIVIDE: _divide,
    Opcode.ABS: _abs,
    Opcode.DOT: _dot,
    Opcode.EXP: _exp,
    Opcode.REAL: _part(0),
    Opcode.IMAG: _part(1),
    Opcode.COMPLEX: _complex,
    Opcode.CONVERT: _convert,
    Opcode.BROADCAST: _broadcast,
    Opcode.RESHAPE: _reshape,
    Opcode.TRANSPOSE: _transpose,
    Opcode.REVERSE: _reverse,
    Opcode.CONCATENATE: _concatenate,
    Opcode.SLICE: _slice,
    Opcode.PAD: _pad,
    Opcode.SELECT: _select,
    Opcode.TUPLE: _tuple,
    Opcode.GET_TUPLE_ELEMENT: _get_tuple_element,
    Opcode.FFT: _fft,
}
