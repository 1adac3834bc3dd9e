"""SavedModels written by TensorFlow: loading, freezing, signatures, and compiled results."""

from __future__ import annotations

import shutil
from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner
from fixtures import assert_close

import aotc
from aotc.cli import main, parse_shape_option
from aotc.config import parse_config
from aotc.errors import ConfigError, GraphError
from aotc.frontend.checkpoint import Checkpoint
from aotc.frontend.formats import is_savedmodel
from aotc.frontend.freeze import _checkpoint_keys
from aotc.frontend.graphdef import Graph
from aotc.frontend.inline import inline_functions
from aotc.frontend.object_graph import captured_variable_keys
from aotc.frontend.options import SourceOptions
from aotc.frontend.savedmodel import VARIABLE_PREFIX, load_savedmodel, read_savedmodel
from aotc.frontend.sources import load_source
from aotc.frontend.translate import translate_graph
from aotc.hlo.evaluate import evaluate

SAVED = Path(__file__).parent / "data" / "savedmodel"


def _expected(name: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    data = np.load(SAVED / f"{name}.npz")
    args = sorted(k for k in data.files if k.startswith("arg"))
    results = sorted(k for k in data.files if k.startswith("result"))
    return [data[k] for k in args], [data[k] for k in results]


def _evaluate(name: str, **kwargs: object) -> list[np.ndarray]:
    model = load_savedmodel(SAVED / name, SourceOptions(**kwargs))  # type: ignore[arg-type]
    args, _ = _expected(name)
    out = evaluate(translate_graph(model.graph, model.signature), args)
    return out if isinstance(out, list) else [out]


def test_is_savedmodel() -> None:
    assert is_savedmodel(SAVED / "module")
    assert not is_savedmodel(SAVED / "module.npz")
    assert not is_savedmodel(SAVED)


def test_tf_module_signature_names_and_order() -> None:
    model = load_savedmodel(SAVED / "module")
    sig = model.signature
    assert sig.name == "module"
    assert [(f.name, f.shape, str(f.dtype)) for f in sig.feeds] == [("x", (2, 4), "float32")]
    assert [f.name for f in sig.fetches] == ["y", "z"]  # sorted output keys
    ops = {n.op for n in model.graph.nodes.values()}
    assert "StatefulPartitionedCall" not in ops and "PartitionedCall" not in ops


def test_tf_module_matches_tensorflow() -> None:
    _, expected = _expected("module")
    for got, want in zip(_evaluate("module"), expected, strict=True):
        assert_close(got, want)


def test_dynamic_signature_needs_and_takes_a_shape() -> None:
    with pytest.raises(ConfigError, match=r"input 'x' has shape \[\?, 4\].*--shape x=1,4"):
        load_savedmodel(SAVED / "module", SourceOptions(signature="dynamic"))
    _, expected = _expected("module")
    got = _evaluate("module", signature="dynamic", shapes={"x": (2, 4)})
    for g, want in zip(got, expected, strict=True):
        assert_close(g, want)


def test_keras_model_matches_tensorflow() -> None:
    _, expected = _expected("keras")
    (got,) = _evaluate("keras", shapes={"features": (3, 8)})
    assert_close(got, expected[0])


KERAS_3 = {"keras_conv": {"image": (2, 8, 8, 3)}, "keras_module": {}}


@pytest.mark.parametrize("name", KERAS_3)
def test_keras_3_savedmodels_compile_and_match_tensorflow(name: str) -> None:
    """``model.export`` and ``tf.saved_model.save`` of a tf.Module holding a Keras 3 model:
    the variables the signature reads are found through the object graph."""
    args, expected = _expected(name)
    (got,) = _evaluate(name, shapes=KERAS_3[name])
    assert_close(got, expected[0])
    fn = aotc.compile(SAVED / name, shapes=KERAS_3[name], cache=False)
    assert_close(fn(args[0]), expected[0])


def test_tf1_savedmodel_with_a_v1_loop_compiles_and_matches_tensorflow() -> None:
    """A TF1 SavedModel's v1 while frame is functionalized after its variable reads are
    frozen, so the frozen weight enters the loop body as a constant."""
    args, expected = _expected("tf1_loop")
    (got,) = _evaluate("tf1_loop")
    assert_close(got, expected[0])
    assert_close(aotc.compile(SAVED / "tf1_loop", cache=False)(args[0]), expected[0])


def test_keras_3_handles_are_not_the_ones_the_restore_function_assigns() -> None:
    """Why the object graph is needed: the restore ops assign other handles (Variable_N)."""
    saved = read_savedmodel(SAVED / "keras_module")
    graph = Graph(inline_functions(saved.meta_graphs[0].graph_def), "saved_model.pb")
    restored = set(_checkpoint_keys(graph))
    checkpoint = Checkpoint(SAVED / "keras_module" / VARIABLE_PREFIX)
    captured = captured_variable_keys(saved.meta_graphs[0], checkpoint)
    assert [n.rsplit("/", 1)[1] for n in sorted(captured)] == ["bias", "kernel"] * 2
    assert not restored & set(captured)
    assert all(k.endswith("/.ATTRIBUTES/VARIABLE_VALUE") and k in checkpoint.entries
               for k in captured.values())  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"signature": "nope"}, r"no signature 'nope'; it has: serve, serving_default"),
        ({"tags": ("train",)}, r"no MetaGraphDef with tags 'train'; it has: serve .*--tag"),
        ({"shapes": {"feature": (1, 8)}}, r"--shape names feature, not an input .* features"),
        ({"shapes": {"features": (1, 9)}}, r"--shape features=1,9 does not fit \[\?, 8\]"),
    ],
)
def test_errors_name_the_choice_and_the_alternatives(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_savedmodel(SAVED / "keras", SourceOptions(**kwargs))


def test_missing_checkpoint_value_is_an_error(tmp_path: Path) -> None:
    shutil.copytree(SAVED / "module", tmp_path / "m")
    shutil.rmtree(tmp_path / "m" / "variables")
    with pytest.raises(Exception, match=r"variables\.index: no such file"):
        load_savedmodel(tmp_path / "m")


def test_not_a_savedmodel(tmp_path: Path) -> None:
    (tmp_path / "saved_model.pb").write_bytes(b"\xff\xff\xff")
    with pytest.raises(Exception, match="saved_model.pb does not parse"):
        load_savedmodel(tmp_path)


def test_config_may_give_input_shapes_but_not_fetches(tmp_path: Path) -> None:
    config = tmp_path / "k.yaml"
    config.write_text("name: clf\nfeeds:\n  - name: features\n    shape: [3, 8]\n")
    source = load_source(SAVED / "keras", config)
    assert source is not None
    assert source.signature.name == "clf" and source.signature.feeds[0].shape == (3, 8)
    config.write_text("fetches: [output_0]\n")
    with pytest.raises(ConfigError, match="outputs come from its signature"):
        load_source(SAVED / "keras", config, SourceOptions(shapes={"features": (1, 8)}))
    assert parse_config({"name": "x"}).name == "x"


def test_shape_option_parsing() -> None:
    assert parse_shape_option("x=1,224,224,3") == ("x", (1, 224, 224, 3))
    assert parse_shape_option("scalar=") == ("scalar", ())
    with pytest.raises(click.BadParameter, match="NAME=D0,D1"):
        parse_shape_option("x=1,-1")


def test_compiled_savedmodels_match_tensorflow() -> None:
    args, expected = _expected("module")
    y, z = aotc.compile(SAVED / "module")(x=args[0])
    assert_close(y, expected[0])
    assert_close(z, expected[1])
    args, expected = _expected("keras")
    fn = aotc.compile(SAVED / "keras", shapes={"features": (3, 8)})
    assert_close(fn(args[0]), expected[0])
    assert "KERAS_ARG0_BYTES 96" in fn.header.replace("  ", " ")


def test_cli_compiles_a_savedmodel_directory(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "k"
    cmd = ["compile", str(SAVED / "keras"), "-o", str(out), "--shape", "features=1,8"]
    result = runner.invoke(main, cmd)
    assert result.exit_code == 0, result.output
    assert "features: float32[1,8]" in (tmp_path / "k.h").read_text()
    result = runner.invoke(main, ["compile", str(SAVED / "keras"), "-o", str(out)])
    assert result.exit_code == 1
    assert "--shape features=1,8" in result.output


def test_graph_error_for_unknown_function() -> None:
    from aotc.frontend.inline import inline_functions
    from aotc.proto import aotc_tf_pb2 as pb

    graph = pb.GraphDef()
    call = graph.node.add(name="call", op="StatefulPartitionedCall")
    call.attr["f"].func.name = "missing"
    with pytest.raises(GraphError, match="calls function 'missing'"):
        inline_functions(graph)
