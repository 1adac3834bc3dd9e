"""Benchmark models: the bundled fixtures plus issue 5's Keras models and GEMM/conv kernels.

Each model is a frozen GraphDef with one float32 input and one output, described by a
:class:`BenchModel` (graph, aotc YAML config, input array). The fixtures are read from
``tests/data/tf``; the rest are built with TensorFlow (random weights, seeded) into a cache
folder (default ``build/bench-models``) the first time they are asked for. Needs the bench
environment (TensorFlow); not part of the aotc package.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
FIXTURE_DIR = REPO / "tests" / "data" / "tf"
FIXTURES = ["mlp_b8", "model_lenet", "model_mobilenet", "model_resnet"]
FIXTURES += ["model_transformer", "model_unet"]


@dataclass
class BenchModel:
    """One benchmark case: a frozen graph with a single input ``feed`` and output ``fetch``."""

    name: str  # also the C identifier prefix aotc uses
    kind: str  # "fixture", "model" or "kernel"
    description: str
    graph: Path
    config: Path
    x: np.ndarray
    feed: str
    fetch: str
    flops: float = 0.0  # for kernels: floating-point operations per call


@dataclass
class Spec:
    """How to build one generated model."""

    description: str
    kind: str
    shape: list[int]
    build: Callable[[], object]  # returns a tf.function-compatible callable of one tensor
    flops: float = 0.0


# ---------------------------------------------------------------- generated graphs (need TF)


def _keras_fn(make: Callable[[], object]) -> Callable[[], object]:
    """Wraps a Keras model builder as a builder of a one-argument inference function."""

    def build():
        model = _randomize(make())
        return lambda x: model(x, training=False)

    return build


def _randomize(model, seed: int = 0):
    """He-scaled kernels, small biases, batch-norm statistics away from the identity (as
    tests/data/make_model_fixtures.py does), so outputs are not degenerate: with Keras'
    default initialisation MobileNetV2's softmax is exactly uniform."""
    r = np.random.default_rng(seed)
    for w in model.weights:
        shape, name = tuple(w.shape), w.path
        if "moving_variance" in name or "gamma" in name:
            value = r.uniform(0.5, 1.5, shape)
        elif "kernel" in name and len(shape) >= 2:
            fan_in = shape[0] * shape[1] if "depthwise" in name else int(np.prod(shape[:-1]))
            value = r.standard_normal(shape) * np.sqrt(2.0 / fan_in)
        else:
            value = r.standard_normal(shape) * 0.1
        w.assign(value.astype(np.float32))
    return model


def _mlp():
    import keras

    layers = keras.layers
    return keras.Sequential(
        [
            keras.Input((784,)),
            layers.Dense(512, activation="relu"),
            layers.Dense(256, activation="gelu"),
            layers.Dense(10, activation="softmax"),
        ]
    )


def _lenet():
    import keras

    layers = keras.layers
    return keras.Sequential(
        [
            keras.Input((28, 28, 1)),
            layers.Conv2D(6, 5, padding="same", activation="relu"),
            layers.MaxPooling2D(2),
            layers.Conv2D(16, 5, activation="relu"),
            layers.MaxPooling2D(2),
            layers.Flatten(),
            layers.Dense(120, activation="relu"),
            layers.Dense(84, activation="relu"),
            layers.Dense(10, activation="softmax"),
        ]
    )


def _transformer():
    import keras

    layers = keras.layers
    x = inp = keras.Input((64, 128))
    attn = layers.MultiHeadAttention(num_heads=4, key_dim=32)(x, x)
    x = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([x, attn]))
    ffn = layers.Dense(512, activation="gelu")(x)
    ffn = layers.Dense(128)(ffn)
    x = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([x, ffn]))
    return keras.Model(inp, x)


