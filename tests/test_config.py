"""YAML config loading and validation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aotc.abi import c_identifier
from aotc.config import Config, Feed, Fetch, Target, load_config
from aotc.errors import ConfigError, InputFileError
from aotc.tensor_ref import TensorRef

FULL = """\
name: mlp                  # C identifier prefix
feeds:
  - name: x
    shape: [1, 784]
    dtype: float32
  - name: split:1
fetches:
  - name: y
  - probs
target:
  triple: x86_64-unknown-linux-gnu
  cpu: skylake-avx512
  features: "+avx2,+fma"
"""


def write(tmp_path: Path, text: str, name: str = "model.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(tmp_path / "model.yaml") + ":")
    return message


def test_full_config(tmp_path: Path) -> None:
    path = write(tmp_path, FULL)
    config = load_config(path)
    assert config == Config(
        name="mlp",
        feeds=(
            Feed(TensorRef("x"), (1, 784), np.dtype(np.float32)),
            Feed(TensorRef("split", 1)),
        ),
        fetches=(Fetch(TensorRef("y")), Fetch(TensorRef("probs"))),
        target=Target("x86_64-unknown-linux-gnu", "skylake-avx512", "+avx2,+fma"),
        path=str(path),
    )


def test_everything_is_optional(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "name: m\n"))
    assert (config.feeds, config.fetches, config.target) == ((), (), Target())


def test_empty_file(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "# nothing\n")) == Config(path=str(tmp_path / "model.yaml"))


def test_scalar_shape_and_explicit_nulls(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "feeds: [{name: s, shape: [], dtype: null}]\n"))
    assert config.feeds == (Feed(TensorRef("s"), ()),)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "- 1\n- 2\n",
            "expected a mapping with keys name, feeds, fetches, variables, target, cpp_class, "
            "multicore; got [1, 2]",
        ),
        ("just a string\n", "expected a mapping"),
        (
            "feed: [x]\n",
            "unknown key 'feed' (expected one of: name, feeds, fetches, variables, target, "
            "cpp_class, multicore); did you mean 'feeds'?",
        ),
        ("feeds: [{name: x, shap: [1]}]\n", "feeds[0]: unknown key 'shap'"),
        ("fetches: [{name: y, dtype: float32}]\n", "fetches[0]: unknown key 'dtype'"),
        ("target: {arch: x86}\n", "target: unknown key 'arch'"),
        ("name: 3\n", "name: expected a non-empty string, got 3"),
        ("name: ''\n", "name: expected a non-empty string, got ''"),
        ("feeds: x\n", "feeds: expected a list, got 'x'"),
        ("fetches: {name: y}\n", "fetches: expected a list, got a mapping"),
        ("feeds: [{shape: [1]}]\n", "feeds[0]: missing required key 'name'"),
        ("feeds: [7]\n", "feeds[0]: expected a mapping"),
        ("feeds: [{name: 7}]\n", "feeds[0].name: expected a non-empty string, got 7"),
        (
            "feeds: [x, {name: y, shape: abc}]\n",
            "feeds[1].shape: expected a list of non-negative integers, got 'abc'",
        ),
        ("feeds: [{name: x, shape: [1, -1]}]\n", "feeds[0].shape: expected a list of non-negative"),
        ("feeds: [{name: x, shape: [true]}]\n", "feeds[0].shape: expected a list of non-negative"),
        ("feeds: [{name: x, shape: [1.5]}]\n", "feeds[0].shape: expected a list of non-negative"),
        (
            "feeds: [{name: x, dtype: float}]\n",
            "feeds[0].dtype: expected one of float16, float32, float64, int8, int16, int32, int64, "
            "uint8, uint16, uint32, uint64, bool, complex64, complex128, bfloat16; got 'float'",
        ),
        ("feeds: [{name: x, dtype: string}]\n", "feeds[0].dtype: expected one of"),
        ("feeds: [{name: '^x'}]\n", "feeds[0].name: '^x' is a control input"),
        ("fetches: ['y:z']\n", "fetches[0].name: 'y:z' is not a tensor name"),
        ("feeds: [x, 'x:0']\n", "feeds[1].name: duplicate feed 'x' (same as feeds[0])"),
        ("fetches: [a, b, a]\n", "fetches[2].name: duplicate fetch 'a' (same as fetches[0])"),
        ("feeds: [x]\nfetches: [y, 'x:0']\n", "fetches[1].name: 'x' is also a feed (feeds[0])"),
        ("target: {cpu: 5}\n", "target.cpu: expected a non-empty string, got 5"),
        ("target: [host]\n", "target: expected a mapping"),
    ],
)
def test_validation_errors(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in error(tmp_path, text)


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    message = error(tmp_path, "name: m\nfeeds:\n  - name: x\n   shape: [1\n")
    assert message.startswith(f"{tmp_path / 'model.yaml'}:4:")
    assert "YAML syntax error" in message


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    message = error(tmp_path, "name: a\nfeeds: [x]\nname: b\n")
    assert message == f"{tmp_path / 'model.yaml'}:3:1: YAML syntax error: duplicate key 'name'"


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="nope.yaml: no such config file"):
        load_config(tmp_path / "nope.yaml")


def test_config_path_is_a_directory(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="is a directory"):
        load_config(tmp_path)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    path.write_bytes(b"name: \xff\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mlp", "mlp"),
        ("my-model.v2", "my_model_v2"),
        ("3layers", "m3layers"),
        ("_private", "m_private"),
        ("__x", "m__x"),
        ("int", "int_"),
        ("class", "class_"),
        ("", "model"),
        ("naïve", "na_ve"),
    ],
)
def test_c_identifier(text: str, expected: str) -> None:
    assert c_identifier(text) == expected
