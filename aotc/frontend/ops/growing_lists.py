"""A ``While`` whose TensorLists grow or shrink: each list is carried as a buffer of its most
elements plus a length (aotc/frontend/list_lengths.py).

The most elements a list can hold comes from the loop when its trip count is a constant
(the start length, plus what each iteration adds and reaches on the way, or the largest
index a resizing write uses, which is the loop counter), else from the list's
``max_num_elements``. With a constant trip count the length after the loop is static too, and
the list leaves the loop as an ordinary one; otherwise it stays a list of run-time length
(readable, not stackable). A list nothing bounds is an error naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aotc.errors import ShapeError, UnsupportedError
from aotc.frontend.list_lengths import ListStep, RuntimeLength, padded
from aotc.frontend.node import Node
from aotc.frontend.translate import Steps, TranslationContext
from aotc.hlo.ir import Computation, Instruction, Opcode
from aotc.hlo.loop_analysis import InductionVariable, count_trips, loop_counter, tuple_index_of
from aotc.hlo.shape import AnyShape, PrimitiveType, Shape, TupleShape
from aotc.proto import aotc_tf_pb2 as pb

S32 = PrimitiveType.S32


@dataclass(frozen=True)
class LoopBodies:
    """A loop's condition and body for a carry, and what the body does to its lists."""

    cond: Computation
    body: Computation
    steps: list[ListStep]

    @property
    def computations(self) -> tuple[Computation, Computation]:
        return self.cond, self.body


def list_carries(node: Node, count: int) -> list[int]:
    """The loop variables of ``node`` that are TensorLists (TF's ``variant``)."""
    types = list(node.proto.attr["T"].list.type) if node.has_attr("T") else []
    return [i for i, t in enumerate(types[:count]) if t == pb.DT_VARIANT]


#: ``translate(carry, unshaped, runtime)``: the steps translating a loop's condition and body
#: (a ``LoopBodies``) for a carry of these values, with those lists of unknown element shape
#: and these of run-time length (whose lengths end the carry).
Translate = Callable[[list[Instruction], list[int], list[int]], Steps]


def runtime_loop(
    ctx: TranslationContext,
    node: Node,
    carry: list[Instruction],
    lists: list[int],
    translate: Translate,
) -> Steps:
    """The outputs of loop ``node`` with the carry's ``lists`` held at run-time length."""
    starts = [_static_length(ctx, carry[i]) for i in lists]
    sizes = [_given_size(ctx, carry[i]) for i in lists]
    lengths = [_length(ctx, carry[i]) for i in lists]
    for _attempt in range(4):  # learn element shapes, then sizes; each changes the carry
        buffers = _buffers(ctx, carry, lists, sizes)
        unshaped = [i for i in lists if ctx.is_unshaped(buffers[i])]
        loop = yield translate([*buffers, *lengths], unshaped, lists)
        assert isinstance(loop, LoopBodies)
        if _learn_elements(ctx, carry, unshaped, loop.body):
            continue
        trips, counter = _trip_count([*buffers, *lengths], loop.cond, loop.body)
        changes = [change(step, trips) for step in loop.steps]
        bounds = [
            _bound(i, start, step, delta, trips, counter)
            for i, start, step, delta in zip(lists, starts, loop.steps, changes, strict=True)
        ]
        wanted = [_size(ctx, node, i, carry[i], b[0]) for i, b in zip(lists, bounds, strict=True)]
        if wanted == sizes:
            break
        sizes = wanted
    else:
        raise ShapeError("the sizes of the loop's TensorLists do not settle")
    check_carry([c.shape for c in [*buffers, *lengths]], loop.body)
    done = ctx.builder.while_loop(ctx.builder.tuple([*buffers, *lengths]), *loop.computations)
    outputs = [ctx.builder.get_tuple_element(done, k) for k in range(len(carry) + len(lists))]
    for k, i in enumerate(lists):
        length = _ended_length(ctx, carry[i], outputs[len(carry) + k], changes[k])
        outputs[i] = _ended(ctx, outputs[i], length, bounds[k][1])
        if i in unshaped:  # never written in the loop: still of unknown element shape
            ctx.mark_unshaped(outputs[i])
    return outputs[: len(carry)]


def _static_length(ctx: TranslationContext, tensor_list: Instruction) -> int | None:
    return None if ctx.lists.runtime(tensor_list) else tensor_list.array_shape.dims[0]


def _given_size(ctx: TranslationContext, tensor_list: Instruction) -> int:
    """The buffer a list enters the loop with, before the loop bounds it."""
    n = tensor_list.array_shape.dims[0]
    return max(n, ctx.lists.capacity(tensor_list) or 0, 1)


def _length(ctx: TranslationContext, tensor_list: Instruction) -> Instruction:
    held = ctx.lists.runtime(tensor_list)
    if held is not None:
        return held.length
    return ctx.scalar(tensor_list.array_shape.dims[0], S32)


def _buffers(
    ctx: TranslationContext, carry: list[Instruction], lists: list[int], sizes: list[int]
) -> list[Instruction]:
    """The carry with each of ``lists`` as a buffer of ``sizes`` rows."""
    buffers = list(carry)
    for i, size in zip(lists, sizes, strict=True):
        if ctx.lists.runtime(carry[i]) is not None:
            continue  # its buffer is the list's, already carried by an outer loop
        buffers[i] = padded(ctx.builder, carry[i], size)
        if ctx.is_unshaped(carry[i]) or carry[i].array_shape.dims == (0,):  # shape unknown
            ctx.mark_unshaped(buffers[i])
    return buffers


