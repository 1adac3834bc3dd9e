"""Function-library inlining (GraphDef and SavedModel loaders) on hand-written graphs."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from fixtures import load_fixture
from google.protobuf import text_format

from aotc.errors import GraphError, UnsupportedError
from aotc.frontend import inline
from aotc.frontend.graphdef import Graph, load_graph
from aotc.frontend.inline import inline_functions
from aotc.frontend.signature import FetchSpec, Signature, TensorSpec, inferred_fetches
from aotc.frontend.tf2xla_config import load_config_file as load_config
from aotc.frontend.translate import translate_graph
from aotc.hlo.evaluate import evaluate
from aotc.proto import aotc_tf_pb2 as pb
from aotc.tensor_ref import TensorRef

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


def test_recursion_is_an_error_naming_the_chain() -> None:
    text = GRAPH.replace('node_def { name: "c" op: "inner"', 'node_def { name: "c" op: "outer"')
    text = text.replace('"c:neg:0"', '"c:o0:0"').replace('"c:sq:0"', '"c:o1:0"')
    with pytest.raises(UnsupportedError, match=r"'call/c' \(outer\): .*\(outer -> outer\)"):
        inline_functions(_graph(text))


def test_argument_count_mismatch() -> None:
    text = GRAPH.replace('input: "x" input: "^x"', 'input: "x" input: "x"')
    with pytest.raises(GraphError, match="passes 2 input"):
        inline_functions(_graph(text))


def test_unknown_output_argument_of_a_multi_output_op() -> None:
    text = GRAPH.replace('"c:neg:0"', '"c:bogus:0"')
    with pytest.raises(GraphError, match="no output argument 'bogus'"):
        inline_functions(_graph(text))


def _function(name: str, body: list[tuple[str, str, list[str]]], rets: dict[str, str]) -> str:
    """A FunctionDef in text form with float arguments ``a``, ``b`` (those the body uses)."""
    used = {i.split(":")[0] for _, _, inputs in body for i in inputs}
    args = "".join(f'input_arg {{ name: "{a}" type: DT_FLOAT }} ' for a in ("a", "b") if a in used)
    outs = "".join(f'output_arg {{ name: "{k}" type: DT_FLOAT }} ' for k in rets)
    nodes = "".join(
        f'node_def {{ name: "{n}" op: "{op}" {"".join(f"input: {i!r} " for i in inputs)}'
        'attr { key: "T" value { type: DT_FLOAT } } } '
        for n, op, inputs in body
    )
    ret = "".join(f'ret {{ key: "{k}" value: "{v}" }} ' for k, v in rets.items())
    return f'function {{ signature {{ name: "{name}" {args}{outs}}} {nodes}{ret}}}\n'


PLACEHOLDER_X = """
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { dim { size: 3 } } } } }
"""


def _evaluate(flat: pb.GraphDef, *fetches: str) -> list[np.ndarray]:
    feed = TensorSpec("x", TensorRef("x"), np.dtype(np.float32), (3,))
    refs = tuple(FetchSpec(f, TensorRef.parse(f)) for f in fetches)
    module = translate_graph(Graph(flat), Signature("f", (feed,), refs))
    return [np.asarray(v) for v in evaluate(module, [X])]


X = np.array([1.0, -2.0, 3.0], np.float32)


def test_deep_nesting_is_expanded_without_recursion() -> None:
    depth = sys.getrecursionlimit() + 100
    library = _function("f0", [("n", "Neg", ["a"])], {"y": "n:y:0"})
    for i in range(1, depth):
        library += _function(f"f{i}", [("c", f"f{i - 1}", ["a"])], {"y": "c:y:0"})
    text = f'{PLACEHOLDER_X} node {{ name: "call" op: "f{depth - 1}" input: "x" }}'
    flat = inline_functions(_graph(f"{text} library {{ {library} }}"))
    assert len(flat.node) == depth + 2  # x, the Neg, one IdentityN per call
    neg = "call" + "/c" * (depth - 1) + "/n"
    assert [n.op for n in flat.node if n.name == neg] == ["Neg"]
    assert [n.name for n in Graph(flat).prune([TensorRef("call")])][:2] == ["x", neg]


def test_expansion_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inline, "MAX_INLINED_NODES", 1000)
    library = _function("f0", [("n", "Neg", ["a"])], {"y": "n:y:0"})
    for i in range(1, 12):  # each level calls the one below twice: 2**11 Negs
        body = [("p", f"f{i - 1}", ["a"]), ("q", f"f{i - 1}", ["p:y:0"])]
        library += _function(f"f{i}", body, {"y": "q:y:0"})
    text = f'{PLACEHOLDER_X} node {{ name: "call" op: "f11" input: "x" }}'
    with pytest.raises(GraphError, match="more than 1000 nodes"):
        inline_functions(_graph(f"{text} library {{ {library} }}"))


def test_names_taken_in_the_graph_get_a_suffix() -> None:
    body = [("m", "Mul", ["a", "a"]), ("m_1", "Neg", ["m:z:0"])]
    library = _function("sq", body, {"y": "m_1:y:0"})
    text = (
        PLACEHOLDER_X
        + """
    node { name: "call" op: "StatefulPartitionedCall" input: "x"
           attr { key: "f" value { func { name: "sq" } } } }
    node { name: "call/m" op: "Neg" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "out" op: "AddV2" input: "call" input: "call/m"
           attr { key: "T" value { type: DT_FLOAT } } }
    """
    )
    flat = inline_functions(_graph(f"{text} library {{ {library} }}"))
    nodes = {n.name: n for n in flat.node}
    assert nodes["call/m"].op == "Neg" and list(nodes["call/m"].input) == ["x"]
    assert list(nodes["call/m_1"].input) == ["x", "x"]  # the body's m, renamed
    assert list(nodes["call/m_1_1"].input) == ["call/m_1:0"]  # the body's m_1
    (out,) = _evaluate(flat, "out")
    np.testing.assert_array_equal(out, -X * X - X)


def test_attributes_on_the_call_and_repeated_calls() -> None:
    library = _function("sq", [("m", "Mul", ["a", "a"])], {"y": "m:z:0"})
    call = """
    node { name: "%s" op: "PartitionedCall" input: "%s"
           attr { key: "f" value { func { name: "sq" } } }
           attr { key: "_XlaMustCompile" value { b: true } }
           attr { key: "config_proto" value { s: "\\n\\007\\n\\003CPU\\020\\001" } }
           attr { key: "Tin" value { list { type: DT_FLOAT } } }
           attr { key: "Tout" value { list { type: DT_FLOAT } } } }
    """
    text = PLACEHOLDER_X + call % ("c1", "x") + call % ("c2", "c1")
    flat = inline_functions(_graph(f"{text} library {{ {library} }}"))
    assert [n.name for n in flat.node] == ["x", "c1/m", "c1", "c2/m", "c2"]
    (out,) = _evaluate(flat, "c2")
    np.testing.assert_array_equal(out, X**4)


CONTROL = (
    PLACEHOLDER_X
    + """
