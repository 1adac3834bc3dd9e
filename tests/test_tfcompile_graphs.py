"""tfcompile's own test graphs (re-made by tests/data/make_tfcompile_graphs.py), each compiled
with its tfcompile config, linked into C, run and compared with TensorFlow (issue 12, item 5).

Variable graphs are called several times on the same buffers: each call must see the updates
of the one before, carried in the caller's variable buffers. The checkpoint graphs compile
frozen and with ``--checkpoint`` (issue 12, item 4).
"""

from __future__ import annotations

import shutil
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from c_harness import run_calls
from click.testing import CliRunner
from fixtures import HOST_CPU, assert_close

from aotc.cache import cache_key
from aotc.cli import main
from aotc.codegen.compile import CompiledModel
from aotc.driver import compile_graph
from aotc.errors import ConfigError, UsageError
from aotc.frontend.options import SourceOptions

DATA = Path(__file__).parent / "data" / "tfcompile"
NAMES = sorted(p.name.removesuffix(".config.pbtxt") for p in DATA.glob("test_graph_*.config.pbtxt"))
CHECKPOINTED = ["test_graph_tfadd_with_ckpt", "test_graph_tfadd_with_ckpt_saver"]


def exact_input(shape: tuple[int, ...]) -> np.ndarray:
    """make_tfcompile_graphs.exact_input: inputs too big to store, rebuilt exactly."""
    n = int(np.prod(shape))
    return (((np.arange(n) * 37) % 23 - 11) / 8).astype(np.float32).reshape(shape)


def arguments(data: np.lib.npyio.NpzFile, model: CompiledModel) -> list[np.ndarray]:
    return [
        data[f"arg{i}"] if f"arg{i}" in data else exact_input(tuple(data[f"ramp{i}"]))
        for i in range(len(model.args))
    ]


def check_against_tensorflow(name: str, model: CompiledModel) -> None:
    data = np.load(DATA / f"{name}.npz")
    calls = sum(1 for key in data.files if key.endswith("_result0"))
    runs = run_calls(model, arguments(data, model), calls)
    for c, (results, variables) in enumerate(runs):
        for j, got in enumerate(results):
            assert_close(got, data[f"call{c}_result{j}"], what=f"{name} call {c} result {j}")
        for k, got in enumerate(variables):
            assert_close(got, data[f"call{c}_var{k}"], what=f"{name} call {c} variable {k}")


@pytest.mark.parametrize("name", [n for n in NAMES if n not in CHECKPOINTED])
def test_graph_compiled_with_its_config_matches_tensorflow(name: str) -> None:
    model = compile_graph(DATA / f"{name}.pb", DATA / f"{name}.config.pbtxt", HOST_CPU).model
    check_against_tensorflow(name, model)


@pytest.mark.parametrize("name", CHECKPOINTED)
def test_frozen_checkpoint_graph_matches_tensorflow(name: str) -> None:
    model = compile_graph(DATA / f"{name}_frozen.pb", DATA / f"{name}.config.pbtxt", HOST_CPU).model
    check_against_tensorflow(name, model)


@pytest.mark.parametrize("name", CHECKPOINTED)
def test_checkpoint_graph_with_its_checkpoint_matches_tensorflow(name: str) -> None:
    # tf_library(freeze_checkpoint=...): y_saved = 42 comes from the V2 checkpoint.
    options = SourceOptions(checkpoint=str(DATA / f"{name}.ckpt"))
    model = compile_graph(
        DATA / f"{name}.pb", DATA / f"{name}.config.pbtxt", HOST_CPU, options
    ).model
    check_against_tensorflow(name, model)


def test_declared_variable_stays_an_argument_with_a_checkpoint(tmp_path: Path) -> None:
    name = "test_graph_tfadd_with_ckpt"
    config = tmp_path / "c.yaml"
    config.write_text("feeds: [{name: x_hold, shape: [1]}]\nfetches: [x_y_sum]\n"
                      "variables: [{name: y_saved, readonly: true}]\n")  # fmt: skip
    options = SourceOptions(checkpoint=str(DATA / f"{name}.ckpt"))
    model = compile_graph(DATA / f"{name}.pb", config, HOST_CPU, options).model
    assert [a.name for a in model.args] == ["x_hold", "y_saved"]
    ((result,), _) = run_calls(model, [np.array([1], np.int32), np.array([5], np.int32)], 1)[0]
    assert result.tolist() == [6]