def _learn_elements(
    ctx: TranslationContext,
    carry: list[Instruction],
    unshaped: list[int],
    body: Computation,
) -> bool:
    """Give each list of unknown element shape the shape the body writes (an empty list of
    it in ``carry``); whether any was learned."""
    results = body.root.shape
    assert isinstance(results, TupleShape)
    changed = False
    for i in unshaped:
        written = results.elements[i]
        assert isinstance(written, Shape)
        if written.rank > 1:
            zero = ctx.scalar(0, written.dtype)
            rows = carry[i].array_shape.dims[0]
            empty = ctx.builder.broadcast(zero, (rows, *written.dims[1:]), [])
            carry[i] = ctx.lists.inherit(empty, carry[i])
            changed = True
    return changed


def _size(
    ctx: TranslationContext, node: Node, index: int, tensor_list: Instruction, reach: int | None
) -> int:
    """The rows of list ``index``'s buffer: what the loop reaches, else its given most."""
    if ctx.lists.runtime(tensor_list) is not None:
        have = tensor_list.array_shape.dims[0]
        if reach is not None and reach > have:
            raise ShapeError(f"loop variable {index} reaches {reach} elements, the list {have}")
        return have
    given = ctx.lists.capacity(tensor_list)
    if reach is not None and given is not None and reach > given:
        raise ShapeError(
            f"loop variable {index} reaches {reach} elements, more than the list's "
            f"max_num_elements {given}"
        )
    most = reach if reach is not None else given
    if most is None:
        raise unbounded(node, index)
    return max(most, tensor_list.array_shape.dims[0], 1)


def change(step: ListStep, trips: int | None) -> tuple[int, int] | None:
    """(the most elements above its start a list reaches in the loop, how its length changes
    over the loop) when known: pushes and pops of a constant trip count."""
    if step.offset == 0 and step.peak == 0:
        return 0, 0
    if trips is None:
        return None
    if trips == 0:
        return 0, 0
    if step.offset is None:
        return None
    return step.peak + max(0, (trips - 1) * step.offset), trips * step.offset


def _bound(
    index: int,
    start: int | None,
    step: ListStep,
    delta: tuple[int, int] | None,
    trips: int | None,
    counter: InductionVariable | None,
) -> tuple[int | None, int | None]:
    """(the most elements list ``index`` reaches, its length after the loop), each when
    known, for a list that enters the loop with ``start`` elements (None: at run time)."""
    if start is None:
        return None, None
    if delta is not None:
        if start + delta[1] < 0:
            raise ShapeError(f"loop variable {index} pops more elements than the list holds")
        return start + delta[0], start + delta[1]
    if trips and _written_at_counter(step, counter):
        assert counter is not None
        end = max(start, counter.init + (trips - 1) * counter.step + 1)
        return end, end
    return None, None


def _written_at_counter(step: ListStep, counter: InductionVariable | None) -> bool:
    """Whether the list grows only by writes at the (rising) loop counter."""
    if not step.writes or counter is None or counter.step <= 0:
        return False
    return all(_reads_counter(w, counter) for w in step.writes)


def _reads_counter(index: Instruction, counter: InductionVariable) -> bool:
    """Whether ``index`` is the loop counter's value at the start of the iteration."""
    if not index.operands or index.operands[0].opcode is not Opcode.PARAMETER:
        return False
    return tuple_index_of(index, index.operands[0]) == counter.index


def unbounded(node: Node, index: int) -> UnsupportedError:
    return UnsupportedError(
        f"loop variable {index} is a TensorList ('{node.inputs[index]}') whose length changes "
        "in the loop, and aotc cannot bound it statically: give the list max_num_elements, "
        "or make the loop's trip count a constant"
    )


def _trip_count(
    carry: Sequence[Instruction], cond: Computation, body: Computation
) -> tuple[int | None, InductionVariable | None]:
    counter = loop_counter(carry, cond, body)
    return (None if counter is None else count_trips(counter)), counter


def _ended_length(
    ctx: TranslationContext,
    entered: Instruction,
    length: Instruction,
    delta: tuple[int, int] | None,
) -> RuntimeLength:
    """The run-time ``length`` of a list after the loop. One that entered at a known offset
    in an outer loop's iteration keeps it (an inner loop of a constant trip count), and its
    outer loop learns the most elements it reached."""
    held = ctx.lists.runtime(entered)
    if held is None or held.base is None or held.offset is None or delta is None:
        return RuntimeLength(length)
    ctx.lists.reach(held.base, held.offset + delta[0])
    return RuntimeLength(length, held.base, held.offset + delta[1])


def _ended(
    ctx: TranslationContext, buffer: Instruction, length: RuntimeLength, final: int | None
) -> Instruction:
    """A list leaving the loop: of static length ``final`` when known, else run-time."""
    if final is None:
        return ctx.lists.set_runtime(buffer, length)
    dims = buffer.array_shape.dims
    if final == dims[0]:
        return buffer
    return ctx.builder.slice(buffer, [0] * len(dims), [final, *dims[1:]])


def check_carry(shapes: Sequence[AnyShape], body: Computation) -> None:
    """The body returns values of the carry's shapes."""
    after = body.root.shape
    assert isinstance(after, TupleShape)
    for i, (before, now) in enumerate(zip(shapes, after.elements, strict=True)):
        if before != now:
            raise ShapeError(
                f"loop variable {i} changes shape from {before} to {now} in one iteration; "
                "aotc compiles loops whose variables keep their shapes"
            )
