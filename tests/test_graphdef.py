"""Loading GraphDefs, node wrappers, and pruning to the fetches."""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format
from graph_specs import graph, graph_def

from aotc.errors import GraphError, InputFileError
from aotc.frontend.graphdef import Graph, load_graph
from aotc.frontend.node import Node
from aotc.proto import aotc_tf_pb2 as pb
from aotc.tensor_ref import TensorRef

FIXTURES = Path(__file__).parent / "data" / "tf"


def names(nodes: list[Node]) -> list[str]:
    return [n.name for n in nodes]


def ref(text: str) -> TensorRef:
    return TensorRef.parse(text)


MLP_TEXT = """
node { name: "x" op: "Placeholder"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "shape" value { shape { dim { size: 1 } dim { size: 2 } } } } }
node { name: "w" op: "Const"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT
    tensor_shape { dim { size: 2 } dim { size: 1 } } float_val: [0.5, 2] } } } }
node { name: "y" op: "MatMul" input: ["x", "w"]
  attr { key: "T" value { type: DT_FLOAT } }
  attr { key: "transpose_a" value { b: false } } }
versions { producer: 1882 }
library { function { signature { name: "unused_fn" } } }
"""


# --------------------------------------------------------------------------- loading


def test_load_text(tmp_path: Path) -> None:
    path = tmp_path / "mlp.pbtxt"
    path.write_text(MLP_TEXT)
    g = load_graph(path)
    assert list(g.nodes) == ["x", "w", "y"]
    assert g.path == str(path)
    np.testing.assert_array_equal(g.node("w").attr("value"), [[0.5], [2.0]])


def test_load_binary_equals_text(tmp_path: Path) -> None:
    proto = text_format.Parse(MLP_TEXT, pb.GraphDef())
    (tmp_path / "mlp.pb").write_bytes(proto.SerializeToString())
    g = load_graph(str(tmp_path / "mlp.pb"))
    assert g.proto == proto
    assert names(g.prune([ref("y")])) == ["x", "w", "y"]


@pytest.mark.parametrize("binary", [True, False])
def test_unknown_suffix_tries_binary_then_text(tmp_path: Path, binary: bool) -> None:
    proto = text_format.Parse(MLP_TEXT, pb.GraphDef())
    path = tmp_path / "model.graph"
    if binary:
        path.write_bytes(proto.SerializeToString())
    else:
        path.write_text(MLP_TEXT)
    assert load_graph(path).proto == proto


def test_missing_file() -> None:
    with pytest.raises(InputFileError, match=r"nope\.pb: no such file"):
        load_graph("nope.pb")


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="is a directory"):
        load_graph(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads everything")
def test_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "locked.pb"
    path.write_bytes(b"")
    path.chmod(0)
    with pytest.raises(InputFileError, match="locked.pb: cannot read"):
        load_graph(path)


@pytest.mark.parametrize("suffix", [".pb", ".bin", ".pbtxt"])
@pytest.mark.parametrize("seed", range(20))
def test_random_bytes_are_not_a_graphdef(tmp_path: Path, suffix: str, seed: int) -> None:
    rng = random.Random(seed)
    path = tmp_path / f"junk{suffix}"
    path.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))))
    with pytest.raises(InputFileError, match=rf"junk{re.escape(suffix)}: not a .*GraphDef"):
        load_graph(path)


def test_empty_file_is_not_a_graphdef(tmp_path: Path) -> None:
    (tmp_path / "empty.pb").write_bytes(b"")
    with pytest.raises(InputFileError, match=r"empty\.pb: not a TensorFlow GraphDef \(no nodes\)"):
        load_graph(tmp_path / "empty.pb")


def test_bytes_that_parse_into_garbage_are_rejected(tmp_path: Path) -> None:
    # Field 1 (node), length 2, containing field 4 (device) = "": parses, but no name or op.
    (tmp_path / "odd.pb").write_bytes(b"\x0a\x02\x22\x00")
    with pytest.raises(InputFileError, match="not a TensorFlow GraphDef"):
        load_graph(tmp_path / "odd.pb")


def test_text_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.pbtxt"
    path.write_text('node {\n  name: "x"\n  opp: "Const"\n}\n')
    with pytest.raises(InputFileError) as info:
        load_graph(path)
    message = str(info.value)
    assert message.startswith(f"{path}:3:3: text GraphDef syntax error")
    assert '"tensorflow.NodeDef" has no field named "opp"' in message
    assert "\n" not in message


def test_binary_file_named_pbtxt(tmp_path: Path) -> None:
    path = tmp_path / "mislabeled.pbtxt"
    path.write_bytes(b"\x0a\x80\xff\xfe")
    with pytest.raises(InputFileError, match="not UTF-8"):
        load_graph(path)


def test_duplicate_node_names() -> None:
    with pytest.raises(GraphError, match="test.pbtxt: duplicate node name 'a'"):
        graph("a = Const()", "a = Const()")


