"""Translation: every TF fixture, evaluated by the reference evaluator, matches TensorFlow."""

from __future__ import annotations

import pytest
from fixtures import assert_close, fixture_names, fixture_rtol, load_fixture

from aotc.frontend.sources import load_source
from aotc.hlo.evaluate import evaluate


@pytest.mark.parametrize("name", fixture_names())
def test_reference_evaluator_matches_tensorflow(name: str) -> None:
    fx = load_fixture(name)
    front = load_source(fx.graph, fx.config)
    outputs = evaluate(front.module, fx.args)
    assert len(outputs) == len(fx.results)
    for i, (got, want) in enumerate(zip(outputs, fx.results, strict=True)):
        assert_close(got, want, fixture_rtol(name), what=f"{name} result{i}")
