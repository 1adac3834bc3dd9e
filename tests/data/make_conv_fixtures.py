#!/usr/bin/env python
"""Regenerate the convolution / pooling / normalization / resize fixtures under tests/data/tf.

Run with a TensorFlow environment (see make_fixtures.py)::

    python tests/data/make_conv_fixtures.py

It reuses make_fixtures.py's helpers (freezing, running the frozen graph, writing and
re-verifying NAME.pb / NAME.yaml / NAME.npz) and writes only its own fixtures. Seeded: reruns
give the same files with the same TF version.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from make_fixtures import (  # noqa: E402
    OUT_DIR,
    Fixture,
    build,
    normal,
    positive,
    rng,
    spec,
    verify_written,
    write_fixture,
)

MAX_PB_BYTES = 100 * 1024
R = tf.raw_ops


def const(r: np.random.Generator, shape: list[int], scale: float = 0.5) -> tf.Tensor:
    return tf.constant(normal(r, shape, scale))


def conv2d_fixture() -> Fixture:
    r = rng(101)
    x = normal(r, [2, 9, 9, 3])
    w3, w2 = const(r, [3, 3, 3, 4]), const(r, [2, 2, 3, 5])
    bias = const(r, [4])

    @tf.function(input_signature=[spec([2, 9, 9, 3], name="x")])
    def f(x):
        same = R.Conv2D(input=x, filter=w3, strides=[1, 1, 1, 1], padding="SAME")
        return [
            same,
            R.Conv2D(input=x, filter=w3, strides=[1, 2, 2, 1], padding="VALID"),
            R.Conv2D(input=x, filter=w3, strides=[1, 2, 2, 1], padding="SAME"),
            R.Conv2D(input=x, filter=w2, strides=[1, 2, 1, 1], padding="SAME"),  # even kernel
            R.Conv2D(
                input=x,
                filter=w3,
                strides=[1, 1, 2, 1],
                padding="EXPLICIT",
                explicit_paddings=[0, 0, 1, 2, 2, 0, 0, 0],
            ),
            R.Conv2D(
                input=x, filter=w3, strides=[1, 1, 1, 1], padding="SAME", dilations=[1, 2, 2, 1]
            ),
            R.Relu(features=R.BiasAdd(value=same, bias=bias)),
        ]

    return Fixture("conv2d", f, [x], {"Conv2D", "BiasAdd", "Relu"})


def depthwise_fixture() -> Fixture:
    r = rng(102)
    x = normal(r, [2, 8, 7, 3])
    m1, m2 = const(r, [3, 3, 3, 1]), const(r, [3, 3, 3, 2])

    @tf.function(input_signature=[spec([2, 8, 7, 3], name="x")])
    def f(x):
        dw = R.DepthwiseConv2dNative
        return [
            dw(input=x, filter=m1, strides=[1, 1, 1, 1], padding="SAME"),
            dw(input=x, filter=m2, strides=[1, 2, 2, 1], padding="SAME"),
            dw(input=x, filter=m2, strides=[1, 2, 2, 1], padding="VALID"),
        ]

    return Fixture("depthwise", f, [x], {"DepthwiseConv2dNative"})


def conv_transpose_fixture() -> Fixture:
    import keras

    r = rng(103)
    x = normal(r, [2, 5, 4, 3])
    layers = [
        keras.layers.Conv2DTranspose(4, 3, strides=2, padding="same", name="up_same"),
        keras.layers.Conv2DTranspose(2, 3, strides=2, padding="valid", name="up_valid"),
        keras.layers.Conv2DTranspose(3, (2, 3), strides=(1, 2), padding="same", name="up_rect"),
    ]
    for layer in layers:
        layer.build((2, 5, 4, 3))
        layer.set_weights([normal(r, w.shape, 0.5) for w in layer.get_weights()])
    w = const(r, [3, 3, 2, 3])

    @tf.function(input_signature=[spec([2, 5, 4, 3], name="x")])
    def f(x):
        raw = R.Conv2DBackpropInput(
            input_sizes=tf.constant([2, 10, 8, 2]),
            filter=w,
            out_backprop=x,
            strides=[1, 2, 2, 1],
            padding="SAME",
        )
        return [layer(x) for layer in layers] + [raw]

    return Fixture("conv_transpose", f, [x], {"Conv2DBackpropInput"})


def conv3d_fixture() -> Fixture:
    r = rng(104)
    x = normal(r, [1, 5, 6, 4, 2])
    w = const(r, [3, 3, 2, 2, 3])

    @tf.function(input_signature=[spec([1, 5, 6, 4, 2], name="x")])
    def f(x):
        return [
            R.Conv3D(input=x, filter=w, strides=[1, 1, 1, 1, 1], padding="SAME"),
            R.Conv3D(input=x, filter=w, strides=[1, 2, 2, 1, 1], padding="VALID"),
            R.MaxPool3D(input=x, ksize=[1, 2, 2, 2, 1], strides=[1, 2, 2, 2, 1], padding="SAME"),
            R.AvgPool3D(input=x, ksize=[1, 3, 2, 2, 1], strides=[1, 2, 2, 1, 1], padding="SAME"),
        ]

    return Fixture("conv3d", f, [x], {"Conv3D", "MaxPool3D", "AvgPool3D"})


def pooling_fixture() -> Fixture:
    r = rng(105)
    x = normal(r, [2, 9, 8, 3])

    @tf.function(input_signature=[spec([2, 9, 8, 3], name="x")])
    def f(x):
        def pool(op, k, s, padding):
            arg = "value" if op is R.AvgPool else "input"  # the raw ops name it differently
            return op(**{arg: x}, ksize=[1, *k, 1], strides=[1, *s, 1], padding=padding)

        return [
            pool(R.MaxPool, (3, 3), (2, 2), "SAME"),
            pool(R.MaxPool, (2, 2), (2, 2), "VALID"),
            pool(R.MaxPool, (3, 2), (1, 2), "SAME"),
            pool(R.AvgPool, (3, 3), (2, 2), "SAME"),
            pool(R.AvgPool, (2, 3), (2, 1), "VALID"),
            pool(R.AvgPool, (3, 2), (1, 3), "SAME"),
            R.MaxPoolV2(
                input=x,
                ksize=tf.constant([1, 2, 3, 1]),
                strides=tf.constant([1, 2, 2, 1]),
                padding="SAME",
            ),
        ]

    return Fixture("pooling", f, [x], {"MaxPool", "AvgPool", "MaxPoolV2"})


def batchnorm_fixture() -> Fixture:
    import keras

    r = rng(106)
    x = normal(r, [2, 5, 5, 4])
    scale, offset, mean = const(r, [4]), const(r, [4]), const(r, [4])
    variance = tf.constant(positive(r, [4]))
    bn = keras.layers.BatchNormalization(epsilon=1e-3, name="bn")
    bn.build((2, 5, 5, 4))
    bn.set_weights([normal(r, [4]), normal(r, [4]), normal(r, [4]), positive(r, [4])])

    @tf.function(input_signature=[spec([2, 5, 5, 4], name="x")])
    def f(x):
        y = R.FusedBatchNormV3(
            x=x, scale=scale, offset=offset, mean=mean, variance=variance, epsilon=1e-3,
            is_training=False,
        )  # fmt: skip
        y2 = R.FusedBatchNorm(
            x=x, scale=scale, offset=offset, mean=mean, variance=variance, is_training=False
        )
        return [y[0], y2[0], bn(x, training=False)]

    return Fixture("batchnorm", f, [x], {"FusedBatchNormV3", "FusedBatchNorm"})


def resize_fixture() -> Fixture:
    r = rng(107)
    x = normal(r, [1, 5, 7, 2])

    @tf.function(input_signature=[spec([1, 5, 7, 2], name="x")])
    def f(x):
        out = []
        for size in ([9, 11], [3, 4], [5, 14]):
            for align, half in ((False, False), (True, False), (False, True)):
                kw = {"align_corners": align, "half_pixel_centers": half}
                s = tf.constant(size)
                out.append(R.ResizeBilinear(images=x, size=s, **kw))
                out.append(R.ResizeNearestNeighbor(images=x, size=s, **kw))
        return out

    return Fixture("resize", f, [x], {"ResizeBilinear", "ResizeNearestNeighbor"})


def resize_bicubic_fixture() -> Fixture:
    r = rng(108)
    x = normal(r, [1, 5, 7, 2])

    @tf.function(input_signature=[spec([1, 5, 7, 2], name="x")])
    def f(x):
        out = []
        for size in ([9, 11], [3, 4], [5, 14], [2, 2]):
            for align, half in ((False, False), (True, False), (False, True)):
                kw = {"align_corners": align, "half_pixel_centers": half}
                out.append(R.ResizeBicubic(images=x, size=tf.constant(size), **kw))
        return out

    return Fixture("resize_bicubic", f, [x], {"ResizeBicubic"})


def resize_area_fixture() -> Fixture:
    r = rng(109)
    x = normal(r, [2, 6, 7, 3])

    @tf.function(input_signature=[spec([2, 6, 7, 3], name="x")])
    def f(x):
        out = []
        for size in ([3, 3], [4, 5], [6, 7], [9, 10], [1, 1]):
            for align in (False, True):
                out.append(R.ResizeArea(images=x, size=tf.constant(size), align_corners=align))
        return out

    return Fixture("resize_area", f, [x], {"ResizeArea"})


def main() -> int:
    import keras

    keras.utils.set_random_seed(0)
    np.random.seed(0)
    fixtures = [
        conv2d_fixture(),
        depthwise_fixture(),
        conv_transpose_fixture(),
        conv3d_fixture(),
        pooling_fixture(),
        batchnorm_fixture(),
        resize_fixture(),
        resize_bicubic_fixture(),
        resize_area_fixture(),
    ]
    for fx in fixtures:
        build(fx)
        write_fixture(fx)
        verify_written(fx)
        size = (OUT_DIR / f"{fx.name}.pb").stat().st_size
        assert size < MAX_PB_BYTES, (fx.name, size)
        ops = sorted({n.op for n in fx.graph_def.node})
        print(f"{fx.name:<15} {size:>6} bytes  {' '.join(ops)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