@pytest.mark.parametrize(
    ("prefix", "needle"),
    [
        ("nope", "--checkpoint {data}/nope: no {data}/nope.index; pass the prefix"),
        ("test_graph_tfadd.pb", "a single-file (V1) checkpoint; aotc reads TensorFlow's V2"),
    ],
)
def test_checkpoint_errors(prefix: str, needle: str) -> None:
    name = "test_graph_tfadd_with_ckpt"
    args = ["compile", str(DATA / f"{name}.pb"), "-c", str(DATA / f"{name}.config.pbtxt")]
    args += ["--checkpoint", str(DATA / prefix), "--no-cache", "-o", "/nonexistent/never"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert needle.format(data=DATA) in result.output and result.output.count("\n") == 1


def test_checkpoint_is_for_graphdefs_only() -> None:
    saved = Path(__file__).parent / "data" / "savedmodel" / "module"
    with pytest.raises(UsageError, match="--checkpoint is for GraphDefs; a SavedModel reads"):
        compile_graph(saved, options=SourceOptions(checkpoint="x"))


def test_cache_key_covers_the_checkpoints_bytes(tmp_path: Path) -> None:
    name = "test_graph_tfadd_with_ckpt"
    for file in DATA.glob(f"{name}.ckpt.*"):
        shutil.copy(file, tmp_path / file.name)
    prefix = str(tmp_path / f"{name}.ckpt")
    key = partial(cache_key, DATA / f"{name}.pb", DATA / f"{name}.config.pbtxt")
    before = key(options=SourceOptions(checkpoint=prefix))
    data = next(tmp_path.glob("*.data-*"))
    data.write_bytes(b"\x00" * len(data.read_bytes()))
    assert key(options=SourceOptions(checkpoint=prefix)) != before
    assert key() != before


@pytest.mark.parametrize("name", CHECKPOINTED)
def test_checkpoint_graph_without_its_checkpoint_names_the_variable(name: str) -> None:
    with pytest.raises(
        ConfigError, match=r"1 variable\(s\) the config does not declare: 'y_saved'"
    ):
        compile_graph(DATA / f"{name}.pb", DATA / f"{name}.config.pbtxt")


def test_the_tests_cover_tfcompiles_graphs() -> None:
    # All of tensorflow/compiler/aot/tests.
    expected = {
        "tfadd", "tfadd_with_ckpt", "tfadd_with_ckpt_saver", "tfassert_eq", "tfcond",
        "tffunction", "tfgather", "tfmatmul", "tfmatmulandadd", "tfmatmul_with_constant",
        "tfrandom_uniform", "tfscatter", "tfsplits", "tftop_k", "tfvariable", "tfvariable_readonly",
        "tfvariable_sequential_updates",
    }  # fmt: skip
    assert {n.removeprefix("test_graph_") for n in NAMES} == expected


def test_variable_state_carries_over_calls() -> None:
    # tfcompile_test.cc's Variable test: x = 23 -> results [23, 65], then [65, 107].
    name = "test_graph_tfvariable"
    model = compile_graph(DATA / f"{name}.pb", DATA / f"{name}.config.pbtxt", HOST_CPU).model
    runs = run_calls(model, [np.array([23], np.float32)], 2)
    assert [r[0].ravel().tolist() for r, _ in runs] == [[23, 65], [65, 107]]
    assert [v[0].tolist() for _, v in runs] == [[65], [107]]
    assert "float *x, float *result, void *temp" in model.header


@pytest.mark.parametrize("pred", [True, False])
def test_tfcond_runs_the_branch_its_predicate_picks(pred: bool) -> None:
    # tfcompile_test.cc's Cond test: result = x if p else y (a TF1 Switch/Merge conditional).
    name = "test_graph_tfcond"
    model = compile_graph(DATA / f"{name}.pb", DATA / f"{name}.config.pbtxt").model
    args = [np.array(pred), np.array([10], np.int32), np.array([20], np.int32)]
    ((results, _),) = run_calls(model, args, 1)
    assert results[0].tolist() == [10 if pred else 20]
