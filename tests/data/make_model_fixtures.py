#!/usr/bin/env python
"""Whole-model fixtures: small Keras networks in the shapes real users bring.

Run in a TensorFlow environment (see make_fixtures.py)::

    python tests/data/make_model_fixtures.py

Writes ``model_<name>.{pb,yaml,npz}`` under ``tests/data/tf/`` with the contract of
make_fixtures.py. Weights are random (seeded) but not degenerate: batch-norm statistics and
scales are drawn away from the identity so every op matters.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from make_fixtures import (  # noqa: E402
    OUT_DIR,
    Fixture,
    build,
    normal,
    rng,
    spec,
    verify_written,
    write_fixture,
)

layers = keras.layers
MAX_PB_BYTES = 400 * 1024


def randomize(model: keras.Model, seed: int) -> keras.Model:
    """He-scaled kernels, small biases, batch-norm statistics away from the identity."""
    r = rng(seed)
    for w in model.weights:
        shape = tuple(w.shape)
        name = w.path
        if "moving_variance" in name or "gamma" in name:
            value = r.uniform(0.5, 1.5, shape)
        elif "kernel" in name and len(shape) >= 2:
            fan_in = int(np.prod(shape[:-1])) if "depthwise" not in name else shape[0] * shape[1]
            value = r.standard_normal(shape) * np.sqrt(2.0 / fan_in)
        else:
            value = r.standard_normal(shape) * 0.1
        w.assign(value.astype(np.float32))
    return model


def keras_fn(model: keras.Model, shape: list[int]):
    @tf.function(input_signature=[spec(shape, name="x")])
    def f(x):
        return model(x, training=False)

    return f


def conv_bn(x, filters: int, kernel: int, strides: int = 1, act: str | None = "relu"):
    x = layers.Conv2D(filters, kernel, strides=strides, padding="same", use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    return layers.Activation(act)(x) if act else x


def lenet() -> keras.Model:
    x = inp = keras.Input((28, 28, 1))
    x = layers.Conv2D(6, 5, padding="same", activation="relu")(x)
    x = layers.MaxPooling2D(2)(x)
    x = layers.Conv2D(16, 5, activation="relu")(x)
    x = layers.AveragePooling2D(2)(x)
    x = layers.Flatten()(x)
    x = layers.Dense(48, activation="relu")(x)
    x = layers.Dense(10, activation="softmax")(x)
    return keras.Model(inp, x, name="lenet")


def inverted_residual(x, expand: int, out: int, strides: int):
    inp = x
    x = conv_bn(x, expand, 1, act="relu6")
    if strides == 2:
        x = layers.ZeroPadding2D(((0, 1), (0, 1)))(x)
    x = layers.DepthwiseConv2D(
        3, strides=strides, padding="same" if strides == 1 else "valid", use_bias=False
    )(x)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU(6.0)(x)
    x = conv_bn(x, out, 1, act=None)
    return layers.Add()([inp, x]) if strides == 1 and inp.shape[-1] == out else x


def mobilenet() -> keras.Model:
    x = inp = keras.Input((32, 32, 3))
    x = conv_bn(x, 16, 3, strides=2, act="relu6")
    x = inverted_residual(x, 32, 16, 1)
    x = inverted_residual(x, 48, 24, 2)
    x = inverted_residual(x, 72, 24, 1)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dense(10)(x)
    return keras.Model(inp, x, name="mobilenet")


def residual_block(x, filters: int, strides: int):
    shortcut = x
    y = conv_bn(x, filters, 3, strides=strides)
    y = conv_bn(y, filters, 3, act=None)
    if strides != 1 or x.shape[-1] != filters:
        shortcut = conv_bn(x, filters, 1, strides=strides, act=None)
    return layers.ReLU()(layers.Add()([shortcut, y]))


def resnet() -> keras.Model:
    x = inp = keras.Input((32, 32, 3))
    x = conv_bn(x, 16, 3)
    x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
    x = residual_block(x, 16, 1)
    x = residual_block(x, 32, 2)
    x = layers.GlobalAveragePooling2D()(x)
    logits = layers.Dense(10)(x)
    # Both outputs: random weights saturate the softmax, which would hide errors upstream.
    return keras.Model(inp, [logits, layers.Softmax()(logits)], name="resnet")


def transformer() -> keras.Model:
    x = inp = keras.Input((16, 32))
    attn = layers.MultiHeadAttention(num_heads=4, key_dim=8)(x, x)
    x = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([x, attn]))
    ffn = layers.Dense(64, activation="gelu")(x)
    ffn = layers.Dense(32)(ffn)
    x = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([x, ffn]))
    return keras.Model(inp, x, name="transformer")


def unet() -> keras.Model:
    x = inp = keras.Input((16, 16, 3))
    skip = layers.Conv2D(8, 3, padding="same", activation="relu")(x)
    x = layers.MaxPooling2D(2)(skip)
    x = layers.Conv2D(16, 3, padding="same", activation="relu")(x)
    x = layers.Conv2DTranspose(8, 3, strides=2, padding="same")(x)
    x = layers.Concatenate()([x, skip])
    x = layers.Conv2D(8, 3, padding="same", activation="relu")(x)
    x = layers.MaxPooling2D(2)(x)
    x = layers.UpSampling2D(2, interpolation="bilinear")(x)
    x = layers.Conv2D(2, 1)(x)
    return keras.Model(inp, x, name="unet")


MODELS = {
    # name: (builder, input shape with batch, op types the model must exercise)
    "lenet": (lenet, [2, 28, 28, 1], {"Conv2D", "MaxPool", "AvgPool", "Softmax", "MatMul"}),
    "mobilenet": (mobilenet, [1, 32, 32, 3], {"DepthwiseConv2dNative", "Relu6", "Pad", "Mean"}),
    "resnet": (resnet, [2, 32, 32, 3], {"Conv2D", "MaxPool", "AddV2", "Mean", "Softmax"}),
    "transformer": (transformer, [2, 16, 32], {"Einsum", "Softmax", "Mean", "Rsqrt"}),
    "unet": (unet, [1, 16, 16, 3], {"Conv2DBackpropInput", "ConcatV2", "ResizeBilinear"}),
}


def main() -> int:
    keras.utils.set_random_seed(1)
    for seed, (name, (make, shape, ops)) in enumerate(sorted(MODELS.items())):
        model = randomize(make(), seed=1000 + seed)
        x = normal(rng(2000 + seed), shape)
        fx = Fixture(f"model_{name}", keras_fn(model, shape), [x], ops)
        build(fx)
        expected = model(x, training=False)
        expected = expected if isinstance(expected, (list, tuple)) else [expected]
        for got, want in zip(fx.results, expected, strict=True):
            np.testing.assert_allclose(got, np.asarray(want), rtol=1e-4, atol=1e-5)
        write_fixture(fx)
        verify_written(fx)
        size = (OUT_DIR / f"{fx.name}.pb").stat().st_size
        assert size < MAX_PB_BYTES, (fx.name, size)
        ops = " ".join(sorted({n.op for n in fx.graph_def.node}))
        print(f"{fx.name:20s} {size:8d} bytes  ops: {ops}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
