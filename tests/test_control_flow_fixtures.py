"""Issue 11: control flow from TensorFlow (tests/data/control_flow) and JAX (tests/data/hlo).

Each fixture is compiled, linked into a C program, run through both entry points and compared
with what TensorFlow or JAX computed (the JAX fixtures come from
``tests/data/make_jax_control_flow_fixtures.py``; ``test_hlo_control_flow`` checks them with
the evaluator). What aotc cannot compile yet is a strict xfail that must fail with an
``AotcError`` (a clean "unsupported" error, not a crash or a wrong number; ``CRASHES`` lists
the known exceptions): when a feature lands, its fixtures pass, the xfail turns into a
failure, and its entry in ``PENDING`` must go.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from c_harness import run_compiled
from fixtures import (
    CONTROL_FLOW_DATA,
    HOST_CPU,
    assert_close,
    fixture_names,
    load_fixture,
    load_hlo_fixture,
)

from aotc.driver import compile_graph, optimize
from aotc.errors import AotcError
from aotc.frontend.sources import load_source
from aotc.hlo.evaluate import evaluate

CRASHES: frozenset[str] = frozenset()  # pending fixtures that fail with another exception
# Control flow the front end translates, functional (TF2) or functionalized (TF1 frames and
# Switch/Merge): the evaluator also checks the HLO, before and after the optimizer, against
# TF's numbers (test_functional_control_flow_evaluates).
FUNCTIONAL = [
    "while_norm_functional",
    "while_nested_functional",
    "cond_v2",
    "switch_case_functional",
    "while_norm_lowered",
    "while_nested_lowered",
    "cond_v1",
    "switch_case",
    "keras_lstm_seq_functional",
    "keras_gru_last_functional",
    "keras_simple_rnn_functional",
    "keras_bilstm_functional",
    "keras_lstm_stacked_functional",
    "keras_lstm_masking_functional",
    "tensor_array_loop",
    "tensor_array_loop_unknown",
    "tensor_list_ops",
    "tensor_array_v1",
    "tensor_list_scatter",
    "tensor_array_scatter_v1",
    # TF1 frames (functionalized) around TensorList (Keras) or TensorArrayV3 ops
    "keras_lstm_seq",
    "keras_lstm_last",
    "keras_gru_seq",
    "keras_gru_last",
    "keras_simple_rnn",
    "keras_bilstm",
    "keras_lstm_stacked",
    "keras_lstm_masking",
    "dynamic_rnn_v1",
    # TensorLists pushed to and popped from in loops (a buffer plus a length counter)
    "list_push_loop_lowered",
    "list_push_loop_functional",
    "list_push_pop_counted_lowered",
    "list_push_pop_counted_functional",
]

PENDING: dict[str, str] = {}  # fixture -> the issue that makes it pass

JAX = [
    "jax_fori_loop",
    "jax_while_loop",
    "jax_scan_rnn",
    "jax_cond",
    "jax_switch",
    "jax_nested_jit",
    "jax_dynamic_slice",
]
TF = fixture_names(CONTROL_FLOW_DATA)


def _cases(names: list[str]) -> list[object]:
    return [pytest.param(name, marks=_pending(name)) if name in PENDING else name for name in names]


def _pending(name: str) -> pytest.MarkDecorator:
    raises = (AotcError, AssertionError) if name in CRASHES else AotcError
    return pytest.mark.xfail(strict=True, raises=raises, reason=PENDING[name])


def _check(name: str, graph: Path, config: Path | None, args: list, expected: list) -> None:
    model = compile_graph(graph, config, HOST_CPU).model
    typed, buffers = run_compiled(model, args)
    assert len(typed) == len(expected)
    for i, (got, again, want) in enumerate(zip(typed, buffers, expected, strict=True)):
        np.testing.assert_array_equal(got, again, err_msg=f"{name} result{i}: calls differ")
        assert_close(got, want, what=f"{name} result{i}")


@pytest.mark.parametrize("name", _cases(TF))
def test_tensorflow_control_flow_matches(name: str) -> None:
    fx = load_fixture(name, CONTROL_FLOW_DATA)
    _check(name, fx.graph, fx.config, fx.args, fx.results)


@pytest.mark.parametrize("name", FUNCTIONAL)
def test_functional_control_flow_evaluates(name: str) -> None:
    """The translated HLO, before and after the optimizer, computes TF's outputs."""
    fx = load_fixture(name, CONTROL_FLOW_DATA)
    module = load_source(fx.graph, fx.config).module
    for stage in ("translated", "optimized"):
        if stage == "optimized":
            optimize(module)
        got = evaluate(module, fx.args)
        assert len(got) == len(fx.results)
        for i, (value, want) in enumerate(zip(got, fx.results, strict=True)):
            assert_close(value, want, what=f"{name} {stage} result{i}")


@pytest.mark.parametrize("name", _cases(JAX))
def test_jax_control_flow_matches(name: str) -> None:
    path, args, expected = load_hlo_fixture(name)
    _check(name, path, None, args, expected)


def test_every_fixture_is_tested_and_every_pending_entry_is_a_fixture() -> None:
    scripts = Path(__file__).parent / "data"
    assert len(TF) >= 33, f"{scripts / 'make_control_flow_fixtures.py'} writes 33 fixtures"
    assert all(load_hlo_fixture(name)[0].is_file() for name in JAX)
    assert set(PENDING) <= {*TF, *JAX}, sorted(set(PENDING) - {*TF, *JAX})
    assert set(PENDING) >= CRASHES
