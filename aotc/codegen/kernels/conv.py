"""The convolution kernel: a direct loop nest, any dim_labels, groups and dilations.

For each output point (batch, spatial...), a stack row of accumulators, one per output
feature, is zeroed; every window tap that hits the input (padding and base-dilation holes are
skipped by one hoisted check per tap, where that is exact: ``hlo/finite.py``; else they read
zeros) adds ``x[ci] * w[tap, ci, co]`` for the group's input
features ``ci`` and, innermost, its output features ``co``. The innermost loop thus walks the
accumulator row contiguously and the kernel's output-feature dimension (contiguous for the
usual HWIO filters), so LLVM vectorizes it; the input element is invariant in it. ``f16``
accumulates in ``f32``; integers wrap; ``pred`` computes ``or`` of ``and``, as for dot.

Fast paths: an f32 2-D NHWC convolution (``b01f_01io->b01f``) with one group, constant
(finite, where there is padding) weights and no base dilation runs on register tiles along
output rows that read the input in place (``conv_rows.py``). Another 1x1 one (unit strides,
no padding or dilation) is a plain GEMM ``[N*H*W, Cin] @ [Cin, Cout]``, its constant kernel
pre-packed (``dot_gemm.py``). Any other f32 NHWC convolution with one group (windows,
strides, padding, dilations, transposed, runtime kernels) is an implicit GEMM whose A panels
are gathered from the input patches (``conv_gemm.py``). An f32 2-D NHWC depthwise convolution
(one input feature per group, multiplier 1) runs on register tiles of output columns times a
channel vector (``conv_depthwise.py``); in the loop kernel, other depthwise convolutions (one
input feature per group) run their innermost loop over the groups, which is the contiguous
channel dimension of NHWC input, kernel and output, so it vectorizes over channels. An f32
2-D NHWC convolution with 1-3 input features that no other fast form takes (a runtime kernel
with few filters) runs on the direct kernel (``conv_direct.py``) instead of the loop kernel.

The loop kernel also serves kOutput fusions (``emit_conv_loops`` hands each finished element
to a callback that applies the epilogue); the fast paths apply it to whole vectors before the store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from aotc.codegen.irtypes import (
    accumulator_dtype,
    add_nuw,
    i64,
    mul_nuw,
    scalar_constant,
    store_element,
)
from aotc.codegen.kernels.base import ElementGenerator, KernelIO
from aotc.codegen.kernels.conv_depthwise import (
    DepthwiseConv,
    depthwise_conv,
    emit_depthwise_conv,
)
from aotc.codegen.kernels.conv_direct import DirectConv, direct_conv, emit_direct_conv
from aotc.codegen.kernels.conv_gemm import ConvGemm, conv_gemm, emit_conv_gemm, is_nhwc
from aotc.codegen.kernels.conv_rows import RowConv, emit_row_conv, row_conv
from aotc.codegen.kernels.dot import multiply_add
from aotc.codegen.kernels.dot_gemm import GemmCall, GemmDot, VectorEpilogueFactory, emit_gemm_dot
from aotc.codegen.kernels.scalar_ops import convert
from aotc.codegen.kernels.window import Row, if_inside, place, window_positions
from aotc.codegen.loops import Split, loop_nest
from aotc.codegen.vector import VectorInfo
from aotc.errors import CodegenError
from aotc.hlo.finite import skips_zeros_exactly
from aotc.hlo.ir import ConvAttrs, Instruction, Opcode
from aotc.hlo.shape import PrimitiveType, Shape

#: Receives each finished output element (in the output's type) and its index.
Finish = Callable[[ir.IRBuilder, ir.Value, Sequence[ir.Value]], None]


@dataclass(frozen=True)
class _Conv:
    """The instruction's shapes and attributes, operand generators and the accumulator type."""

    attrs: ConvAttrs
    lhs: Shape
    rhs: Shape
    out: Shape
    acc_dtype: PrimitiveType
    operands: Sequence[ElementGenerator]
    skips_zeros: bool  # padding and dilation taps are skipped, not multiplied (exact here)

    @property
    def features(self) -> int:
        return self.out.dims[self.attrs.dims.output_feature]

    @property
    def groups(self) -> int:
        return self.attrs.feature_group_count


def conv_scratch_bytes(inst: Instruction, info: VectorInfo) -> int:
    """The GEMM's packing scratch on a fast path; the loop kernel needs none."""
    spec = conv_fast_path(inst)
    return spec.scratch_bytes(info) if spec is not None else 0


def conv_packed_operands(inst: Instruction, info: VectorInfo) -> frozenset[int]:
    """The kernel when it is constant weights the GEMM packs at compile time."""
    return frozenset({1}) if packs_weights(conv_fast_path(inst)) else frozenset()


