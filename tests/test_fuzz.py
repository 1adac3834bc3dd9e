"""Property: for any mutation of a valid GraphDef or config, aotc compiles or raises AotcError.

Mutations start from the TF fixtures: drop, duplicate or rename nodes; change ops, attributes,
inputs, dtypes, shapes and tensor bytes; corrupt the serialized bytes; and break the YAML
config in every way its schema allows. Most cases run the front end (load, signature,
translation, verification); a sample also runs the full code generator. Any exception other
than AotcError is a bug in aotc. Runs are derandomized, so failures reproduce.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from fixtures import TF_DATA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aotc.driver import compile_graph, load_frontend
from aotc.errors import AotcError
from aotc.frontend.ops.registry import supported_ops
from aotc.proto import aotc_tf_pb2 as pb

FIXTURES = ["activations", "binary", "float64", "int64", "matmul", "plumbing", "reshape_cast"]
FIXTURES += ["unary"]


def _load(name: str) -> tuple[bytes, Any]:
    return (TF_DATA / f"{name}.pb").read_bytes(), yaml.safe_load(
        (TF_DATA / f"{name}.yaml").read_text()
    )


BASES = {name: _load(name) for name in FIXTURES if (TF_DATA / f"{name}.pb").exists()}
OPS = sorted(set(supported_ops()) | {"Placeholder", "Const", "NoOp", "Bogus", ""})
DIMS = st.sampled_from([0, 1, 2, 3, 4, 7, -1, -2, -5, 2**31, 2**40, 2**63 - 1])
DTYPES = st.sampled_from([0, 1, 2, 3, 4, 6, 7, 9, 10, 14, 17, 19, 20, 101, 999])
SETTINGS = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def mutate_attr(attr: pb.AttrValue, data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(["i", "f", "b", "type", "shape", "s", "list", "tensor"]))
    if kind == "i":
        attr.i = data.draw(st.integers(-(2**63), 2**63 - 1))
    elif kind == "f":
        attr.f = data.draw(st.floats(allow_nan=True, width=32))
    elif kind == "b":
        attr.b = data.draw(st.booleans())
    elif kind == "type":
        attr.type = data.draw(DTYPES)  # type: ignore[assignment]
    elif kind == "shape":
        attr.shape.CopyFrom(shape_proto(data))
    elif kind == "s":
        attr.s = data.draw(st.binary(max_size=8))
    elif kind == "list":
        attr.list.i.extend(data.draw(st.lists(st.integers(-3, 5), max_size=4)))
    else:
        mutate_tensor(attr.tensor, data)


def shape_proto(data: st.DataObject) -> pb.TensorShapeProto:
    shape = pb.TensorShapeProto()
    for d in data.draw(st.lists(DIMS, max_size=4)):
        shape.dim.add(size=d)
    shape.unknown_rank = data.draw(st.booleans()) and data.draw(st.booleans())
    return shape


def mutate_tensor(tensor: pb.TensorProto, data: st.DataObject) -> None:
    what = data.draw(st.sampled_from(["dtype", "shape", "content", "values", "truncate"]))
    if what == "dtype":
        tensor.dtype = data.draw(DTYPES)  # type: ignore[assignment]
    elif what == "shape":
        tensor.tensor_shape.CopyFrom(shape_proto(data))
    elif what == "content":
        tensor.tensor_content = data.draw(st.binary(max_size=64))
    elif what == "values":
        tensor.float_val.extend(data.draw(st.lists(st.floats(width=32), max_size=5)))
        tensor.int_val.extend(data.draw(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=5)))
    else:
        tensor.tensor_content = tensor.tensor_content[: data.draw(st.integers(0, 16))]


def mutate_node(graph: pb.GraphDef, data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(graph.node) - 1))
    node = graph.node[index]
    names = [n.name for n in graph.node] + ["nope"]
    what = data.draw(
        st.sampled_from(["drop", "dup", "op", "attr", "del_attr", "input", "add_input", "name"])
    )
    if what == "drop":
        del graph.node[index]
    elif what == "dup":
        copy = graph.node.add()
        copy.CopyFrom(node)
        if data.draw(st.booleans()):
            copy.name += "_copy"
    elif what == "op":
        node.op = data.draw(st.sampled_from(OPS))
    elif what in ("attr", "del_attr"):
        keys = sorted(node.attr) + ["T", "dtype", "shape", "value", "N", "axis"]
        key = data.draw(st.sampled_from(keys))
        if what == "del_attr":
            node.attr.pop(key, None)
        else:
            mutate_attr(node.attr[key], data)
    elif what == "name":
        node.name = data.draw(st.sampled_from(["", "x", "a:1", "^b", names[0], "n/e/w"]))
    else:
        ref = data.draw(st.sampled_from(names)) + data.draw(st.sampled_from(["", ":1", ":7", ":x"]))
        ref = ("^" if data.draw(st.booleans()) and what == "add_input" else "") + ref
        if what == "add_input" or not node.input:
            node.input.append(ref)
        else:
            node.input[data.draw(st.integers(0, len(node.input) - 1))] = ref


def mutate_bytes(raw: bytes, data: st.DataObject) -> bytes:
    what = data.draw(st.sampled_from(["truncate", "flip", "append"]))
    if what == "truncate":
        return raw[: data.draw(st.integers(0, len(raw)))]
    if what == "append":
        return raw + data.draw(st.binary(min_size=1, max_size=16))
    at = data.draw(st.integers(0, len(raw) - 1))
    return raw[:at] + bytes([raw[at] ^ data.draw(st.integers(1, 255))]) + raw[at + 1 :]


CONFIG_VALUES = st.sampled_from(
    [None, 0, -1, 1.5, "x", "nope", "a:1", "^a", "", [], [1, 2], [-1], [2**40, 2**40], {}, True]
)


def mutate_config(config: Any, data: st.DataObject) -> Any:
    config = dict(config or {})
    what = data.draw(st.sampled_from(["drop", "set", "feed", "dup", "swap", "unknown", "whole"]))
    if what == "whole":
        return data.draw(CONFIG_VALUES)
    key = data.draw(st.sampled_from(["name", "feeds", "fetches", "target"]))
    if what == "drop":
        config.pop(key, None)
    elif what == "set":
        config[key] = data.draw(CONFIG_VALUES)
    elif what == "unknown":
        config["fetchez"] = data.draw(CONFIG_VALUES)
    elif what == "dup" and config.get("feeds"):
        config["feeds"] = list(config["feeds"]) + [config["feeds"][0]]
    elif what == "swap" and config.get("feeds") and config.get("fetches"):
        config["fetches"] = list(config["fetches"]) + [config["feeds"][0]]
    elif config.get("feeds"):
        feed = dict(config["feeds"][0]) if isinstance(config["feeds"][0], dict) else {}
        feed[data.draw(st.sampled_from(["name", "shape", "dtype", "bogus"]))] = data.draw(
            st.one_of(CONFIG_VALUES, st.lists(DIMS, max_size=4), st.sampled_from(["int8", "bool"]))
        )
        config["feeds"] = [feed, *config["feeds"][1:]]
    return config


def attempt(work: Path, raw: bytes, config: Any, codegen: bool) -> None:
    """Run aotc on the case; AotcError is a fine outcome, anything else fails the test."""
    graph_path, config_path = work / "g.pb", work / "cfg.yaml"
    graph_path.write_bytes(raw)
    config_path.write_text(yaml.safe_dump(config))
    try:
        if codegen:
            compile_graph(graph_path, config_path)
        else:
            load_frontend(graph_path, config_path)
    except AotcError:
        pass


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the module's cases, made when the tests run (not at import)."""
    return tmp_path_factory.mktemp("fuzz")


