"""Complex arithmetic on the real form: a c64 value ``z[d...]`` as ``f32[d..., 2]``.

The trailing dimension holds ``(re, im)`` (``shape.real_form``): the bytes of C's
``float _Complex`` array, so an
argument or result needs no conversion. ``complex_lowering.py`` and ``fft_lowering.py`` build
on these helpers; every helper takes and returns values of that form (parts keep a trailing
dimension of 1, so they broadcast and concatenate back without reshapes).
"""

from __future__ import annotations

import numpy as np

from aotc.hlo.builder import ComputationBuilder
from aotc.hlo.ir import ComparisonDirection, Instruction, Opcode


def parts(b: ComputationBuilder, z: Instruction) -> tuple[Instruction, Instruction]:
    """The real and imaginary parts of ``z`` (real form), each ``[d..., 1]``."""
    dims = z.array_shape.dims
    starts = [0] * len(dims)
    re = b.slice(z, starts, [*dims[:-1], 1])
    im = b.slice(z, [*starts[:-1], 1], list(dims))
    return re, im


def join(b: ComputationBuilder, re: Instruction, im: Instruction) -> Instruction:
    """Parts ``[d..., 1]`` -> the complex value ``[d..., 2]``."""
    return b.concatenate([re, im], re.array_shape.rank - 1)


def with_unit(b: ComputationBuilder, x: Instruction) -> Instruction:
    """A real ``[d...]`` as a part ``[d..., 1]``."""
    return b.reshape(x, [*x.array_shape.dims, 1])


def drop_unit(b: ComputationBuilder, part: Instruction) -> Instruction:
    """A part ``[d..., 1]`` as a real ``[d...]``."""
    return b.reshape(part, list(part.array_shape.dims[:-1]))


def multiply(b: ComputationBuilder, x: Instruction, y: Instruction) -> Instruction:
    """``(a + bi)(c + di) = (ac - bd) + (ad + bc)i``, as C's ``*`` without Annex G's
    infinity recovery (XLA's CPU backend computes the same formula)."""
    (xr, xi), (yr, yi) = parts(b, x), parts(b, y)
    mul, add, sub = Opcode.MULTIPLY, Opcode.ADD, Opcode.SUBTRACT
    re = b.binary(sub, b.binary(mul, xr, yr), b.binary(mul, xi, yi))
    im = b.binary(add, b.binary(mul, xr, yi), b.binary(mul, xi, yr))
    return join(b, re, im)


def exponential(b: ComputationBuilder, z: Instruction) -> Instruction:
    """``exp(a + bi) = e^a (cos b + i sin b)``."""
    re, im = parts(b, z)
    scale = b.unary(Opcode.EXP, re)
    cos, sin = b.unary(Opcode.COSINE, im), b.unary(Opcode.SINE, im)
    return join(b, b.binary(Opcode.MULTIPLY, scale, cos), b.binary(Opcode.MULTIPLY, scale, sin))


def conjugate(b: ComputationBuilder, z: Instruction) -> Instruction:
    re, im = parts(b, z)
    return join(b, re, b.unary(Opcode.NEGATE, im))


def abs_value(b: ComputationBuilder, z: Instruction) -> Instruction:
    """``|z|`` as ``hypot``: ``m * sqrt(1 + (s / m)^2)`` with ``m = max(|re|, |im|)`` and
    ``s`` the other, so no square overflows or underflows (TF's ComplexAbs is ``std::abs``);
    ``m`` itself where it is 0 or infinite."""
    re, im = (b.unary(Opcode.ABS, p) for p in parts(b, z))
    big, small = b.binary(Opcode.MAXIMUM, re, im), b.binary(Opcode.MINIMUM, re, im)
    ratio = b.binary(Opcode.DIVIDE, small, big)
    one = splat(b, 1.0, big)
    root = b.unary(Opcode.SQRT, b.binary(Opcode.ADD, one, b.binary(Opcode.MULTIPLY, ratio, ratio)))
    scaled = b.binary(Opcode.MULTIPLY, big, root)
    eq = ComparisonDirection.EQ
    edge = b.compare(big, splat(b, 0.0, big), eq)
    edge = b.binary(Opcode.OR, edge, b.compare(big, splat(b, np.inf, big), eq))
    return drop_unit(b, b.select(edge, big, scaled))


def splat(b: ComputationBuilder, value: float, like: Instruction) -> Instruction:
    """``value`` broadcast to ``like``'s shape and type."""
    shape = like.array_shape
    scalar = b.constant(np.asarray(value, shape.dtype.numpy))
    return b.broadcast(scalar, shape.dims, [])
