"""TF2 functional control flow: ``While``, ``If`` and ``Case`` with bodies from the library.

Each body or branch function becomes an HLO computation of its own (``ctx.function``) taking
one tuple of its arguments: a loop's carry is the tuple of the op's inputs, a branch gets the
op's inputs after the selector. The translators are generators: they yield the steps that
translate each function and are sent its computation, so nesting costs no recursion.
"""

from __future__ import annotations

from collections.abc import Sequence

from aotc.errors import GraphError, ShapeError
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import Steps, TranslationContext
from aotc.hlo.attrs import ComparisonDirection
from aotc.hlo.ir import Computation, Instruction
from aotc.hlo.shape import PrimitiveType, Shape, TupleShape
from aotc.proto import aotc_tf_pb2 as pb


@translates("While", "StatelessWhile", note="loop-invariant shapes")
def while_loop(ctx: TranslationContext, node: Node, *carry: Instruction) -> Steps:
    shapes = [c.shape for c in carry]
    cond = yield ctx.function(_func(node, "cond"), shapes, results=False)
    body = yield ctx.function(_func(node, "body"), shapes, results=True)
    assert isinstance(cond, Computation) and isinstance(body, Computation)
    if cond.root.shape != Shape(PrimitiveType.PRED):
        raise ShapeError(f"the condition '{cond.name}' returns {cond.root.shape}, not a pred[]")
    _check_carry(node, shapes, body)
    loop = ctx.builder.while_loop(ctx.builder.tuple(carry), cond, body)
    return _elements(ctx, loop, len(carry))


def _check_carry(node: Node, shapes: list, body: Computation) -> None:
    after = body.root.shape
    assert isinstance(after, TupleShape)
    if len(after.elements) != len(shapes):
        raise ShapeError(
            f"the body returns {len(after.elements)} values for a carry of {len(shapes)}"
        )
    for i, (before, now) in enumerate(zip(shapes, after.elements, strict=True)):
        if before != now:
            raise ShapeError(
                f"loop variable {i} changes shape from {before} to {now} in one iteration; "
                "aotc compiles loops whose variables keep their shapes"
            )


@translates("If", "StatelessIf")
def if_op(ctx: TranslationContext, node: Node, cond: Instruction, *args: Instruction) -> Steps:
    branches = [_func(node, "then_branch"), _func(node, "else_branch")]
    return _conditional(ctx, node, _predicate(ctx, cond), branches, args)


@translates("Case", "StatelessCase", note="an index out of range runs the last branch")
def case(ctx: TranslationContext, node: Node, index: Instruction, *args: Instruction) -> Steps:
    if index.shape != Shape(PrimitiveType.S32):
        raise ShapeError(f"the branch index must be an int32 scalar, got {index.shape}")
    funcs = list(node.proto.attr["branches"].list.func)
    if not funcs:
        raise GraphError(f"{node.label}: attribute 'branches' lists no function")
    return _conditional(ctx, node, index, funcs, args)


def _conditional(
    ctx: TranslationContext,
    node: Node,
    selector: Instruction,
    funcs: Sequence[pb.NameAttrList],
    args: Sequence[Instruction],
) -> Steps:
    """XLA's conditional: a pred runs branch 0 or 1, an s32 index its branch (out of range:
    the last, as TF's Case). Every branch gets the same tuple of ``args``."""
    operand = ctx.builder.tuple(args)
    shapes = [a.shape for a in args]
    branches: list[Computation] = []
    for func in funcs:
        branch = yield ctx.function(func, shapes, results=True)
        assert isinstance(branch, Computation)
        branches.append(branch)
    result = ctx.builder.conditional(selector, [operand] * len(branches), branches)
    return _elements(ctx, result, len(_results_shape(result).elements))


def _predicate(ctx: TranslationContext, cond: Instruction) -> Instruction:
    """A scalar condition as pred: a number is true when non-zero (TF's ToBool)."""
    shape = cond.array_shape
    if shape.dims:
        raise ShapeError(f"the condition must be a scalar, got {shape}")
    if shape.dtype is PrimitiveType.PRED:
        return cond
    return ctx.builder.compare(cond, ctx.scalar(0, shape.dtype), ComparisonDirection.NE)


def _func(node: Node, attr: str) -> pb.NameAttrList:
    if not node.has_attr(attr) or node.proto.attr[attr].WhichOneof("value") != "func":
        raise GraphError(f"{node.label}: attribute '{attr}' must name a function")
    return node.proto.attr[attr].func


def _results_shape(inst: Instruction) -> TupleShape:
    assert isinstance(inst.shape, TupleShape)
    return inst.shape


def _elements(ctx: TranslationContext, value: Instruction, count: int) -> list[Instruction]:
    return [ctx.builder.get_tuple_element(value, i) for i in range(count)]
