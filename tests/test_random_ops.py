"""TF's random ops (seeded stateful, and stateless): TF's Philox numbers, and their statistics.

The TF fixtures ``random_ops``, ``stateless_random`` and ``stateless_random_fed`` check the
numbers against TensorFlow (evaluator and C); here large samples are checked for their
distribution (moments and a Kolmogorov-Smirnov bound at the 0.1% level), the determinism
rules (same seeds, same numbers; seed = seed2 = 0 refused) and the refusals (ThreeFry, an
algorithm or a range that is not constant).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from aotc.errors import UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import lookup
from aotc.frontend.translate import TranslationContext
from aotc.hlo.builder import ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.proto import aotc_tf_pb2 as pb

N = 200_000
KS_999 = 1.95 / math.sqrt(N)  # the Kolmogorov-Smirnov statistic's 0.1% critical value


def _run(op: str, inputs: list[np.ndarray], dtype: int = pb.DT_FLOAT, **attrs: int) -> np.ndarray:
    """Translate one ``op`` node of constant ``inputs`` and evaluate it."""
    proto = pb.NodeDef(name="r", op=op)
    proto.attr["dtype"].type = dtype
    for name, value in attrs.items():
        proto.attr[name].i = value
    mb = ModuleBuilder("test")
    ctx = TranslationContext(mb, mb.computation("main"))
    ctx.node = node = Node(proto)
    translator = lookup(op)
    assert translator is not None
    out = translator(ctx, node, *(ctx.builder.constant(x) for x in inputs))
    result = evaluate(mb.build(ctx.builder.build(out)), [])
    assert isinstance(result, np.ndarray)
    return result


def _draw(op: str, shape: tuple[int, ...], seed: int, seed2: int) -> np.ndarray:
    result = _run(op, [np.array(shape, np.int32)], seed=seed, seed2=seed2)
    assert result.shape == shape
    return result


def _ks(sample: np.ndarray, cdf: np.ndarray) -> float:
    """The largest distance between the sample's empirical CDF and ``cdf`` at its points."""
    n = sample.size
    upper = np.arange(1, n + 1) / n - cdf
    lower = cdf - np.arange(n) / n
    return float(max(upper.max(), lower.max()))


def test_uniform_is_uniform_on_the_unit_interval() -> None:
    x = _draw("RandomUniform", (N,), 123, 456)
    assert x.dtype == np.float32 and x.min() >= 0.0 and x.max() < 1.0
    assert abs(x.mean() - 0.5) < 5 * math.sqrt(1 / 12 / N)
    assert abs(x.var() - 1 / 12) < 0.002
    s = np.sort(x.astype(np.float64))
    assert _ks(s, s) < KS_999


def test_standard_normal_is_standard_normal() -> None:
    x = _draw("RandomStandardNormal", (N // 2, 2), 5, 6).reshape(-1)
    assert np.all(np.isfinite(x))
    assert abs(x.mean()) < 5 / math.sqrt(N)
    assert abs(x.var() - 1) < 5 * math.sqrt(2 / N)
    s = np.sort(x.astype(np.float64))
    cdf = 0.5 * (1 + np.vectorize(math.erf)(s / math.sqrt(2)))
    assert _ks(s, cdf) < KS_999


def test_same_seeds_same_numbers_other_seeds_other_numbers() -> None:
    a = _draw("RandomUniform", (64,), 7, 3)
    np.testing.assert_array_equal(a, _draw("RandomUniform", (64,), 7, 3))
    assert not np.array_equal(a, _draw("RandomUniform", (64,), 7, 4))
    assert not np.array_equal(a, _draw("RandomUniform", (64,), 8, 3))
    # TF's first run of RandomUniform(shape=[4], seed=7, seed2=3)
    want = np.array([0.40108788, 0.37683892, 0.3092928, 0.08807564], np.float32)
    np.testing.assert_array_equal(a[:4], want)


@pytest.mark.parametrize("op", ["RandomUniform", "RandomStandardNormal"])
def test_an_unseeded_op_is_refused(op: str) -> None:
    with pytest.raises(UnsupportedError, match=f"{op} has seed = seed2 = 0"):
        _draw(op, (4,), 0, 0)


def test_truncated_normal_is_a_standard_normal_cut_at_two() -> None:
    x = _draw("TruncatedNormal", (N,), 11, 12).astype(np.float64)
    assert np.all(np.abs(x) < 2.0)
    s = np.sort(x)
    phi = np.vectorize(lambda v: 0.5 * (1 + math.erf(v / math.sqrt(2))))
    cdf = (phi(s) - phi(-2.0)) / (phi(2.0) - phi(-2.0))
    assert _ks(s, cdf) < KS_999
    assert abs(x.var() - 0.7737413) < 5 * math.sqrt(2 / N)  # the variance of N(0, 1) on (-2, 2)


def test_stateless_seeds_give_tfs_numbers() -> None:
    # tf.random.stateless_uniform([5], [1, 2]) on TF 2.21's CPU
    want = np.array([0.8440604, 0.19204533, 0.9962232, 0.1603874, 0.27199018], np.float32)
    got = _run("StatelessRandomUniform", [np.array([5], np.int32), np.array([1, 2], np.int64)])
    np.testing.assert_array_equal(got, want)


def _v2(alg: int) -> list[np.ndarray]:
    key, counter = np.array([7], np.uint64), np.array([0, 1], np.uint64)
    return [np.array([4], np.int32), key, counter, np.array(alg, np.int32)]


def test_threefry_and_unknown_algorithms_are_refused() -> None:
    with pytest.raises(UnsupportedError, match="ThreeFry algorithm: TensorFlow's CPU kernels"):
        _run("StatelessRandomUniformV2", _v2(2))
    with pytest.raises(UnsupportedError, match="algorithm 7: not a TF RNG algorithm"):
        _run("StatelessRandomUniformV2", _v2(7))
    np.testing.assert_array_equal(
        _run("StatelessRandomNormalV2", _v2(3)), _run("StatelessRandomNormalV2", _v2(1))
    )  # auto-select is Philox on the CPU


def test_an_empty_integer_range_is_refused() -> None:
    inputs = [np.array([4], np.int32), np.array([1, 2], np.int32)]
    with pytest.raises(UnsupportedError, match="minval < maxval, got minval = 5, maxval = 5"):
        _run("StatelessRandomUniformInt", [*inputs, np.array(5), np.array(5)], pb.DT_INT32)