# --------------------------------------------------------------------------- TensorRef


@pytest.mark.parametrize(
    ("text", "expected", "canonical"),
    [
        ("x", TensorRef("x", 0), "x"),
        ("x:0", TensorRef("x"), "x"),
        ("a/b:2", TensorRef("a/b", 2), "a/b:2"),
    ],
)
def test_tensor_ref_parse(text: str, expected: TensorRef, canonical: str) -> None:
    assert TensorRef.parse(text) == expected
    assert str(expected) == canonical


@pytest.mark.parametrize("text", ["^x", "", ":1", "x:", "x:a", "x:-1"])
def test_tensor_ref_rejects(text: str) -> None:
    with pytest.raises(GraphError):
        TensorRef.parse(text)


# --------------------------------------------------------------------------- Node


def test_node_inputs_and_control_inputs() -> None:
    g = graph("a = Split()", "b = NoOp()", "c = AddV2(a:1, a, ^b)")
    node = g.node("c")
    assert node.inputs == [TensorRef("a", 1), TensorRef("a", 0)]
    assert node.control_inputs == ["b"]
    assert node.label == "node 'c' (AddV2)"


def test_node_with_malformed_input() -> None:
    with pytest.raises(GraphError, match="node 'c' \\(Relu\\): input 'a:b'"):
        graph("c = Relu(a:b)")


ATTRS_TEXT = """
name: "n" op: "Op"
attr { key: "s" value { s: "SAME" } }
attr { key: "raw" value { s: "\\377\\000" } }
attr { key: "i" value { i: -4 } }
attr { key: "f" value { f: 0.5 } }
attr { key: "b" value { b: true } }
attr { key: "T" value { type: DT_HALF } }
attr { key: "shape" value { shape { dim { size: -1 } dim { size: 3 } } } }
attr { key: "any_shape" value { shape { unknown_rank: true } } }
attr { key: "t" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } } int_val: 7 } } }
attr { key: "fn" value { func { name: "body" } } }
attr { key: "ints" value { list { i: [1, 2, 3] } } }
attr { key: "types" value { list { type: [DT_FLOAT, DT_INT64] } } }
attr { key: "shapes" value { list { shape { dim { size: 2 } } shape { } } } }
attr { key: "strs" value { list { s: ["a", "b"] } } }
attr { key: "empty" value { list { } } }
attr { key: "unset" value { } }
"""


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("s", "SAME"),
        ("raw", b"\xff\x00"),
        ("i", -4),
        ("f", 0.5),
        ("b", True),
        ("T", np.dtype(np.float16)),
        ("shape", (-1, 3)),
        ("any_shape", None),
        ("fn", "body"),
        ("ints", [1, 2, 3]),
        ("types", [np.dtype(np.float32), np.dtype(np.int64)]),
        ("shapes", [(2,), ()]),
        ("strs", ["a", "b"]),
        ("empty", []),
        ("unset", None),
    ],
)
def test_attr_decoding(name: str, expected: object) -> None:
    node = Node(text_format.Parse(ATTRS_TEXT, pb.NodeDef()))
    value = node.attr(name)
    assert value == expected
    assert type(value) is type(expected)


def test_tensor_attr() -> None:
    node = Node(text_format.Parse(ATTRS_TEXT, pb.NodeDef()))
    np.testing.assert_array_equal(node.attr("t"), np.array([7, 7], np.int32))


def test_missing_attr() -> None:
    node = Node(text_format.Parse(ATTRS_TEXT, pb.NodeDef()))
    assert node.has_attr("T") and not node.has_attr("U")
    assert node.attr("U", default=3) == 3
    assert node.attr("U", None) is None
    with pytest.raises(GraphError, match=r"node 'n' \(Op\): missing attribute 'U'"):
        node.attr("U")


# --------------------------------------------------------------------------- consumers


def test_consumers_are_data_consumers_in_file_order() -> None:
    g = graph("a = Split()", "b = AddV2(a, a:1)", "c = Relu(a)", "d = NoOp(^a)")
    assert names(g.consumers("a")) == ["b", "c"]
    assert g.consumers("d") == []


def test_node_lookup_names_missing_node() -> None:
    with pytest.raises(GraphError, match="no node named 'zz'"):
        graph("a = Const()").node("zz")


# --------------------------------------------------------------------------- prune


def test_prune_follows_data_inputs_only() -> None:
    g = graph(
        "x = Placeholder()",
        "unused = Relu(x)",
        "init = NoOp()",
        "y = Relu(x, ^init)",
        "z = Identity(y, ^init)",
    )
    assert names(g.prune([ref("z")])) == ["x", "y", "z"]


def test_prune_order_is_topological_and_stable() -> None:
    # Consumers come first in the file; among ready nodes the earlier in the file goes first.
    g = graph("out = AddV2(b, a)", "b = Relu(c)", "a = Relu(c)", "c = Const()", "d = Const()")
    assert names(g.prune([ref("out")])) == ["c", "b", "a", "out"]


