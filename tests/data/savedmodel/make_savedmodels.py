#!/usr/bin/env python
"""Write the SavedModel fixtures under tests/data/savedmodel/ (needs TensorFlow; aotc never does).

    python tests/data/savedmodel/make_savedmodels.py

For every fixture NAME it writes ``NAME/`` (a SavedModel directory as TensorFlow saves it) and
``NAME.npz`` with ``arg0, ...`` (inputs, in the order of the signature's sorted input keys) and
``result0, ...`` (what TensorFlow's loaded signature returns, in sorted output-key order).

* ``module``: a ``tf.Module`` with two ``tf.Variable``s, a nested ``tf.function`` (a call inside
  the function library) and two signatures: ``serving_default`` (static shapes, two outputs)
  and ``dynamic`` (an unknown batch dimension; compile it with ``--shape x=2,4``).
* ``keras``: a Keras 3 ``Sequential`` (Dense-ReLU-Dense-softmax) exported with
  ``model.export``; its input has an unknown batch dimension (``--shape`` needed).
* ``keras_conv``: a Keras 3 functional model (Conv2D-ReLU-MaxPool-Flatten-Dense) exported with
  ``model.export`` (``--shape image=2,8,8,3``).
* ``keras_module``: a ``tf.Module`` holding that kind of Keras 3 model, saved with
  ``tf.saved_model.save``: its variables' handles are restored only through the object graph
  (the restore function assigns the ``tf.Variable``s inside the Keras variables).
* ``tf1_loop``: a TF1 SavedModel (``tf.compat.v1.saved_model.Builder``) whose signature runs a
  v1 ``tf.while_loop`` (Enter/Merge/Switch/NextIteration frames) reading a reference
  variable: ``h = tanh(h @ w + x)`` four times.

``python make_savedmodels.py NAME ...`` writes only those fixtures.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import shutil  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

OUT = Path(__file__).resolve().parent


class Affine(tf.Module):
    """y = relu(x @ w + b), plus a second output through a nested tf.function."""

    def __init__(self, rng: np.random.Generator) -> None:
        super().__init__()
        self.w = tf.Variable(rng.standard_normal((4, 3)).astype(np.float32), name="w")
        self.b = tf.Variable(rng.standard_normal(3).astype(np.float32), name="b")

    @tf.function
    def scale(self, h: tf.Tensor) -> tf.Tensor:
        return tf.tanh(h * self.b)

    def _call(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        h = tf.matmul(x, self.w) + self.b
        return {"y": tf.nn.relu(h), "z": self.scale(h)}

    @tf.function(input_signature=[tf.TensorSpec([2, 4], tf.float32, name="x")])
    def __call__(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        return self._call(x)

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
    def dynamic(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        return self._call(x)


def save_module() -> None:
    module = Affine(np.random.default_rng(7))
    path = _fresh("module")
    signatures = {"serving_default": module.__call__, "dynamic": module.dynamic}
    tf.saved_model.save(module, str(path), signatures=signatures)
    x = np.random.default_rng(8).standard_normal((2, 4)).astype(np.float32)
    _write_npz("module", path, "serving_default", {"x": x})


def save_keras() -> None:
    keras = tf.keras
    keras.utils.set_random_seed(11)
    model = keras.Sequential(
        [
            keras.Input((8,), name="features"),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(4, activation="softmax"),
        ]
    )
    rng = np.random.default_rng(13)
    for layer in model.layers:  # Keras starts biases at zero: make them matter
        layer.bias.assign(rng.standard_normal(layer.bias.shape).astype(np.float32))
    path = _fresh("keras")
    model.export(str(path), verbose=False)
    x = np.random.default_rng(12).standard_normal((3, 8)).astype(np.float32)
    _write_npz("keras", path, "serving_default", {"features": x})


def _conv_model(seed: int):  # noqa: ANN202 (keras is imported with TensorFlow)
    keras = tf.keras
    keras.utils.set_random_seed(seed)
    image = keras.Input((8, 8, 3), name="image")
    h = keras.layers.Conv2D(4, 3, padding="same", activation="relu")(image)
    h = keras.layers.Flatten()(keras.layers.MaxPooling2D()(h))
    model = keras.Model(image, keras.layers.Dense(5, activation="tanh")(h))
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if getattr(layer, "bias", None) is not None:  # Keras starts them at zero
            layer.bias.assign(rng.standard_normal(layer.bias.shape).astype(np.float32))
    return model


def save_keras_conv() -> None:
    path = _fresh("keras_conv")
    _conv_model(21).export(str(path), verbose=False)
    x = np.random.default_rng(22).standard_normal((2, 8, 8, 3)).astype(np.float32)
    _write_npz("keras_conv", path, "serving_default", {"image": x})


class KerasHolder(tf.Module):
    """A tf.Module whose function calls the Keras 3 model it holds."""

    def __init__(self, model: object) -> None:
        super().__init__()
        self.model = model

    @tf.function(input_signature=[tf.TensorSpec([2, 8, 8, 3], tf.float32, name="x")])
    def __call__(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"y": self.model(x)}


def save_keras_module() -> None:
    path = _fresh("keras_module")
    tf.saved_model.save(KerasHolder(_conv_model(31)), str(path))
    x = np.random.default_rng(32).standard_normal((2, 8, 8, 3)).astype(np.float32)
    _write_npz("keras_module", path, "serving_default", {"x": x})


def save_tf1_loop() -> None:
    v1 = tf.compat.v1
    path = _fresh("tf1_loop")
    x_value = np.random.default_rng(41).standard_normal((2, 3)).astype(np.float32)
    v1.disable_control_flow_v2()
    graph = tf.Graph()
    with graph.as_default(), v1.Session(graph=graph) as session:
        x = v1.placeholder(tf.float32, [2, 3], name="x")
        w0 = np.random.default_rng(42).standard_normal((3, 3)).astype(np.float32) / 2
        w = v1.get_variable("w", initializer=w0, use_resource=False)
        _, h = tf.while_loop(
            lambda i, h: i < 4, lambda i, h: (i + 1, tf.tanh(tf.matmul(h, w) + x)), [0, x]
        )
        session.run(v1.global_variables_initializer())
        builder = v1.saved_model.Builder(str(path))
        signature = v1.saved_model.predict_signature_def({"x": x}, {"y": tf.identity(h)})
        builder.add_meta_graph_and_variables(session, ["serve"], {"serving_default": signature})
        builder.save()
        y = session.run(h, {x: x_value})
    v1.enable_control_flow_v2()
    np.savez(OUT / "tf1_loop.npz", arg0=x_value, result0=y)
    print("tf1_loop", x_value.shape, y.shape)


def _fresh(name: str) -> Path:
    path = OUT / name
    shutil.rmtree(path, ignore_errors=True)
    return path


def _write_npz(name: str, path: Path, signature: str, inputs: dict[str, np.ndarray]) -> None:
    # Run the signature the way a TF user would: load the SavedModel back and call it.
    fn = tf.saved_model.load(str(path)).signatures[signature]
    outputs = fn(**{k: tf.constant(v) for k, v in inputs.items()})
    arrays = {f"arg{i}": inputs[k] for i, k in enumerate(sorted(inputs))}
    arrays |= {f"result{i}": outputs[k].numpy() for i, k in enumerate(sorted(outputs))}
    np.savez(OUT / f"{name}.npz", **arrays)
    print(name, {k: v.shape for k, v in arrays.items()}, "keys", sorted(outputs))


FIXTURES = {
    "module": save_module,
    "keras": save_keras,
    "keras_conv": save_keras_conv,
    "keras_module": save_keras_module,
    "tf1_loop": save_tf1_loop,
}

if __name__ == "__main__":
    for name in sys.argv[1:] or FIXTURES:
        FIXTURES[name]()
