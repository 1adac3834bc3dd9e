"""Attributes of the wrong kind are errors naming the node, checked where translators read them.

Every attribute of every op in a set of real TF fixtures is replaced by a value of each other
kind (string, int, float, type, list of ints, unset); loading must either succeed or raise
an AotcError, never a Python exception from inside a translator.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures import TF_DATA

from aotc.errors import AotcError, GraphError
from aotc.frontend.node import Node
from aotc.frontend.sources import load_source
from aotc.proto import aotc_tf_pb2 as pb

FIXTURES = [
    "conv2d", "gather", "batchnorm", "space_depth", "pad_concat", "shape_ops", "batch_matmul",
    "math_unary2", "conv_transpose", "reductions", "resize", "pooling",
]  # fmt: skip


def _wrong_values() -> dict[str, pb.AttrValue]:
    values = {
        "s": pb.AttrValue(s=b"zz"),
        "i": pb.AttrValue(i=-3),
        "f": pb.AttrValue(f=0.5),
        "type": pb.AttrValue(type=pb.DT_FLOAT),
        "unset": pb.AttrValue(),
    }
    values["list"] = pb.AttrValue(list=pb.AttrValue.ListValue(i=[1, 2]))
    return values


def _cases(name: str) -> list[tuple[int, str]]:
    graph = pb.GraphDef.FromString((TF_DATA / f"{name}.pb").read_bytes())
    seen, cases = set(), []
    for index, node in enumerate(graph.node):
        if node.op not in seen and node.op != "Const":
            seen.add(node.op)
            cases += [(index, key) for key in node.attr if not key.startswith("_")]
    return cases


@pytest.mark.parametrize("name", [f for f in FIXTURES if (TF_DATA / f"{f}.pb").exists()])
def test_wrong_attribute_kinds_are_aotc_errors(name: str, tmp_path: Path) -> None:
    raw = (TF_DATA / f"{name}.pb").read_bytes()
    config = TF_DATA / f"{name}.yaml"
    for index, key in _cases(name):
        for kind, value in _wrong_values().items():
            graph = pb.GraphDef.FromString(raw)
            graph.node[index].attr[key].CopyFrom(value)
            path = tmp_path / "g.pb"
            path.write_bytes(graph.SerializeToString())
            try:
                load_source(path, config if config.exists() else None)
            except AotcError:
                pass
            except Exception as err:  # noqa: BLE001 - the point: nothing else may escape
                pytest.fail(f"{name}: {graph.node[index].op}.{key} as {kind}: {err!r}")


def test_typed_reads_name_the_node_and_the_kind() -> None:
    node = Node(pb.NodeDef(name="c", op="Conv2D", attr={"strides": pb.AttrValue(i=1)}))
    with pytest.raises(
        GraphError, match=r"node 'c' \(Conv2D\): attribute 'strides' must be a list"
    ):
        node.ints_attr("strides")
    assert node.int_attr("groups", 1) == 1  # a default is returned as given
    flag = Node(pb.NodeDef(name="m", op="MatMul", attr={"transpose_a": pb.AttrValue(i=1)}))
    with pytest.raises(GraphError, match="must be a bool, got int"):
        flag.bool_attr("transpose_a")
