"""A depthwise convolution fused with the convolution that produces its input.

MobileNet-style inverted residuals expand the features with a 1x1 convolution (with bias and
activation), filter each feature with a depthwise 3x3 or 5x5 convolution and project back; the
expanded tensor is a block's largest (112x112x96 floats, 4.8 MB, in MobileNetV2), written once
and read once. The expand fusion pass (``aotc/passes/expand_fusion.py``) nests the producer's
output fusion inside the depthwise convolution's as that convolution's input. Here the
producer's output rows go to a rolling buffer of ``KH`` rows in scratch (row ``ih`` in slot
``ih % KH``), where the depthwise kernel reads them: for each output row the kernel first
computes, on the row-tiled kernel (``conv_rows.py``, its epilogue in registers), the input rows
its window needs that the buffer lacks (all of them at the first row a call computes), then
the depthwise row (``conv_depthwise.py``) from the buffer. The expanded tensor never reaches
memory and stays in the L1/L2 caches between its write and its reads.

Each call computes a range of output rows (``loops.Split``, for the multi-core entry) with its
own buffer in its own scratch region, so a range recomputes the ``KH - stride`` input rows its
neighbour computed too; results are those of the unfused kernels, bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from llvmlite import ir

from aotc.abi import ALIGN
from aotc.codegen.irtypes import add_wrap, i64, mul_nuw, mul_wrap, sub_wrap
from aotc.codegen.kernels.conv_depthwise import DepthwiseConv, InputRows, depthwise_conv
from aotc.codegen.kernels.conv_rows import RowConv, RowEmitter, row_conv
from aotc.codegen.kernels.gemm_tile import gep
from aotc.codegen.loops import Split, for_range, loop_nest
from aotc.codegen.vector import VectorInfo
from aotc.hlo.fusion_plan import recorded_plan
from aotc.hlo.ir import ConvAttrs, Instruction, Opcode, parameter_number


@dataclass(frozen=True)
class ExpandDepthwise:
    """A producer convolution on row tiles and the depthwise convolution of its output."""

    producer: RowConv
    depthwise: DepthwiseConv

    @property
    def line_floats(self) -> int:
        """Floats between rows in the buffer: a row of the producer's output, aligned."""
        per_line = ALIGN // 4
        return -(-self.depthwise.in_hw[1] * self.depthwise.channels // per_line) * per_line

    def scratch_bytes(self, info: VectorInfo) -> int:
        return self.depthwise.kernel_hw[0] * self.line_floats * 4


def expand_depthwise(producer: Instruction, consumer: Instruction) -> ExpandDepthwise | None:
    """The fused form of output fusion ``consumer`` (a depthwise convolution) reading
    ``producer`` (an output fusion of a convolution) as its input, or None.

    Both are fusions as the entry has them (their operands are its instructions): codegen
    asks with the nested producer's view (``kernels/fusion.py``).
    """
    inner, outer = _contraction(producer), _contraction(consumer)
    if inner is None or outer is None or inner.operands[0].opcode is not Opcode.PARAMETER:
        return None
    if producer.called[0].root.array_shape != inner.array_shape:
        return None  # the epilogue keeps the convolution's shape: rows stay rows
    if consumer.called[0].root.array_shape != outer.array_shape:
        return None
    rows = row_conv(inner, producer.operands[parameter_number(inner.operands[1])])
    weights = consumer.operands[parameter_number(outer.operands[1])]
    depthwise = depthwise_conv(outer, weights)
    if rows is None or depthwise is None or rows.out_hw != depthwise.in_hw:
        return None
    window = depthwise.window[0]
    if window.rhs_dilation != 1 or window.stride > depthwise.kernel_hw[0]:
        return None  # the buffer holds the window's rows, consecutive ones
    return ExpandDepthwise(rows, depthwise)


def _contraction(fusion: Instruction) -> Instruction | None:
    """An output fusion's convolution when it reads two parameters of the fusion, else None."""
    if fusion.opcode is not Opcode.FUSION:
        return None
    plan = recorded_plan(fusion)
    conv = plan.dot if plan is not None else None
    if conv is None or conv.opcode is not Opcode.CONVOLUTION:
        return None
    if conv.operands[1].opcode is not Opcode.PARAMETER:
        return None  # the weights: the nested producer, if any, is the input
    return conv if conv.attrs_as(ConvAttrs).batch_group_count == 1 else None


def ring_lines(form: ExpandDepthwise, ring: ir.Value) -> InputRows:
    """Where producer row ``ih`` is: slot ``ih % KH`` of the buffer at ``ring``."""

    def line(b: ir.IRBuilder, ih: ir.Value) -> ir.Value:
        slot = b.urem(ih, i64(form.depthwise.kernel_hw[0]))
        return gep(b, ring, mul_nuw(b, slot, i64(form.line_floats)))

    return line


@contextmanager
def expand_rows(
    b: ir.IRBuilder,
    form: ExpandDepthwise,
    produce: RowEmitter,
    ring: ir.Value,
    split: Split | None,
) -> Iterator[tuple[ir.Value, ir.Value]]:
    """``with expand_rows(...) as (n, oh):`` loops over the depthwise output rows (claiming
    ``split``); each iteration first computes into ``ring`` the producer rows the window needs,
    which the depthwise row emitted in the body reads (``ring_lines``)."""
    dw = form.depthwise
    first = i64(0)  # the first row a call computes, of each image
    if split is not None and dw.batch == 1 and dw.out_hw[0] > 1:
        first = split.lo  # the split is over the rows (else over the batch, or none)
    lines = ring_lines(form, ring)
    with loop_nest(b, [dw.batch, dw.out_hw[0]], "xd", split) as (n, oh):
        start, stop = _fresh_rows(b, dw, oh, first)
        with for_range(b, stop, "xr", start) as ih:
            produce(b, n, ih, lines(b, ih))
        yield n, oh


def _fresh_rows(
    b: ir.IRBuilder, dw: DepthwiseConv, oh: ir.Value, first: ir.Value
) -> tuple[ir.Value, ir.Value]:
    """The producer rows ``[start, stop)`` output row ``oh`` computes: its window's rows past
    those the previous output row read (all of them at the call's first row)."""
    kh, w = dw.kernel_hw[0], dw.window[0]
    top = sub_wrap(b, mul_wrap(b, oh, i64(w.stride)), i64(w.pad_low))  # the window's first row
    low = _max(b, top, i64(0))
    stop = _min(b, add_wrap(b, top, i64(kh)), i64(dw.in_hw[0]))
    fresh = _max(b, low, add_wrap(b, top, i64(kh - w.stride)))  # past the previous window
    start = b.select(b.icmp_signed("==", oh, first), low, fresh)
    return start, _max(b, stop, start)


def _max(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed(">", x, y), x, y)


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)