#: A fast path's form of a convolution: a plain GEMM, row tiles, an implicit GEMM, direct or
#: depthwise.
FastConv = GemmDot | RowConv | ConvGemm | DirectConv | DepthwiseConv


def packs_weights(spec: FastConv | None) -> bool:
    """Whether a fast path reads its rhs from weights packed at compile time."""
    if isinstance(spec, RowConv):
        return True
    if isinstance(spec, ConvGemm):
        return spec.weights is not None
    return isinstance(spec, GemmDot) and spec.b_constant is not None


def conv_fast_path(inst: Instruction, rhs_source: Instruction | None = None) -> FastConv | None:
    """The fast form of a convolution: row tiles, pointwise (plain GEMM), implicit GEMM,
    direct, depthwise, or None."""
    return (
        row_conv(inst, rhs_source)
        or pointwise_gemm(inst, rhs_source)
        or conv_gemm(inst, rhs_source)
        or direct_conv(inst)
        or depthwise_conv(inst, rhs_source)
    )


def pointwise_gemm(inst: Instruction, rhs_source: Instruction | None = None) -> GemmDot | None:
    """The GEMM form of an f32 NHWC 1x1 convolution, or None.

    The output's leading dimensions are the GEMM's free lhs dimensions, so a fused epilogue
    sees the output's own index.
    """
    attrs = inst.attrs_as(ConvAttrs)
    lhs, rhs = (op.array_shape for op in inst.operands)
    if any(s.dtype is not PrimitiveType.F32 for s in (lhs, rhs, inst.array_shape)):
        return None
    if not is_nhwc(attrs.dims, lhs.rank) or attrs.feature_group_count != 1:
        return None
    if any(w != type(w)(1) for w in attrs.window.dims) or attrs.batch_group_count != 1:
        return None
    cin, cout = rhs.dims[-2], rhs.dims[-1]
    m = lhs.size // cin if cin else 0
    if min(m, cin, cout) == 0:
        return None
    kernel = rhs_source if rhs_source is not None else inst.operands[1]
    weights = None
    if kernel.opcode is Opcode.CONSTANT and kernel.literal is not None:
        weights = np.asarray(kernel.literal, np.float32).reshape(cin, cout)
    return GemmDot((), m, cout, cin, tuple(lhs.dims[:-1]), False, weights)


def emit_conv_fast_path(
    b: ir.IRBuilder,
    spec: FastConv,
    info: VectorInfo,
    call: GemmCall,
    epilogue: VectorEpilogueFactory | None = None,
) -> None:
    """Run a convolution on its fast path (``call.lhs``: input, ``call.rhs``: kernel)."""
    if isinstance(spec, RowConv):
        emit_row_conv(b, spec, info, call, epilogue)
    elif isinstance(spec, ConvGemm):
        emit_conv_gemm(b, spec, info, call, epilogue)
    elif isinstance(spec, DirectConv):
        emit_direct_conv(b, spec, info, call, epilogue)
    elif isinstance(spec, DepthwiseConv):
        emit_depthwise_conv(b, spec, info, call, epilogue)
    else:
        emit_gemm_dot(b, spec, info, call, vector_epilogue=epilogue)


def emit_convolution_kernel(b: ir.IRBuilder, io: KernelIO) -> None:
    spec = conv_fast_path(io.inst)
    lhs_ptr, rhs_ptr = io.pointer(0), io.pointer(1)
    if spec is not None and lhs_ptr is not None and rhs_ptr is not None:
        call = GemmCall(io.outputs[0], lhs_ptr, rhs_ptr, io.scratch, split=io.split)
        emit_conv_fast_path(b, spec, io.vector, call)
        return
    out = io.inst.array_shape

    def store(b: ir.IRBuilder, value: ir.Value, index: Sequence[ir.Value]) -> None:
        store_element(b, value, io.outputs[0], out, index)

    emit_conv_loops(b, io.inst, io.operands, store, split=io.split)


def emit_conv_loops(
    b: ir.IRBuilder,
    inst: Instruction,
    operands: Sequence[ElementGenerator],
    finish: Finish,
    kernel: Instruction | None = None,
    split: Split | None = None,
) -> None:
    """The loop kernel: each output element goes to ``finish`` (a store, or an epilogue);
    ``kernel`` is where the kernel operand comes from, when not the operand itself. With
    ``split``, the outermost output-point loop runs its range."""
    attrs = inst.attrs_as(ConvAttrs)
    if attrs.batch_group_count != 1:
        raise CodegenError(
            f"convolution %{inst.name} with batch_group_count {attrs.batch_group_count} "
            "is not supported by codegen yet"
        )
    out = inst.array_shape
    acc_dtype = accumulator_dtype(out.dtype)
    lhs, rhs = (op.array_shape for op in inst.operands)
    conv = _Conv(attrs, lhs, rhs, out, acc_dtype, operands, skips_zeros_exactly(inst, kernel))
    d = attrs.dims
    row = Row(b, acc_dtype, conv.features, "acc")
    points = [out.dims[d.output_batch], *(out.dims[s] for s in d.output_spatial)]
    with loop_nest(b, points, "p", split) as point:
        zero = scalar_constant(row.element_type, 0)
        with loop_nest(b, [conv.features], "z") as (c,):
            row.store(b, zero, c)
        with loop_nest(b, [w.size for w in attrs.window.dims], "k") as taps:
            _accumulate_taps(b, conv, row, point, taps)
        _finish_row(b, conv, row, point, finish)


