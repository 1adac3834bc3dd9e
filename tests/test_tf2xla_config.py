"""tfcompile configs (``tensorflow.tf2xla.Config``) as aotc configs (issue 12, item 1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from c_harness import run_compiled
from click.testing import CliRunner
from google.protobuf import text_format

from aotc.cli import main
from aotc.driver import compile_graph
from aotc.errors import ConfigError
from aotc.frontend.tf2xla_config import field_lines, load_config_file
from aotc.proto import aotc_tf2xla_pb2 as tf2xla
from aotc.tensor_ref import TensorRef

ROOT = Path(__file__).resolve().parent.parent
MLP = ROOT / "examples" / "mlp"
EXAMPLE = ROOT / "configs" / "mlp.config.pbtxt"
FROM_TF = Path(__file__).parent / "data" / "tfcompile" / "mlp.config.pb"


def feeds_and_fetches(path: Path) -> list[tuple[Any, ...]]:
    config = load_config_file(path)
    return [(f.ref, f.shape, f.dtype, f.c_name) for f in config.feeds] + [
        (f.ref, f.c_name, f.shape, f.dtype) for f in config.fetches
    ]


# --------------------------------------------------------------------------- the schema


def test_schema_uses_its_own_package() -> None:
    assert tf2xla.DESCRIPTOR.package == "aotc.tf2xla"


@pytest.mark.parametrize(
    ("message", "field", "number"),
    [
        (tf2xla.TensorId, "node_name", 1), (tf2xla.TensorId, "output_index", 2),
        (tf2xla.Feed, "id", 1), (tf2xla.Feed, "shape", 2), (tf2xla.Feed, "name", 3),
        (tf2xla.Feed, "type", 4), (tf2xla.Fetch, "id", 1), (tf2xla.Fetch, "name", 2),
        (tf2xla.Fetch, "shape", 3), (tf2xla.Fetch, "type", 4),
        (tf2xla.Variable, "node_name", 1), (tf2xla.Variable, "name", 2),
        (tf2xla.Variable, "shape", 3), (tf2xla.Variable, "type", 4),
        (tf2xla.Variable, "readonly", 5), (tf2xla.Config, "feed", 1),
        (tf2xla.Config, "fetch", 2), (tf2xla.Config, "variable", 3),
    ],
)  # fmt: skip
def test_tensorflow_field_numbers(message: Any, field: str, number: int) -> None:
    assert message.DESCRIPTOR.fields_by_name[field].number == number


def test_binary_written_by_tensorflow_reads_as_the_text_example() -> None:
    # tests/data/tfcompile/mlp.config.pb: configs/mlp.config.pbtxt parsed and serialized by
    # TensorFlow's own tf2xla_pb2 (make_tfcompile_fixtures.py).
    assert feeds_and_fetches(FROM_TF) == feeds_and_fetches(EXAMPLE)
    assert feeds_and_fetches(EXAMPLE) == [
        (TensorRef("x"), (1, 784), np.dtype(np.float32), "image"),
        (TensorRef("y"), "probs", None, None),
    ]


# --------------------------------------------------------------------------- compiling


def test_example_config_compiles_with_its_c_names_and_matches_tensorflow() -> None:
    model = compile_graph(MLP / "mlp.pb", EXAMPLE).model
    assert "int mlp_run(const float *image, float *probs, void *temp);" in model.header
    assert '{"image", "float32", 2,' in model.header
    expected = np.load(MLP / "expected.npz")
    for (probs,) in run_compiled(model, [expected["x"]]):
        np.testing.assert_allclose(probs, expected["y"], rtol=1e-5, atol=1e-6)


def test_feed_output_index_and_fetch_checks(tmp_path: Path) -> None:
    config = tmp_path / "m.config.pbtxt"
    config.write_text(
        'feed { id { node_name: "x" output_index: 0 } shape { dim { size: 1 } dim { size: 784 } }'
        ' }\nfetch { id { node_name: "y" } shape { dim { size: -1 } dim { size: 10 } }'
        " type: DT_FLOAT }\n"
    )
    model = compile_graph(MLP / "mlp.pb", config).model
    assert [a.name for a in model.args] == ["x"] and [r.name for r in model.results] == ["y"]


# --------------------------------------------------------------------------- errors

FEED_X = 'feed {\n  id { node_name: "x" }\n  shape { dim { size: 1 } dim { size: 784 } }\n}\n'
FETCH_Y = 'fetch {\n  id { node_name: "y" }\n}\n'


def feed_x(line: str) -> str:
    """FEED_X with ``line`` as its last line (line 4)."""
    return FEED_X.replace("}\n}", f"}}\n  {line}\n}}")


def fetch_y(line: str) -> str:
    return FETCH_Y.replace("}\n}", f"}}\n  {line}\n}}")


NO_FIELD = 'Message type "tensorflow.tf2xla.TensorId" has no field named "nodename"'
DECLARED = "fetch[0] 'y': the config declares"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (FEED_X + "fetch {\n  id { nodename: 1 }\n}\n",
         f":6:8: tfcompile config syntax error: {NO_FIELD}"),
        (FEED_X.replace('"x"', '""') + FETCH_Y, ":2: feed[0].id.node_name: missing"),
        (FEED_X + FETCH_Y.replace('" }', '" output_index: -2 }'),
         ":6: fetch[0].id.output_index: must be >= 0"),
        (FEED_X.replace("784", "-1") + FETCH_Y, ":3: feed[0].shape.dim[1].size: unknown (-1)"),
        (FEED_X.replace("dim { size: 1 }", "dim { size: -3 }") + FETCH_Y,
         ":3: feed[0].shape.dim[0].size: negative (-3)"),
        (FEED_X.replace("dim { size: 1 } dim { size: 784 }", "unknown_rank: true") + FETCH_Y,
         ":3: feed[0].shape: unknown rank"),
        (feed_x("type: DT_STRING") + FETCH_Y, ":4: feed[0].type: DT_STRING is not a dtype"),
        (feed_x('name: "for"') + FETCH_Y, ":4: feed[0].name: 'for' is not a valid C identifier"),
        (feed_x('name: "my-x"') + FETCH_Y, ":4: feed[0].name: 'my-x' is not"),
        (feed_x('name: "a"') + fetch_y('name: "a"'),
         ":8: fetch[0].name: duplicate C name 'a' (same as feed[0])"),
        (FEED_X + FEED_X + FETCH_Y, ":6: feed[1].id: duplicate feed 'x' (same as feed[0])"),
        (FETCH_Y + FETCH_Y, ":5: fetch[1].id: duplicate fetch 'y' (same as fetch[0])"),
        (FEED_X + FETCH_Y.replace('"y"', '"x"'), ":6: fetch[0].id: 'x' is also a feed (feed[0])"),
        (FEED_X, ": fetch: missing: list the results"),
        (FETCH_Y + 'variable {\n  node_name: "v"\n}\n', ":4: variable[0] 'v': no node named 'v'"),
        (FEED_X.replace("784", "783") + FETCH_Y,
         ":1: feed[0] 'x': shape [1, 783] does not fit"),
        (FEED_X + FETCH_Y.replace('"y"', '"ghost"'), ":5: fetch[0] 'ghost': no node named 'ghost'"),
        (FEED_X + fetch_y("type: DT_INT32"),
         f":5: {DECLARED} int32 but the graph computes float32[1, 10]"),
        (FEED_X + fetch_y("shape { dim { size: 10 } }"),
         f":5: {DECLARED} float32[10] but the graph"),
    ],
)  # fmt: skip
def test_errors_name_file_line_and_field(tmp_path: Path, text: str, needle: str) -> None:
    config = tmp_path / "m.config.pbtxt"
    config.write_text(text)
    with pytest.raises(ConfigError) as info:
        compile_graph(MLP / "mlp.pb", config)
    assert str(info.value).startswith(str(config)), info.value
    assert needle in str(info.value), info.value


def test_binary_errors_name_the_file_and_field(tmp_path: Path) -> None:
    config = tmp_path / "m.config.pb"
    proto = tf2xla.Config()
    proto.fetch.add().id.node_name = "y"
    proto.fetch.add().id.output_index = 1
    config.write_bytes(proto.SerializeToString())
    with pytest.raises(ConfigError, match=r"m\.config\.pb: fetch\[1\]\.id\.node_name: missing"):
        load_config_file(config)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"\x0a\x05garbage", "Wire format was corrupt"),
        (b"\x48\x01", "fields tensorflow.tf2xla.Config does not define"),  # field 9
    ],
)
def test_a_file_that_is_not_a_binary_config(tmp_path: Path, data: bytes, needle: str) -> None:
    config = tmp_path / "m.config.pb"
    config.write_bytes(data)
    with pytest.raises(ConfigError, match="not a binary tfcompile config") as info:
        load_config_file(config)
    assert needle in str(info.value)


def test_text_config_that_is_not_utf8(tmp_path: Path) -> None:
    config = tmp_path / "m.config.pbtxt"
    config.write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="byte 0 is not UTF-8"):
        load_config_file(config)


def test_field_lines_follow_nesting_lists_and_angle_brackets() -> None:
    text = (
        "# comment { with braces\n"
        'feed { id { node_name: "a}" }\n'
        "  shape { dim: [{ size: 3 },\n {size: 4}] } }\n"
        "feed <\n  id: { output_index: 1 }\n>\n"
    )
    text_format.Parse(text, tf2xla.Config())  # field_lines reads text that parsed
    assert field_lines(text) == {
        "feed[0]": 2, "feed[0].id[0]": 2, "feed[0].id[0].node_name[0]": 2,
        "feed[0].shape[0]": 3, "feed[0].shape[0].dim[0]": 3, "feed[0].shape[0].dim[0].size[0]": 3,
        "feed[0].shape[0].dim[1]": 4, "feed[0].shape[0].dim[1].size[0]": 4,
        "feed[1]": 5, "feed[1].id[0]": 6, "feed[1].id[0].output_index[0]": 6,
    }  # fmt: skip


# --------------------------------------------------------------------------- CLI


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.mark.parametrize("suffix", [".config.pbtxt", ".config.pb"])
def test_emit_config_in_tfcompile_format_compiles(tmp_path: Path, suffix: str) -> None:
    config = tmp_path / f"start{suffix}"
    code, output = invoke("inspect", str(MLP / "mlp.pb"), "--emit-config", str(config), "-q")
    assert code == 0, output
    if suffix.endswith("pbtxt"):
        assert config.read_text().startswith("# Text form of tensorflow.tf2xla.Config proto.\n")
    assert [f.ref for f in load_config_file(config).feeds] == [TensorRef("x")]
    code, output = invoke(
        "compile", str(MLP / "mlp.pb"), "-c", str(config), "-o", str(tmp_path / "m")
    )
    assert code == 0, output


def test_emitted_config_keeps_unknown_dims_for_the_user(tmp_path: Path) -> None:
    graph = tmp_path / "g.pbtxt"
    graph.write_text(
        'node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }\n'
        '  attr { key: "shape" value { shape { dim { size: -1 } dim { size: 3 } } } } }\n'
        'node { name: "y" op: "Relu" input: "x" attr { key: "T" value { type: DT_FLOAT } } }\n'
    )
    config = tmp_path / "g.config.pbtxt"
    assert invoke("inspect", str(graph), "--emit-config", str(config), "-q")[0] == 0
    assert "# feed 'x': give the unknown dims of its shape\n" in config.read_text()
    code, output = invoke("compile", str(graph), "-c", str(config), "-o", str(tmp_path / "g"))
    assert code == 1 and "feed[0].shape.dim[0].size: unknown (-1)" in output
    assert len(output.strip().splitlines()) == 1 and output.startswith("aotc: error: ")