def test_prune_diamond_and_multiple_fetches() -> None:
    g = graph("p = Const()", "q = Neg(p)", "r = Exp(p)", "s = Mul(q, r)", "t = Relu(q)")
    assert names(g.prune([ref("t"), ref("s")])) == ["p", "q", "r", "s", "t"]


def test_prune_stops_at_feeds() -> None:
    g = graph("x = Placeholder()", "h = Relu(x)", "y = Exp(h)")
    assert names(g.prune([ref("y")], [ref("h")])) == ["h", "y"]


def test_fed_node_inputs_may_dangle() -> None:
    g = graph("h = Relu(missing)", "y = Exp(h)")
    assert names(g.prune([ref("y")], [ref("h")])) == ["h", "y"]


def test_partly_fed_node_is_still_computed() -> None:
    g = graph("x = Placeholder()", "s = Split(x)", "y = AddV2(s, s:1)")
    # s:1 is fed, but s:0 still needs s and therefore x.
    assert names(g.prune([ref("y")], [ref("s:1")])) == ["x", "s", "y"]
    assert names(g.prune([ref("s:1")], [ref("s:1")])) == ["s"]


def test_cycle_names_a_node_on_it() -> None:
    g = graph("x = Placeholder()", "a = AddV2(x, c)", "b = Relu(a)", "c = Relu(b)", "y = Exp(b)")
    with pytest.raises(
        GraphError,
        match=r"node 'a' \(AddV2\) is on a cycle: a <- c <- b <- a \(a TensorFlow graph cycles "
        r"only through a while loop's NextIteration into its Merge\)",
    ):
        g.prune([ref("y")])


def test_self_loop() -> None:
    with pytest.raises(GraphError, match="node 'a' .* cycle"):
        graph("a = Relu(a)").prune([ref("a")])


def test_cycle_outside_the_fetched_part_is_ignored() -> None:
    g = graph("a = Relu(b)", "b = Relu(a)", "c = Const()")
    assert names(g.prune([ref("c")])) == ["c"]


def test_dangling_input_names_consumer_and_input() -> None:
    g = graph("x = Placeholder()", "y = AddV2(x, ghost:1)")
    with pytest.raises(GraphError, match=r"node 'y' \(AddV2\): input 'ghost:1' names no node"):
        g.prune([ref("y")])


def test_dangling_control_input_is_ignored() -> None:
    assert names(graph("y = Const(^ghost)").prune([ref("y")])) == ["y"]


def test_control_reached_follows_control_inputs_and_their_inputs() -> None:
    g = graph(
        "x = Placeholder()",
        "c = Const()",
        "p = Print(c, c)",
        "a = Assign(c, p, ^q)",
        "q = NoOp()",
        "unused = PrintV2(c)",
        "y = Relu(x, ^a)",
    )
    assert names(g.control_reached([ref("y")])) == ["c", "p", "a", "q"]


def test_control_reached_leaves_out_needed_nodes_and_fed_nodes_control_inputs() -> None:
    g = graph("c = Const()", "p = PrintV2(c)", "x = Identity(c, ^p)", "y = Relu(x, ^c)")
    assert names(g.control_reached([ref("y")])) == ["p"]
    assert names(g.control_reached([ref("y")], [ref("x")])) == ["c"]


def test_control_reached_ignores_dangling_control_inputs() -> None:
    assert names(graph("y = Const(^ghost)").control_reached([ref("y")])) == []


def test_output_index_out_of_range() -> None:
    g = graph("x = Placeholder()", "y = Relu(x:1)")
    with pytest.raises(GraphError, match=r"input 'x:1'.*'x' has only 1 output"):
        g.prune([ref("y")])


def test_output_index_checked_against_output_shapes() -> None:
    proto = graph_def("x = Placeholder()", "s = Split(x)", "y = Relu(s:2)")
    shapes = proto.node[1].attr["_output_shapes"].list.shape
    shapes.add()
    shapes.add()
    with pytest.raises(GraphError, match="'s' has only 2 output"):
        Graph(proto, "g.pb").prune([ref("y")])


def test_fetch_of_missing_node() -> None:
    with pytest.raises(GraphError, match="tensor 'nope' names no node"):
        graph("x = Placeholder()").prune([ref("nope")])


# --------------------------------------------------------------------------- real fixtures


def _fixtures(pattern: str) -> list[Path]:
    return sorted(FIXTURES.glob(pattern)) if FIXTURES.is_dir() else []


@pytest.mark.parametrize("path", _fixtures("*.pb"), ids=lambda p: p.name)
def test_tf_fixture_loads_and_decodes_every_attr(path: Path) -> None:
    g = load_graph(path)
    for node in g.nodes.values():
        for name in node.proto.attr:
            node.attr(name)
    text = path.with_suffix(".pbtxt")
    if text.exists():
        assert load_graph(text).proto == g.proto
