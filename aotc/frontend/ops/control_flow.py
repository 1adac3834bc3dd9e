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
def while_loop(ctx: TranslationContext, node: Node, *inputs: Instruction) -> Steps:
    carry = yield _shaped_lists(ctx, node, list(inputs))
    assert isinstance(carry, list)
    unshaped = [i for i, c in enumerate(carry) if ctx.is_unshaped(c)]
    shapes = [c.shape for c in carry]
    cond = yield ctx.function(_func(node, "cond"), shapes, results=False, unshaped=unshaped)
    body = yield ctx.function(_func(node, "body"), shapes, results=True, unshaped=unshaped)
    assert isinstance(cond, Computation) and isinstance(body, Computation)
    if cond.root.shape != Shape(PrimitiveType.PRED):
        raise ShapeError(f"the condition '{cond.name}' returns {cond.root.shape}, not a pred[]")
    _check_carry(node, shapes, body)
    loop = ctx.builder.while_loop(ctx.builder.tuple(carry), cond, body)
    outputs = _elements(ctx, loop, len(carry))
    for i in unshaped:  # never written in the loop: still of unknown element shape
        ctx.mark_unshaped(outputs[i])
    return outputs


def _shaped_lists(ctx: TranslationContext, node: Node, carry: list[Instruction]) -> Steps:
    """The carry with each TensorList of unknown element shape replaced by an empty list of
    the element shape the body writes into it: the body is translated once to learn it."""
    unshaped = [i for i, c in enumerate(carry) if ctx.is_unshaped(c)]
    if not unshaped:
        return carry
    shapes = [c.shape for c in carry]
    probe = yield ctx.function(_func(node, "body"), shapes, results=True, unshaped=unshaped)
    assert isinstance(probe, Computation)
    _check_carry_count(shapes, probe)
    written = _results_shape(probe.root).elements
    for i in unshaped:
        learned = written[i]
        if learned == shapes[i] or not isinstance(learned, Shape):
            continue
        if learned.dims[:1] != carry[i].array_shape.dims:
            raise ShapeError(
                f"loop variable {i} is a TensorList of {carry[i].array_shape.dims[0]} "
                f"elements that the body makes {learned}"
            )
        zero = ctx.scalar(0, learned.dtype)
        carry[i] = ctx.builder.broadcast(zero, learned.dims, [])
    return carry


def _check_carry_count(shapes: list, body: Computation) -> None:
    count = len(_results_shape(body.root).elements)
    if count != len(shapes):
        raise ShapeError(f"the body returns {count} values for a carry of {len(shapes)}")


def _check_carry(node: Node, shapes: list, body: Computation) -> None:
    _check_carry_count(shapes, body)
    after = _results_shape(body.root)
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