def _unet():
    import keras

    layers = keras.layers

    def block(x, filters: int):
        x = layers.Conv2D(filters, 3, padding="same", activation="relu")(x)
        return layers.Conv2D(filters, 3, padding="same", activation="relu")(x)

    inp = keras.Input((64, 64, 3))
    s1 = block(inp, 16)
    s2 = block(layers.MaxPooling2D(2)(s1), 32)
    bottom = block(layers.MaxPooling2D(2)(s2), 64)
    up2 = layers.Conv2DTranspose(32, 3, strides=2, padding="same")(bottom)
    x = block(layers.Concatenate()([up2, s2]), 32)
    up1 = layers.UpSampling2D(2, interpolation="bilinear")(x)
    x = block(layers.Concatenate()([up1, s1]), 16)
    return keras.Model(inp, layers.Conv2D(2, 1)(x))


def _mobilenet_v2():
    import keras

    return keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3))


def _efficientnet_b0():
    import keras

    return keras.applications.EfficientNetB0(weights=None, input_shape=(224, 224, 3))


def _recurrent(layer: str, steps: int, features: int) -> Callable[[], object]:
    def make():
        import keras

        inp = keras.Input((steps, features))
        return keras.Model(inp, getattr(keras.layers, layer)(128)(inp))

    return _keras_fn(make)


def _rnn_spec(layer: str, batch: int) -> Spec:
    what = f"Keras {layer}(128) over 50 steps of 40 features, batch {batch}"
    return Spec(what, "model", [batch, 50, 40], _recurrent(layer, 50, 40))


def _gemm(k: int, n: int) -> Callable[[], object]:
    def build():
        import tensorflow as tf

        b = tf.constant(np.random.default_rng(k + n).standard_normal((k, n), np.float32))
        return lambda x: tf.linalg.matmul(x, b)

    return build


def _conv(c_in: int, c_out: int) -> Callable[[], object]:
    def build():
        import tensorflow as tf

        w = np.random.default_rng(c_in).standard_normal((3, 3, c_in, c_out), np.float32)
        w = tf.constant(w * np.float32(np.sqrt(2.0 / (9 * c_in))))
        return lambda x: tf.nn.conv2d(x, w, strides=1, padding="SAME")

    return build


def _depthwise(channels: int) -> Callable[[], object]:
    def build():
        import tensorflow as tf

        w = np.random.default_rng(channels).standard_normal((3, 3, channels, 1), np.float32)
        w = tf.constant(w / np.float32(3.0))
        return lambda x: tf.nn.depthwise_conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME")

    return build


SPECS: dict[str, Spec] = {
    "bench_mlp": Spec("Keras MLP 784-512(relu)-256(gelu)-10(softmax), batch 8", "model",
                      [8, 784], _keras_fn(_mlp)),
    "bench_lenet": Spec("Keras LeNet-5 style CNN 28x28x1, batch 4", "model",
                        [4, 28, 28, 1], _keras_fn(_lenet)),
    "bench_transformer": Spec(
        "Keras transformer encoder block (MHA 4x32, LayerNorm, GELU FFN 512), 2x64x128",
        "model", [2, 64, 128], _keras_fn(_transformer)),
    "bench_unet": Spec("small U-Net 64x64x3 (Conv2DTranspose, bilinear resize), batch 1",
                       "model", [1, 64, 64, 3], _keras_fn(_unet)),
    "bench_mobilenet_v2": Spec("Keras MobileNetV2 224x224 (weights=None), batch 1", "model",
                               [1, 224, 224, 3], _keras_fn(_mobilenet_v2)),
    "bench_efficientnet_b0": Spec("Keras EfficientNetB0 224x224 (weights=None), batch 1",
                                  "model", [1, 224, 224, 3], _keras_fn(_efficientnet_b0)),
    "bench_lstm_b1": _rnn_spec("LSTM", 1),
    "bench_lstm_b8": _rnn_spec("LSTM", 8),
    "bench_gru_b1": _rnn_spec("GRU", 1),
    "bench_gru_b8": _rnn_spec("GRU", 8),
    "gemm_512": Spec("GEMM 512x512x512 f32 (placeholder @ constant)", "kernel",
                     [512, 512], _gemm(512, 512), 2.0 * 512**3),
    "gemm_1024": Spec("GEMM 1024x1024x1024 f32 (placeholder @ constant)", "kernel",
                      [1024, 1024], _gemm(1024, 1024), 2.0 * 1024**3),
    "conv3x3_56x56x64": Spec("Conv2D 3x3 SAME, 1x56x56x64 -> 64", "kernel",
                             [1, 56, 56, 64], _conv(64, 64), 2.0 * 56 * 56 * 64 * 64 * 9),
    "dwconv3x3_112x112x32": Spec("DepthwiseConv2D 3x3 SAME, 1x112x112x32", "kernel",
                                 [1, 112, 112, 32], _depthwise(32), 2.0 * 112 * 112 * 32 * 9),
}  # fmt: skip


