#!/usr/bin/env python
"""Regenerate the float16 Keras fixtures (TensorFlow and Keras needed).

    python tests/data/make_f16_fixtures.py

Writes ``.pb``, ``.yaml`` and ``.npz`` under ``tests/data/tf/`` with the contract of
``make_fixtures.py``:

- ``f16_model``: a small Keras CNN built in float16 throughout (``dtype="float16"``: weights,
  activations, input and output): Conv2D + ReLU, BatchNormalization, depthwise Conv2D, max and
  average pooling, Dense + GELU, Dense + softmax;
- ``f16_mixed_model``: the same kind of network under Keras's ``mixed_float16`` policy:
  float32 weights cast to float16 in the graph, float16 compute, a float32 softmax head.

Weights are random (seeded), batch-norm statistics set to non-trivial values; frozen like the
other fixtures. Seeded; reruns give byte-identical files with the same TF and Keras.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import keras  # noqa: E402
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

F16 = tf.float16
SHAPE = [2, 12, 12, 3]


def cnn(dtype: str | None, head_dtype: str | None) -> keras.Model:
    kw = {"dtype": dtype} if dtype else {}
    layers = keras.layers
    inputs = keras.Input(SHAPE[1:], batch_size=SHAPE[0], dtype=dtype or "float32")
    h = layers.Conv2D(8, 3, padding="same", activation="relu", **kw)(inputs)
    h = layers.BatchNormalization(**kw)(h)
    h = layers.DepthwiseConv2D(3, padding="same", activation="relu6", **kw)(h)
    h = layers.MaxPooling2D(2, **kw)(h)
    h = layers.Conv2D(12, 3, strides=2, activation="relu", **kw)(h)
    h = layers.AveragePooling2D(2, padding="same", **kw)(h)
    h = layers.Flatten(**kw)(h)
    h = layers.Dense(16, activation="gelu", **kw)(h)
    out = layers.Dense(5, activation="softmax", dtype=head_dtype or dtype)(h)
    model = keras.Model(inputs, [h, out])  # the hidden features too: softmax hides errors
    r = rng(81)
    for layer in model.layers:
        if isinstance(layer, layers.BatchNormalization):
            gamma, beta, mean, var = layer.get_weights()
            layer.set_weights([
                1 + 0.2 * r.standard_normal(gamma.shape), 0.1 * r.standard_normal(beta.shape),
                0.3 * r.standard_normal(mean.shape), 0.5 + r.random(var.shape),
            ])  # fmt: skip
    return model


def fixture(name: str, model: keras.Model, dtype) -> Fixture:
    x = rng(82).standard_normal(SHAPE).astype(dtype.as_numpy_dtype)

    @tf.function(input_signature=[spec(SHAPE, dtype, name="x")])
    def f(x):
        return model(x, training=False)

    must_have = {"Conv2D", "DepthwiseConv2dNative", "MatMul", "Softmax", "MaxPool", "AvgPool"}
    return Fixture(name, f, [x], must_have, tolerance=2**-7)


def main() -> int:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    keras.utils.set_random_seed(80)
    fixtures = [fixture("f16_model", cnn("float16", None), F16)]
    keras.mixed_precision.set_global_policy("mixed_float16")
    fixtures.append(fixture("f16_mixed_model", cnn(None, "float32"), F32))
    keras.mixed_precision.set_global_policy("float32")
    for fx in fixtures:
        build(fx)
        write_fixture(fx)
        verify_written(fx)
        size = (OUT_DIR / f"{fx.name}.pb").stat().st_size
        ops = " ".join(op_types(fx.graph_def))
        print(f"{fx.name}: {size} bytes, {len(fx.results)} results; {ops}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
