"""HLO text printed by JAX and TensorFlow, compiled and run against their own outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from fixtures import HLO_DATA, assert_close, load_hlo_fixture

import aotc
from aotc.cli import main
from aotc.config import parse_config
from aotc.errors import ConfigError, HloError
from aotc.frontend.formats import Format, input_format
from aotc.frontend.hlo_input import load_hlo
from aotc.hlo.ir import Opcode

HLO = HLO_DATA

SMALL = """HloModule small, entry_computation_layout={(f32[2]{0})->f32[2]{0}}

ENTRY main.1 {
  x.1 = f32[2]{0} parameter(0), metadata={op_name="x"}
  ROOT neg.2 = f32[2]{0} negate(x.1), frontend_attributes={foo="bar"}
}
"""


@pytest.mark.parametrize("name", ["jax_mlp", "jax_two", "tf_dense", "jax_nested_jit"])
def test_framework_hlo_compiles_and_matches(name: str) -> None:
    path, args, expected = load_hlo_fixture(name)
    fn = aotc.compile(path)
    out = fn(*args)
    outs = out if isinstance(out, list) else [out]
    assert len(outs) == len(expected)
    for got, want in zip(outs, expected, strict=True):
        assert_close(got, want, rtol=1e-5)


def test_names_come_from_parameters_without_uniquing_suffix() -> None:
    jax = load_hlo(HLO / "jax_mlp.hlo")
    assert [f.name for f in jax.signature.feeds] == ["x", "w", "b"]
    assert [f.name for f in jax.signature.fetches] == ["result0"]
    assert jax.signature.name == "jax_mlp"
    tf = load_hlo(HLO / "tf_dense.hlo")
    assert [f.name for f in tf.signature.feeds] == ["arg0"]


def test_non_tuple_root_is_wrapped(tmp_path: Path) -> None:
    path = tmp_path / "small.hlo"
    path.write_text(SMALL)
    loaded = load_hlo(path)
    root = loaded.module.entry.root
    assert root.opcode is Opcode.TUPLE and root.operands[0].name == "neg.2"
    np.testing.assert_array_equal(aotc.compile(path)(np.array([1, -2], np.float32)), [-1, 2])


def test_txt_files_are_recognized_by_their_header(tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("// printed by JAX\n" + SMALL)
    (tmp_path / "other.txt").write_text("node { name: 'x' op: 'Placeholder' }\n")
    assert input_format(tmp_path / "m.txt") is Format.HLO
    assert input_format(tmp_path / "other.txt") is Format.GRAPHDEF
    assert input_format(HLO / "jax_two.hlo") is Format.HLO


def test_config_names_arguments_and_results(tmp_path: Path) -> None:
    config = parse_config({"name": "neg", "feeds": ["input"], "fetches": ["out"]}, "c.yaml")
    path = tmp_path / "small.hlo"
    path.write_text(SMALL)
    sig = load_hlo(path, config).signature
    assert (sig.name, sig.feeds[0].name, sig.fetches[0].name) == ("neg", "input", "out")
    bad = parse_config({"feeds": ["a", "b"]}, "c.yaml")
    with pytest.raises(ConfigError, match="lists 2 feeds but the HLO entry has 1 parameter"):
        load_hlo(path, bad)
    wrong = parse_config({"feeds": [{"name": "a", "shape": [3]}]}, "c.yaml")
    with pytest.raises(ConfigError, match=r"shape \[3\] does not match .* \[2\]"):
        load_hlo(path, wrong)


def test_elided_constants_are_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "elided.hlo"
    path.write_text(SMALL.replace("negate(x.1)", "add(x.1, c.1)").replace(
        "  ROOT", "  c.1 = f32[2]{0} constant({...})\n  ROOT"))  # fmt: skip
    with pytest.raises(HloError, match="elided"):
        load_hlo(path)


def test_cli_compiles_hlo_text(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["compile", str(HLO / "jax_two.hlo"), "-o", str(tmp_path / "two")]
    )
    assert result.exit_code == 0, result.output
    header = (tmp_path / "two.h").read_text()
    assert "int jax_two_run(const float *x, const float *y, float *result0, float *result1" in (
        header
    )
