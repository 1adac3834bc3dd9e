"""The mutable GraphDef that functionalization (``functionalize.py``) rewrites, and the control
flow facts it needs: which loop frame each node runs in and under which branches of which
conditionals it is alive (TensorFlow's ``ControlFlowInfo`` and functionalize_cond's states).

A *frame* is one ``tf.while_loop``: an ``Enter`` starts it (the Enter belongs to the frame it
enters), an ``Exit`` leaves it (its outputs are in the parent frame); every other node runs in
the deepest frame among its inputs'. A *state* is the set of ``(predicate, branch)`` a node is
alive under: a conditional's ``Switch`` (or ``_SwitchN``) output ``b`` adds ``(p, b)``, its
``Merge`` removes ``p`` again. Predicates are named by their tensor with Identity chains
followed, so TF1's ``pred_id`` Identity and the predicate itself are the same conditional.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from aotc.errors import GraphError, UnsupportedError
from aotc.frontend.inline import Library, output_arg_ref
from aotc.proto import aotc_tf_pb2 as pb
from aotc.tensor_ref import TensorRef
from aotc.toposort import topological_order

V1_CONTROL_FLOW_OPS = frozenset(
    {"Enter", "Exit", "Merge", "Switch", "_SwitchN", "NextIteration", "LoopCond"}
)
SWITCH_OPS = frozenset({"Switch", "_SwitchN"})
ROOT = 0  # the frame of the graph itself

DType: TypeAlias = pb.DataType  # a TensorFlow element type (enum value)
State: TypeAlias = frozenset[tuple[str, int]]  # (predicate, branch) pairs a node is alive under
EMPTY: State = frozenset()


@dataclass(frozen=True)
class Frame:
    """One loop frame: its ``frame_name``, its parent frame's index and its nesting depth."""

    name: str
    parent: int
    depth: int


def inputs_of(node: pb.NodeDef) -> tuple[list[TensorRef], list[str]]:
    """A node's data inputs and the node names of its control inputs."""
    data = [TensorRef.parse(t) for t in node.input if not t.startswith("^")]
    return data, [t[1:] for t in node.input if t.startswith("^")]


def branch_in(state: State, pred: str) -> int | None:
    """The branch of ``pred`` that ``state`` is alive under, None when it does not depend on it."""
    return next((b for p, b in state if p == pred), None)


