"""Checkpoint keys of a TF2 SavedModel's variables, found the way TensorFlow's loader finds them.

TF2 restores a SavedModel object by object, not through the graph's restore function: the
SavedObjectGraph in ``saved_model.pb`` and the checkpoint's TrackableObjectGraph number the same
objects alike, a variable object's ``VARIABLE_VALUE`` attribute names its checkpoint key, and a
function call's captured inputs are the objects its concrete function lists in
``bound_inputs``. Keras 3 variables need this route: their graph handles (``dense/kernel``) are
not the ones the restore function assigns (``Variable_3``), which belong to the
``tf.Variable`` inside each Keras variable.
"""

from __future__ import annotations

from aotc.frontend.checkpoint import Checkpoint
from aotc.proto import aotc_tf_pb2 as pb
from aotc.tensor_ref import TensorRef

_CALL_OPS = frozenset({"StatefulPartitionedCall", "PartitionedCall"})
_PASS_THROUGH = frozenset({"Identity", "Snapshot"})
_VARIABLE_VALUE = "VARIABLE_VALUE"


def captured_variable_keys(meta: pb.MetaGraphDef, checkpoint: Checkpoint) -> dict[str, str]:
    """Variable handle node (in ``meta``'s graph) -> checkpoint key, for every variable a
    top-level function call captures; empty without an object graph on either side."""
    objects = checkpoint.object_graph()
    if objects is None or not meta.object_graph_def.nodes:
        return {}
    nodes = {n.name: n for n in meta.graph_def.node}
    keys: dict[str, str] = {}
    for node_id, handle in _captures(meta, nodes):
        key = _variable_key(objects, meta.object_graph_def, node_id)
        if key is not None and handle.op == "VarHandleOp":
            keys.setdefault(handle.name, key)
    return keys


def _captures(meta: pb.MetaGraphDef, nodes: dict[str, pb.NodeDef]) -> list[tuple[int, pb.NodeDef]]:
    """(object id, the node feeding it) for the captured inputs of each call: its last
    ``len(bound_inputs)`` data inputs, in order."""
    functions = meta.object_graph_def.concrete_functions
    found = []
    for node in meta.graph_def.node:
        if node.op not in _CALL_OPS or node.attr["f"].func.name not in functions:
            continue
        bound = list(functions[node.attr["f"].func.name].bound_inputs)
        data = [i for i in node.input if not i.startswith("^")]
        if not bound or len(bound) > len(data):
            continue
        for node_id, text in zip(bound, data[-len(bound) :], strict=True):
            source = _source(nodes, text)
            if source is not None:
                found.append((node_id, source))
    return found


def _source(nodes: dict[str, pb.NodeDef], text: str) -> pb.NodeDef | None:
    node = nodes.get(TensorRef.parse(text).node)
    for _ in range(len(nodes)):
        if node is None or node.op not in _PASS_THROUGH or not node.input:
            return node
        node = nodes.get(TensorRef.parse(node.input[0]).node)
    return None


def _variable_key(
    objects: pb.TrackableObjectGraph, saved: pb.SavedObjectGraph, node_id: int
) -> str | None:
    if not (0 <= node_id < min(len(objects.nodes), len(saved.nodes))):
        return None
    if saved.nodes[node_id].WhichOneof("kind") != "variable":
        return None
    for attribute in objects.nodes[node_id].attributes:
        if attribute.name == _VARIABLE_VALUE:
            return attribute.checkpoint_key
    return None
