"""Functionalize TF1 control flow: what TensorFlow's functionalize_control_flow does for
tfcompile.

Frozen Keras RNNs and ``tf.compat.v1`` graphs hold loops as ``Enter``/``Merge``/``Switch``/
``NextIteration``/``LoopCond``/``Exit`` frames and conditionals as ``Switch``/``Merge`` (or
``_SwitchN``/``Merge``, a lowered ``Case``). This pass rewrites each into the functional form
the translation already compiles (``ops/control_flow.py``): a ``StatelessWhile`` with a
condition and a body function, a ``StatelessIf``/``StatelessCase`` with one function per
branch, the functions added to the graph's library (the stateful forms where a function holds
a stateful op).

Frames are collapsed innermost first, each after the conditionals inside it, then the
conditionals of the graph itself, so every cut sees inner structures as one node: nesting costs
no recursion, only a loop over frames. What cannot be functionalized (a Merge that belongs to
no loop or conditional, a value read inside a loop without its Exit, ...) is one error naming
the node.
"""

from __future__ import annotations

from aotc.frontend.flow_graph import ROOT, V1_CONTROL_FLOW_OPS, FlowGraph
from aotc.frontend.functionalize_cond import functionalize_conds
from aotc.frontend.functionalize_while import functionalize_loop
from aotc.frontend.inline import Library
from aotc.proto import aotc_tf_pb2 as pb


def has_v1_control_flow(proto: pb.GraphDef) -> bool:
    """Whether ``proto`` holds TF1 control flow nodes (functions never do)."""
    return any(node.op in V1_CONTROL_FLOW_OPS for node in proto.node)


def functionalize(proto: pb.GraphDef, library: Library, path: str) -> tuple[pb.GraphDef, Library]:
    """``proto`` with every TF1 loop and conditional replaced by a functional node, and
    ``library`` with their functions added."""
    graph = FlowGraph(proto, library, path)
    frames = sorted(range(1, len(graph.frames)), key=lambda f: -graph.frames[f].depth)
    for frame in frames:
        functionalize_conds(graph, frame)
        functionalize_loop(graph, frame)
    functionalize_conds(graph, ROOT)
    graph.drop_unread()
    return graph.to_proto(), graph.library
