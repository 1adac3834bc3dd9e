"""Freeze variables from a TensorFlow V2 checkpoint: each variable read becomes a ``Const``.

Used for SavedModels (their ``variables/variables``) and for GraphDefs compiled with
``--checkpoint PREFIX`` (tfcompile's ``freeze_checkpoint``). Variables are matched to checkpoint
keys the way TensorFlow restores them: the graph's restore ops run ``RestoreV2`` with a list of
checkpoint keys and assign output ``i`` to one variable (``RestoreV2:i -> (Identity) ->
AssignVariableOp(handle)``, ``Assign`` for TF1 variables); then, for a SavedModel, through its
object graph (what TF2's loader uses: Keras 3 variables are restored only that way); else by
the variable's ``shared_name`` or node name.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

import numpy as np

from aotc.errors import GraphError, InputFileError
from aotc.frontend.checkpoint import Checkpoint
from aotc.frontend.graphdef import Graph
from aotc.frontend.signature import Signature
from aotc.frontend.stateful_ops import VARIABLE_UPDATE_OPS
from aotc.frontend.tensor import tf_dtype
from aotc.proto import aotc_tf_pb2 as pb
from aotc.tensor_ref import TensorRef

_HANDLE_OPS = frozenset({"VarHandleOp", "VariableV2", "Variable"})
_ASSIGN_OPS = frozenset({"AssignVariableOp", "Assign"})
_PASS_THROUGH = frozenset({"Identity", "Snapshot"})
# Functional control flow: a loop body or a branch reads a variable through a handle argument.
_FUNCTIONAL_OPS = frozenset(
    {"While", "StatelessWhile", "If", "StatelessIf", "Case", "StatelessCase"}
)


def freeze_reads(
    graph: Graph,
    proto: pb.GraphDef,
    fetches: Sequence[TensorRef],
    feeds: Sequence[TensorRef],
    prefix: Path,
    keep: Collection[str] = (),
    object_keys: Callable[[Checkpoint], Mapping[str, str]] | None = None,
) -> None:
    """Replace the variable reads the fetches need in ``proto`` (``graph``'s GraphDef, or a
    copy) with constants from checkpoint ``prefix``; reads of the variables in ``keep`` stay.
    ``object_keys`` gives the keys TF2's object graph assigns to handles the restore ops do
    not assign (``object_graph.py``)."""
    needed = graph.needed_names(fetches, feeds)
    reads = [
        i
        for i, n in enumerate(proto.node)
        if n.name in needed
        and (_is_variable_read(graph, n) or _read_in_functions(graph, n, needed))
        and _handle(graph, n).name not in keep
    ]
    if not reads:
        return
    checkpoint = Checkpoint(prefix)
    keys = {**(object_keys(checkpoint) if object_keys else {}), **_checkpoint_keys(graph)}
    for i in reads:
        node = proto.node[i]
        key = _key_for(graph, node, keys, checkpoint)
        proto.node[i].CopyFrom(_const_node(node, checkpoint.read(key)))


def _is_variable_read(graph: Graph, node: pb.NodeDef) -> bool:
    if node.op in ("VariableV2", "Variable"):
        return True
    return node.op == "ReadVariableOp" and _source(graph, node.input[0]).op == "VarHandleOp"


def _read_in_functions(graph: Graph, node: pb.NodeDef, needed: set[str]) -> bool:
    """Whether ``node`` is a variable handle that loops or conditionals take (their bodies
    read it), and that nothing the fetches need writes (nor any function of those loops or
    conditionals): frozen, its value enters them."""
    if node.op != "VarHandleOp":
        return False
    takers = [c for c in graph.consumers(node.name) if c.name in needed]
    if not any(c.op in _FUNCTIONAL_OPS for c in takers):
        return False
    direct = [c for c in takers if c.op not in _FUNCTIONAL_OPS]
    if any(c.op in VARIABLE_UPDATE_OPS for c in direct):
        return False
    return not _updates_variables(graph, [c.proto for c in takers if c.op in _FUNCTIONAL_OPS])


def _updates_variables(graph: Graph, callers: list[pb.NodeDef]) -> bool:
    """Whether a function ``callers`` call (or one those call) updates a variable."""
    seen: set[str] = set()
    stack = [f for node in callers for f in _called(graph, node)]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        for inner in graph.functions[name].node_def:
            if inner.op in VARIABLE_UPDATE_OPS:
                return True
            stack.extend(_called(graph, inner))
    return False


def _called(graph: Graph, node: pb.NodeDef) -> list[str]:
    """The library functions ``node`` names: its op, or a function attribute."""
    names = [node.op]
    for value in node.attr.values():
        kind = value.WhichOneof("value")
        funcs = [value.func] if kind == "func" else list(value.list.func) if kind == "list" else []
        names += [f.name for f in funcs]
    return [n for n in names if n in graph.functions]


def _source(graph: Graph, text: str) -> pb.NodeDef:
    """The node behind input ``text``, looking through Identity chains."""
    node = graph.node(TensorRef.parse(text).node).proto
    for _ in range(len(graph.nodes)):
        if node.op not in _PASS_THROUGH or not node.input:
            return node
        node = graph.node(TensorRef.parse(node.input[0]).node).proto
    raise GraphError(f"{graph.path}: Identity cycle at node '{node.name}'")


def _checkpoint_keys(graph: Graph) -> dict[str, str]:
    """Variable node name -> checkpoint key, from the restore ops' RestoreV2 -> Assign chains."""
    keys: dict[str, str] = {}
    for node in graph.nodes.values():
        if node.op not in _ASSIGN_OPS or len(node.inputs) < 2:
            continue
        handle = _source(graph, node.proto.input[0])
        key = _restored_key(graph, node.proto.input[1])
        if handle.op in _HANDLE_OPS and key is not None:
            keys.setdefault(handle.name, key)
    return keys


