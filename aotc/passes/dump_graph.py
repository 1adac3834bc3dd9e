"""The instruction graph that the ``dot`` and ``html`` dumps draw.

One node per instruction of the entry computation (name, opcode, shape), edges labelled with
the value's shape; the computation of each fusion, loop (condition and body), conditional
branch and call becomes a cluster whose parameters are fed by the instruction's operands and
whose root feeds the instruction's node (a dashed edge). Nested computations nest.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from aotc.hlo.ir import CONTROL_FLOW, Computation, Instruction, Module, Opcode, parameter_number
from aotc.hlo.opcodes import Category
from aotc.hlo.text import callee_texts, format_literal, print_instruction


@dataclass
class Node:
    key: str
    lines: list[str]
    tooltip: str
    color: str
    cluster: str | None


@dataclass
class Edge:
    src: str
    dst: str
    label: str
    dashed: bool = False


@dataclass
class Graph:
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    clusters: dict[str, str] = field(default_factory=dict)  # key -> title
    parents: dict[str, str | None] = field(default_factory=dict)  # cluster -> enclosing one
    keys: dict[int, str] = field(default_factory=dict)  # id(instruction) -> node key


_ELEMENTWISE_COLOR = "#dde8fb"
_COLORS: dict[Category, str] = {
    Category.LEAF: "#eeeeee",  # constants and iotas (parameters: _PARAMETER_COLOR)
    Category.CONTRACTION: "#fde2c0",
    Category.REDUCTION: "#f6d0e6",
    Category.UNARY: _ELEMENTWISE_COLOR,
    Category.BINARY: _ELEMENTWISE_COLOR,
    Category.TERNARY: _ELEMENTWISE_COLOR,
}
_PARAMETER_COLOR, _OTHER_COLOR = "#d8f0d8", "#ffffff"


def _color(inst: Instruction) -> str:
    if inst.opcode is Opcode.PARAMETER:
        return _PARAMETER_COLOR
    return _COLORS.get(inst.opcode.info.category, _OTHER_COLOR)


MAX_LINE = 48


def _lines(inst: Instruction) -> list[str]:
    head = f"{inst.opcode.value} {inst.shape}"
    if inst.opcode is Opcode.PARAMETER:
        head = f"parameter({parameter_number(inst)}) {inst.shape}"
    if inst.opcode is Opcode.CONSTANT and inst.literal is not None:
        head += " " + format_literal(inst.literal, elide=True)
    lines = [inst.name, head if len(head) <= MAX_LINE else head[: MAX_LINE - 1] + "…"]
    if inst.opcode is not Opcode.FUSION:  # fusions are drawn as clusters
        lines += callee_texts(inst)
    return lines


def build_graph(module: Module) -> Graph:
    """The entry computation as nodes and edges; the computations of fusions, loops,
    conditionals and calls expanded into clusters."""
    graph = Graph()
    # A stack of computations being drawn (iterative: loops nest to any depth); an
    # instruction that calls computations is drawn after them.
    stack = [_Drawing(module.entry, None)]
    while stack:
        top = stack[-1]
        if top.pending_callees:
            callee = top.pending_callees.pop()
            stack.append(_Drawing(callee, _open_cluster(graph, top.current, callee, top.cluster)))
            continue
        if top.current is not None:
            _add_instruction(graph, top.current, top.cluster)
            top.current = None
        inst = next(top.instructions, None)
        if inst is None:
            stack.pop()
            continue
        top.current = inst
        top.pending_callees = list(reversed(_drawn_callees(inst)))
    return graph


@dataclass
class _Drawing:
    comp: Computation
    cluster: str | None
    instructions: Iterator[Instruction] = field(init=False)
    current: Instruction | None = None  # drawn once its callees are
    pending_callees: list[Computation] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.instructions = iter(self.comp.post_order())


def _drawn_callees(inst: Instruction) -> list[Computation]:
    """Computations drawn inside clusters: fusions' and control flow's, not reducers'."""
    return list(inst.called) if inst.opcode in _EXPANDED else []


_EXPANDED = CONTROL_FLOW | {Opcode.FUSION}


def _open_cluster(
    graph: Graph, inst: Instruction | None, callee: Computation, outer: str | None
) -> str:
    assert inst is not None
    cluster = f"c{len(graph.clusters)}"
    k = next(k for k, c in enumerate(_drawn_callees(inst)) if c is callee)
    info = inst.opcode.info
    role = f"branch {k}=" if info.called_list else f"{info.called[k]}="
    graph.clusters[cluster] = (
        f"{inst.name}: {'' if inst.opcode is Opcode.FUSION else role}{callee.name}"
    )
    graph.parents[cluster] = outer
    return cluster


def _add_instruction(graph: Graph, inst: Instruction, cluster: str | None) -> None:
    key = f"n{len(graph.keys)}"
    graph.keys[id(inst)] = key
    graph.nodes.append(Node(key, _lines(inst), print_instruction(inst), _color(inst), cluster))
    passed: set[int] = set()  # operands drawn as feeding a callee's parameter
    for callee, operands in zip(_drawn_callees(inst), _callee_operands(inst), strict=True):
        for param in callee.parameters:
            operand = operands[parameter_number(param)]
            passed.add(id(operand))
            graph.edges.append(
                Edge(graph.keys[id(operand)], graph.keys[id(param)], str(param.shape))
            )
        graph.edges.append(Edge(graph.keys[id(callee.root)], key, str(callee.root.shape), True))
    for op in inst.operands:  # not passed on: a conditional's selector, say
        if id(op) not in passed:
            graph.edges.append(Edge(graph.keys[id(op)], key, str(op.shape)))


def _callee_operands(inst: Instruction) -> list[list[Instruction]]:
    """Per drawn callee, the values its parameters receive."""
    callees = _drawn_callees(inst)
    if inst.opcode is Opcode.WHILE:
        return [inst.operands[:1]] * len(callees)
    if inst.opcode is Opcode.CONDITIONAL:
        return [[inst.operands[1 + k]] for k in range(len(callees))]
    return [inst.operands] * len(callees)
