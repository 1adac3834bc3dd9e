"""Graph plumbing and array ops: constants, identities, placeholders, reshape."""

from __future__ import annotations

import math

from aotc.errors import ConfigError, ShapeError
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.ir import Instruction


@translates("Const")
def const(ctx: TranslationContext, node: Node) -> Instruction:
    return ctx.builder.constant(node.attr("value"))


@translates("Identity", "StopGradient", "Snapshot", "PreventGradient")
def identity(ctx: TranslationContext, node: Node, x: Instruction) -> Instruction:
    return x


@translates("IdentityN")
def identity_n(ctx: TranslationContext, node: Node, *xs: Instruction) -> list[Instruction]:
    return list(xs)


@translates("NoOp", note="has no outputs; control dependencies are ignored")
def no_op(ctx: TranslationContext, node: Node) -> list[Instruction]:
    return []


@translates("Placeholder", note="must be a feed")
def placeholder(ctx: TranslationContext, node: Node) -> Instruction:
    raise ConfigError(
        "this Placeholder is needed by the fetches but is not a feed; "
        "add it to 'feeds' in the config"
    )


@translates("PlaceholderWithDefault", note="its default value when not fed")
def placeholder_with_default(
    ctx: TranslationContext, node: Node, default: Instruction
) -> Instruction:
    return default


@translates("Reshape", note="shape from a constant input; one -1 is inferred")
def reshape(ctx: TranslationContext, node: Node, x: Instruction, shape: Instruction) -> Instruction:
    dims = [int(d) for d in ctx.constant_value(shape, "shape input").reshape(-1)]
    return ctx.builder.reshape(x, resolve_reshape_dims(x.array_shape.size, dims))


def resolve_reshape_dims(size: int, dims: list[int]) -> list[int]:
    """Replace a single -1 in ``dims`` by what makes the element count ``size``."""
    unknown = [i for i, d in enumerate(dims) if d == -1]
    if len(unknown) > 1 or any(d < -1 for d in dims):
        raise ShapeError(f"invalid target shape {dims}")
    if unknown:
        known = math.prod(d for d in dims if d != -1)
        if known == 0 or size % known:
            raise ShapeError(f"cannot reshape {size} elements to {dims}")
        dims[unknown[0]] = size // known
    if math.prod(dims) != size:
        raise ShapeError(f"cannot reshape {size} elements to {dims}")
    return dims
