"""tfcompile's own test graphs (re-made by tests/data/make_tfcompile_graphs.py), each compiled
with its tfcompile config, linked into C, run and compared with TensorFlow (issue 12, item 5).

Variable graphs are called several times on the same buffers: each call must see the updates
of the one before, carried in the caller's variable buffers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from c_harness import run_calls
from fixtures import assert_close

from aotc.codegen.compile import CompiledModel
from aotc.driver import compile_graph
from aotc.errors import ConfigError

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
    model = compile_graph(DATA / f"{name}.pb", DATA / f"{name}.config.pbtxt")
    check_against_tensorflow(name, model)


@pytest.mark.parametrize("name", CHECKPOINTED)
def test_frozen_checkpoint_graph_matches_tensorflow(name: str) -> None:
    model = compile_graph(DATA / f"{name}_frozen.pb", DATA / f"{name}.config.pbtxt")
    check_against_tensorflow(name, model)


@pytest.mark.parametrize("name", CHECKPOINTED)
def test_checkpoint_graph_without_its_checkpoint_names_the_variable(name: str) -> None:
    with pytest.raises(
        ConfigError, match=r"1 variable\(s\) the config does not declare: 'y_saved'"
    ):
        compile_graph(DATA / f"{name}.pb", DATA / f"{name}.config.pbtxt")


def test_the_tests_cover_tfcompiles_graphs() -> None:
    # All of tensorflow/compiler/aot/tests but tfcond, tftop_k, tfscatter, tfrandom_uniform
    # (control flow, TopKV2, ScatterNd, RandomUniform: other issues).
    expected = {
        "tfadd", "tfadd_with_ckpt", "tfadd_with_ckpt_saver", "tfassert_eq", "tffunction",
        "tfgather", "tfmatmul", "tfmatmulandadd", "tfmatmul_with_constant", "tfsplits",
        "tfvariable", "tfvariable_readonly", "tfvariable_sequential_updates",
    }  # fmt: skip
    assert {n.removeprefix("test_graph_") for n in NAMES} == expected


def test_variable_state_carries_over_calls() -> None:
    # tfcompile_test.cc's Variable test: x = 23 -> results [23, 65], then [65, 107].
    name = "test_graph_tfvariable"
    model = compile_graph(DATA / f"{name}.pb", DATA / f"{name}.config.pbtxt")
    runs = run_calls(model, [np.array([23], np.float32)], 2)
    assert [r[0].ravel().tolist() for r, _ in runs] == [[23, 65], [65, 107]]
    assert [v[0].tolist() for _, v in runs] == [[65], [107]]
    assert "float *x, float *result, void *temp" in model.header
