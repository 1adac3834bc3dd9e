"""Helpers for pass tests: run a pass on HLO text, and compare evaluation before and after."""

from __future__ import annotations

import numpy as np

from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import Module
from aotc.hlo.shape import Shape
from aotc.hlo.text import parse_module, print_module
from aotc.hlo.verify import verify_module
from aotc.passes import Pass, Pipeline, PipelineOptions
from aotc.passes.fusion import Fusion


def run_pass(p: Pass, text: str) -> tuple[Module, bool]:
    """Parse ``text``, run ``p`` under a checking pipeline (verify, truthful ``changed``)."""
    module = parse_module(text)
    verify_module(module)
    changed = Pipeline("test", [p], PipelineOptions(check_changed=True)).run(module)
    return module, changed


def random_args(module: Module, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [_random(rng, p.array_shape) for p in module.entry.parameters]


def _random(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    dtype = shape.dtype.numpy
    if dtype.kind == "f":
        return rng.standard_normal(shape.dims).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape.dims) < 0.5
    return rng.integers(-9 if dtype.kind == "i" else 0, 10, shape.dims).astype(dtype)


def assert_same_results(p: Pass, text: str, rtol: float = 1e-5, seeds: int = 3) -> Module:
    """Differential test: ``p`` changes the module, and results on random inputs agree."""
    before = parse_module(text)
    after, changed = run_pass(p, text)
    assert changed, "the pass did not change the module"
    for seed in range(seeds):
        args = random_args(before, seed)
        want, got = _as_list(evaluate(before, args)), _as_list(evaluate(after, args))
        for w, g in zip(want, got, strict=True):
            assert w.dtype == g.dtype and w.shape == g.shape
            scale = max(float(np.max(np.abs(w), initial=0)), 1.0)
            np.testing.assert_allclose(g, w, rtol=0, atol=rtol * scale, err_msg=print_module(after))
    return after


def _as_list(value: object) -> list[np.ndarray]:
    return list(value) if isinstance(value, list) else [np.asarray(value)]


def fused(text: str) -> Module:
    module = parse_module(text)
    assert Fusion().run(module)
    verify_module(module)
    return module
