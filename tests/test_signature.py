"""Resolving feeds and fetches of a config against a graph."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from google.protobuf import text_format

from aotc.config import Config, Feed, Fetch, parse_config
from aotc.errors import ConfigError, UnsupportedError
from aotc.frontend.graphdef import Graph
from aotc.frontend.signature import (
    FetchSpec,
    Signature,
    TensorSpec,
    default_config_path,
    resolve_signature,
)
from aotc.proto import aotc_tf_pb2 as pb
from aotc.tensor_ref import TensorRef

F32 = np.dtype(np.float32)


def placeholder(name: str, dims: list[int] | None, dtype: str = "DT_FLOAT") -> str:
    if dims is None:
        shape = "shape { unknown_rank: true }"
    else:
        shape = "shape { " + " ".join(f"dim {{ size: {d} }}" for d in dims) + " }"
    return f"""node {{ name: "{name}" op: "Placeholder"
      attr {{ key: "dtype" value {{ type: {dtype} }} }}
      attr {{ key: "shape" value {{ {shape} }} }} }}"""


def op(name: str, op_type: str, *inputs: str, attrs: str = "") -> str:
    listed = " ".join(f'input: "{i}"' for i in inputs)
    return f'node {{ name: "{name}" op: "{op_type}" {listed} {attrs} }}'


def graph(*nodes: str, path: str = "models/my-net.pb") -> Graph:
    return Graph(text_format.Parse("\n".join(nodes), pb.GraphDef()), path)


def config(text: str) -> Config:
    return parse_config(yaml.safe_load(text), "net.yaml")


T_FLOAT = 'attr { key: "T" value { type: DT_FLOAT } }'

# x -> relu -> out; y unused by out; an init NoOp and a lone Const.
BASIC = (
    placeholder("x", [2, 3]),
    placeholder("y", [4]),
    op("relu", "Relu", "x", attrs=T_FLOAT),
    op("init", "NoOp"),
    op("out", "Identity", "relu", "^init", attrs=T_FLOAT),
    op("stray", "Const"),
    op("ydbl", "AddV2", "y", "y", attrs=T_FLOAT),
)


def test_everything_inferred() -> None:
    sig = resolve_signature(graph(*BASIC), Config())
    assert sig == Signature(
        name="my_net",
        feeds=(
            TensorSpec("x", TensorRef("x"), F32, (2, 3)),
            TensorSpec("y", TensorRef("y"), F32, (4,)),
        ),
        fetches=(FetchSpec("out", TensorRef("out")), FetchSpec("ydbl", TensorRef("ydbl"))),
    )


def test_inferred_feeds_are_only_those_the_fetches_need() -> None:
    sig = resolve_signature(graph(*BASIC), config("fetches: [out]"))
    assert [f.name for f in sig.feeds] == ["x"]


def test_inferred_fetches_skip_control_consumed_nodes() -> None:
    g = graph(placeholder("x", [1]), op("pivot", "Identity", "x"), op("z", "Neg", "x", "^pivot"))
    assert [f.name for f in resolve_signature(g, Config()).fetches] == ["z"]


def test_no_outputs_to_infer() -> None:
    with pytest.raises(ConfigError, match="my-net.pb: cannot infer the outputs.*fetches:"):
        resolve_signature(graph(placeholder("x", [1]), op("n", "NoOp")), Config())


def test_name_from_config_or_graph_path() -> None:
    g = graph(*BASIC)
    assert resolve_signature(g, config("name: 2fast")).name == "m2fast"
    assert resolve_signature(g, Config(), "other/thing.v1.pbtxt").name == "thing_v1"


def test_unknown_placeholder_shape_needs_config() -> None:
    g = graph(placeholder("x", [-1, 3]), op("out", "Relu", "x"))
    with pytest.raises(ConfigError, match=r"feed 'x': the graph's shape is \[\?, 3\].*`shape:`"):
        resolve_signature(g, Config())


def test_unknown_rank_placeholder_needs_config() -> None:
    g = graph(placeholder("x", None), op("out", "Relu", "x"))
    with pytest.raises(ConfigError, match="feed 'x': the graph's shape is unknown"):
        resolve_signature(g, Config())


def test_config_shape_fills_unknown_dims() -> None:
    g = graph(placeholder("x", [-1, 3]), op("out", "Relu", "x"))
    sig = resolve_signature(g, config("feeds: [{name: x, shape: [8, 3]}]"))
    assert sig.feeds == (TensorSpec("x", TensorRef("x"), F32, (8, 3)),)


@pytest.mark.parametrize("shape", ["[8, 4]", "[8]", "[1, 8, 3]"])
def test_config_shape_must_fit_the_graph(shape: str) -> None:
    g = graph(placeholder("x", [-1, 3]), op("out", "Relu", "x"))
    with pytest.raises(ConfigError, match=r"net.yaml: feeds\[0\] 'x': shape .* \[\?, 3\]"):
        resolve_signature(g, config(f"feeds: [{{name: x, shape: {shape}}}]"))


def test_config_shape_for_unknown_rank() -> None:
    g = graph(placeholder("x", None), op("out", "Relu", "x"))
    sig = resolve_signature(g, config("feeds: [{name: x, shape: [2, 2, 2]}]"))
    assert sig.feeds[0].shape == (2, 2, 2)


def test_dtype_conflict() -> None:
    g = graph(*BASIC)
    with pytest.raises(ConfigError, match=r"feeds\[0\] 'x': config dtype int32 disagrees.*float32"):
        resolve_signature(g, config("feeds: [{name: x, dtype: int32}]\nfetches: [out]"))


def test_missing_feed_node_names_feed_and_config() -> None:
    with pytest.raises(ConfigError, match=r"net.yaml: feeds\[1\] 'z': no node named 'z'"):
        resolve_signature(graph(*BASIC), config("feeds: [x, z]"))


def test_missing_fetch_node() -> None:
    with pytest.raises(ConfigError, match=r"net.yaml: fetches\[0\] 'nope:1': no node named"):
        resolve_signature(graph(*BASIC), config("fetches: ['nope:1']"))


def test_fetch_output_index_out_of_range() -> None:
    with pytest.raises(ConfigError, match="'x' .Placeholder. has only 1 output"):
        resolve_signature(graph(*BASIC), config("fetches: ['x:1']"))


def test_unfed_placeholder() -> None:
    g = graph(*BASIC)
    with pytest.raises(ConfigError, match=r"node 'y' \(Placeholder\) is needed.*not fed"):
        resolve_signature(g, config("feeds: [x]\nfetches: [out, ydbl]"))


def test_feeding_an_inner_tensor() -> None:
    g = graph(*BASIC)
    sig = resolve_signature(g, config("feeds: [{name: relu, shape: [2, 3]}]\nfetches: [out]"))
    # dtype from the node's T attr; x is no longer needed, so it is no feed.
    assert sig.feeds == (TensorSpec("relu", TensorRef("relu"), F32, (2, 3)),)


def test_inner_feed_without_dtype_anywhere() -> None:
    g = graph(placeholder("x", [1]), op("s", "Split", "x"), op("out", "Neg", "s:1"))
    with pytest.raises(ConfigError, match="feeds\\[0\\] 's:1'.*has no dtype.*`dtype:`"):
        resolve_signature(g, config("feeds: [{name: 's:1', shape: [1]}]\nfetches: [out]"))


def test_inner_feed_without_shape() -> None:
    g = graph(*BASIC)
    with pytest.raises(ConfigError, match="feeds\\[0\\] 'relu'.*shape is unknown"):
        resolve_signature(g, config("feeds: [relu]\nfetches: [out]"))


def test_programmatic_config_without_path() -> None:
    g = graph(*BASIC)
    cfg = Config(feeds=(Feed(TensorRef("q")),), fetches=(Fetch(TensorRef("out")),))
    with pytest.raises(ConfigError, match="models/my-net.pb: feed 'q': no node named 'q'"):
        resolve_signature(g, cfg)


def test_unsupported_placeholder_dtype() -> None:
    g = graph(placeholder("s", [1], "DT_STRING"), op("out", "StringLength", "s"))
    with pytest.raises(UnsupportedError, match="node 's' .Placeholder.*DT_STRING"):
        resolve_signature(g, Config())


def test_complex_placeholder_is_a_complex_feed() -> None:
    g = graph(placeholder("c", [1], "DT_COMPLEX64"), op("out", "Real", "c"))
    (feed,) = resolve_signature(g, Config()).feeds
    assert (feed.name, feed.dtype, feed.shape) == ("c", np.dtype(np.complex64), (1,))


def test_default_config_path(tmp_path: Path) -> None:
    graph_path = tmp_path / "net.pb"
    assert default_config_path(graph_path) is None
    (tmp_path / "net.yaml").write_text("name: n\n")
    assert default_config_path(graph_path) == tmp_path / "net.yaml"
    assert default_config_path(str(tmp_path / "net.pbtxt")) == tmp_path / "net.yaml"
