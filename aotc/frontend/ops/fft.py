"""Fourier transforms and complex numbers: RFFT/IRFFT/FFT/IFFT (1-3 D) and the ops around them.

As tf2xla's ``fft_ops.cc``: each transform is XLA's ``fft`` of the innermost dimensions.
TF's RFFT crops or zero-pads its input to ``fft_length`` first; IRFFT crops or zero-pads its
spectrum to ``fft_length`` (the innermost to ``fft_length // 2 + 1`` bins).
"""

from __future__ import annotations

from functools import partial

from aotc.errors import UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.ir import FftAttrs, FftType, Instruction, Opcode, PadDim


def _fit(ctx: TranslationContext, x: Instruction, sizes: tuple[int, ...]) -> Instruction:
    """``x`` with its innermost ``len(sizes)`` dims cropped or zero-padded to ``sizes``."""
    dims = x.array_shape.dims
    target = (*dims[: len(dims) - len(sizes)], *sizes)
    if target == dims:
        return x
    cropped = [min(d, t) for d, t in zip(dims, target, strict=True)]
    if tuple(cropped) != dims:
        x = ctx.builder.slice(x, [0] * len(dims), cropped)
    if tuple(cropped) != target:
        pads = [PadDim(0, t - c, 0) for c, t in zip(cropped, target, strict=True)]
        x = ctx.builder.pad(x, ctx.scalar(0, x.array_shape.dtype), pads)
    return x


def _lengths(
    ctx: TranslationContext, node: Node, x: Instruction, given: Instruction, rank: int
) -> tuple[int, ...]:
    lengths = tuple(int(n) for n in ctx.constant_value(given, "fft_length").reshape(-1))
    if len(lengths) != rank or any(n < 1 for n in lengths):
        raise UnsupportedError(
            f"{node.op} needs {rank} positive fft_length values, got {list(lengths)}"
        )
    if x.array_shape.rank < rank:
        raise UnsupportedError(f"{node.op} needs an input of rank >= {rank}, got {x.shape}")
    return lengths


def real_fft(
    rank: int, ctx: TranslationContext, node: Node, x: Instruction, fft_length: Instruction
) -> Instruction:
    lengths = _lengths(ctx, node, x, fft_length, rank)
    return ctx.builder.fft(_fit(ctx, x, lengths), FftAttrs(FftType.RFFT, lengths))


def inverse_real_fft(
    rank: int, ctx: TranslationContext, node: Node, x: Instruction, fft_length: Instruction
) -> Instruction:
    lengths = _lengths(ctx, node, x, fft_length, rank)
    bins = (*lengths[:-1], lengths[-1] // 2 + 1)
    return ctx.builder.fft(_fit(ctx, x, bins), FftAttrs(FftType.IRFFT, lengths))


def complex_fft(
    kind: FftType, rank: int, ctx: TranslationContext, node: Node, x: Instruction
) -> Instruction:
    dims = x.array_shape.dims
    if len(dims) < rank:
        raise UnsupportedError(f"{node.op} needs an input of rank >= {rank}, got {x.shape}")
    return ctx.builder.fft(x, FftAttrs(kind, dims[len(dims) - rank :]))


for _rank, _suffix in [(1, ""), (2, "2D"), (3, "3D")]:
    translates(f"RFFT{_suffix}", note="fft_length a constant")(partial(real_fft, _rank))
    translates(f"IRFFT{_suffix}", note="fft_length a constant")(partial(inverse_real_fft, _rank))
    translates(f"FFT{_suffix}")(partial(complex_fft, FftType.FFT, _rank))
    translates(f"IFFT{_suffix}")(partial(complex_fft, FftType.IFFT, _rank))


@translates("Complex", note="numpy-style broadcasting")
def make_complex(
    ctx: TranslationContext, node: Node, re: Instruction, im: Instruction
) -> Instruction:
    re, im = ctx.broadcast_operands(re, im)
    return ctx.builder.binary(Opcode.COMPLEX, re, im)


@translates("ComplexAbs")
def complex_abs(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return ctx.builder.unary(Opcode.ABS, x)


@translates("Real")
def real_part(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return ctx.builder.unary(Opcode.REAL, x)


@translates("Imag")
def imaginary_part(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return ctx.builder.unary(Opcode.IMAG, x)


@translates("Conj", note="the identity on real inputs")
def conjugate(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    if not x.array_shape.dtype.is_complex:
        return x
    b = ctx.builder
    im = b.unary(Opcode.NEGATE, b.unary(Opcode.IMAG, x))
    return b.binary(Opcode.COMPLEX, b.unary(Opcode.REAL, x), im)