class FlowGraph:
    """A GraphDef's nodes by name (file order) with consumer lookup, frames and states, which
    collapsing a loop or conditional into one functional node keeps up to date."""

    def __init__(self, proto: pb.GraphDef, library: Library, path: str) -> None:
        self.path = path
        self.nodes: dict[str, pb.NodeDef] = {}
        for node in proto.node:
            copy = pb.NodeDef()
            copy.CopyFrom(node)
            self.nodes[node.name] = copy
        self.library: Library = dict(library)
        self.taken = set(self.nodes)
        self.position = {name: i for i, name in enumerate(self.nodes)}  # new nodes go last
        self.in_frame: dict[int, set[str]] = {}
        self.consumers: dict[str, set[str]] = {name: set() for name in self.nodes}
        for node in self.nodes.values():
            self._index(node)
        # What nothing read in the input (a fetch, perhaps), not what a collapse left unread.
        self.sinks = {name for name, readers in self.consumers.items() if not readers}
        self.frames: list[Frame] = [Frame("", ROOT, 0)]
        self.frame_of: dict[str, int] = {}
        self.state_of: dict[str, State] = {}
        self.pred_of: dict[str, str] = {}  # a conditional's Switch -> its predicate
        self.merge_pred: dict[str, str] = {}  # a conditional's Merge -> its predicate
        _Analysis(self).run()
        for name, frame in self.frame_of.items():
            self.in_frame.setdefault(frame, set()).add(name)

    def label(self, name: str) -> str:
        return f"node '{name}' ({self.nodes[name].op})"

    def where(self, name: str) -> str:
        return f"{self.path}: {self.label(name)}"

    def op(self, name: str) -> str | None:
        node = self.nodes.get(name)
        return node.op if node is not None else None

    def fresh(self, base: str) -> str:
        """A node name no node of the graph has had, ``base`` where it is free."""
        name, suffix = base, 0
        while name in self.taken:
            suffix += 1
            name = f"{base}_{suffix}"
        self.taken.add(name)
        return name

    def add_function(self, fn: pb.FunctionDef) -> None:
        self.library[fn.signature.name] = fn

    def fresh_function(self, base: str) -> str:
        name, suffix = base.replace("/", "_"), 0
        while name in self.library or name in self.taken:
            suffix += 1
            name = f"{base.replace('/', '_')}_{suffix}"
        self.library[name] = pb.FunctionDef()  # reserved until the caller adds it
        return name

    def canonical(self, ref: TensorRef) -> TensorRef:
        """``ref`` with Identity chains followed back to the tensor they pass on."""
        seen: set[str] = set()
        while self.op(ref.node) == "Identity" and ref.node not in seen:
            seen.add(ref.node)
            data, _ = inputs_of(self.nodes[ref.node])
            if not data:
                break
            ref = data[0]
        return ref

    def out_state(self, ref: TensorRef) -> State:
        """The state of tensor ``ref``: a conditional Switch's output adds its branch."""
        state = self.state_of.get(ref.node, EMPTY)
        pred = self.pred_of.get(ref.node)
        return state | {(pred, ref.index)} if pred is not None else state

    def out_frame(self, name: str) -> int:
        """The frame ``name``'s outputs are in: an Exit's are in its loop's parent frame."""
        frame = self.frame_of.get(name, ROOT)
        return self.frames[frame].parent if self.op(name) == "Exit" else frame

    def members(self, frame: int) -> list[str]:
        """The nodes of loop frame ``frame``, in graph order."""
        return self.in_order(self.in_frame.get(frame, set()))

    def in_order(self, names: Iterable[str]) -> list[str]:
        return sorted(names, key=self.position.__getitem__)

    def place(self, name: str, frame: int, state: State) -> None:
        """Record where a node that replaced others runs."""
        self.frame_of[name] = frame
        self.state_of[name] = state
        self.in_frame.setdefault(frame, set()).add(name)

    def join(self, states: Iterable[State], name: str) -> State:
        """The union of ``states``; a node alive only under two branches of one predicate is
        never alive, which no TensorFlow graph builds on purpose."""
        joined: dict[str, int] = {}
        for state in states:
            for pred, branch in state:
                if joined.setdefault(pred, branch) != branch:
                    raise UnsupportedError(
                        f"{self.where(name)} reads values of two branches of the conditional "
                        f"on '{pred}'; no value can reach it"
                    )
        return frozenset(joined.items())

    def collapse(
        self,
        removed: set[str],
        node: pb.NodeDef,
        outputs: Mapping[TensorRef, TensorRef],
        what: str,
    ) -> None:
        """Replace ``removed`` by ``node``: a consumer's read of an ``outputs`` key reads its
        value; control inputs on removed nodes become control inputs on ``node``; any other
        read of a removed node is an error (``what`` names the structure)."""
        self.nodes[node.name] = node
        self.position[node.name] = len(self.position)
        self.consumers[node.name] = set()
        self._index(node)
        for consumer in {c for r in removed for c in self.consumers[r]} - removed - {node.name}:
            self._rewire(self.nodes[consumer], removed, node.name, outputs, what)
        for name in removed:
            self._unindex(self.nodes.pop(name))
            del self.consumers[name]
            self.in_frame[self.frame_of[name]].discard(name)

    def _rewire(
        self,
        consumer: pb.NodeDef,
        removed: set[str],
        new: str,
        outputs: Mapping[TensorRef, TensorRef],
        what: str,
    ) -> None:
        self._unindex(consumer)
        texts: list[str] = []
        for text in consumer.input:
            if text.startswith("^"):
                texts.append(f"^{new}" if text[1:] in removed else text)
                continue
            ref = TensorRef.parse(text)
            if ref.node in removed:
                if ref not in outputs:
                    raise UnsupportedError(
                        f"{self.where(consumer.name)} reads '{text}' inside {what}, which only "
                        "its outputs leave"
                    )
                ref = outputs[ref]
            texts.append(str(ref))
        del consumer.input[:]
        consumer.input.extend(unique_controls(texts))
        self._index(consumer)

    def _index(self, node: pb.NodeDef) -> None:
        for text in node.input:
            name = text[1:] if text.startswith("^") else TensorRef.parse(text).node
            self.consumers.setdefault(name, set()).add(node.name)

    def _unindex(self, node: pb.NodeDef) -> None:
        for text in node.input:
            name = text[1:] if text.startswith("^") else TensorRef.parse(text).node
            if name in self.consumers:
                self.consumers[name].discard(node.name)

    def drop_unread(self) -> None:
        """Remove what only the collapsed structures read (a TF1 cond's ``pred_id`` Identity,
        a Const now copied into a function), so it is not taken for an output; what nothing
        read in the input stays."""
        stack = [n for n, readers in self.consumers.items() if not readers and n in self.nodes]
        while stack:
            name = stack.pop()
            if name not in self.nodes or name in self.sinks or self.consumers[name]:
                continue
            node = self.nodes.pop(name)
            self._unindex(node)
            del self.consumers[name]
            data, control = inputs_of(node)
            stack.extend([*(r.node for r in data), *control])

    def to_proto(self) -> pb.GraphDef:
        """The nodes as a GraphDef (the library is ``self.library``)."""
        out = pb.GraphDef()
        out.node.extend(self.nodes.values())
        return out


