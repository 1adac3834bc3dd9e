#!/usr/bin/env python
"""Regenerate the bfloat16 fixture (TensorFlow needed).

    python tests/data/make_bf16_fixtures.py

Writes ``bf16_model.pb``, ``.yaml`` and ``.npz`` under ``tests/data/tf/`` with the contract of
``make_fixtures.py``: a small Keras-style network (Conv2D + bias + ReLU, max pool, Dense + tanh,
Dense + softmax) with its weights cast to bfloat16, fed one bfloat16 and one float32 input (cast
in the graph), plus casts between bfloat16 and the other float and integer types.
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
BF16, F16, F64, U8 = tf.bfloat16, tf.float16, tf.float64, tf.uint8
MAX_PB_BYTES = 50 * 1024


def bf16_model_fixture() -> Fixture:
    r = rng(61)

    def weight(*shape: int, scale: float) -> tf.Tensor:
        return tf.constant((r.standard_normal(shape) * scale).astype(np.float32), dtype=BF16)

    kernel, bias = weight(3, 3, 3, 8, scale=0.3), weight(8, scale=0.1)
    w1, b1 = weight(72, 16, scale=0.15), weight(16, scale=0.1)
    w2, b2 = weight(16, 5, scale=0.4), weight(5, scale=0.1)
    x = tf.cast(r.standard_normal([2, 6, 6, 3]).astype(np.float32), BF16).numpy()
    y = (r.standard_normal([2, 5]) * 4).astype(np.float32)

    @tf.function(input_signature=[spec([2, 6, 6, 3], BF16, name="x"), spec([2, 5], F32, name="y")])
    def f(x, y):
        conv = R.Conv2D(input=x, filter=kernel, strides=[1, 1, 1, 1], padding="SAME")
        features = R.Relu(features=R.BiasAdd(value=conv, bias=bias))
        pooled = R.MaxPool(input=features, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
        flat = R.Reshape(tensor=pooled, shape=[2, 72])
        hidden = R.Tanh(x=R.BiasAdd(value=R.MatMul(a=flat, b=w1), bias=b1))
        logits = R.AddV2(x=R.BiasAdd(value=R.MatMul(a=hidden, b=w2), bias=b2), y=tf.cast(y, BF16))
        probs = R.Softmax(logits=logits)
        return [
            logits,
            probs,
            R.Cast(x=probs, DstT=F32),
            R.Cast(x=logits, DstT=F64),
            R.Cast(x=R.Cast(x=y, DstT=F16), DstT=BF16),
            R.Cast(x=R.Cast(x=y, DstT=BF16), DstT=F16),
            R.Cast(x=R.Mul(x=tf.cast(y, BF16), y=tf.constant(10.0, BF16)), DstT=I32),
            R.Cast(x=R.Cast(x=R.Abs(x=y), DstT=U8), DstT=BF16),
            R.Mean(input=hidden, axis=[1]),
            R.Sum(input=R.Tile(input=hidden, multiples=[40, 1]), axis=[0]),  # past bf16's 256
        ]

    must_have = {"Conv2D", "MatMul", "Softmax", "Cast", "MaxPool"}
    return Fixture("bf16_model", f, [x, y], must_have, tolerance=2**-5)


def main() -> int:
    np.random.seed(0)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for fx in [bf16_model_fixture()]:
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
