"""TF1 conditionals -> functional ``If`` / ``Case`` nodes with one function per branch.

A conditional is the Merges on one predicate ``p`` alive under the same outer state, whose
branches share nodes (``tf.cond`` with several outputs is one conditional; two ``tf.cond`` on
one predicate stay two). Branch ``b`` is every node walked back from the Merges' inputs that is
alive under ``(p, b)``; the walk stops at the conditional's Switches (their input becomes an
argument) and at values alive whatever ``p`` is (captured as arguments too). A ``Switch`` on a
bool makes an ``If`` (output 1 is the then branch), a ``_SwitchN`` (a lowered ``Case``) a
``Case`` whose branch ``b`` is output ``b``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from aotc.errors import UnsupportedError
from aotc.frontend.flow_graph import (
    Captures,
    DType,
    FlowGraph,
    State,
    branch_in,
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
from aotc.toposort import topological_order


@dataclass
class _Cond:
    """One conditional being cut out: its Merges and the nodes of each branch."""

    pred: str
    merges: list[str]
    branch_of: dict[str, int] = field(default_factory=dict)  # member node -> its branch
    switches: set[str] = field(default_factory=set)  # the conditional's entry Switches
    captures: Captures = field(default_factory=Captures)
    controls: list[str] = field(default_factory=list)  # outer control inputs -> the If
    copied: dict[int, dict[str, pb.NodeDef]] = field(default_factory=lambda: defaultdict(dict))


def functionalize_conds(graph: FlowGraph, frame: int) -> None:
    """Collapse every conditional of loop frame ``frame`` (inner ones first)."""
    keys: dict[tuple[str, State], list[str]] = defaultdict(list)
    for name in graph.members(frame):
        if name in graph.merge_pred:
            keys[(graph.merge_pred[name], graph.state_of[name])].append(name)
    for key in _inner_first(graph, list(keys)):
        for cond in _conditionals(graph, key[0], keys[key]):
            _build(graph, cond, key[1], frame)


def _inner_first(graph: FlowGraph, keys: list[tuple[str, State]]) -> list[tuple[str, State]]:
    """Conditionals ordered so one whose Merges live in a branch of another comes first."""
    by_pred: dict[str, list[int]] = defaultdict(list)
    for i, (pred, _) in enumerate(keys):
        by_pred[pred].append(i)
    # An outer conditional waits on every one nested in its branches.
    inner: dict[int, set[int]] = {i: set() for i in range(len(keys))}
    for i, (_, state) in enumerate(keys):
        for outer in {j for p, _ in state for j in by_pred[p] if j != i}:
            inner[outer].add(i)
    order, stuck = topological_order(inner, lambda i: i)
    if stuck:
        raise UnsupportedError(
            f"{graph.path}: conditionals on '{keys[stuck[0]][0]}' nest in each other"
        )
    return [keys[i] for i in order]


def _conditionals(graph: FlowGraph, pred: str, merges: list[str]) -> list[_Cond]:
    """The Merges on ``pred`` grouped by shared branch nodes, each group's branches walked."""
    owner: dict[str, str] = {}  # branch node -> the Merge whose walk found it first
    group = {m: m for m in merges}  # union-find over Merges

    def find(m: str) -> str:
        while group[m] != m:
            group[m] = group[group[m]]
            m = group[m]
        return m

    branches: dict[str, int] = {}
    switches: dict[str, set[str]] = defaultdict(set)
    for merge in merges:
        for ref in inputs_of(graph.nodes[merge])[0]:
            branch = branch_in(graph.out_state(ref), pred)
            assert branch is not None  # the analysis found pred in every input
            walk = _Walk(graph, pred, branch, owner, switches[merge])
            for name in walk.run(ref.node):
                owner[name], branches[name] = merge, branch
            for name in walk.met:  # found by an earlier Merge's walk: the same conditional
                group[find(owner[name])] = find(merge)
    conds: dict[str, _Cond] = {}
    for merge in merges:
        cond = conds.setdefault(find(merge), _Cond(pred, []))
        cond.merges.append(merge)
        cond.switches |= switches[merge]
    for name, merge in owner.items():
        conds[find(merge)].branch_of[name] = branches[name]
    return list(conds.values())


class _Walk:
    """Walks back from one Merge input through the nodes of its branch ``branch``; nodes an
    earlier walk found (``known``) are met, not walked again."""

    def __init__(
        self, graph: FlowGraph, pred: str, branch: int, known: dict[str, str], switches: set[str]
    ) -> None:
        self.graph, self.pred, self.branch = graph, pred, branch
        self.known, self.switches = known, switches
        self.met: set[str] = set()

    def run(self, start: str) -> list[str]:
        found: list[str] = []
        seen: set[str] = set()
        stack = [start]
        while stack:
            name = stack.pop()
            if name in seen or name not in self.graph.nodes:
                continue
            seen.add(name)
            if not self._in_branch(name):
                continue
            if name in self.known:
                self.met.add(name)
                continue
            found.append(name)
            data, control = inputs_of(self.graph.nodes[name])
            stack.extend([*(r.node for r in data), *control])
        return found

    def _in_branch(self, name: str) -> bool:
        graph, pred = self.graph, self.pred
        if graph.pred_of.get(name) == pred:
            self.switches.add(name)
            return False
        alive = branch_in(graph.state_of[name], pred)
        if alive is not None and alive != self.branch:
            raise UnsupportedError(
                f"{graph.where(name)} is alive in branch {alive} of the conditional on "
                f"'{pred}' but feeds its branch {self.branch}"
            )
        return alive is not None  # else alive whatever pred is: a captured value


