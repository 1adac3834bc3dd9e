#!/usr/bin/env python
"""Regenerate the seeded random-op fixture (TensorFlow needed).

    python tests/data/make_random_fixtures.py

Writes ``.pb``, ``.yaml`` and ``.npz`` under ``tests/data/tf/`` with the contract of
``make_fixtures.py``:

- ``random_ops``: ``RandomUniform``, ``RandomStandardNormal``, ``TruncatedNormal`` and
  ``RandomUniformInt`` with op seeds (their first run's numbers: what a compiled function
  returns on every call), in float, half, bfloat16, double and both int types;
- ``stateless_random``: every ``StatelessRandom*`` op, V1 and V2, with constant seeds, keys
  and counters (a counter whose low half carries), alg Philox and auto-select;
- ``stateless_random_fed``: the same ops drawn from fed seeds (int64 and int32) and a fed
  key and counter, as ``tf.random.stateless_*`` emit them, and a dropout mask from a fed
  seed: the numbers are computed at run time.

Seeded; reruns give byte-identical files with the same TF.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from make_fixtures import (  # noqa: E402
    F32,
    I32,
    I64,
    OUT_DIR,
    Fixture,
    build,
    op_types,
    rng,
    spec,
    verify_written,
    write_fixture,
)

R = tf.raw_ops


def random_ops_fixture() -> Fixture:
    x = rng(71).standard_normal([3, 5]).astype(np.float32)

    @tf.function(input_signature=[spec([3, 5], F32, name="x")])
    def f(x):
        return [
            R.AddV2(x=x, y=R.RandomUniform(shape=[3, 5], dtype=F32, seed=7, seed2=3)),
            R.RandomUniform(shape=[7], dtype=F32, seed=0, seed2=11),  # not a multiple of 4
            R.RandomUniform(shape=[2, 3], dtype=F32, seed=2**40 + 5, seed2=2**33),
            R.RandomStandardNormal(shape=[5, 3], dtype=F32, seed=1, seed2=2),
            R.RandomStandardNormal(shape=[3], dtype=F32, seed=9, seed2=0),  # an odd count
            R.TruncatedNormal(shape=[5, 7], dtype=F32, seed=3, seed2=4),  # 9 groups of 4
            R.TruncatedNormal(shape=[3], dtype=tf.float64, seed=3, seed2=4),
            R.TruncatedNormal(shape=[6], dtype=tf.float16, seed=5, seed2=1),
            R.RandomUniform(shape=[2, 5], dtype=tf.float16, seed=4, seed2=2),
            R.RandomUniform(shape=[5], dtype=tf.float64, seed=4, seed2=2),
            R.RandomStandardNormal(shape=[7], dtype=tf.float64, seed=6, seed2=2),
            R.RandomStandardNormal(shape=[5], dtype=tf.bfloat16, seed=6, seed2=2),
            R.RandomUniformInt(shape=[9], minval=-5, maxval=12, seed=8, seed2=1),
            R.RandomUniformInt(
                shape=[5],
                minval=tf.constant(-(2**40), tf.int64),
                maxval=tf.constant(2**50, tf.int64),
                seed=8,
                seed2=1,
            ),  # fmt: skip
        ]

    ops = {"RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt"}
    return Fixture("random_ops", f, [x], ops, tolerance=1e-2)  # half and bfloat16 results


V1_OPS = {
    "StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal",
    "StatelessRandomUniformInt", "StatelessRandomUniformFullInt",
}  # fmt: skip
V2_OPS = {
    "StatelessRandomGetKeyCounter", "StatelessRandomUniformV2", "StatelessRandomNormalV2",
    "StatelessTruncatedNormalV2", "StatelessRandomUniformIntV2", "StatelessRandomUniformFullIntV2",
}  # fmt: skip


def v1_draws(seed, seed32):
    return [
        R.StatelessRandomUniform(shape=[3, 5], seed=seed, dtype=F32),
        R.StatelessRandomUniform(shape=[3], seed=seed32, dtype=tf.float64),
        R.StatelessRandomUniform(shape=[6], seed=seed, dtype=tf.bfloat16),
        R.StatelessRandomNormal(shape=[7], seed=seed32, dtype=F32),
        R.StatelessRandomNormal(shape=[4], seed=seed, dtype=tf.float16),
        R.StatelessTruncatedNormal(shape=[2, 9], seed=seed, dtype=F32),
        R.StatelessRandomUniformInt(shape=[10], seed=seed, minval=3, maxval=100),
        R.StatelessRandomUniformFullInt(shape=[3], seed=seed32, dtype=tf.int64),
    ]


def v2_draws(seed, key, counter):
    """tf.random.stateless_* (GetKeyCounter + the V2 ops) and the raw V2 ops."""
    alg = R.StatelessRandomGetAlg()
    return [
        tf.random.stateless_uniform([4, 3], seed),
        tf.random.stateless_normal([5], seed, dtype=tf.float64),
        tf.random.stateless_truncated_normal([11], seed),
        tf.random.stateless_uniform([6], seed, minval=-7, maxval=9, dtype=tf.int32),
        tf.random.stateless_uniform([3], seed, minval=None, maxval=None, dtype=tf.uint64),
        R.StatelessRandomUniformV2(shape=[9], key=key, counter=counter, alg=alg),
        R.StatelessRandomNormalV2(shape=[2, 3], key=key, counter=counter, alg=3),  # auto-select
        R.StatelessTruncatedNormalV2(shape=[5], key=key, counter=counter, alg=1),
        R.StatelessRandomUniformIntV2(
            shape=[4],
            key=key,
            counter=counter,
            alg=1,
            minval=tf.constant(-(2**62), I64),
            maxval=tf.constant(2**62 + 3, I64),
        ),  # fmt: skip
        R.StatelessRandomUniformFullIntV2(shape=[5], key=key, counter=counter, alg=1, dtype=I32),
        *R.StatelessRandomGetKeyCounter(seed=seed),
    ]


def stateless_fixture() -> Fixture:
    x = rng(72).standard_normal([2, 3]).astype(np.float32)
    seed, seed32 = tf.constant([7, -3], tf.int64), tf.constant([-1, 2**31 - 1], tf.int32)
    key = tf.constant([0x0123456789ABCDEF], tf.uint64)
    counter = tf.constant([2**64 - 2, 5], tf.uint64)  # the third block carries

    @tf.function(input_signature=[spec([2, 3], F32, name="x")])
    def f(x):
        return [x + 1.0, *v1_draws(seed, seed32), *v2_draws(seed, key, counter)]

    return Fixture("stateless_random", f, [x], V1_OPS | V2_OPS, tolerance=1e-2)


def stateless_fed_fixture() -> Fixture:
    x = rng(73).standard_normal([4, 6]).astype(np.float32)
    seed = np.array([12345, -678], np.int64)
    seed32 = np.array([-9, 2**30], np.int32)
    key = np.array([0xFEDCBA9876543210], np.uint64)
    counter = np.array([2**64 - 1, 2**63], np.uint64)
    specs = [
        spec([4, 6], F32, name="x"),
        spec([2], I64, name="seed"),
        spec([2], I32, name="seed32"),
        spec([1], tf.uint64, name="key"),
        spec([2], tf.uint64, name="counter"),
    ]

    @tf.function(input_signature=specs)
    def f(x, seed, seed32, key, counter):
        keep = tf.random.stateless_uniform([4, 6], seed) >= 0.25  # dropout at rate 0.25
        dropped = tf.where(keep, x / 0.75, tf.zeros_like(x))
        return [dropped, *v1_draws(seed, seed32), *v2_draws(seed, key, counter)]

    args = [x, seed, seed32, key, counter]
    return Fixture("stateless_random_fed", f, args, V1_OPS | V2_OPS, tolerance=1e-2)


def main() -> int:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for fx in [random_ops_fixture(), stateless_fixture(), stateless_fed_fixture()]:
        build(fx)
        write_fixture(fx)
        verify_written(fx)
        size = (OUT_DIR / f"{fx.name}.pb").stat().st_size
        ops = " ".join(op_types(fx.graph_def))
        print(f"{fx.name}: {size} bytes, {len(fx.results)} results; {ops}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