class _Analysis:
    """Frames and states of every node, in one topological walk (loop back edges, the
    NextIteration -> Merge inputs, are skipped)."""

    def __init__(self, graph: FlowGraph) -> None:
        self.graph = graph
        self.children: dict[tuple[int, str], int] = {}

    def run(self) -> None:
        for name in self._order():
            node = self.graph.nodes[name]
            data, control = self._inputs(node)
            self.graph.frame_of[name] = self._frame(node, [*data, *map(TensorRef, control)])
            if node.op in SWITCH_OPS and len(data) == 2:
                self._switch(name, data[1])
            if node.op == "Merge" and not self._loop_merge(node):
                self.graph.state_of[name] = self._merge(name, data, control)
                continue
            states = [*map(self.graph.out_state, data), *map(self._state, control)]
            self.graph.state_of[name] = self.graph.join(states, name)

    def _state(self, name: str) -> State:
        return self.graph.state_of.get(name, EMPTY)

    def _inputs(self, node: pb.NodeDef) -> tuple[list[TensorRef], list[str]]:
        data, control = inputs_of(node)
        if node.op == "Merge":
            data = [r for r in data if self.graph.op(r.node) != "NextIteration"]
        known = self.graph.nodes
        return [r for r in data if r.node in known], [c for c in control if c in known]

    def _loop_merge(self, node: pb.NodeDef) -> bool:
        data, _ = inputs_of(node)
        return any(self.graph.op(r.node) == "NextIteration" for r in data)

    def _switch(self, name: str, pred: TensorRef) -> None:
        canonical = self.graph.canonical(pred)
        if self.graph.op(canonical.node) != "LoopCond":
            self.graph.pred_of[name] = str(canonical)

    def _merge(self, name: str, data: list[TensorRef], control: list[str]) -> State:
        """A conditional's Merge: alive where its inputs are, less the predicate they differ
        on (each input is one branch of it)."""
        states = [self.graph.out_state(r) for r in data]
        preds = {p for p, _ in states[0]} if len(states) > 1 else set()
        for state in states[1:]:
            preds &= {p for p, _ in state}
        split = [p for p in preds if len({branch_in(s, p) for s in states}) == len(states)]
        if len(split) != 1:
            raise UnsupportedError(
                f"{self.graph.where(name)} is neither a loop's Merge (an Enter and a "
                "NextIteration) nor a conditional's (one input from each branch of a Switch)"
            )
        self.graph.merge_pred[name] = split[0]
        rest = [frozenset(x for x in s if x[0] != split[0]) for s in states]
        return self.graph.join([*rest, *map(self._state, control)], name)

    def _frame(self, node: pb.NodeDef, inputs: list[TensorRef]) -> int:
        frame: int | None = None
        for ref in inputs:  # usually all in one frame: a walk up the frames only where not
            out = self.graph.out_frame(ref.node)
            frame = out if frame in (None, out) else self._deeper(frame, out, node.name)
        frame = ROOT if frame is None else frame
        if node.op != "Enter":
            return frame
        key = (frame, node.attr["frame_name"].s.decode("utf-8", "replace"))
        if key not in self.children:
            self.children[key] = len(self.graph.frames)
            parent = self.graph.frames[frame]
            self.graph.frames.append(Frame(key[1], frame, parent.depth + 1))
        return self.children[key]

    def _deeper(self, a: int, b: int, name: str) -> int:
        frames = self.graph.frames
        deep, shallow = (a, b) if frames[a].depth >= frames[b].depth else (b, a)
        up = deep
        while frames[up].depth > frames[shallow].depth:
            up = frames[up].parent
        if up != shallow:
            raise UnsupportedError(
                f"{self.graph.path}: node '{name}' reads values of two different loops "
                f"('{frames[a].name}' and '{frames[b].name}')"
            )
        return deep

    def _order(self) -> list[str]:
        """Kahn's algorithm over data and control inputs, file order among ready nodes."""
        graph = self.graph
        position = {name: i for i, name in enumerate(graph.nodes)}
        preds: dict[str, set[str]] = {}
        for name, node in graph.nodes.items():
            data, control = self._inputs(node)
            preds[name] = {r.node for r in data} | set(control)
        order, stuck = topological_order(preds, position.__getitem__)
        if stuck:
            raise GraphError(
                f"{graph.where(stuck[0])} is on a cycle that is not a TensorFlow while loop "
                "(a loop closes only through a NextIteration into a Merge)"
            )
        return order


