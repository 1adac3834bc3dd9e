"""Transposed convolutions as sub-pixel convolutions: no multiply-adds with the holes.

A convolution with base (lhs) dilation ``s`` reads an input with ``s - 1`` zeros between its
elements, so most window taps of each output multiply zeros: a stride-2 2-D transposed
convolution wastes three quarters of its work. Along each dilated dimension, output
``s*q + r`` (phase ``r``) is hit only by taps ``k0_r, k0_r + s, ...`` with
``k0_r = (pad_low - r) mod s``, which read inputs ``q + d_r, q + d_r + 1, ...`` with
``d_r = (r + k0_r - pad_low) / s``. So every phase is an ordinary convolution of the
undilated input with a strided slice of the kernel (``s^d`` of them for ``d`` dilated
dimensions), and the phases interleave into the output through a ``concatenate`` on new unit
dimensions and a ``reshape``. The sub-convolutions take the implicit-GEMM path like any other;
a bias or activation after the convolution fuses with the interleave instead of the GEMM.

The holes are zeros the dilated convolution multiplies in: ``0 * inf`` is NaN. The split is
exact only when every kernel element is finite, so it applies to constant kernels without
infinities or NaNs (``hlo/finite.py``); others keep the dilated form.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from aotc.hlo.builder import ComputationBuilder
from aotc.hlo.finite import known_finite
from aotc.hlo.ir import ConvAttrs, Instruction, Module, Opcode, Window, WindowDim
from aotc.passes.rewrite import RewriteContext, rewrite_module


@dataclass(frozen=True)
class _Phase:
    """One output phase along one dimension: kernel taps ``first::stride``, the input range
    ``[start, end)`` it reads and the window it slides over that range."""

    first: int
    start: int
    end: int
    window: WindowDim


def _phase(dim: WindowDim, n: int, rows: int, r: int) -> _Phase | None:
    """Phase ``r`` of a dimension with ``rows`` outputs per phase; None if it has no taps or
    reads nothing of the input."""
    s = dim.lhs_dilation
    first = (dim.pad_low - r) % s
    taps = len(range(first, dim.size, s))
    shift = (r + first - dim.pad_low) // s  # input of output q's first tap: q + shift
    start, end = max(0, shift), min(n, rows + shift + taps - 1)
    if taps == 0 or end <= start:
        return None
    window = WindowDim(taps, 1, start - shift, rows + shift + taps - 1 - end)
    return _Phase(first, start, end, window)


def _is_nhwc(attrs: ConvAttrs, rank: int) -> bool:
    """``b01f_01io->b01f``: spatial dimensions in order between batch and features."""
    d, spatial = attrs.dims, tuple(range(1, rank - 1))
    return (
        (d.input_batch, d.input_feature, d.input_spatial) == (0, rank - 1, spatial)
        and (d.kernel_input_feature, d.kernel_output_feature) == (rank - 2, rank - 1)
        and d.kernel_spatial == tuple(range(rank - 2))
        and (d.output_batch, d.output_feature, d.output_spatial) == (0, rank - 1, spatial)
    )


def _applies(conv: Instruction) -> bool:
    if conv.opcode is not Opcode.CONVOLUTION:
        return False
    attrs = conv.attrs_as(ConvAttrs)
    dims = attrs.window.dims
    if not any(w.lhs_dilation > 1 for w in dims) or attrs.batch_group_count != 1:
        return False
    if any(w.stride != 1 or w.rhs_dilation != 1 or min(w.pad_low, w.pad_high) < 0 for w in dims):
        return False
    if not conv.array_shape.dtype.is_float or not _is_nhwc(attrs, conv.array_shape.rank):
        return False
    return known_finite(conv.operands[1])


def decompose(ctx: RewriteContext, conv: Instruction) -> Instruction | None:
    """The rewrite rule: a transposed convolution as interleaved sub-pixel convolutions."""
    if not _applies(conv):
        return None
    dims = conv.attrs_as(ConvAttrs).window.dims
    x = conv.operands[0].array_shape
    out = conv.array_shape
    rows = [-(-o // w.lhs_dilation) for o, w in zip(out.dims[1:-1], dims, strict=True)]
    per_dim = [
        [_phase(w, n, q, r) for r in range(w.lhs_dilation)]
        for w, n, q in zip(dims, x.dims[1:-1], rows, strict=True)
    ]
    if any(p is None for phases in per_dim for p in phases):
        return None  # a phase without taps is all zeros: rare, keep the dilated form
    outputs = [
        _phase_conv(ctx.b, conv, combo)  # type: ignore[arg-type]
        for combo in itertools.product(*per_dim)
    ]
    return _interleave(ctx.b, outputs, [w.lhs_dilation for w in dims], out.dims)


def _phase_conv(b: ComputationBuilder, conv: Instruction, phases: Sequence[_Phase]) -> Instruction:
    """One sub-pixel convolution: the input range the phase reads, the taps that hit it."""
    x, w = conv.operands
    x_dims, w_dims = x.array_shape.dims, w.array_shape.dims
    if any(p.start > 0 or p.end < n for p, n in zip(phases, x_dims[1:-1], strict=True)):
        starts = [0, *(p.start for p in phases), 0]
        limits = [x_dims[0], *(p.end for p in phases), x_dims[-1]]
        x = b.slice(x, starts, limits)
    conv_attrs = conv.attrs_as(ConvAttrs)
    strides = [p_dim.lhs_dilation for p_dim in conv_attrs.window.dims]
    w = b.slice(
        w,
        [*(p.first for p in phases), 0, 0],
        list(w_dims),
        [*strides, 1, 1],
    )
    attrs = ConvAttrs(
        Window(tuple(p.window for p in phases)),
        conv_attrs.dims,
        conv_attrs.feature_group_count,
    )
    return b.convolution(x, w, attrs)


def _interleave(
    b: ComputationBuilder,
    outputs: Sequence[Instruction],
    strides: Sequence[int],
    out: Sequence[int],
) -> Instruction:
    """``out[n, s*q + r, ..., c] = outputs[r...][n, q, ..., c]``, cut to ``out``'s size.

    Each phase gets a unit dimension after each spatial one; concatenating along those (the
    last spatial dimension's first, as ``itertools.product`` orders the phases) and merging
    each ``(q, r)`` pair gives the interleaved output.
    """
    first = outputs[0].array_shape.dims
    nsp = len(strides)
    expanded = [first[0], *itertools.chain(*((q, 1) for q in first[1:-1])), first[-1]]
    values = [b.reshape(v, expanded) for v in outputs]
    for level in reversed(range(nsp)):
        group = strides[level]
        axis = 2 + 2 * level
        values = [b.concatenate(values[i : i + group], axis) for i in range(0, len(values), group)]
    merged = [first[0], *(q * s for q, s in zip(first[1:-1], strides, strict=True)), first[-1]]
    result = b.reshape(values[0], merged)
    if list(merged) == list(out):
        return result
    return b.slice(result, [0] * len(out), list(out))


@dataclass(frozen=True)
class ConvTransposePhases:
    """Split base-dilated (transposed) convolutions into sub-pixel convolutions."""

    name: str = "conv-transpose-phases"

    def run(self, module: Module) -> bool:
        return rewrite_module(module, decompose)
