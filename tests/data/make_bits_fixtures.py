#!/usr/bin/env python
"""Regenerate the bitwise-op fixture (TensorFlow needed).

    python tests/data/make_bits_fixtures.py

Writes ``bitwise.pb``, ``bitwise.yaml`` and ``bitwise.npz`` under ``tests/data/tf/`` with the
contract and helpers of ``make_fixtures.py``: BitwiseAnd/Or/Xor, Invert, LeftShift and
RightShift (amounts past the width and negative ones, which TF's kernel clamps),
PopulationCount and Bitcast (same width, narrower, wider) on several integer types.
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
U8, I8, I16, U16, U32, U64 = tf.uint8, tf.int8, tf.int16, tf.uint16, tf.uint32, tf.uint64
MAX_PB_BYTES = 50 * 1024


def bitwise_fixture() -> Fixture:
    r = rng(41)
    i = r.integers(-(2**31), 2**31, [3, 8], dtype=np.int64).astype(np.int32)
    i[0, :4] = [0, -1, np.iinfo(np.int32).min, np.iinfo(np.int32).max]
    n = np.array([0, 1, 7, 31, 32, 33, 40, -1], np.int32)  # past the width, negative
    b = r.integers(0, 256, [3, 8]).astype(np.uint8)
    bn = np.array([0, 1, 3, 7, 8, 9, 200, 255], np.uint8)
    s = r.integers(-128, 128, [4]).astype(np.int8)
    w = r.integers(-(2**62), 2**62, [2, 3], dtype=np.int64)
    w[0, 0] = -1
    u = r.integers(0, 2**63, [5], dtype=np.uint64) * np.uint64(2)
    x = r.standard_normal([3, 2]).astype(np.float32)
    x[0, 0], x[0, 1] = -0.0, -3.0e38
    h = r.integers(0, 2**16, [2, 2]).astype(np.uint16)

    @tf.function(
        input_signature=[
            spec([3, 8], I32, name="i"),
            spec([8], I32, name="n"),
            spec([3, 8], U8, name="b"),
            spec([8], U8, name="bn"),
            spec([4], I8, name="s"),
            spec([2, 3], I64, name="w"),
            spec([5], U64, name="u"),
            spec([3, 2], F32, name="x"),
            spec([2, 2], U16, name="h"),
        ]
    )
    def f(i, n, b, bn, s, w, u, x, h):
        outputs = [
            R.BitwiseAnd(x=i, y=n),  # broadcast along rows
            R.BitwiseOr(x=b, y=bn),
            R.BitwiseXor(x=w, y=tf.constant(0x5555_5555_5555, tf.int64)),
            R.Invert(x=s),
            R.Invert(x=u),
            R.LeftShift(x=i, y=n),
            R.RightShift(x=i, y=n),  # arithmetic
            R.LeftShift(x=b, y=bn),
            R.RightShift(x=b, y=bn),  # logical
            R.RightShift(x=w, y=tf.constant([0, 63, 64], tf.int64)),
            R.LeftShift(x=u, y=tf.constant(70, U64)),
            R.PopulationCount(x=i),
            R.PopulationCount(x=s),
            R.PopulationCount(x=w),
            R.PopulationCount(x=u),
            R.Bitcast(input=x, type=I32),  # same width
            R.Bitcast(input=x, type=U8),  # narrower: a new last dimension of 4
            R.Bitcast(input=R.Bitcast(input=x, type=U8), type=F32),  # and back
            R.Bitcast(input=w, type=I32),
            R.Bitcast(input=h, type=I8),
            R.Bitcast(input=R.Reshape(tensor=b, shape=[3, 2, 4]), type=F32),  # wider
            R.Bitcast(input=R.Reshape(tensor=h, shape=[2, 2]), type=U32),
        ]
        return outputs

    must_have = {
        "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Invert", "LeftShift", "RightShift",
        "PopulationCount", "Bitcast",
    }  # fmt: skip
    return Fixture("bitwise", f, [i, n, b, bn, s, w, u, x, h], must_have)


def main() -> int:
    np.random.seed(0)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for fx in [bitwise_fixture()]:
        build(fx)
        write_fixture(fx)
        verify_written(fx)
        size = (OUT_DIR / f"{fx.name}.pb").stat().st_size
        assert size < MAX_PB_BYTES, (fx.name, size)
        ops = " ".join(op_types(fx.graph_def))
        print(f"{fx.name}: {size} bytes, {len(fx.results)} results; {ops}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