node { name: "gate" op: "NoOp" }
node { name: "call" op: "StatefulPartitionedCall" input: "x" input: "^gate"
       attr { key: "f" value { func { name: "checked" } } } }
node { name: "out" op: "Identity" input: "call" attr { key: "T" value { type: DT_FLOAT } } }
library { function {
  signature { name: "checked" input_arg { name: "a" type: DT_FLOAT }
              output_arg { name: "y" type: DT_FLOAT } control_output: "check" is_stateful: true }
  node_def { name: "positive" op: "Greater" input: "a" input: "zero:output:0"
             attr { key: "T" value { type: DT_FLOAT } } }
  node_def { name: "zero" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
             attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {}
                                                  float_val: 0 } } } }
  node_def { name: "all" op: "All" input: "positive:z:0" input: "axis:output:0" }
  node_def { name: "axis" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
             attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 0 } } } }
  node_def { name: "check" op: "Assert" input: "all:output:0" input: "a"
             attr { key: "T" value { list { type: DT_FLOAT } } } }
  node_def { name: "printed" op: "PrintV2" input: "fmt:output:0" }
  node_def { name: "fmt" op: "Const" attr { key: "dtype" value { type: DT_STRING } }
             attr { key: "value" value { tensor { dtype: DT_STRING tensor_shape {}
                                                  string_val: "hi" } } } }
  node_def { name: "y" op: "Neg" input: "a" input: "^check"
             attr { key: "T" value { type: DT_FLOAT } } }
  ret { key: "y" value: "y:y:0" }
  control_ret { key: "check" value: "check" }
} }
"""
)


def test_control_outputs_and_unconsumed_nodes_stay_reachable() -> None:
    """The function's Assert (a control output) and PrintV2 (consumed by nothing) hang on the
    call's IdentityN by control edges, like stateful nodes of the top-level graph."""
    flat = inline_functions(_graph(CONTROL))
    nodes = {n.name: n for n in flat.node}
    assert list(nodes["call"].input) == ["call/y:0", "^gate", "^call/check", "^call/printed"]
    assert list(nodes["call/y"].input) == ["x", "^call/check"]
    assert list(nodes["call/check"].input) == ["call/all:0", "x"]
    graph = Graph(flat)
    assert [f.ref.node for f in inferred_fetches(graph)] == ["out"]
    # TensorFlow runs the print for its effect: a compiled function would drop it.
    with pytest.raises(UnsupportedError, match=r"1 node\(s\).*'call/printed' \(PrintV2\)"):
        _evaluate(flat, "out")
    # The Assert alone is dropped, as tfcompile drops it.
    nodes["call"].input.remove("^call/printed")
    (out,) = _evaluate(flat, "out")
    np.testing.assert_array_equal(out, -X)


