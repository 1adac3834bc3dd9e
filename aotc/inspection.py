"""What is in a GraphDef, before anyone writes its config: ``aotc inspect``.

``inspect_graph(path)`` summarizes a graph without translating it: node count, op histogram,
Placeholders with dtype and shape, candidate outputs, ops aotc cannot translate (with the
nodes using them) and the bytes held in constants. ``starting_config`` renders a YAML config
from that summary for ``--emit-config``; ``supported_ops`` is the table ``aotc ops`` prints.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypeVar

from aotc.abi import c_identifier
from aotc.atomic import write_atomically
from aotc.errors import AotcError, OutputError
from aotc.frontend.graphdef import Graph, load_graph
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import lookup
from aotc.frontend.ops.registry import supported_ops as supported_ops  # for `aotc ops`
from aotc.frontend.signature import PLACEHOLDER_OPS, inferred_fetches, model_stem
from aotc.frontend.tensor import numpy_dtype, shape_from_proto
from aotc.tf2xla_config import is_tf2xla_config, tf2xla_config, tf2xla_text

# Ops that are never translated themselves: feeds become parameters, NoOps carry no value.
_NOT_TRANSLATED = PLACEHOLDER_OPS | {"NoOp"}

T = TypeVar("T")


@dataclass(frozen=True)
class Placeholder:
    """A graph input: dtype name (None if unset or unsupported) and shape (-1: unknown dim)."""

    name: str
    dtype: str | None
    shape: list[int] | None


@dataclass
class GraphSummary:
    """Everything ``aotc inspect`` reports; ``asdict`` of it is the ``--json`` output."""

    path: str
    node_count: int
    ops: dict[str, int]
    placeholders: list[Placeholder]
    outputs: list[str]
    unsupported: dict[str, list[str]] = field(default_factory=dict)
    constant_bytes: int = 0

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def inspect_graph(path: str | Path) -> GraphSummary:
    """Load ``path`` and summarize it; AotcError if it is not a readable GraphDef."""
    graph = load_graph(path)
    nodes = list(graph.nodes.values())
    histogram = Counter(node.op for node in nodes)
    return GraphSummary(
        path=str(path),
        node_count=len(nodes),
        ops=dict(sorted(histogram.items(), key=lambda kv: (-kv[1], kv[0]))),
        placeholders=[_placeholder(n) for n in nodes if n.op in PLACEHOLDER_OPS],
        outputs=_candidate_outputs(graph),
        unsupported=_unsupported(nodes),
        constant_bytes=sum(_constant_bytes(n) for n in nodes if n.op == "Const"),
    )


def _placeholder(node: Node) -> Placeholder:
    proto = node.proto.attr
    dtype = _dtype_name(proto["dtype"].type) if "dtype" in proto else None
    shape = None
    if "shape" in proto:
        dims = _safe(lambda: shape_from_proto(proto["shape"].shape))
        shape = list(dims) if isinstance(dims, tuple) else None
    return Placeholder(node.name, dtype, shape)


def _dtype_name(dtype: int) -> str | None:
    found = _safe(lambda: numpy_dtype(dtype))
    return None if found is None else str(found)


def _safe(fn: Callable[[], T]) -> T | None:
    # Inspecting a half-broken graph should still show what can be shown.
    try:
        return fn()
    except AotcError:
        return None


def _candidate_outputs(graph: Graph) -> list[str]:
    try:
        return [str(f.ref) for f in inferred_fetches(graph)]
    except AotcError:
        return []


def _unsupported(nodes: list[Node]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for node in nodes:
        if node.op not in _NOT_TRANSLATED and lookup(node.op) is None:
            found.setdefault(node.op, []).append(node.name)
    return dict(sorted(found.items()))


def _constant_bytes(node: Node) -> int:
    # From the declared shape, without decoding: a splat constant costs its full size too.
    tensor = node.proto.attr["value"].tensor
    try:
        shape = shape_from_proto(tensor.tensor_shape)
        itemsize = numpy_dtype(tensor.dtype).itemsize
    except AotcError:
        return len(tensor.tensor_content)
    count = 1
    for dim in shape or ():
        count *= max(dim, 0)
    return count * itemsize


def format_summary(summary: GraphSummary, max_names: int | None = None) -> str:
    """The human-readable report, one fact per line; ``max_names`` caps the node names
    listed per unsupported op."""
    lines = [
        f"{summary.path}: {summary.node_count} nodes, "
        f"{_human_bytes(summary.constant_bytes)} in constants",
        "ops: " + ", ".join(f"{op} x{n}" for op, n in summary.ops.items()),
        "placeholders:" + ("" if summary.placeholders else " none"),
    ]
    lines += [f"  {p.name}: {p.dtype or '?'}{_shape_text(p.shape)}" for p in summary.placeholders]
    lines.append("candidate outputs: " + (", ".join(summary.outputs) or "none found"))
    if summary.unsupported:
        lines.append("unsupported ops (see 'aotc ops'):")
        lines += [
            f"  {op}: {_names(nodes, max_names)}" for op, nodes in summary.unsupported.items()
        ]
    else:
        lines.append("unsupported ops: none")
    return "\n".join(lines)


def _names(names: list[str], limit: int | None) -> str:
    if limit is None or len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f", ... ({len(names) - limit} more; -v lists all)"


def _shape_text(shape: list[int] | None) -> str:
    if shape is None:
        return "[unknown rank]"
    return "[" + ",".join("?" if d == -1 else str(d) for d in shape) + "]"


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def starting_config(summary: GraphSummary) -> str:
    """A YAML config to start from: every Placeholder as a feed, the candidate outputs as
    fetches. Unknown dims become 1 with a comment, so the file compiles but asks for review."""
    lines = [
        f"# Starting config for {Path(summary.path).name}, written by 'aotc inspect'.",
        f"name: {c_identifier(model_stem(summary.path))}",
        "feeds:" + ("" if summary.placeholders else " []"),
    ]
    for p in summary.placeholders:
        lines += _feed_lines(p)
    lines.append("fetches:" + ("" if summary.outputs else " []  # none found: list them here"))
    lines += [f"  - name: {_yaml_string(o)}" for o in summary.outputs]
    lines += ["target:", "  triple: host", "  cpu: host", '  features: ""']
    return "\n".join(lines) + "\n"


def _feed_lines(p: Placeholder) -> list[str]:
    lines = [f"  - name: {_yaml_string(p.name)}"]
    if p.shape is None:
        lines.append("    # shape: [...]  # unknown rank in the graph: give the shape")
    else:
        dims = ", ".join("1" if d == -1 else str(d) for d in p.shape)
        note = "  # was unknown (?) in the graph: check" if -1 in p.shape else ""
        lines.append(f"    shape: [{dims}]{note}")
    if p.dtype is not None:
        lines.append(f"    dtype: {p.dtype}")
    return lines


def _yaml_string(text: str) -> str:
    # Double-quoted YAML is JSON-compatible, so json-style escaping is always safe.
    return json.dumps(text)


def starting_tf2xla_config(summary: GraphSummary, binary: bool = False) -> bytes:
    """``starting_config`` as a tfcompile config: text proto, or binary when ``binary``.
    Unknown dims stay -1 (and unknown ranks ``unknown_rank``): loading the file asks for them."""
    feeds = [(p.name, p.dtype, p.shape) for p in summary.placeholders]
    proto = tf2xla_config(feeds, summary.outputs)
    if binary:
        return proto.SerializeToString(deterministic=True)
    unknown = [p.name for p in summary.placeholders if p.shape is None or -1 in p.shape]
    comments = [
        "Text form of tensorflow.tf2xla.Config proto.",
        f"Starting config for {Path(summary.path).name}, written by 'aotc inspect'.",
    ]
    comments += [f"feed '{name}': give the unknown dims of its shape" for name in unknown]
    if not summary.outputs:
        comments.append("no candidate outputs found: add fetch { id { node_name: ... } }")
    return tf2xla_text(proto, comments).encode()


def emit_config(summary: GraphSummary, path: str | Path, overwrite: bool = False) -> None:
    """Write the starting config to ``path`` atomically, never clobbering by accident: a
    tfcompile config for ``*.pbtxt`` (text) and ``*.pb`` (binary), else YAML."""
    if Path(path).exists() and not overwrite:
        raise OutputError(f"{path}: already exists; pass --force to overwrite it")
    if is_tf2xla_config(path):
        data = starting_tf2xla_config(summary, binary=Path(path).suffix.lower() == ".pb")
    else:
        data = starting_config(summary).encode()
    write_atomically(path, data)
