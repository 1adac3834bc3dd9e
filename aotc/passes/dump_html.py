"""A self-contained HTML page that draws a module's graph as inline SVG, with no scripts.

Layout (Sugiyama-style, simplified): a node's layer is the longest path from a source; within
a layer, nodes are ordered by the mean position of their operands (one top-down sweep), then
packed left to right and centred. Edges are cubic curves labelled with shapes; fusions are
shaded rectangles behind their members; hovering a node shows its full instruction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

from aotc.hlo.ir import Module
from aotc.hlo.text import print_module
from aotc.passes.dump_graph import Graph, Node, build_graph
from aotc.toposort import topological_order

CHAR_W = 6.6  # px per character of the 11px monospace font
LINE_H = 14
PAD = 8
H_GAP = 28
V_GAP = 56
MARGIN = 24
CLUSTER_PAD = 12


@dataclass
class Box:
    x: float
    y: float
    w: float
    h: float


def render_html(module: Module, title: str = "") -> str:
    """The page: a heading, the drawing, and the HLO text in a collapsible block."""
    title = title or module.name
    svg = render_svg(build_graph(module))
    text = escape(print_module(module, print_large_constants=False))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>
<style>
body {{ font-family: Helvetica, Arial, sans-serif; margin: 16px; }}
svg text {{ font-family: Menlo, Consolas, monospace; }}
pre {{ background: #f6f6f6; padding: 8px; overflow: auto; }}
</style></head>
<body><h1 style="font-size:18px">{escape(title)}</h1>
{svg}
<details><summary>HLO text</summary><pre>{text}</pre></details>
</body></html>
"""


def render_svg(graph: Graph) -> str:
    placed = layout(graph)
    boxes = placed.nodes
    width, height = placed.width + 2 * MARGIN, placed.height + 2 * MARGIN
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#666"/></marker></defs>',
        *_clusters(graph, placed.clusters),
        *_edges(graph, boxes),
        *(_node(n, boxes[n.key]) for n in graph.nodes),
        "</svg>",
    ]
    return "\n".join(parts)


# ---- layout --------------------------------------------------------------------------------


@dataclass
class Layout:
    nodes: dict[str, Box] = field(default_factory=dict)
    clusters: dict[str, Box] = field(default_factory=dict)
    width: float = 0.0
    height: float = 0.0


def layout(graph: Graph) -> Layout:
    """Boxes for every node and cluster; each cluster is laid out inside, then placed as one
    block in the enclosing level, so clusters never overlap other nodes.

    Levels are laid out innermost first, each in its own coordinates, and made absolute in one
    walk down from the top, so fusions and loop bodies may nest to any depth at linear cost.
    """
    nodes = {n.key: n for n in graph.nodes}
    levels = _levels(graph)
    inner_first = _innermost_first(graph)
    blocks: dict[str | None, Layout] = {}
    for cluster in [*inner_first, None]:
        items, edges = levels.get(cluster, ([], []))
        blocks[cluster] = _layout_block(items, edges, blocks, nodes)
    return _absolute(graph, blocks, inner_first)


def _innermost_first(graph: Graph) -> list[str]:
    """Every cluster after the clusters inside it."""
    depth: dict[str | None, int] = {None: 0}
    for cluster in graph.clusters:
        chain: list[str] = []
        at: str | None = cluster
        while at not in depth:
            assert at is not None
            chain.append(at)
            at = graph.parents[at]
        for c in reversed(chain):
            depth[c] = depth[graph.parents[c]] + 1
    return sorted(graph.clusters, key=lambda c: -depth[c])


Level = tuple[list[str], list[tuple[str, str]]]


