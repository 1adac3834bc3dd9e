"""Small GraphDefs written as lines like ``"y = Relu(x, ^ctrl)"`` (node = Op(inputs))."""

from __future__ import annotations

import re

from aotc.frontend.graphdef import Graph
from aotc.proto import aotc_tf_pb2 as pb

_SPEC = re.compile(r"^\s*([\w/.:-]+)\s*=\s*(\w+)\((.*)\)\s*$")


def graph(*specs: str, path: str = "test.pbtxt") -> Graph:
    """Build a graph from lines like ``"y = Relu(x, ^ctrl)"``."""
    return Graph(graph_def(*specs), path)


def graph_def(*specs: str) -> pb.GraphDef:
    proto = pb.GraphDef()
    for spec in specs:
        match = _SPEC.match(spec)
        assert match, spec
        name, op, args = match.groups()
        inputs = [a.strip() for a in args.split(",") if a.strip()]
        proto.node.add(name=name, op=op, input=inputs)
    return proto
