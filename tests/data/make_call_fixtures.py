#!/usr/bin/env python
"""Frozen GraphDefs that still call functions of their library (``call_*``).

Run in a TensorFlow environment (see make_fixtures.py)::

    python tests/data/make_call_fixtures.py

Writes ``call_<name>.{pb,yaml,npz}`` under ``tests/data/tf/`` with the contract of
make_fixtures.py. Each graph is frozen the way a user freezes it and keeps its calls:

* ``call_nested``: a ``tf.function`` calling a ``tf.function`` that calls another one twice
  (``_noinline``, so grappler keeps the ``StatefulPartitionedCall`` nodes, specializes one
  callee and leaves functions with control outputs on their variable reads);
* ``call_defun``: ``tf.compat.v1`` ``function.Defun`` functions, one calling the other: nodes
  whose op is the function's name, with several named outputs;
* ``call_grouped_conv``: a Keras 3 ``Conv2D(groups=2)``, whose convolution Keras runs as a
  ``jit_compile`` function (``_XlaMustCompile``) that freezing leaves as a call.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # before TensorFlow loads (keras loads it)
sys.path.insert(0, str(Path(__file__).parent))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from make_fixtures import (  # noqa: E402
    F32,
    OUT_DIR,
    Fixture,
    build,
    build_v1,
    normal,
    rng,
    spec,
    verify_written,
    write_fixture,
)
from tensorflow.python.framework import function  # noqa: E402

MAX_PB_BYTES = 64 * 1024


def top_level_ops(fx: Fixture) -> set[str]:
    return {n.op for n in fx.graph_def.node}


def nested() -> Fixture:
    r = rng(501)
    w = tf.Variable(normal(r, [3, 4]), name="w")
    b = tf.Variable(normal(r, [4]), name="b")
    keep = {"_noinline": True}

    @tf.function(experimental_attributes=keep)
    def inner(a):
        return tf.nn.relu(a @ w + b), -a

    @tf.function(experimental_attributes=keep)
    def middle(a):
        p, q = inner(a)
        return p * 2.0, inner(q)[0]  # the same function inlined twice, one output unused

    @tf.function(input_signature=[spec([2, 3], name="x")])
    def outer(x):
        p, q = middle(x)
        return p + 1.0, q

    fx = Fixture("call_nested", outer, [normal(r, [2, 3])], {"MatMul", "Relu"}, functions=True)
    build(fx)
    assert "StatefulPartitionedCall" in top_level_ops(fx)
    return fx


def defun() -> Fixture:
    r = rng(502)
    args = [normal(r, [2, 3])]

    def make():
        @function.Defun(F32, F32)
        def inner(a, b):
            return tf.tanh(a) * b, a - b

        @function.Defun(F32)
        def outer(a):
            p, q = inner(a, a * 2.0)
            return p + q, q

        x = tf.compat.v1.placeholder(F32, [2, 3], name="x")
        w = tf.compat.v1.Variable(normal(r, [2, 3]), name="w")
        y, z = outer(x * w)
        return [x], [tf.identity(y, name="y"), tf.identity(z, name="z")]

    fx = Fixture("call_defun", None, args, {"Tanh", "Sub"}, functions=True)
    build_v1(fx, make)
    assert any(n.op.startswith("outer") for n in fx.graph_def.node), top_level_ops(fx)
    return fx


def grouped_conv() -> Fixture:
    x = inp = keras.Input((6, 6, 4), batch_size=1, name="x")
    x = keras.layers.Conv2D(6, 3, groups=2, padding="same", name="grouped")(x)
    model = keras.Model(inp, keras.layers.ReLU()(x))
    r = rng(503)
    for weight in model.weights:
        weight.assign(normal(r, tuple(weight.shape), 0.5))

    @tf.function(input_signature=[spec([1, 6, 6, 4], name="x")])
    def f(x):
        return model(x, training=False)

    fx = Fixture("call_grouped_conv", f, [normal(r, [1, 6, 6, 4])], {"Conv2D"}, functions=True)
    build(fx)
    np.testing.assert_allclose(fx.results[0], np.asarray(model(fx.args[0])), rtol=1e-5, atol=1e-6)
    library = fx.graph_def.library.function
    assert any(f.attr["_XlaMustCompile"].b for f in library), "no jit_compile function"
    return fx


def main() -> int:
    keras.utils.set_random_seed(5)
    for make in (nested, defun, grouped_conv):
        fx = make()
        write_fixture(fx)
        verify_written(fx)
        size = (OUT_DIR / f"{fx.name}.pb").stat().st_size
        assert size < MAX_PB_BYTES, (fx.name, size)
        print(f"{fx.name:20s} {size:8d} bytes  ops: {' '.join(sorted(top_level_ops(fx)))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