def _levels(graph: Graph) -> dict[str | None, Level]:
    """Per cluster (None: the top): its items -- its nodes and child clusters, in graph order
    -- and the edges between them (an edge belongs to the level where its ends diverge)."""
    items: dict[str | None, dict[str, None]] = {}
    for node in graph.nodes:
        item, level = node.key, node.cluster
        while item not in items.setdefault(level, {}):  # an earlier node registered the rest
            items[level][item] = None
            if level is None:
                break
            item, level = level, graph.parents[level]
    owner = {n.key: n.cluster for n in graph.nodes}
    edges: dict[str | None, list[tuple[str, str]]] = {}
    for e in graph.edges:
        level, a, b = _diverging(graph, e.src, owner[e.src], e.dst, owner[e.dst])
        if a != b:
            edges.setdefault(level, []).append((a, b))
    return {level: (list(keys), edges.get(level, [])) for level, keys in items.items()}


def _diverging(
    graph: Graph, a: str, a_at: str | None, b: str, b_at: str | None
) -> tuple[str | None, str, str]:
    """The innermost level containing both ends, and the item standing for each end there."""
    depth_a, depth_b = _depth(graph, a_at), _depth(graph, b_at)
    for _ in range(depth_a - depth_b):
        assert a_at is not None
        a, a_at = a_at, graph.parents[a_at]
    for _ in range(depth_b - depth_a):
        assert b_at is not None
        b, b_at = b_at, graph.parents[b_at]
    while a_at != b_at:
        assert a_at is not None and b_at is not None
        a, a_at = a_at, graph.parents[a_at]
        b, b_at = b_at, graph.parents[b_at]
    return a_at, a, b


def _depth(graph: Graph, cluster: str | None) -> int:
    depth = 0
    while cluster is not None:
        cluster, depth = graph.parents[cluster], depth + 1
    return depth


def _layout_block(
    items: list[str],
    edges: list[tuple[str, str]],
    blocks: dict[str | None, Layout],
    nodes: dict[str, Node],
) -> Layout:
    """One level in its own coordinates: node boxes, and boxes of the clusters it holds."""
    sizes = {i: _item_size(nodes, i, blocks) for i in items}
    rows = _order_rows(_layers(items, edges), edges)
    out = Layout()
    widths = [sum(sizes[i][0] for i in row) + H_GAP * (len(row) - 1) for row in rows]
    out.width = max(widths, default=0.0)
    y = 0.0
    for row, row_width in zip(rows, widths, strict=True):
        x = (out.width - row_width) / 2
        for item in row:
            (out.clusters if item in blocks else out.nodes)[item] = Box(x, y, *sizes[item])
            x += sizes[item][0] + H_GAP
        y += max(sizes[i][1] for i in row) + V_GAP
    out.height = max(y - V_GAP, 0.0)
    return out


def _item_size(
    nodes: dict[str, Node], item: str, blocks: dict[str | None, Layout]
) -> tuple[float, float]:
    if item in blocks:
        block = blocks[item]
        return block.width + 2 * CLUSTER_PAD, block.height + 2 * CLUSTER_PAD + LINE_H
    node = nodes[item]
    return max(len(line) for line in node.lines) * CHAR_W + 2 * PAD, len(node.lines) * LINE_H + PAD


def _absolute(graph: Graph, blocks: dict[str | None, Layout], inner_first: list[str]) -> Layout:
    """Every box in page coordinates: each level's origin is its cluster box's inside."""
    top = blocks[None]
    out = Layout(width=top.width, height=top.height)
    origin: dict[str | None, tuple[float, float]] = {None: (MARGIN, MARGIN)}
    for level in [None, *reversed(inner_first)]:
        dx, dy = origin[level]
        block = blocks[level]
        for key, box in block.nodes.items():
            out.nodes[key] = Box(box.x + dx, box.y + dy, box.w, box.h)
        for key, box in block.clusters.items():
            out.clusters[key] = placed = Box(box.x + dx, box.y + dy, box.w, box.h)
            origin[key] = (placed.x + CLUSTER_PAD, placed.y + CLUSTER_PAD + LINE_H)
    return out


