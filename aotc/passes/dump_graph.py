"""The instruction graph that the ``dot`` and ``html`` dumps draw.

One node per instruction of the entry computation (name, opcode, shape), edges labelled with
the value's shape; each fusion's computation becomes a cluster whose parameters are fed by the
fusion's operands and whose root feeds the fusion node (a dashed edge). Nested fusions nest.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aotc.hlo.ir import ELEMENTWISE, Computation, Instruction, Module, Opcode, parameter_number
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


_COLORS: dict[str, str] = {
    "parameter": "#d8f0d8",
    "constant": "#eeeeee",
    "contraction": "#fde2c0",
    "reduction": "#f6d0e6",
    "elementwise": "#dde8fb",
    "other": "#ffffff",
}


def _color(inst: Instruction) -> str:
    if inst.opcode is Opcode.PARAMETER:
        return _COLORS["parameter"]
    if inst.opcode in (Opcode.CONSTANT, Opcode.IOTA):
        return _COLORS["constant"]
    if inst.opcode in (Opcode.DOT, Opcode.CONVOLUTION):
        return _COLORS["contraction"]
    if inst.opcode in (Opcode.REDUCE, Opcode.REDUCE_WINDOW):
        return _COLORS["reduction"]
    return _COLORS["elementwise" if inst.opcode in ELEMENTWISE else "other"]


MAX_LINE = 48


def _lines(inst: Instruction) -> list[str]:
    head = f"{inst.opcode.value} {inst.shape}"
    if inst.opcode is Opcode.PARAMETER:
        head = f"parameter({parameter_number(inst)}) {inst.shape}"
    if inst.opcode is Opcode.CONSTANT and inst.literal is not None:
        head += " " + format_literal(inst.literal, elide=True)
    lines = [inst.name, head if len(head) <= MAX_LINE else head[: MAX_LINE - 1] + "…"]
    if inst.opcode is not Opcode.FUSION:
        lines += callee_texts(inst)
    return lines


def build_graph(module: Module) -> Graph:
    """The entry computation as nodes and edges, fusions expanded into clusters."""
    graph = Graph()
    _add_computation(graph, module.entry, None)
    return graph


def _add_computation(graph: Graph, comp: Computation, cluster: str | None) -> None:
    for inst in comp.post_order():
        fused_root = _add_fusion(graph, inst, cluster) if inst.opcode is Opcode.FUSION else None
        key = f"n{len(graph.keys)}"
        graph.keys[id(inst)] = key
        tooltip = print_instruction(inst)
        graph.nodes.append(Node(key, _lines(inst), tooltip, _color(inst), cluster))
        if fused_root is not None:
            graph.edges.append(Edge(fused_root, key, str(inst.shape), dashed=True))
            continue
        for op in inst.operands:
            graph.edges.append(Edge(graph.keys[id(op)], key, str(op.shape)))


def _add_fusion(graph: Graph, fusion: Instruction, outer: str | None) -> str:
    """Draw the fused computation as a cluster; returns its root's node key."""
    fused = fusion.called[0]
    cluster = f"c{len(graph.clusters)}"
    graph.clusters[cluster] = f"{fusion.name}: {fused.name}"
    graph.parents[cluster] = outer
    _add_computation(graph, fused, cluster)
    for param in fused.parameters:
        operand = fusion.operands[parameter_number(param)]
        graph.edges.append(Edge(graph.keys[id(operand)], graph.keys[id(param)], str(param.shape)))
    return graph.keys[id(fused.root)]
