"""Renderers for pipeline dumps: HLO text, Graphviz ``dot`` source, and a self-contained HTML
page that draws the graph as inline SVG (layered layout computed here, no scripts).

Both graph formats draw the entry computation: one box per instruction (name, opcode, shape),
edges labelled with the value's shape, and the computations of fusions, loops, branches and
calls drawn inside shaded clusters, their parameters fed by the instruction's operands and
their roots feeding the instruction.
"""

from __future__ import annotations

from collections.abc import Callable

from aotc.hlo.ir import Module
from aotc.hlo.text import print_module
from aotc.passes.dump_graph import build_graph
from aotc.passes.dump_html import render_html


def render(module: Module, fmt: str, title: str = "") -> str:
    """The module in ``fmt`` (``text``, ``dot`` or ``html``)."""
    return RENDERERS[fmt](module, title or module.name)


def render_text(module: Module, title: str = "") -> str:
    """XLA's text format, constants of more than a few elements elided."""
    return print_module(module, print_large_constants=False)


# ---- Graphviz ------------------------------------------------------------------------------


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_dot(module: Module, title: str = "") -> str:
    """Graphviz source: ``dot -Tsvg`` draws it."""
    graph = build_graph(module)
    out = [
        f"digraph {_quote(module.name)} {{",
        f"  label={_quote(title or module.name)}; labelloc=t; rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=8, color="#555555"];',
    ]
    for cluster, name in graph.clusters.items():
        members = " ".join(n.key for n in graph.nodes if n.cluster == cluster)
        out.append(
            f"  subgraph cluster_{cluster} {{ label={_quote(name)}; style=filled; "
            f'fillcolor="#eef2fb"; color="#9aa9c8"; {members} }}'
        )
    for n in graph.nodes:
        label = _quote("\n".join(n.lines)).replace("\n", "\\n")
        out.append(f'  {n.key} [label={label}, fillcolor="{n.color}"];')
    for e in graph.edges:
        style = ", style=dashed" if e.dashed else ""
        out.append(f"  {e.src} -> {e.dst} [label={_quote(e.label)}{style}];")
    return "\n".join([*out, "}"]) + "\n"


RENDERERS: dict[str, Callable[[Module, str], str]] = {
    "text": render_text,
    "dot": render_dot,
    "html": render_html,
}
