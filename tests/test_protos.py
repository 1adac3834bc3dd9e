"""The committed aotc/proto modules match protos/ and TensorFlow's wire format."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from aotc.proto import aotc_tf_pb2 as pb

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "aotc" / "proto"


def _gen_protos() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_protos", ROOT / "tools" / "gen_protos.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_modules_are_fresh(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools")
    fresh = {p.name: p.read_text() for p in _gen_protos().generate(tmp_path)}
    committed = {p.name: p.read_text() for p in sorted(COMMITTED.glob("*_pb2.py*"))}
    assert sorted(fresh) == sorted(committed), "run: python tools/gen_protos.py"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"{stale} are stale; run: python tools/gen_protos.py"


def test_schema_uses_its_own_package() -> None:
    # A `tensorflow` package would collide with TensorFlow's descriptors in one process.
    assert pb.DESCRIPTOR.package == "aotc.tf"


@pytest.mark.parametrize(
    ("message", "field", "number"),
    [
        (pb.GraphDef, "node", 1),
        (pb.GraphDef, "library", 2),
        (pb.GraphDef, "versions", 4),
        (pb.NodeDef, "attr", 5),
        (pb.NodeDef, "experimental_debug_info", 6),
        (pb.AttrValue, "list", 1),
        (pb.AttrValue, "func", 10),
        (pb.TensorProto, "tensor_content", 4),
        (pb.TensorProto, "half_val", 13),
        (pb.TensorProto, "uint64_val", 17),
        (pb.TensorProto, "float8_val", 18),
        (pb.TensorShapeProto, "unknown_rank", 3),
    ],
)
def test_tensorflow_field_numbers(message: Any, field: str, number: int) -> None:
    assert message.DESCRIPTOR.fields_by_name[field].number == number


def test_tensorflow_dtype_numbers() -> None:
    assert (pb.DT_FLOAT, pb.DT_HALF, pb.DT_UINT64, pb.DT_FLOAT_REF) == (1, 19, 23, 101)


def test_binary_round_trip_keeps_library_and_debug_info() -> None:
    graph = pb.GraphDef()
    graph.node.add(name="x", op="Placeholder").experimental_debug_info.original_node_names.append(
        "orig"
    )
    graph.library.function.add().signature.name = "f"
    graph.versions.producer = 1882
    assert pb.GraphDef.FromString(graph.SerializeToString()) == graph
