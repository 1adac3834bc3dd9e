#!/usr/bin/env python
"""Regenerate the seeded random-op fixture (TensorFlow needed).

    python tests/data/make_random_fixtures.py

Writes ``random_ops.pb``, ``.yaml`` and ``.npz`` under ``tests/data/tf/`` with the contract of
``make_fixtures.py``: ``RandomUniform`` and ``RandomStandardNormal`` with op seeds (their first
run's numbers: what a compiled function returns on every call), added to a fed input.
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
        ]

    return Fixture("random_ops", f, [x], {"RandomUniform", "RandomStandardNormal"})


def main() -> int:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for fx in [random_ops_fixture()]:
        build(fx)
        write_fixture(fx)
        verify_written(fx)
        size = (OUT_DIR / f"{fx.name}.pb").stat().st_size
        ops = " ".join(op_types(fx.graph_def))
        print(f"{fx.name}: {size} bytes, {len(fx.results)} results; {ops}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