def mutated_case(data: st.DataObject) -> tuple[bytes, Any]:
    raw, config = BASES[data.draw(st.sampled_from(sorted(BASES)))]
    graph = pb.GraphDef.FromString(raw)
    for _ in range(data.draw(st.integers(0, 3))):
        if graph.node:
            mutate_node(graph, data)
    raw = graph.SerializeToString(deterministic=True)
    if data.draw(st.integers(0, 9)) == 0:
        raw = mutate_bytes(raw, data) if raw else raw
    if data.draw(st.integers(0, 2)) == 0:
        config = mutate_config(config, data)
    return raw, config


@settings(SETTINGS, max_examples=2500)
@given(st.data())
def test_front_end_accepts_or_raises_aotc_error(work: Path, data: st.DataObject) -> None:
    raw, config = mutated_case(data)
    attempt(work, raw, config, codegen=False)


@settings(SETTINGS, max_examples=40)
@given(st.data())
def test_full_compile_accepts_or_raises_aotc_error(work: Path, data: st.DataObject) -> None:
    raw, config = mutated_case(data)
    attempt(work, raw, config, codegen=True)


@pytest.mark.parametrize("name", sorted(BASES))
def test_unmutated_fixtures_compile(work: Path, name: str) -> None:
    raw, config = BASES[name]
    (work / f"{name}.pb").write_bytes(raw)
    (work / f"{name}.yaml").write_text(yaml.safe_dump(config))
    load_frontend(work / f"{name}.pb", work / f"{name}.yaml")  # the seeds are valid