def _build(graph: FlowGraph, cond: _Cond, state: State, frame: int) -> None:
    count = _branch_count(graph, cond)
    merge_inputs = [_by_branch(graph, cond, m, count) for m in cond.merges]
    order = graph.in_order(cond.branch_of)
    cuts = []  # each branch's nodes and results; every branch takes every argument, so the
    for b in range(count):  # functions are written once all are known
        nodes = [_copy(graph, cond, n, b) for n in order if cond.branch_of[n] == b]
        results = [
            (_resolve(graph, cond, ins[b], b), _type(graph, m))
            for m, ins in zip(cond.merges, merge_inputs, strict=True)
        ]
        cuts.append(([*nodes, *cond.copied[b].values()], results))
    functions = [graph.fresh_function(f"{cond.merges[0]}_branch{b}") for b in range(count)]
    for name, (nodes, results) in zip(functions, cuts, strict=True):
        function_def(graph, name, nodes, cond.captures, results)
    stateful = any(n.op in STATEFUL_OPS for nodes, _ in cuts for n in nodes)
    node = _functional_node(graph, cond, functions, stateful)
    removed = {*cond.branch_of, *cond.merges}
    removed |= {s for s in cond.switches if graph.consumers[s] <= removed}
    outputs = {TensorRef(m): TensorRef(node.name, i) for i, m in enumerate(cond.merges)}
    graph.collapse(removed, node, outputs, f"the conditional on '{cond.pred}'")
    graph.place(node.name, frame, state)


def _branch_count(graph: FlowGraph, cond: _Cond) -> int:
    ops = {graph.nodes[s].op for s in cond.switches}
    counts = {len(inputs_of(graph.nodes[m])[0]) for m in cond.merges}
    if len(ops) != 1 or len(counts) != 1:
        raise UnsupportedError(
            f"{graph.where(cond.merges[0])}: the conditional on '{cond.pred}' mixes Switch and "
            "_SwitchN or Merges of different widths"
        )
    count = counts.pop()
    if ops == {"Switch"} and count != 2:
        raise UnsupportedError(f"{graph.where(cond.merges[0])} merges {count} values of a Switch")
    return count


def _by_branch(graph: FlowGraph, cond: _Cond, merge: str, count: int) -> list[TensorRef]:
    """The Merge's inputs by branch: which branch each comes from is its state's."""
    ins = inputs_of(graph.nodes[merge])[0]
    by_branch = {branch_in(graph.out_state(r), cond.pred): r for r in ins}
    if set(by_branch) != set(range(count)):
        raise UnsupportedError(
            f"{graph.where(merge)} does not merge one value of each of the {count} branches "
            f"of the conditional on '{cond.pred}'"
        )
    return [by_branch[b] for b in range(count)]


def _switched(graph: FlowGraph, switch: str) -> str:
    return graph.nodes[switch].input[0]


def _copy(graph: FlowGraph, cond: _Cond, name: str, branch: int) -> pb.NodeDef:
    node = graph.nodes[name]
    data, control = inputs_of(node)
    texts = [_resolve(graph, cond, r, branch) for r in data]
    for c in control:
        if cond.branch_of.get(c) == branch:
            texts.append(f"^{c}")
        elif c not in cond.switches:
            cond.controls.append(c)  # ordering on an outer node: the If waits for it
    return copy_node(node, texts)


def _resolve(graph: FlowGraph, cond: _Cond, ref: TensorRef, branch: int) -> str:
    """What tensor ``ref`` is inside branch ``branch``'s function."""
    if cond.branch_of.get(ref.node) == branch:
        return member_ref(graph, ref)
    if ref.node in cond.switches:
        if ref.index != branch:
            raise UnsupportedError(
                f"{graph.path}: branch {branch} of the conditional on '{cond.pred}' reads "
                f"'{ref}', output {ref.index} of its Switch"
            )
        switched = TensorRef.parse(_switched(graph, ref.node))
        return _outer(graph, cond, switched, _type(graph, ref.node), branch)
    return _outer(graph, cond, ref, dtype_of(graph, ref), branch)


def _outer(graph: FlowGraph, cond: _Cond, ref: TensorRef, dtype: DType, branch: int) -> str:
    """A value from outside the conditional: an argument, or a copy where it is a constant."""
    constant = outer_constant(graph, ref)
    if constant is None:
        return cond.captures.arg(("outer", str(ref)), str(ref), dtype)
    cond.copied[branch][ref.node] = constant
    cond.controls.extend(inputs_of(graph.nodes[ref.node])[1])
    return f"{ref.node}:output:{ref.index}"


def _functional_node(
    graph: FlowGraph, cond: _Cond, functions: list[str], stateful: bool
) -> pb.NodeDef:
    scope = cond.merges[0].rpartition("/")[0] or cond.merges[0]
    case = graph.nodes[next(iter(cond.switches))].op == "_SwitchN"
    op = ("Case" if case else "If") if stateful else ("StatelessCase" if case else "StatelessIf")
    node = pb.NodeDef(name=graph.fresh(scope), op=op)
    merge_controls = [c for m in cond.merges for c in inputs_of(graph.nodes[m])[1]]
    controls = dict.fromkeys(f"^{c}" for c in [*cond.controls, *merge_controls])
    node.input.extend([cond.pred, *cond.captures.outer, *controls])
    node.attr["Tin"].list.type.extend(cond.captures.types)
    node.attr["Tout"].list.type.extend(_type(graph, m) for m in cond.merges)
    if case:
        for fn in functions:
            node.attr["branches"].list.func.add(name=fn)
    else:
        node.attr["Tcond"].type = pb.DT_BOOL
        node.attr["else_branch"].func.name = functions[0]
        node.attr["then_branch"].func.name = functions[1]
    return node


def _type(graph: FlowGraph, name: str) -> DType:
    return dtype_of(graph, TensorRef(name))
