"""Neural-network ops: bias, activations, softmax."""

from __future__ import annotations

from aotc.errors import UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.ir import Instruction, Opcode


@translates("BiasAdd", "BiasAddV1", note="data_format NHWC (bias on the last dim) or NCHW")
def bias_add(ctx: TranslationContext, node: Node, x: Instruction, bias: Instruction) -> Instruction:
    shape = x.array_shape
    data_format = node.str_attr("data_format", "NHWC")
    if data_format not in ("NHWC", "NCHW"):
        raise UnsupportedError(
            f"attribute data_format={data_format!r} is not supported; use NHWC or NCHW"
        )
    feature_dim = 1 if data_format == "NCHW" and shape.rank > 2 else shape.rank - 1
    if bias.array_shape.dims != (shape.dims[feature_dim],):
        raise UnsupportedError(
            f"bias {bias.shape} does not match dimension {feature_dim} of {shape}"
        )
    broadcast = ctx.builder.broadcast(bias, shape.dims, [feature_dim])
    return ctx.builder.binary(Opcode.ADD, x, broadcast)


@translates("Relu")
def relu(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return ctx.builder.binary(Opcode.MAXIMUM, x, ctx.splat(0, x))


@translates("Relu6")
def relu6(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return ctx.builder.clamp(ctx.splat(0, x), x, ctx.splat(6, x))


@translates("Softmax", note="over the last dimension, as TF defines it")
def softmax(ctx: TranslationContext, node: Node, logits: Instruction) -> Instruction:
    b = ctx.builder
    shape = logits.array_shape
    if shape.rank == 0 or not shape.dtype.is_float:
        raise UnsupportedError(f"Softmax needs a floating-point input of rank >= 1, got {shape}")
    last = shape.rank - 1
    batch_dims = list(range(last))

    def reduce_last(x: Instruction, opcode: Opcode, init: float) -> Instruction:
        return b.reduce(
            [x], [ctx.scalar(init, shape.dtype)], [last], ctx.module.reducer(opcode, shape.dtype)
        )

    def rows(x: Instruction) -> Instruction:
        return b.broadcast(x, shape.dims, batch_dims)

    # Subtracting the row maximum keeps exp from overflowing, as TF and XLA do.
    shifted = b.binary(
        Opcode.SUBTRACT, logits, rows(reduce_last(logits, Opcode.MAXIMUM, -float("inf")))
    )
    exp = b.unary(Opcode.EXP, shifted)
    # TF's kernel multiplies by the sum's inverse (one division per row, not per element).
    total = reduce_last(exp, Opcode.ADD, 0.0)
    inverse = b.binary(Opcode.DIVIDE, ctx.splat(1, total), total)
    return b.binary(Opcode.MULTIPLY, exp, rows(inverse))