def _layers(items: list[str], edges: list[tuple[str, str]]) -> list[list[str]]:
    """Longest-path layers; sources then move down to just above their first user."""
    preds: dict[str, list[str]] = {i: [] for i in items}
    succs: dict[str, list[str]] = {i: [] for i in items}
    for a, b in edges:
        preds[b].append(a)
        succs[a].append(b)
    layer: dict[str, int] = {}
    position = {item: i for i, item in enumerate(items)}
    for item in topological_order(preds, position.__getitem__)[0]:
        layer[item] = 1 + max((layer[p] for p in preds[item]), default=-1)
    for item in items:
        if not preds[item] and succs[item]:
            layer[item] = min(layer[s] for s in succs[item]) - 1
    rows: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for item in items:
        rows[layer[item]].append(item)
    return [row for row in rows if row]


def _order_rows(rows: list[list[str]], edges: list[tuple[str, str]]) -> list[list[str]]:
    """Order each row by the mean position of its items' predecessors (barycenter heuristic)."""
    preds: dict[str, list[str]] = {}
    for a, b in edges:
        preds.setdefault(b, []).append(a)
    position: dict[str, float] = {}
    ordered: list[list[str]] = []
    for row in rows:
        span = max(len(row) - 1, 1)
        keyed = sorted(
            enumerate(row),
            key=lambda pair: (_center(preds, position, pair[0], pair[1], span), pair[0]),
        )
        row = [item for _, item in keyed]
        position.update({item: i / span for i, item in enumerate(row)})
        ordered.append(row)
    return ordered


# ---- drawing -------------------------------------------------------------------------------


def _node(node: Node, box: Box) -> str:
    texts = []
    for i, line in enumerate(node.lines):
        weight = ' font-weight="bold"' if i == 0 else ""
        y = box.y + PAD / 2 + LINE_H * (i + 0.8)
        texts.append(
            f'<text x="{box.x + PAD:.1f}" y="{y:.1f}" font-size="11"{weight}>{escape(line)}</text>'
        )
    return (
        f"<g><title>{escape(node.tooltip)}</title>"
        f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="4" '
        f'fill="{node.color}" stroke="#444"/>' + "".join(texts) + "</g>"
    )


def _edges(graph: Graph, boxes: dict[str, Box]) -> list[str]:
    parts = []
    for e in graph.edges:
        a, b = boxes[e.src], boxes[e.dst]
        x1, y1, x2, y2 = a.x + a.w / 2, a.y + a.h, b.x + b.w / 2, b.y
        mid = (y1 + y2) / 2
        dash = ' stroke-dasharray="5,4"' if e.dashed else ""
        curve = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} {x2:.1f},{y2:.1f}"
        parts.append(
            f'<path d="{curve}" fill="none" stroke="#666"{dash} marker-end="url(#arrow)"/>'
        )
        parts.append(
            f'<text x="{(x1 + x2) / 2 + 4:.1f}" y="{mid + 3:.1f}" font-size="9" '
            f'fill="#555">{escape(e.label)}</text>'
        )
    return parts


def _clusters(graph: Graph, boxes: dict[str, Box]) -> list[str]:
    parts = []
    for cluster, title in graph.clusters.items():  # enclosing clusters come first
        b = boxes[cluster]
        parts.append(
            f'<g><rect x="{b.x:.1f}" y="{b.y:.1f}" width="{b.w:.1f}" height="{b.h:.1f}" '
            f'rx="8" fill="#eef2fb" stroke="#9aa9c8"/>'
            f'<text x="{b.x + 6:.1f}" y="{b.y + LINE_H - 2:.1f}" font-size="11" fill="#334">'
            f"{escape(title)}</text></g>"
        )
    return parts


def _center(
    preds: dict[str, list[str]], position: dict[str, float], index: int, item: str, span: int
) -> float:
    """Mean position (0..1) of ``item``'s placed predecessors, else its own."""
    known = [position[p] for p in preds.get(item, []) if p in position]
    return sum(known) / len(known) if known else index / span