@dataclass
class Captures:
    """The arguments of a function cut out of the graph: each outer value once, in order.

    Keys say what an argument stands for (a loop variable, an outer tensor); ``outer`` is the
    tensor the functional node passes for it."""

    keys: dict[tuple[str, str], int] = field(default_factory=dict)
    outer: list[str] = field(default_factory=list)
    types: list[DType] = field(default_factory=list)

    def arg(self, key: tuple[str, str], outer: str, dtype: DType) -> str:
        if key not in self.keys:
            self.keys[key] = len(self.outer)
            self.outer.append(outer)
            self.types.append(dtype)
        return arg_name(self.keys[key])


def arg_name(index: int) -> str:
    # A leading underscore: no node of a GraphDef is named so (TF's node-name rule).
    return f"_arg{index}"


def dtype_of(graph: FlowGraph, ref: TensorRef) -> DType:
    """The element type of ``ref`` where its node's attributes tell (``T``, ``dtype``, ...);
    DT_INVALID otherwise: the translation takes types from the values, this only documents."""
    node = graph.nodes.get(ref.node)
    if node is None:
        return pb.DT_INVALID
    for key in ("T", "dtype", "DstT", "out_type", "output_type", "Tout"):
        value = node.attr.get(key)
        if value is not None and value.WhichOneof("value") == "type":
            return value.type
    return pb.DT_INVALID


def function_def(
    graph: FlowGraph,
    name: str,
    nodes: list[pb.NodeDef],
    captures: Captures,
    results: list[tuple[str, DType]],
) -> pb.FunctionDef:
    """A FunctionDef of ``nodes`` (inputs already in function syntax) taking every captured
    argument and returning ``results`` (function-syntax tensor or argument, element type)."""
    fn = pb.FunctionDef()
    fn.signature.name = name
    for i, dtype in enumerate(captures.types):
        fn.signature.input_arg.add(name=arg_name(i), type=dtype)
    for i, (value, dtype) in enumerate(results):
        fn.signature.output_arg.add(name=f"out{i}", type=dtype)
        fn.ret[f"out{i}"] = value
    fn.node_def.extend(nodes)
    graph.add_function(fn)
    return fn


def member_ref(graph: FlowGraph, ref: TensorRef) -> str:
    """``ref`` of a node copied into a function, in function syntax (``node:out_arg:i``)."""
    return f"{ref.node}:{output_arg_ref(graph.nodes[ref.node].op, ref.index, graph.library)}"


def copy_node(node: pb.NodeDef, inputs: list[str]) -> pb.NodeDef:
    out = pb.NodeDef()
    out.CopyFrom(node)
    del out.input[:]
    out.input.extend(unique_controls(inputs))
    return out


def unique_controls(inputs: list[str]) -> list[str]:
    """``inputs`` with repeated control inputs dropped (data inputs may repeat: ``Mul(x, x)``)."""
    seen: set[str] = set()
    kept = []
    for text in inputs:
        if text.startswith("^") and text in seen:
            continue
        seen.add(text)
        kept.append(text)
    return kept


def outer_constant(graph: FlowGraph, ref: TensorRef) -> pb.NodeDef | None:
    """A copy of ``ref``'s node without its (control) inputs when it is a ``Const``: a function
    reading an outer constant gets its own copy, so shapes and axes stay compile-time
    constants there."""
    node = graph.nodes.get(ref.node)
    if node is None or node.op != "Const":
        return None
    return copy_node(node, [])