def _restored_key(graph: Graph, text: str) -> str | None:
    ref = TensorRef.parse(text)
    node = graph.node(ref.node).proto
    while node.op in _PASS_THROUGH and node.input:
        ref = TensorRef.parse(node.input[0])
        node = graph.node(ref.node).proto
    if node.op not in ("RestoreV2", "Restore") or len(node.input) < 2:
        return None
    names_node = _source(graph, node.input[1])
    names = list(names_node.attr["value"].tensor.string_val) if names_node.op == "Const" else []
    if ref.index >= len(names):
        return None
    return names[ref.index].decode("utf-8", "replace")


def _handle(graph: Graph, read: pb.NodeDef) -> pb.NodeDef:
    """The variable node a read reads."""
    if read.op in _HANDLE_OPS:
        return read
    return _source(graph, read.input[0])


def _key_for(graph: Graph, read: pb.NodeDef, keys: dict[str, str], checkpoint: Checkpoint) -> str:
    handle = _handle(graph, read)
    if handle.name in keys:
        return keys[handle.name]
    shared = handle.attr["shared_name"].s.decode() if "shared_name" in handle.attr else ""
    for candidate in (shared, handle.name, f"{shared}/.ATTRIBUTES/VARIABLE_VALUE"):
        if candidate and candidate in checkpoint.entries:
            return candidate
    raise GraphError(
        f"{checkpoint.prefix}: variable '{handle.name}' ({handle.op}) read by node "
        f"'{read.name}' has no value in the checkpoint (no restore op assigns it)"
    )


def _const_node(read: pb.NodeDef, value: np.ndarray) -> pb.NodeDef:
    const = pb.NodeDef(name=read.name, op="Const", device=read.device)
    const.attr["dtype"].type = tf_dtype(value.dtype)  # type: ignore[assignment]
    tensor = const.attr["value"].tensor
    tensor.dtype = tf_dtype(value.dtype)  # type: ignore[assignment]
    tensor.tensor_shape.dim.extend(pb.TensorShapeProto.Dim(size=d) for d in value.shape)
    tensor.tensor_content = np.ascontiguousarray(value, value.dtype.newbyteorder("<")).tobytes()
    if "_output_shapes" in read.attr:
        const.attr["_output_shapes"].CopyFrom(read.attr["_output_shapes"])
    return const


def freeze_checkpoint(graph: Graph, signature: Signature, prefix: str | Path) -> Graph:
    """``graph`` with the variable reads the signature needs frozen from checkpoint ``prefix``
    (``--checkpoint``); the signature's declared variables stay arguments."""
    _check_prefix(Path(prefix))
    proto = pb.GraphDef()
    proto.CopyFrom(graph.proto)
    fed = [f.ref for f in signature.feeds] + [TensorRef(v.node) for v in signature.variables]
    keep = {v.node for v in signature.variables}
    freeze_reads(graph, proto, [f.ref for f in signature.fetches], fed, Path(prefix), keep)
    return Graph(proto, graph.path, graph.functions)


def checkpoint_files(prefix: str | Path) -> list[Path]:
    """The files of checkpoint ``prefix``: ``.index`` and its data shards, sorted."""
    base = Path(prefix)
    return sorted(
        p for p in base.parent.glob(f"{base.name}.*") if p.suffix == ".index" or ".data-" in p.name
    )


def _check_prefix(prefix: Path) -> None:
    if Path(f"{prefix}.index").is_file():
        return
    if prefix.is_file():
        raise InputFileError(
            f"--checkpoint {prefix}: a single-file (V1) checkpoint; aotc reads TensorFlow's V2 "
            "format (PREFIX.index + PREFIX.data-*): save with tf.train.Saver(write_version=V2)"
        )
    raise InputFileError(
        f"--checkpoint {prefix}: no {prefix}.index; pass the prefix TensorFlow saved to "
        "(the path without .index / .data-*)"
    )
