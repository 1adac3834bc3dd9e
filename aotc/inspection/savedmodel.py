"""``aotc inspect`` of a SavedModel directory: its tag sets, the signatures of the chosen
MetaGraphDef with their inputs and outputs, and what the compiled signature needs (nodes, ops,
ops aotc cannot translate), read without freezing variables or knowing input shapes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from aotc.abi import c_identifier
from aotc.errors import UsageError
from aotc.frontend.graphdef import Graph
from aotc.frontend.inline import inline_functions
from aotc.frontend.options import SourceOptions
from aotc.frontend.savedmodel import (
    DEFAULT_SIGNATURE,
    DEFAULT_TAGS,
    meta_graph,
    read_savedmodel,
    signature_def,
    signature_keys,
)
from aotc.frontend.tf2xla_config import is_tf2xla_config
from aotc.inspection.common import (
    Placeholder,
    feed_lines,
    histogram,
    ops_line,
    unsupported,
    unsupported_lines,
)
from aotc.proto import aotc_tf_pb2 as pb
from aotc.tensor_ref import TensorRef

# Variable reads become constants when the SavedModel is loaded; they are not translated.
_VARIABLE_OPS = frozenset({"VarHandleOp", "ReadVariableOp", "VariableV2", "Variable"})


@dataclass(frozen=True)
class SignatureSummary:
    """One SignatureDef: its key, and its inputs and outputs sorted by key (argument order)."""

    key: str
    inputs: list[Placeholder]
    outputs: list[Placeholder]


@dataclass
class SavedModelSummary:
    """What ``aotc inspect`` reports on a SavedModel; ``asdict`` of it is the ``--json``."""

    path: str
    tag_sets: list[list[str]]
    tags: list[str]  # of the MetaGraphDef shown
    signatures: list[SignatureSummary]
    signature: str  # the one aotc compiles with these options
    node_count: int  # that signature needs
    ops: dict[str, int]
    unsupported: dict[str, list[str]] = field(default_factory=dict)
    format: str = "savedmodel"

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    def format_text(self, max_names: int | None = None) -> str:
        """One fact per line, as for a GraphDef."""
        others = [",".join(t) for t in self.tag_sets if sorted(t) != sorted(self.tags)]
        also = f" (also: {'; '.join(others)})" if others else ""
        lines = [f"{self.path}: SavedModel, tags {','.join(self.tags)}{also}", "signatures:"]
        for sig in self.signatures:
            lines.append(f"  {sig.key}{' (compiled)' if sig.key == self.signature else ''}:")
            lines.append("    inputs:  " + _tensors(sig.inputs))
            lines.append("    outputs: " + _tensors(sig.outputs))
        lines += [f"{self.signature} needs {self.node_count} nodes", ops_line(self.ops)]
        return "\n".join(lines + unsupported_lines(self.unsupported, max_names))

    def config_bytes(self, config_path: str) -> bytes:
        if is_tf2xla_config(config_path):
            raise UsageError(
                f"--emit-config {config_path}: a tfcompile config names graph nodes; for a "
                "SavedModel write a YAML config (its signature names the inputs)"
            )
        return starting_config(self).encode()


def inspect_savedmodel(path: str | Path, options: SourceOptions) -> SavedModelSummary:
    """Summarize SavedModel ``path`` for the tags and signature of ``options``."""
    root = Path(path)
    saved = read_savedmodel(root)
    tags = tuple(options.tags or DEFAULT_TAGS)
    meta = meta_graph(saved, tags, root, options)
    key = options.signature or DEFAULT_SIGNATURE
    sig = signature_def(meta, key, root, options)
    graph = Graph(inline_functions(meta.graph_def, str(root / "saved_model.pb")), str(root))
    nodes = graph.prune(_refs(sig.outputs), _refs(sig.inputs))
    return SavedModelSummary(
        path=str(path),
        tag_sets=[list(m.meta_info_def.tags) for m in saved.meta_graphs],
        tags=list(tags),
        signatures=[_signature(k, meta.signature_def[k]) for k in signature_keys(meta)],
        signature=key,
        node_count=len(nodes),
        ops=histogram(n.op for n in nodes),
        unsupported=unsupported(n for n in nodes if n.op not in _VARIABLE_OPS),
    )


def _refs(infos: Mapping[str, pb.TensorInfo]) -> list[TensorRef]:
    return [TensorRef.parse(info.name) for info in infos.values() if info.name]


def _signature(key: str, sig: pb.SignatureDef) -> SignatureSummary:
    def tensors(infos: Mapping[str, pb.TensorInfo]) -> list[Placeholder]:
        return [Placeholder.of(k, infos[k].dtype, infos[k].tensor_shape) for k in sorted(infos)]

    return SignatureSummary(key, tensors(sig.inputs), tensors(sig.outputs))


def _tensors(tensors: list[Placeholder]) -> str:
    return ", ".join(t.text() for t in tensors) or "none"


def starting_config(summary: SavedModelSummary) -> str:
    """A YAML config giving every input of the compiled signature a static shape (unknown dims
    become 1, marked): the signature itself fixes names, dtypes and outputs."""
    sig = next(s for s in summary.signatures if s.key == summary.signature)
    name = Path(summary.path).resolve().name
    lines = [
        f"# Starting config for {name} (signature {summary.signature}), written by 'aotc inspect'.",
        f"name: {c_identifier(name)}",
        "feeds:" + ("" if sig.inputs else " []"),
    ]
    for tensor in sig.inputs:
        lines += feed_lines(tensor, "signature", dtype=False)
    return "\n".join(lines) + "\n"
