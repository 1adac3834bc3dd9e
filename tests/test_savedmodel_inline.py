"""Function-library inlining on small hand-written graphs."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf import text_format

from aotc.errors import GraphError
from aotc.frontend.graphdef import Graph
from aotc.frontend.inline import inline_functions
from aotc.frontend.node import TensorRef
from aotc.frontend.signature import FetchSpec, Signature, TensorSpec
from aotc.frontend.translate import translate_graph
from aotc.hlo.evaluate import evaluate
from aotc.proto import aotc_tf_pb2 as pb

# outer(x) = (inner(x)[1] + x, inner(x)[0]) with inner(a) = (a * a, -a) and a direct call
# (op named after the function), plus an op whose output args are named (IdentityN's).
GRAPH = """
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { dim { size: 3 } } } } }
node { name: "call" op: "PartitionedCall" input: "x" input: "^x"
       attr { key: "f" value { func { name: "outer" } } } }
library {
  function {
    signature { name: "inner" input_arg { name: "a" type: DT_FLOAT }
                output_arg { name: "sq" type: DT_FLOAT } output_arg { name: "neg" type: DT_FLOAT } }
    node_def { name: "m" op: "Mul" input: "a" input: "a"
               attr { key: "T" value { type: DT_FLOAT } } }
    node_def { name: "n" op: "Neg" input: "a" attr { key: "T" value { type: DT_FLOAT } } }
    ret { key: "sq" value: "m:z:0" }
    ret { key: "neg" value: "n:y:0" }
  }
  function {
    signature { name: "outer" input_arg { name: "x" type: DT_FLOAT }
                output_arg { name: "o0" type: DT_FLOAT } output_arg { name: "o1" type: DT_FLOAT } }
    node_def { name: "c" op: "inner" input: "x" }
    node_def { name: "s" op: "AddV2" input: "c:neg:0" input: "x" input: "^c"
               attr { key: "T" value { type: DT_FLOAT } } }
    node_def { name: "i" op: "Identity" input: "c:sq:0" attr { key: "T" value { type: DT_FLOAT } } }
    ret { key: "o0" value: "s:z:0" }
    ret { key: "o1" value: "i:output:0" }
  }
}
"""


def _graph(text: str = GRAPH) -> pb.GraphDef:
    return text_format.Parse(text, pb.GraphDef())


def test_nested_calls_flatten_with_output_arg_mapping() -> None:
    flat = inline_functions(_graph())
    nodes = {n.name: n for n in flat.node}
    assert not flat.library.function
    assert nodes["call"].op == "IdentityN"
    assert list(nodes["call/s"].input) == ["call/c:1", "x", "^call/c"]
    assert list(nodes["call/c"].input) == ["call/c/m:0", "call/c/n:0"]
    assert list(nodes["call/c/m"].input) == ["x", "x"]


def test_inlined_graph_computes_the_functions() -> None:
    graph = Graph(inline_functions(_graph()))
    feed = TensorSpec("x", TensorRef("x"), np.dtype(np.float32), (3,))
    fetches = (FetchSpec("o0", TensorRef("call", 0)), FetchSpec("o1", TensorRef("call", 1)))
    module = translate_graph(graph, Signature("f", (feed,), fetches))
    x = np.array([1.0, -2.0, 3.0], np.float32)
    o0, o1 = evaluate(module, [x])
    np.testing.assert_array_equal(o0, np.zeros(3, np.float32))  # -x + x
    np.testing.assert_array_equal(o1, x * x)


def test_recursion_is_an_error() -> None:
    text = GRAPH.replace('node_def { name: "c" op: "inner"', 'node_def { name: "c" op: "outer"')
    text = text.replace('"c:neg:0"', '"c:o0:0"').replace('"c:sq:0"', '"c:o1:0"')
    with pytest.raises(GraphError, match="nest deeper"):
        inline_functions(_graph(text))


def test_argument_count_mismatch() -> None:
    text = GRAPH.replace('input: "x" input: "^x"', 'input: "x" input: "x"')
    with pytest.raises(GraphError, match="passes 2 input"):
        inline_functions(_graph(text))


def test_unknown_output_argument_of_a_multi_output_op() -> None:
    text = GRAPH.replace('"c:neg:0"', '"c:bogus:0"')
    with pytest.raises(GraphError, match="no output argument 'bogus'"):
        inline_functions(_graph(text))