def _accumulate_taps(
    b: ir.IRBuilder, conv: _Conv, row: Row, point: list[ir.Value], taps: list
) -> None:
    d = conv.attrs.dims
    sizes = [conv.lhs.dims[s] for s in d.input_spatial]
    inside, positions = window_positions(b, conv.attrs.window.dims, sizes, point[1:], taps)
    per_in = conv.rhs.dims[d.kernel_input_feature]
    per_out = conv.features // conv.groups
    skipped = inside if conv.skips_zeros else None
    if per_in == 1 and conv.groups > 1:
        with if_inside(b, skipped):
            _accumulate_depthwise(b, conv, row, point, taps, positions, inside)
        return
    with if_inside(b, skipped), loop_nest(b, [conv.groups, per_in], "g") as (g, ci):
        x_at = {d.input_batch: point[0], d.input_feature: _flat(b, g, per_in, ci)}
        x_at.update(zip(d.input_spatial, positions, strict=True))
        x = _input_element(b, conv, place(conv.lhs.rank, x_at), inside)
        with loop_nest(b, [per_out], "co") as (co,):
            feature = _flat(b, g, per_out, co)
            w_at = {d.kernel_input_feature: ci, d.kernel_output_feature: feature}
            w_at.update(zip(d.kernel_spatial, taps, strict=True))
            w = conv.operands[1](b, place(conv.rhs.rank, w_at))
            w = convert(b, w, conv.out.dtype, conv.acc_dtype)
            row.store(b, multiply_add(b, conv.acc_dtype, row.load(b, feature), x, w), feature)


def _accumulate_depthwise(
    b: ir.IRBuilder,
    conv: _Conv,
    row: Row,
    point: list[ir.Value],
    taps: list,
    positions: list[ir.Value],
    inside: ir.Value | None,
) -> None:
    """One tap of a depthwise convolution: the innermost loop runs over the groups.

    Input features are the groups there, contiguous in NHWC input; so are the output
    features (``g * per_out + co``) for a multiplier of 1, so the loop vectorizes.
    """
    d = conv.attrs.dims
    per_out = conv.features // conv.groups
    with loop_nest(b, [per_out, conv.groups], "dw") as (co, g):
        x_at = {d.input_batch: point[0], d.input_feature: g}
        x_at.update(zip(d.input_spatial, positions, strict=True))
        x = _input_element(b, conv, place(conv.lhs.rank, x_at), inside)
        feature = _flat(b, g, per_out, co)
        w_at = {d.kernel_input_feature: i64(0), d.kernel_output_feature: feature}
        w_at.update(zip(d.kernel_spatial, taps, strict=True))
        w = convert(
            b, conv.operands[1](b, place(conv.rhs.rank, w_at)), conv.out.dtype, conv.acc_dtype
        )
        row.store(b, multiply_add(b, conv.acc_dtype, row.load(b, feature), x, w), feature)


def _input_element(
    b: ir.IRBuilder, conv: _Conv, index: list[ir.Value], inside: ir.Value | None
) -> ir.Value:
    """The input element a tap reads, in the accumulator type: zero in padding and dilation
    holes when those taps are not skipped (``index`` is clamped inside there)."""
    x = convert(b, conv.operands[0](b, index), conv.out.dtype, conv.acc_dtype)
    if conv.skips_zeros or inside is None:
        return x
    return b.select(inside, x, scalar_constant(x.type, 0))


def _finish_row(b: ir.IRBuilder, conv: _Conv, row: Row, point: list, finish: Finish) -> None:
    d = conv.attrs.dims
    with loop_nest(b, [conv.features], "f") as (f,):
        at = {d.output_batch: point[0], d.output_feature: f}
        at.update(zip(d.output_spatial, point[1:], strict=True))
        finish(
            b, convert(b, row.load(b, f), conv.acc_dtype, conv.out.dtype), place(conv.out.rank, at)
        )


def _flat(b: ir.IRBuilder, group: ir.Value, size: int, within: ir.Value) -> ir.Value:
    """``group * size + within``: a feature index from its group and its place in the group."""
    return add_nuw(b, mul_nuw(b, group, i64(size)), within)