def test_control_output_naming_no_node() -> None:
    text = CONTROL.replace(
        'control_ret { key: "check" value: "check" }', 'control_ret { key: "check" value: "gone" }'
    )
    with pytest.raises(GraphError, match="control output 'check' names no node 'gone'"):
        inline_functions(_graph(text))


POLYMORPHIC = (
    PLACEHOLDER_X
    + """
node { name: "call" op: "PartitionedCall" input: "x"
       attr { key: "f" value { func { name: "poly"
                                      attr { key: "T" value { type: DT_FLOAT } } } } } }
library { function {
  signature { name: "poly" input_arg { name: "a" type_attr: "T" }
              output_arg { name: "y" type_attr: "T" } attr { name: "T" type: "type" } }
  node_def { name: "n" op: "Neg" input: "a" attr { key: "T" value { placeholder: "T" } } }
  ret { key: "y" value: "n:y:0" }
} }
"""
)


def test_polymorphic_function_attributes_take_the_call_values() -> None:
    flat = inline_functions(_graph(POLYMORPHIC))
    (neg,) = [n for n in flat.node if n.name == "call/n"]
    assert neg.attr["T"].type == pb.DT_FLOAT
    np.testing.assert_array_equal(_evaluate(flat, "call")[0], -X)
    bound = 'attr { key: "T" value { type: DT_FLOAT } } } } } }'
    unbound = POLYMORPHIC.replace(bound, "} } } }")
    with pytest.raises(GraphError, match=r"attribute 'T' is the function's attribute '\$T'"):
        inline_functions(_graph(unbound))


def test_graphdef_loader_inlines_calls(tmp_path: Path) -> None:
    path = tmp_path / "calls.pbtxt"
    path.write_text(GRAPH)
    graph = load_graph(path)
    assert graph.node("call").op == "IdentityN"
    assert not graph.proto.library.function
    assert not any(n.op in inline.CALL_OPS for n in graph.nodes.values())


def test_frozen_call_fixtures_infer_their_outputs() -> None:
    """Nothing of an inlined body (dead outputs of a specialized function, NoOps, reads) is
    mistaken for a result: the inferred fetches are the frozen graph's own outputs."""
    for name in ("call_nested", "call_defun", "call_grouped_conv"):
        fx = load_fixture(name)
        graph = load_graph(fx.graph)
        declared = [f.ref for f in load_config(fx.config).fetches]
        assert [f.ref for f in inferred_fetches(graph)] == declared, name
