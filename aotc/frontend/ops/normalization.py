"""FusedBatchNorm, V2 and V3 in inference mode (``is_training=false``).

``y = (x - mean) * (rsqrt(variance + epsilon) * scale) + offset`` per channel, grouped as TF's
CPU kernel groups it. The other outputs (batch mean/variance, reserve spaces) exist only for
training; they are returned as the given mean and variance so that graphs wiring them through
still translate.
"""

from __future__ import annotations

from aotc.errors import UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import translates
from aotc.frontend.ops.window_attrs import layout
from aotc.frontend.translate import TranslationContext
from aotc.hlo.ir import Instruction, Opcode


@translates(
    "FusedBatchNorm",
    "FusedBatchNormV2",
    "FusedBatchNormV3",
    note="is_training=false only; data_format NHWC or NCHW (NDHWC, NCDHW for V3)",
)
def fused_batch_norm(
    ctx: TranslationContext,
    node: Node,
    x: Instruction,
    scale: Instruction,
    offset: Instruction,
    mean: Instruction,
    variance: Instruction,
) -> list[Instruction]:
    if node.bool_attr("is_training", True):
        raise UnsupportedError(
            "attribute is_training=true is not supported (batch statistics are a training "
            "feature); freeze the graph for inference so that is_training=false"
        )
    shape = x.array_shape
    formats = ("NHWC", "NCHW") if shape.rank == 4 else ("NDHWC", "NCDHW")
    feature = layout(node, formats).feature
    b = ctx.builder
    # Statistics may be f32 while x is f16: compute in the statistics' type, as TF does.
    stats_dtype = scale.array_shape.dtype
    wide = b.convert(x, stats_dtype) if shape.dtype is not stats_dtype else x
    eps = ctx.splat(node.float_attr("epsilon", 1e-4), variance)
    factor = b.binary(
        Opcode.MULTIPLY, b.unary(Opcode.RSQRT, b.binary(Opcode.ADD, variance, eps)), scale
    )

    def per_channel(v: Instruction) -> Instruction:
        return b.broadcast(v, shape.dims, [feature])

    centered = b.binary(Opcode.SUBTRACT, wide, per_channel(mean))
    scaled = b.binary(Opcode.MULTIPLY, centered, per_channel(factor))
    y = b.binary(Opcode.ADD, scaled, per_channel(offset))
    y = b.convert(y, shape.dtype) if shape.dtype is not stats_dtype else y
    return [y, mean, variance, mean, variance, mean]
