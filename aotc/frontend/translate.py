"""Drives translation of a pruned TF graph into an HLO module, node by node.

Each TF tensor (``node:index``) maps to one HLO instruction. Feeds become entry parameters in
signature order; the entry root is a tuple of the fetches in signature order.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

import numpy as np

from aotc.errors import AotcError, GraphError, ShapeError, UnsupportedError
from aotc.frontend.effects import check_effects, dropped_note
from aotc.frontend.graphdef import Graph
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import lookup
from aotc.frontend.signature import Signature
from aotc.frontend.variables import VariableState, check_variables, updated_variable
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.evaluate import evaluate_computation
from aotc.hlo.ir import Computation, Instruction, Module, Opcode
from aotc.hlo.shape import PrimitiveType, Shape, TupleShape
from aotc.tensor_ref import TensorRef

# Constant subgraphs (shape arithmetic, Fill, Range, ...) are evaluated while translating;
# a crafted graph must not turn that into a multi-gigabyte, hours-long computation.
MAX_CONSTANT_EVAL_BYTES = 256 << 20


class TranslationContext:
    """What a translator may use: the builders and helpers for constant-valued inputs."""

    def __init__(self, module: ModuleBuilder, builder: ComputationBuilder):
        self.module = module
        self.builder = builder
        self.node: Node | None = None
        self.variables: VariableState | None = None  # set while translating a graph

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
    return _build(graph, signature, nodes)


def _build(graph: Graph, signature: Signature, nodes: list[Node]) -> Module:
    mb = ModuleBuilder(signature.name)
    ctx = TranslationContext(mb, mb.computation("main"))
    ctx.variables = VariableState(graph, signature.variables)
    values: dict[TensorRef, Instruction] = {}
    for number, feed in enumerate(signature.feeds):
        shape = Shape(PrimitiveType.from_numpy(feed.dtype), tuple(feed.shape))
        values[feed.ref] = ctx.builder.parameter(number, shape, feed.ref.node)
    for number, var in enumerate(signature.variables, len(signature.feeds)):
        shape = Shape(PrimitiveType.from_numpy(var.dtype), tuple(var.shape))
        ctx.variables.start(var.node, ctx.builder.parameter(number, shape, var.node))
    for node in nodes:
        _translate_node(ctx, graph, node, values)
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


def _translate_node(
    ctx: TranslationContext, graph: Graph, node: Node, values: dict[TensorRef, Instruction]
) -> None:
    translator = lookup(node.op)
    assert translator is not None  # check_supported ran first
    inputs = [_input(ctx, values, graph, ref, f"input of '{node.name}'") for ref in node.inputs]
    ctx.node = node
    _check_arity(translator, node, len(inputs))
    try:
        outputs = translator(ctx, node, *inputs)
    except AotcError as err:
        shapes = ", ".join(str(i.shape) for i in inputs)
        raise type(err)(f"node '{node.name}' ({node.op}) with inputs ({shapes}): {err}") from None
    if isinstance(outputs, Instruction):
        outputs = [outputs]
    for index, out in enumerate(outputs):
        values.setdefault(TensorRef(node.name, index), out)  # a fed output keeps its parameter


def _check_arity(translator: Callable[..., object], node: Node, count: int) -> None:
    # A malformed graph can give a node any number of inputs; a translator call with the
    # wrong count would be a TypeError (a crash) instead of an error naming the node.
    try:
        inspect.signature(translator).bind(None, node, *range(count))
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


def _value_of(
    values: dict[TensorRef, Instruction], graph: Graph, ref: TensorRef, what: str
) -> Instruction:
    if ref in values:
        return values[ref]
    raise GraphError(
        f"{graph.path}: {what} '{ref}' does not exist: node '{ref.node}' has no output {ref.index}"
    )
