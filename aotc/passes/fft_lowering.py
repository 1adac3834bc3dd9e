"""XLA's ``fft`` as real arithmetic that runs on the GEMM engine.

Values are in the real form of ``complex_parts.py`` (``c64[d...]`` as ``f32[d..., 2]``). A
transform of length ``n`` along one dimension is a ``dot`` with a constant DFT matrix (the
rows of ``2n`` reals times ``[2n, 2n]``; an RFFT's ``[n, 2(n//2 + 1)]``, an IRFFT's
``[2(n//2 + 1), n]``), packed at compile time like any constant weight. A length whose
matrix would exceed ``DIRECT_MATRIX_ELEMENTS`` is split as Cooley-Tukey's four-step
algorithm does, ``n = n1 * n2`` (``n1`` the largest factor up to ``sqrt(n)``): ``n2``
transforms of length ``n1``, a twiddle multiply, ``n1`` transforms of length ``n2``, a
transpose; work ``O(n (n1 + n2))`` per row instead of ``O(n^2)``. A long real transform runs
as a complex one (the input with zero imaginary parts; for IRFFT the Hermitian spectrum
completed), so only complex transforms split. A prime length past the split has no factor:
its matrix may take up to ``MAX_MATRIX_ELEMENTS``, above that it is refused.

Multi-dimensional transforms are one-dimensional ones along each dimension (RFFT: the last
first, IRFFT: the last last). IFFT and IRFFT scale by ``1 / n`` inside each matrix. An RFFT of a
frame zero-padded to its length drops the padding and the matrix rows it would meet.
Splitting nests once per factor level: ``n2 >= sqrt(n)`` shrinks each level, so the depth
is below 7 for any ``n < 2^64``.
"""

from __future__ import annotations

import math

import numpy as np

from aotc.errors import UnsupportedError
from aotc.hlo.builder import ComputationBuilder
from aotc.hlo.ir import DotDims, FftAttrs, FftType, Instruction, Opcode, PadAttrs, PadDim
from aotc.passes.complex_parts import conjugate, drop_unit, join, multiply, parts, splat, with_unit
from aotc.passes.rewrite import splat_value

#: A transform is one dot while its matrix has at most this many elements (1 MiB of f32).
DIRECT_MATRIX_ELEMENTS = 1 << 18
#: The largest matrix of a length that cannot be split (a prime): 64 MiB of f32.
MAX_MATRIX_ELEMENTS = 1 << 24


def lower_fft(b: ComputationBuilder, inst: Instruction, x: Instruction) -> Instruction:
    """``inst`` (an ``fft``) on ``x``, its operand in real form; the result in real form."""
    attrs = inst.attrs_as(FftAttrs)
    lengths, kind = attrs.fft_length, attrs.fft_type
    _check_lengths(inst, lengths)
    rank = inst.operands[0].array_shape.rank
    axes = list(range(rank - len(lengths), rank))
    if kind is FftType.RFFT:
        y = _rfft_last(b, x, lengths[-1])
        for axis in reversed(axes[:-1]):
            y = _complex_axis(b, y, axis, inverse=False)
        return y
    if kind is FftType.IRFFT:
        for axis in axes[:-1]:
            x = _complex_axis(b, x, axis, inverse=True)
        return _irfft_last(b, x, lengths[-1])
    for axis in reversed(axes):
        x = _complex_axis(b, x, axis, inverse=kind is FftType.IFFT)
    return x


