"""Drives translation of a pruned TF graph into an HLO module, node by node.

Each TF tensor (``node:index``) maps to one HLO instruction. Feeds become entry parameters in
signature order; the entry root is a tuple of the fetches in signature order.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Generator, Sequence
from typing import cast

import numpy as np

from aotc.errors import AotcError, GraphError, ShapeError, UnsupportedError
from aotc.frontend.effects import check_effects, dropped_note
from aotc.frontend.graphdef import Graph
from aotc.frontend.inline import function_graph
from aotc.frontend.list_lengths import ListLengths, RuntimeLength, as_runtime
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import lookup
from aotc.frontend.signature import Signature
from aotc.frontend.variables import VariableState, check_variables, updated_variable
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.evaluate import evaluate_computation
from aotc.hlo.ir import Computation, Instruction, Module, Opcode
from aotc.hlo.shape import AnyShape, PrimitiveType, Shape, TupleShape
from aotc.proto import aotc_tf_pb2 as pb
from aotc.tensor_ref import TensorRef

# Constant subgraphs (shape arithmetic, Fill, Range, ...) are evaluated while translating;
# a crafted graph must not turn that into a multi-gigabyte, hours-long computation.
MAX_CONSTANT_EVAL_BYTES = 256 << 20

#: Translation as a generator (``_drive``): a control-flow translator yields the ``Steps`` of
#: each function body it needs (``TranslationContext.function``) and is sent its computation,
#: so bodies nest to any depth without recursion.
Steps = Generator["Steps", object, object]


class TranslationContext:
    """What a translator may use: the builders and helpers for constant-valued inputs."""

    def __init__(
        self,
        module: ModuleBuilder,
        builder: ComputationBuilder,
        graph: Graph | None = None,
        unshaped: dict[int, Instruction] | None = None,
        lists: ListLengths | None = None,
    ):
        self.module = module
        self.builder = builder
        self.graph = graph
        self.node: Node | None = None
        self.variables: VariableState | None = None  # set while translating a graph
        self.notes: list[str] | None = None  # the report's notes, shared with function bodies
        # TensorLists made without a known element shape (a placeholder buffer [length]),
        # by id; shared with the contexts of the functions this one translates.
        self._unshaped = {} if unshaped is None else unshaped
        self.lists = ListLengths() if lists is None else lists  # lists of run-time length

    def function(
        self,
        func: pb.NameAttrList,
        shapes: Sequence[AnyShape],
        results: bool,
        unshaped: Sequence[int] = (),
        runtime: Sequence[int] = (),
    ) -> Steps:
        """Steps that translate library function ``func`` into a computation of one tuple
        parameter (its arguments, of ``shapes``); the root is a tuple of the function's
        results, or with ``results=False`` its single result (a loop condition's pred).
        The arguments numbered in ``unshaped`` are TensorLists of unknown element shape; those
        in ``runtime`` are lists of run-time length (aotc/frontend/list_lengths.py), whose
        lengths follow the arguments in ``shapes`` (and the results), in that order."""
        lists = (tuple(unshaped), tuple(runtime))
        return _function_steps(self, func, list(shapes), results, lists)

    def mark_unshaped(self, tensor_list: Instruction) -> Instruction:
        """Record that ``tensor_list`` stands for a list whose element shape is unknown."""
        self._unshaped[id(tensor_list)] = tensor_list
        return tensor_list

    def is_unshaped(self, value: Instruction) -> bool:
        return self._unshaped.get(id(value)) is value

    def constant_value(self, value: Instruction, what: str = "input") -> np.ndarray:
        """The value of ``value`` if it does not depend on any feed, else a clear error."""
        if value.opcode is Opcode.CONSTANT:
            assert value.literal is not None
            return value.literal
        subgraph = _subgraph(value)
        node = self.node.name if self.node else "?"
        feed = next((i for i in subgraph if i.opcode is Opcode.PARAMETER), None)
        if feed is not None:
            raise ShapeError(
                f"the {what} must be a compile-time constant, but it depends on the "
                f"feed '{feed.name}'; aotc needs static shapes (node '{node}')"
            )
        big = next((i for i in subgraph if _byte_size(i) > MAX_CONSTANT_EVAL_BYTES), None)
        if big is not None:
            raise ShapeError(
                f"the {what} is computed from a {_byte_size(big)}-byte value '{big.name}'; "
                f"aotc evaluates at most {MAX_CONSTANT_EVAL_BYTES} bytes at compile time "
                f"(node '{node}')"
            )
        result = evaluate_computation(Computation("constant_subgraph", [], value), [])
        assert isinstance(result, np.ndarray)
        return result

    def scalar(self, value: float | int | bool, dtype: PrimitiveType) -> Instruction:
        return self.builder.constant(value, dtype)

    def splat(self, value: float | int | bool, like: Instruction) -> Instruction:
        """A constant with ``like``'s shape: a scalar broadcast to it."""
        shape = like.array_shape
        scalar = self.scalar(value, shape.dtype)
        return scalar if not shape.dims else self.builder.broadcast(scalar, shape.dims, [])

    def broadcast_to(self, x: Instruction, dims: Sequence[int]) -> Instruction:
        """numpy-style broadcast of ``x`` to ``dims`` (trailing dims aligned, 1s stretched)."""
        src = x.array_shape
        dims = tuple(dims)
        if src.dims == dims:
            return x
        offset = len(dims) - src.rank
        if offset < 0 or any(n not in (1, dims[offset + d]) for d, n in enumerate(src.dims)):
            raise ShapeError(f"cannot broadcast {src} to {list(dims)}")
        kept = [d for d, n in enumerate(src.dims) if n == dims[offset + d]]
        if len(kept) != src.rank:
            x = self.builder.reshape(x, [src.dims[d] for d in kept])
        return self.builder.broadcast(x, dims, [offset + d for d in kept])

    def broadcast_operands(self, *xs: Instruction) -> list[Instruction]:
        """Broadcast operands against each other as numpy does."""
        try:
            dims = np.broadcast_shapes(*(x.array_shape.dims for x in xs))
        except ValueError:
            shapes = " and ".join(str(x.shape) for x in xs)
            raise ShapeError(f"shapes {shapes} are not broadcast-compatible") from None
        return [self.broadcast_to(x, dims) for x in xs]


def _subgraph(value: Instruction) -> list[Instruction]:
    """``value`` and every instruction it is computed from."""
    found, stack = {id(value): value}, [value]
    while stack:
        for op in stack.pop().operands:
            if id(op) not in found:
                found[id(op)] = op
                stack.append(op)
    return list(found.values())


def _byte_size(inst: Instruction) -> int:
    shapes = inst.shape.elements if isinstance(inst.shape, TupleShape) else (inst.shape,)
    return sum(s.byte_size for s in shapes if isinstance(s, Shape))


def translate_graph(graph: Graph, signature: Signature, notes: list[str] | None = None) -> Module:
    """Translate the part of ``graph`` the signature's fetches need into an HLO module.

    Parameters are the feeds, then the variables; the root tuple holds the fetches, then the
    final value of each updated variable. Variable updates the fetches depend on through
    control inputs run in program order (aotc/frontend/variables.py); other side effects are
    an error unless dropping them is harmless (aotc/frontend/effects.py), and the note on
    what was dropped is appended to ``notes``.
    """
    fed = {f.ref for f in signature.feeds} | {TensorRef(v.node) for v in signature.variables}
    fetches = [f.ref for f in signature.fetches]
    reached = graph.control_reached(fetches, fed)
    updates = [n.name for n in reached if updated_variable(graph, n) is not None]
    order = graph.execution_order(fetches, fed, updates)
    check_variables(graph, order, signature.variables)
    # A node is computed unless every one of its outputs that is needed is fed.
    needed = {*fetches, *(ref for n in order for ref in n.inputs)}
    computed = {r.node for r in needed if r not in fed} | set(updates)
    nodes = [n for n in order if n.name in computed]
    check_supported(graph, nodes)
    note = dropped_note(check_effects(graph, fetches, fed, honoured=updates))
    if note and notes is not None:
        notes.append(note)
    return _build(graph, signature, nodes, notes)


def _build(
    graph: Graph, signature: Signature, nodes: list[Node], notes: list[str] | None
) -> Module:
    mb = ModuleBuilder(signature.name)
    ctx = TranslationContext(mb, mb.computation("main"), graph)
    ctx.notes = notes
    ctx.variables = VariableState(graph, signature.variables)
    values: dict[TensorRef, Instruction] = {}
    for number, feed in enumerate(signature.feeds):
        shape = Shape(PrimitiveType.from_numpy(feed.dtype), tuple(feed.shape))
        values[feed.ref] = ctx.builder.parameter(number, shape, feed.ref.node)
    for number, var in enumerate(signature.variables, len(signature.feeds)):
        shape = Shape(PrimitiveType.from_numpy(var.dtype), tuple(var.shape))
        ctx.variables.start(var.node, ctx.builder.parameter(number, shape, var.node))
    _drive(_nodes_steps(ctx, graph, nodes, values))
    results = [_input(ctx, values, graph, f.ref, "fetch") for f in signature.fetches]
    for spec, value in zip(signature.fetches, results, strict=True):
        spec.check(value.array_shape.dtype.numpy, value.array_shape.dims)
    root = ctx.builder.tuple([*results, *ctx.variables.written()])
    return mb.build(ctx.builder.build(root))


def check_supported(graph: Graph, nodes: Sequence[Node]) -> None:
    """Raise one error listing every node whose op has no translator."""
    missing = [n for n in nodes if lookup(n.op) is None]
    if missing:
        listing = ", ".join(f"'{n.name}' ({n.op})" for n in missing)
        ops = sorted({n.op for n in missing})
        raise UnsupportedError(
            f"{graph.path}: {len(missing)} node(s) use op(s) aotc does not support "
            f"({', '.join(ops)}): {listing}; run 'aotc ops' for the supported list"
        )


def _drive(start: Steps) -> object:
    """Run ``start`` and the steps it yields on an explicit stack (as ``evaluate._drive``); an
    error is thrown into the waiting translator, so each level names its node."""
    stack: list[Steps] = [start]
    value: object = None
    error: AotcError | None = None
    while stack:
        try:
            callee = stack[-1].throw(error) if error is not None else stack[-1].send(value)
        except StopIteration as done:
            stack.pop()
            value, error = done.value, None
            continue
        except AotcError as err:
            stack.pop()
            if not stack:
                raise
            error = err
            continue
        stack.append(callee)
        value, error = None, None
    return value


def _nodes_steps(
    ctx: TranslationContext,
    graph: Graph,
    nodes: Sequence[Node],
    values: dict[TensorRef, Instruction],
) -> Steps:
    for node in nodes:
        translator = lookup(node.op)
        assert translator is not None  # check_supported ran first
        inputs = [_input(ctx, values, graph, r, f"input of '{node.name}'") for r in node.inputs]
        ctx.node = node
        _check_arity(translator, node, len(inputs))
        outputs = yield _translator_steps(translator, ctx, node, inputs)
        if isinstance(outputs, Instruction):
            outputs = [outputs]
        assert isinstance(outputs, Sequence)
        for index, out in enumerate(outputs):
            values.setdefault(TensorRef(node.name, index), out)  # a fed output keeps its parameter
    return None


def _translator_steps(
    translator: Callable[..., object],
    ctx: TranslationContext,
    node: Node,
    inputs: list[Instruction],
) -> Steps:
    """The translator's outputs; a control-flow translator (a generator) is run as steps."""
    try:
        outputs = translator(ctx, node, *inputs)
        if inspect.isgenerator(outputs):
            outputs = yield cast(Steps, outputs)
    except AotcError as err:
        shapes = ", ".join(str(i.shape) for i in inputs)
        raise type(err)(f"node '{node.name}' ({node.op}) with inputs ({shapes}): {err}") from None
    return outputs


def _function_steps(
    caller: TranslationContext,
    func: pb.NameAttrList,
    shapes: list[AnyShape],
    results: bool,
    lists: tuple[tuple[int, ...], tuple[int, ...]],
) -> Steps:
    # One computation per function and signature: branches that share a function nested n
    # deep are translated n times, not 2^n.
    serialized = func.SerializeToString(deterministic=True)
    key = ("function", serialized, tuple(shapes), results, lists)
    done = caller.module.cached(key)
    if done is not None:
        return done
    assert caller.graph is not None, "translating a function needs the graph of its library"
    proto, args = function_graph(caller.graph.functions, func)
    graph = Graph(proto, f"function '{func.name}'", caller.graph.functions)
    unshaped, runtime = lists
    if len(args) + len(runtime) != len(shapes):
        count = len(shapes) - len(runtime)
        raise GraphError(f"function '{func.name}' takes {len(args)} argument(s), got {count}")
    builder = caller.module.computation(func.name)
    ctx = TranslationContext(caller.module, builder, graph, caller._unshaped, caller.lists)
    ctx.notes = caller.notes
    param = ctx.builder.parameter(0, TupleShape(tuple(shapes)), "args")
    elements = [ctx.builder.get_tuple_element(param, i) for i in range(len(shapes))]
    for i in unshaped:
        ctx.mark_unshaped(elements[i])
    lengths = elements[len(args) :]
    for i, length in zip(runtime, lengths, strict=True):
        ctx.lists.set_runtime(elements[i], RuntimeLength(length, length, 0))
    elements = elements[: len(args)]
    values = {TensorRef(a): e for a, e in zip(args, elements, strict=True)}
    fetches = [TensorRef(func.name, i) for i in range(len(graph.node(func.name).inputs))]
    nodes = [n for n in graph.prune(fetches, values) if n.name not in set(args)]
    check_supported(graph, nodes)
    # TF runs every stateful op of a function body (its control outputs and sinks reach the
    # result node through control inputs): one the results do not need is an error, as at the
    # top level, never dropped.
    note = dropped_note(check_effects(graph, fetches, values))
    if note and ctx.notes is not None:
        ctx.notes.append(note)
    yield _nodes_steps(ctx, graph, nodes, values)
    outputs = [_value_of(values, graph, ref, "result") for ref in fetches]
    if not results and len(outputs) != 1:
        raise GraphError(f"function '{func.name}' returns {len(outputs)} values, expected one")
    steps = []
    if results:
        steps = [ctx.lists.step(outputs[i], b) for i, b in zip(runtime, lengths, strict=True)]
        for i in runtime:
            outputs[i], length = as_runtime(ctx.builder, ctx.lists, outputs[i], shapes[i])
            outputs.append(length)
    root = ctx.builder.tuple(outputs) if results else outputs[0]
    comp = caller.module.add(ctx.builder.build(root), key)
    ctx.lists.set_steps(comp, steps)
    return comp


def _check_arity(translator: Callable[..., object], node: Node, count: int) -> None:
    # A malformed graph can give a node any number of inputs; a translator call with the
    # wrong count would be a TypeError (a crash) instead of an error naming the node.
    try:
        _signature(translator).bind(None, node, *range(count))
    except TypeError:
        raise GraphError(
            f"{node.label}: {count} data input(s) is not a valid input count for {node.op}"
        ) from None


def _input(
    ctx: TranslationContext,
    values: dict[TensorRef, Instruction],
    graph: Graph,
    ref: TensorRef,
    what: str,
) -> Instruction:
    """The value ``ref`` has where it is read: a variable's current value, else its own."""
    current = ctx.variables.value_of(ref) if ctx.variables is not None else None
    return current if current is not None else _value_of(values, graph, ref, what)


@functools.cache  # one per translator, not per node
def _signature(translator: Callable[..., object]) -> inspect.Signature:
    return inspect.signature(translator)


def _value_of(
    values: dict[TensorRef, Instruction], graph: Graph, ref: TensorRef, what: str
) -> Instruction:
    if ref in values:
        return values[ref]
    raise GraphError(
        f"{graph.path}: {what} '{ref}' does not exist: node '{ref.node}' has no output {ref.index}"
    )
