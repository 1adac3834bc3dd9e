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

from dataclasses import dataclass

from llvmlite import ir

from aotc.abi import ALIGN
from aotc.codegen.irtypes import i64, mul_nuw
from aotc.codegen.kernels.conv_depthwise import DepthwiseConv, depthwise_conv
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

    Both are fusions of the entry (their operands are its instructions): the expand fusion
    pass asks before nesting, codegen again on the nested fusion's view.
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


class ExpandRows:
    """``with ExpandRows(...) as (n, oh):`` loops over the depthwise output rows (claiming
    ``split``); each iteration first computes into ``ring`` the producer rows its window needs,
    which the depthwise row, emitted in the body, reads through ``lines``."""

    def __init__(
        self,
        b: ir.IRBuilder,
        form: ExpandDepthwise,
        produce: RowEmitter,
        ring: ir.Value,
        split: Split | None,
    ):
        self.b, self.form, self.produce, self.ring, self.split = b, form, produce, ring, split

    def lines(self, b: ir.IRBuilder, ih: ir.Value) -> ir.Value:
        """The buffer slot of producer row ``ih``."""
        slot = b.urem(ih, i64(self.form.depthwise.kernel_hw[0]))
        return gep(b, self.ring, mul_nuw(b, slot, i64(self.form.line_floats)))

    def __enter__(self) -> tuple[ir.Value, ir.Value]:
        dw = self.form.depthwise
        self._nest = loop_nest(self.b, [dw.batch, dw.out_hw[0]], "xd", self.split)
        n, oh = self._nest.__enter__()
        self._fill(n, oh)
        return n, oh

    def __exit__(self, *exc: object) -> None:
        self._nest.__exit__(*exc)

    def _fill(self, n: ir.Value, oh: ir.Value) -> None:
        """Compute producer rows ``[start, stop)``: the window's rows past those the previous
        output row of this call read (all of them at the call's first row)."""
        b, dw = self.b, self.form.depthwise
        kh, w = dw.kernel_hw[0], dw.window[0]
        top = b.sub(b.mul(oh, i64(w.stride)), i64(w.pad_low))  # the window's first row
        low = _max(b, top, i64(0))
        stop = _min(b, b.add(top, i64(kh)), i64(dw.in_hw[0]))
        fresh = _max(b, low, b.add(top, i64(kh - w.stride)))  # past the previous window
        start = b.select(b.icmp_signed("==", oh, self._first_row()), low, fresh)
        with for_range(self.b, _max(b, stop, start), "xr", start) as ih:
            self.produce(b, n, ih, self.lines(b, ih))

    def _first_row(self) -> ir.Value:
        """The first output row this call computes (of each batch element)."""
        dw = self.form.depthwise
        if self.split is None or dw.batch > 1 or dw.out_hw[0] == 1:
            return i64(0)  # the split, if any, is over the batch: every image from row 0
        return self.split.lo


def _max(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed(">", x, y), x, y)


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)