def _check_lengths(inst: Instruction, lengths: tuple[int, ...]) -> None:
    for n in lengths:
        stack = [n]
        while stack:
            m = stack.pop()
            if _direct(m):
                continue
            n1 = _split(m)
            if n1 > 1:
                stack += [n1, m // n1]
            elif (2 * m) ** 2 > MAX_MATRIX_ELEMENTS:
                raise UnsupportedError(
                    f"fft %{inst.name}: length {n} needs a transform of prime length {m}, "
                    f"above the {math.isqrt(MAX_MATRIX_ELEMENTS) // 2} aotc computes"
                )


def _direct(n: int) -> bool:
    return (2 * n) ** 2 <= DIRECT_MATRIX_ELEMENTS


def _split(n: int) -> int:
    """The largest factor of ``n`` up to ``sqrt(n)`` (1 for a prime)."""
    for d in range(math.isqrt(n), 1, -1):
        if n % d == 0:
            return d
    return 1


# ---- complex transforms ----------------------------------------------------------------------


def _complex_axis(b: ComputationBuilder, z: Instruction, axis: int, inverse: bool) -> Instruction:
    """The transform of complex ``z`` (real form) along ``axis``."""
    dims = z.array_shape.dims
    last = len(dims) - 2
    perm = [d for d in range(last + 1) if d != axis] + [axis, last + 1]
    moved = z if axis == last else b.transpose(z, perm)
    moved_dims = moved.array_shape.dims
    rows = b.reshape(moved, [math.prod(moved_dims[:-2]), dims[axis], 2])
    out = b.reshape(_transform(b, rows, inverse), moved_dims)
    return out if axis == last else b.transpose(out, list(np.argsort(perm)))


def _transform(b: ComputationBuilder, rows: Instruction, inverse: bool) -> Instruction:
    """``[B, n, 2]`` -> its DFT along ``n``: one dot, or the four-step split."""
    batch, n, _ = rows.array_shape.dims
    n1 = 1 if _direct(n) else _split(n)
    dtype = rows.array_shape.dtype.numpy
    if n1 == 1:
        flat = b.reshape(rows, [batch, 2 * n])
        matrix = b.constant(_dft_matrix(n, inverse).astype(dtype))
        return b.reshape(b.dot(flat, matrix, DotDims((1,), (0,))), [batch, n, 2])
    n2 = n // n1
    grid = b.reshape(rows, [batch, n1, n2, 2])  # j = j1 * n2 + j2
    first = _complex_axis(b, grid, 1, inverse)  # over j1: [B, k1, j2]
    twiddles = b.constant(_twiddles(n1, n2, inverse).astype(dtype))
    spread = b.broadcast(twiddles, [batch, n1, n2, 2], [1, 2, 3])
    second = _complex_axis(b, multiply(b, first, spread), 2, inverse)  # over j2: [B, k1, k2]
    return b.reshape(b.transpose(second, [0, 2, 1, 3]), [batch, n, 2])  # k = k1 + n1 * k2


def _angles(rows: int, cols: int, n: int, inverse: bool) -> np.ndarray:
    """``[j, k] -> -+2 pi j k / n`` with ``j k`` reduced mod ``n`` first (exact angles)."""
    jk = np.outer(np.arange(rows, dtype=np.int64), np.arange(cols, dtype=np.int64)) % n
    return (1.0 if inverse else -1.0) * 2.0 * np.pi * jk / n


def _dft_matrix(n: int, inverse: bool) -> np.ndarray:
    """``[2n, 2n]``: row ``2j + p`` (part ``p`` of input ``j``) times the matrix gives output
    ``k`` at columns ``2k`` (re) and ``2k + 1`` (im)."""
    angle = _angles(n, n, n, inverse)
    c, s = np.cos(angle), np.sin(angle)
    m = np.empty((n, 2, n, 2))
    m[:, 0, :, 0], m[:, 1, :, 0] = c, -s
    m[:, 0, :, 1], m[:, 1, :, 1] = s, c
    return m.reshape(2 * n, 2 * n) / (n if inverse else 1)


def _twiddles(n1: int, n2: int, inverse: bool) -> np.ndarray:
    """``[k1, j2] -> exp(-+2 pi i k1 j2 / (n1 n2))`` in real form."""
    angle = _angles(n1, n2, n1 * n2, inverse)
    return np.stack([np.cos(angle), np.sin(angle)], axis=-1)


# ---- real transforms along the last dimension ------------------------------------------------


def _rfft_last(b: ComputationBuilder, x: Instruction, n: int) -> Instruction:
    """Real ``[d..., n]`` -> the ``n // 2 + 1`` first bins ``[d..., m, 2]``."""
    dims, m = x.array_shape.dims, n // 2 + 1
    if _unpadded(x).array_shape.dims[-1] * 2 * m > DIRECT_MATRIX_ELEMENTS:
        z = join(b, with_unit(b, x), splat(b, 0.0, with_unit(b, x)))
        full = _complex_axis(b, z, len(dims) - 1, inverse=False)
        return b.slice(full, [0] * (len(dims) + 1), [*dims[:-1], m, 2])
    x = _unpadded(x)
    rows = x.array_shape.dims[-1]
    angle = _angles(rows, m, n, inverse=False)
    matrix = np.stack([np.cos(angle), np.sin(angle)], axis=-1).reshape(rows, 2 * m)
    flat = b.reshape(x, [math.prod(dims[:-1]), rows])
    const = b.constant(matrix.astype(x.array_shape.dtype.numpy))
    return b.reshape(b.dot(flat, const, DotDims((1,), (0,))), [*dims[:-1], m, 2])


def _unpadded(x: Instruction) -> Instruction:
    """``x``'s operand where ``x`` only appends zeros to the last dimension (a frame shorter
    than ``fft_length``, as ``tf.signal.stft`` gives): zeros add nothing to the dot, so the
    matrix loses those rows instead."""
    if x.opcode is not Opcode.PAD or splat_value(x.operands[1]) != 0:
        return x
    *outer, last = x.attrs_as(PadAttrs).dims
    if any(d != PadDim(0, 0, 0) for d in outer) or last.low != 0 or last.interior != 0:
        return x
    return x.operands[0]


def _irfft_last(b: ComputationBuilder, z: Instruction, n: int) -> Instruction:
    """The bins ``[d..., n // 2 + 1, 2]`` of a Hermitian spectrum -> real ``[d..., n]``; the
    imaginary parts of bin 0 (and ``n / 2``) are ignored, as XLA and numpy do."""
    dims, m = z.array_shape.dims, n // 2 + 1
    if 2 * m * n > DIRECT_MATRIX_ELEMENTS:
        starts = [0] * len(dims)
        tail = b.slice(z, [*starts[:-2], 1, 0], [*dims[:-2], n - m + 1, 2])
        mirrored = conjugate(b, b.reverse(tail, [len(dims) - 2]))
        full = b.concatenate([z, mirrored], len(dims) - 2)
        signal = _complex_axis(b, full, len(dims) - 2, inverse=True)
        return drop_unit(b, parts(b, signal)[0])
    angle = _angles(m, n, n, inverse=True)
    weight = np.where((np.arange(m) == 0) | (2 * np.arange(m) == n), 1.0, 2.0)[:, None] / n
    matrix = np.stack([np.cos(angle) * weight, -np.sin(angle) * weight], axis=1)
    flat = b.reshape(z, [math.prod(dims[:-2]), 2 * m])
    const = b.constant(matrix.reshape(2 * m, n).astype(z.array_shape.dtype.numpy))
    return b.reshape(b.dot(flat, const, DotDims((1,), (0,))), [*dims[:-2], n])
