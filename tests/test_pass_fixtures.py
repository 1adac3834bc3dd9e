"""Every TF fixture still matches TensorFlow after the default pipeline."""

from __future__ import annotations

import pytest
from fixtures import as_real_form, assert_close, fixture_names, fixture_rtol, load_fixture

from aotc.frontend.sources import load_source
from aotc.hlo.evaluate import evaluate
from aotc.passes import PipelineOptions, default_pipeline


@pytest.mark.parametrize("name", fixture_names())
def test_pipeline_keeps_tensorflow_results(name: str) -> None:
    fx = load_fixture(name)
    module = load_source(fx.graph, fx.config).module
    default_pipeline(PipelineOptions(check_changed=True)).run(module)
    outputs = evaluate(module, [as_real_form(a) for a in fx.args])  # complex as (re, im)
    for i, (got, want) in enumerate(zip(outputs, fx.results, strict=True)):
        assert_close(got, as_real_form(want), fixture_rtol(name, 2e-5), what=f"{name} result{i}")
