"""TF2 functional control flow: ``While``, ``If`` and ``Case`` with bodies from the library.

Each body or branch function becomes an HLO computation of its own (``ctx.function``) taking
one tuple of its arguments: a loop's carry is the tuple of the op's inputs, a branch gets the
op's inputs after the selector. The translators are generators: they yield the steps that
translate each function and are sent its computation, so nesting costs no recursion.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from aotc.errors import GraphError, ShapeError, UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.growing_lists import LoopBodies, check_carry, list_carries, runtime_loop
from aotc.frontend.ops.registry import translates
from aotc.frontend.ops.tensor_list import ListGrows
from aotc.frontend.translate import Steps, TranslationContext
from aotc.hlo.attrs import ComparisonDirection
from aotc.hlo.ir import Computation, Instruction
from aotc.hlo.shape import AnyShape, PrimitiveType, Shape, TupleShape
from aotc.proto import aotc_tf_pb2 as pb


@translates(
    "While", "StatelessWhile", note="loop-invariant shapes; TensorLists may grow to a static bound"
)
def while_loop(ctx: TranslationContext, node: Node, *inputs: Instruction) -> Steps:
    carry, lists = list(inputs), list_carries(node, len(inputs))
    translate = functools.partial(_bodies, ctx, node)
    if any(ctx.lists.runtime(carry[i]) is not None for i in lists):
        return (yield runtime_loop(ctx, node, carry, lists, translate))
    try:
        shaped = yield _shaped_lists(ctx, node, carry)
        assert isinstance(shaped, list)
        carry = shaped
        unshaped = [i for i, c in enumerate(carry) if ctx.is_unshaped(c)]
        loop = yield translate(carry, unshaped, [])
    except ListGrows:  # a write that resizes a list: it grows
        return (yield runtime_loop(ctx, node, list(inputs), lists, translate))
    assert isinstance(loop, LoopBodies)
    shapes = [c.shape for c in carry]
    if any(_length_changes(shapes[i], loop.body, i) for i in lists):
        return (yield runtime_loop(ctx, node, carry, lists, translate))
    check_carry(shapes, loop.body)
    outputs = _elements(ctx, ctx.builder.while_loop(ctx.builder.tuple(carry), *loop.computations))
    for i in unshaped:  # never written in the loop: still of unknown element shape
        ctx.mark_unshaped(outputs[i])
    return outputs


def _bodies(
    ctx: TranslationContext,
    node: Node,
    carry: list[Instruction],
    unshaped: list[int],
    runtime: list[int],
) -> Steps:
    """The loop's condition and body for ``carry`` (``growing_lists.Translate``)."""
    shapes = [c.shape for c in carry]
    lists = {"unshaped": unshaped, "runtime": runtime}
    cond = yield ctx.function(_func(node, "cond"), shapes, results=False, **lists)
    body = yield ctx.function(_func(node, "body"), shapes, results=True, **lists)
    assert isinstance(cond, Computation) and isinstance(body, Computation)
    if cond.root.shape != Shape(PrimitiveType.PRED):
        raise ShapeError(f"the condition '{cond.name}' returns {cond.root.shape}, not a pred[]")
    _check_carry_count(shapes, body)
    return LoopBodies(cond, body, ctx.lists.steps(body) if runtime else [])


def _length_changes(before: AnyShape, body: Computation, index: int) -> bool:
    """Whether the body returns list ``index`` with another number of elements."""
    after = _results_shape(body.root).elements[index]
    if not isinstance(before, Shape) or not isinstance(after, Shape):
        return False
    return (
        after.dims[:1] != before.dims[:1]
        and after.dims[1:] == before.dims[1:]
        or (before.dims == (0,) and after.rank > 1)
    )


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
    held = [k for k, a in enumerate(args) if ctx.lists.runtime(a) is not None]
    if held:
        raise UnsupportedError(
            f"argument {held[0]} is a TensorList of run-time length (pushed to or popped from "
            "in a loop); aotc carries such lists through loops, not into branches"
        )
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


def _elements(ctx: TranslationContext, value: Instruction, count: int = -1) -> list[Instruction]:
    count = len(_results_shape(value).elements) if count < 0 else count
    return [ctx.builder.get_tuple_element(value, i) for i in range(count)]
