"""``aotc inspect`` of a GraphDef: node count, op histogram, Placeholders with dtype and shape,
candidate outputs, ops aotc cannot translate (with the nodes using them) and the bytes held in
constants, without translating; and a starting config from that (YAML or tfcompile's)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from aotc.abi import c_identifier
from aotc.errors import AotcError
from aotc.frontend.graphdef import Graph, load_graph
from aotc.frontend.node import Node
from aotc.frontend.signature import PLACEHOLDER_OPS, inferred_fetches, model_stem
from aotc.frontend.tensor import numpy_dtype, shape_from_proto
from aotc.frontend.tf2xla_config import is_tf2xla_config, tf2xla_config, tf2xla_text
from aotc.inspection.common import (
    Placeholder,
    feed_lines,
    histogram,
    human_bytes,
    ops_line,
    unsupported,
    unsupported_lines,
    yaml_string,
)


@dataclass
class GraphSummary:
    """Everything ``aotc inspect`` reports on a GraphDef; ``asdict`` of it is the ``--json``."""

    path: str
    node_count: int
    ops: dict[str, int]
    placeholders: list[Placeholder]
    outputs: list[str]
    unsupported: dict[str, list[str]] = field(default_factory=dict)
    constant_bytes: int = 0
    format: str = "graphdef"

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    def format_text(self, max_names: int | None = None) -> str:
        """One fact per line; ``max_names`` caps the node names listed per unsupported op."""
        lines = [
            f"{self.path}: {self.node_count} nodes, "
            f"{human_bytes(self.constant_bytes)} in constants",
            ops_line(self.ops),
            "placeholders:" + ("" if self.placeholders else " none"),
        ]
        lines += [f"  {p.text()}" for p in self.placeholders]
        lines.append("candidate outputs: " + (", ".join(self.outputs) or "none found"))
        return "\n".join(lines + unsupported_lines(self.unsupported, max_names))

    def config_bytes(self, config_path: str) -> bytes:
        """A tfcompile config for ``*.pbtxt`` (text) and ``*.pb`` (binary), else YAML."""
        if is_tf2xla_config(config_path):
            return starting_tf2xla_config(self, binary=Path(config_path).suffix.lower() == ".pb")
        return starting_config(self).encode()


def inspect_graph(path: str | Path) -> GraphSummary:
    """Load ``path`` and summarize it; AotcError if it is not a readable GraphDef."""
    graph = load_graph(path)
    nodes = list(graph.nodes.values())
    return GraphSummary(
        path=str(path),
        node_count=len(nodes),
        ops=histogram(node.op for node in nodes),
        placeholders=[_placeholder(n) for n in nodes if n.op in PLACEHOLDER_OPS],
        outputs=_candidate_outputs(graph),
        unsupported=unsupported(nodes),
        constant_bytes=sum(_constant_bytes(n) for n in nodes if n.op == "Const"),
    )


def _placeholder(node: Node) -> Placeholder:
    attr = node.proto.attr
    dtype = attr["dtype"].type if "dtype" in attr else None
    return Placeholder.of(node.name, dtype, attr["shape"].shape if "shape" in attr else None)


def _candidate_outputs(graph: Graph) -> list[str]:
    try:
        return [str(f.ref) for f in inferred_fetches(graph)]
    except AotcError:
        return []


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


def starting_config(summary: GraphSummary) -> str:
    """A YAML config to start from: every Placeholder as a feed, the candidate outputs as
    fetches. Unknown dims become 1 with a comment, so the file compiles but asks for review."""
    lines = [
        f"# Starting config for {Path(summary.path).name}, written by 'aotc inspect'.",
        f"name: {c_identifier(model_stem(summary.path))}",
        "feeds:" + ("" if summary.placeholders else " []"),
    ]
    for p in summary.placeholders:
        lines += feed_lines(p, "graph")
    lines.append("fetches:" + ("" if summary.outputs else " []  # none found: list them here"))
    lines += [f"  - name: {yaml_string(o)}" for o in summary.outputs]
    lines += ["target:", "  triple: host", "  cpu: host", '  features: ""']
    return "\n".join(lines) + "\n"


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
