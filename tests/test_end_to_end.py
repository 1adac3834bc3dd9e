"""End to end: each TF fixture compiled to .o + .h, linked into a C program, run, vs TF."""

from __future__ import annotations

import numpy as np
import pytest
from c_harness import LIBM_SYMBOLS, entry_points, exported_and_undefined_symbols, run_compiled
from fixtures import HOST_CPU, assert_close, fixture_names, fixture_rtol, load_fixture

from aotc.driver import compile_graph

F32_ONLY = ["activations", "binary", "matmul", "mlp_b1", "mlp_b8", "plumbing", "unary"]


@pytest.mark.parametrize("name", fixture_names())
def test_compiled_fixture_matches_tensorflow(name: str) -> None:
    fx = load_fixture(name)
    model = compile_graph(fx.graph, fx.config, HOST_CPU).model
    defined, undefined = exported_and_undefined_symbols(model.object_bytes)
    assert defined == entry_points(name)
    assert undefined <= LIBM_SYMBOLS, f"{name} calls {undefined - LIBM_SYMBOLS} (only libm may be)"
    if name in F32_ONLY:
        assert not undefined & LIBM_SYMBOLS, f"{name} calls libm: {undefined & LIBM_SYMBOLS}"
    typed, buffers = run_compiled(model, fx.args)
    assert len(typed) == len(fx.results)
    for i, (got, again, want) in enumerate(zip(typed, buffers, fx.results, strict=True)):
        np.testing.assert_array_equal(got, again, err_msg=f"{name} result{i}: calls differ")
        assert_close(got, want, fixture_rtol(name), what=f"{name} result{i}")