def _freeze(fn: Callable[[object], object], shape: list[int]) -> object:
    """A frozen GraphDef of ``fn`` with placeholder ``x`` and output node ``y`` (control flow
    lowered to v1 frames, TF's default)."""
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    @tf.function(input_signature=[tf.TensorSpec(shape, tf.float32, name="x")])
    def f(x):
        return tf.identity(fn(x), name="y")

    frozen = convert_variables_to_constants_v2(f.get_concrete_function())
    return frozen.graph.as_graph_def()


def _write_config(path: Path, name: str, shape: list[int], fetch: str) -> None:
    dims = ", ".join(str(d) for d in shape)
    path.write_text(
        f"name: {name}\nfeeds:\n  - {{name: x, shape: [{dims}], dtype: float32}}\n"
        f"fetches:\n  - {{name: {fetch}}}\n"
    )


def build_generated(name: str, out_dir: Path) -> BenchModel:
    """The generated model ``name``, built into ``out_dir`` unless already there."""
    spec = SPECS[name]
    graph, config, data = (out_dir / f"{name}{ext}" for ext in (".pb", ".yaml", ".npz"))
    if not (graph.exists() and config.exists() and data.exists()):
        import keras

        keras.utils.set_random_seed(0)
        out_dir.mkdir(parents=True, exist_ok=True)
        graph_def = _freeze(spec.build(), spec.shape)
        x = np.random.default_rng(1).standard_normal(spec.shape).astype(np.float32)
        np.savez(data, arg0=x)
        _write_config(config, name, spec.shape, "y")
        graph.write_bytes(graph_def.SerializeToString(deterministic=True))
    x = np.load(data)["arg0"]
    return BenchModel(name, spec.kind, spec.description, graph, config, x, "x", "y", spec.flops)


def load_fixture(name: str) -> BenchModel:
    """A bundled test fixture (its config names the single feed and fetch)."""
    import yaml

    config = FIXTURE_DIR / f"{name}.yaml"
    cfg = yaml.safe_load(config.read_text())
    feed, fetch = (_entry_name(e) for e in (cfg["feeds"][0], cfg["fetches"][0]))
    x = np.load(FIXTURE_DIR / f"{name}.npz")["arg0"]
    shape = "x".join(str(d) for d in x.shape)
    return BenchModel(
        cfg.get("name", name), "fixture", f"bundled fixture {name}.pb, input {shape}",
        FIXTURE_DIR / f"{name}.pb", config, x, feed, fetch,
    )  # fmt: skip


def _entry_name(entry: object) -> str:
    return entry if isinstance(entry, str) else str(entry["name"])  # type: ignore[index]


def all_names() -> list[str]:
    """Every model name, fixtures first."""
    return [*FIXTURES, *SPECS]


def load(name: str, out_dir: Path) -> BenchModel:
    """The model ``name`` (a fixture or a generated model)."""
    return load_fixture(name) if name in FIXTURES else build_generated(name, out_dir)
