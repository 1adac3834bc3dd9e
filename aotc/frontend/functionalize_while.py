"""One TF1 while frame -> one functional ``While`` node with a condition and a body function.

A frame's loop variable ``i`` is the chain ``Enter -> Merge -> Switch(., LoopCond)``, whose
output 1 runs the body and output 0 the ``Exit``; the body's value comes back through a
``NextIteration`` into the Merge. The condition function is what ``LoopCond`` reads, cut at the
Merges; the body function is what the NextIterations read, cut at the Switches (and Merges).
Loop invariants (an ``Enter`` with ``is_constant``, or an outer value read directly) are extra
loop variables the body returns unchanged. Conditionals inside the frame and frames inside it
have been collapsed before (``functionalize.py``), so the cut is plain nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aotc.errors import UnsupportedError
from aotc.frontend.flow_graph import (
    Captures,
    DType,
    FlowGraph,
    copy_node,
    dtype_of,
    function_def,
    inputs_of,
    member_ref,
    outer_constant,
)
from aotc.frontend.stateful_ops import STATEFUL_OPS
from aotc.proto import aotc_tf_pb2 as pb
from aotc.tensor_ref import TensorRef

STRUCTURE_OPS = frozenset({"Enter", "Merge", "Switch", "Exit", "NextIteration", "LoopCond"})


@dataclass
class _Frame:
    """The structure of one frame: its variables by node, and what the cut found."""

    name: str
    loop_cond: str
    merges: list[str]  # one per loop variable, in file order
    var_of: dict[str, int]  # Enter, Merge, Switch, Exit, NextIteration -> variable
    constants: list[str]  # the Enters with is_constant
    captures: Captures = field(default_factory=Captures)
    controls: list[str] = field(default_factory=list)  # outer control inputs -> the While


def functionalize_loop(graph: FlowGraph, frame: int) -> None:
    """Collapse loop frame ``frame`` of ``graph`` into one While node in its parent frame."""
    members = graph.members(frame)
    loop = _structure(graph, members, graph.frames[frame].name)
    for i, merge in enumerate(loop.merges):
        enter = _enter_of(graph, merge)
        loop.captures.arg(("var", str(i)), graph.nodes[enter].input[0], _type(graph, enter))
    cut = _Cut(graph, set(members), loop)
    cond_nodes = cut.walk([_data(graph, loop.loop_cond)[0]], [], body=False)
    cond_result = cut.resolve(_data(graph, loop.loop_cond)[0], body=False)
    cond_nodes += cut.copied[False].values()
    nexts = [_next_of(graph, m) for m in loop.merges]
    starts = [_data(graph, n)[0] for n in nexts]
    controls = [c for n in nexts for c in inputs_of(graph.nodes[n])[1]]
    body_nodes = cut.walk(starts, controls, body=True)
    body_results = [cut.resolve(r, body=True) for r in starts]
    body_nodes += cut.copied[True].values()
    _check_dead(graph, members, {*cut.cond_members, *cut.body_members}, loop)
    _build(graph, frame, members, loop, (cond_nodes, cond_result), (body_nodes, body_results))


def _structure(graph: FlowGraph, members: list[str], name: str) -> _Frame:
    by_op: dict[str, list[str]] = {}
    for m in members:
        by_op.setdefault(graph.nodes[m].op, []).append(m)
    conds = by_op.get("LoopCond", [])
    if len(conds) != 1:
        raise UnsupportedError(
            f"{graph.path}: loop frame '{name}' has {len(conds)} LoopCond nodes, not one"
        )
    merges = by_op.get("Merge", [])
    var_of = {m: i for i, m in enumerate(merges)}
    loop = _Frame(name, conds[0], merges, var_of, [])
    for merge in merges:
        var_of[_enter_of(graph, merge)] = var_of[merge]
        var_of[_next_of(graph, merge)] = var_of[merge]
    for enter in by_op.get("Enter", []):
        if enter not in var_of:
            _constant_enter(graph, enter, loop)
    for switch in by_op.get("Switch", []):
        _loop_switch(graph, switch, loop)
    for exit_ in by_op.get("Exit", []):
        source = _data(graph, exit_)[0]
        if source.node not in var_of or graph.op(source.node) != "Switch" or source.index != 0:
            raise UnsupportedError(f"{graph.where(exit_)} does not leave a loop variable's Switch")
        var_of[exit_] = var_of[source.node]
    return loop


def _enter_of(graph: FlowGraph, merge: str) -> str:
    return _merge_input(graph, merge, "Enter")


def _next_of(graph: FlowGraph, merge: str) -> str:
    return _merge_input(graph, merge, "NextIteration")


def _merge_input(graph: FlowGraph, merge: str, op: str) -> str:
    data = _data(graph, merge)
    found = [r.node for r in data if graph.op(r.node) == op]
    if len(data) != 2 or len(found) != 1:
        raise UnsupportedError(
            f"{graph.where(merge)} is neither a loop's Merge (an Enter and a NextIteration) "
            "nor a conditional's"
        )
    return found[0]


def _constant_enter(graph: FlowGraph, enter: str, loop: _Frame) -> None:
    node = graph.nodes[enter]
    if not (node.attr["is_constant"].b if "is_constant" in node.attr else False):
        raise UnsupportedError(
            f"{graph.where(enter)} enters loop '{loop.name}' but no Merge reads it: neither a "
            "loop variable nor a loop invariant (is_constant)"
        )
    loop.constants.append(enter)


def _loop_switch(graph: FlowGraph, switch: str, loop: _Frame) -> None:
    data = _data(graph, switch)
    pred = graph.canonical(data[1]) if len(data) == 2 else None
    if pred is None or pred.node != loop.loop_cond or data[0].node not in loop.merges:
        raise UnsupportedError(
            f"{graph.where(switch)} in loop '{loop.name}' is not a loop variable's Switch "
            "(a Merge switched on the LoopCond)"
        )
    loop.var_of[switch] = loop.var_of[data[0].node]


class _Cut:
    """Walks back from the condition's or the body's results to the loop variables, copying
    the nodes on the way with their inputs in function syntax."""

    def __init__(self, graph: FlowGraph, frame: set[str], loop: _Frame) -> None:
        self.graph, self.frame, self.loop = graph, frame, loop
        self.cond_members: set[str] = set()
        self.body_members: set[str] = set()
        self.copied: dict[bool, dict[str, pb.NodeDef]] = {False: {}, True: {}}  # outer Consts

    def walk(self, starts: list[TensorRef], controls: list[str], body: bool) -> list[pb.NodeDef]:
        members = self.body_members if body else self.cond_members
        stack = [*(r.node for r in starts), *controls]
        while stack:
            name = stack.pop()
            if name in members or not self._is_member(name):
                continue
            members.add(name)
            data, control = inputs_of(self.graph.nodes[name])
            stack.extend([*(r.node for r in data), *control])
        return [self._copy(n, members, body) for n in self.graph.in_order(members)]

    def _is_member(self, name: str) -> bool:
        return name in self.frame and self.graph.op(name) not in STRUCTURE_OPS

    def _copy(self, name: str, members: set[str], body: bool) -> pb.NodeDef:
        node = self.graph.nodes[name]
        data, control = inputs_of(node)
        texts = [self.resolve(r, body) for r in data]
        texts += [t for t in (self._control(c, members, body) for c in control) if t]
        return copy_node(node, texts)

    def resolve(self, ref: TensorRef, body: bool) -> str:
        """What tensor ``ref`` is inside the condition (``body=False``) or the body."""
        graph, loop = self.graph, self.loop
        op = graph.op(ref.node)
        if ref.node not in self.frame:
            return self._outer(ref, dtype_of(graph, ref), body)
        if ref.node in loop.constants:
            return self._outer(_data(graph, ref.node)[0], _type(graph, ref.node), body)
        if op == "Merge" or (body and op == "Switch" and ref.index == 1):
            return loop.captures.arg(("var", str(loop.var_of[ref.node])), "", pb.DT_INVALID)
        if op in STRUCTURE_OPS:
            part = "body" if body else "condition"
            raise UnsupportedError(
                f"{graph.path}: the {part} of loop '{loop.name}' reads '{ref}' "
                f"({op}), which TF1 while loops do not pass to it"
            )
        return member_ref(graph, ref)

    def _outer(self, ref: TensorRef, dtype: DType, body: bool) -> str:
        """An outer value: a loop invariant, or a copy where it is a constant."""
        constant = outer_constant(self.graph, ref)
        if constant is None:
            return self.loop.captures.arg(("outer", str(ref)), str(ref), dtype)
        self.copied[body][ref.node] = constant
        self.loop.controls.extend(inputs_of(self.graph.nodes[ref.node])[1])
        return f"{ref.node}:output:{ref.index}"

    def _control(self, name: str, members: set[str], body: bool) -> str | None:
        graph, loop = self.graph, self.loop
        if name in members:
            return f"^{name}"
        if name not in self.frame:
            loop.controls.append(name)
            return None
        if name in loop.constants:
            return "^" + self.resolve(TensorRef(name), body).split(":")[0]
        if name in loop.var_of and graph.op(name) in ("Enter", "Merge", "Switch"):
            return "^" + loop.captures.arg(("var", str(loop.var_of[name])), "", pb.DT_INVALID)
        return None  # the LoopCond, or a node of the other function: ordering only


def _check_dead(graph: FlowGraph, members: list[str], cut: set[str], loop: _Frame) -> None:
    """Nodes of the frame neither function needs are dropped, unless dropping them loses
    something: a side effect, or a value read from outside (which needs an Exit)."""
    dead = [m for m in members if m not in cut and graph.op(m) not in STRUCTURE_OPS]
    effects = [m for m in dead if graph.op(m) in STATEFUL_OPS]
    stray = [m for m in dead if not _dropped_quietly(graph, m)]
    for found, why in ((effects, "its effect would be lost"), (stray, _EXITS)):
        if found:
            raise UnsupportedError(
                f"{graph.path}: {', '.join(graph.label(m) for m in found)} runs in loop "
                f"'{loop.name}' but neither its condition nor its body needs it: {why}"
            )


_EXITS = "a value leaves a loop only through an Exit"


def _dropped_quietly(graph: FlowGraph, name: str) -> bool:
    # A NoOp orders only; a node something read in the input graph is part of the frame's
    # plumbing (a conditional's pred_id, once the conditional is one node).
    return graph.op(name) == "NoOp" or name not in graph.sinks


def _build(
    graph: FlowGraph,
    frame: int,
    members: list[str],
    loop: _Frame,
    cond: tuple[list[pb.NodeDef], str],
    body: tuple[list[pb.NodeDef], list[str]],
) -> None:
    captures = loop.captures
    n_vars = len(loop.merges)
    cond_name = graph.fresh_function(f"{loop.name}_cond")
    body_name = graph.fresh_function(f"{loop.name}_body")
    function_def(graph, cond_name, cond[0], captures, [(cond[1], pb.DT_BOOL)])
    invariants = [f"_arg{i}" for i in range(n_vars, len(captures.outer))]
    results = list(zip([*body[1], *invariants], captures.types, strict=True))
    function_def(graph, body_name, body[0], captures, results)
    stateful = any(n.op in STATEFUL_OPS for n in (*cond[0], *body[0]))
    node = pb.NodeDef(name=graph.fresh(loop.name), op="While" if stateful else "StatelessWhile")
    enters = [_enter_of(graph, m) for m in loop.merges] + loop.constants
    controls = [c for e in enters for c in inputs_of(graph.nodes[e])[1]] + loop.controls
    node.input.extend([*captures.outer, *dict.fromkeys(f"^{c}" for c in controls)])
    node.attr["T"].list.type.extend(captures.types)
    node.attr["cond"].func.name = cond_name
    node.attr["body"].func.name = body_name
    first = graph.nodes[enters[0]].attr if enters else {}
    node.attr["parallel_iterations"].i = (
        first["parallel_iterations"].i if "parallel_iterations" in first else 10
    )
    exits = {m: i for m, i in loop.var_of.items() if graph.op(m) == "Exit"}
    outputs = {TensorRef(e): TensorRef(node.name, i) for e, i in exits.items()}
    states = [graph.out_state(TensorRef.parse(t)) for t in captures.outer]
    graph.collapse(set(members), node, outputs, f"loop '{loop.name}'")
    graph.place(node.name, graph.frames[frame].parent, graph.join(states, node.name))


def _data(graph: FlowGraph, name: str) -> list[TensorRef]:
    return inputs_of(graph.nodes[name])[0]


def _type(graph: FlowGraph, name: str) -> DType:
    return dtype_of(graph, TensorRef(name))
