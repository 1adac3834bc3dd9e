#!/usr/bin/env python
"""Write a frozen Keras ResNet50 (random weights, ~100 MB of constants) for compile-time checks.

Needs TensorFlow (a separate environment, as for tests/data/make_fixtures.py)::

    python bench/make_resnet50.py build/resnet50      # writes resnet50.pb + resnet50.yaml

The graph is not committed: it is 100 MB. The README's compile figures come from
``/usr/bin/time -v aotc compile build/resnet50.pb --no-cache``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework.convert_to_constants import (  # noqa: E402
    convert_variables_to_constants_v2,
)


def main(prefix: str) -> int:
    keras.utils.set_random_seed(0)
    model = keras.applications.ResNet50(weights=None, input_shape=(224, 224, 3))

    @tf.function(input_signature=[tf.TensorSpec([1, 224, 224, 3], tf.float32, name="x")])
    def f(x):
        return tf.identity(model(x, training=False), name="y")

    graph_def = convert_variables_to_constants_v2(f.get_concrete_function()).graph.as_graph_def()
    out = Path(prefix)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".pb").write_bytes(graph_def.SerializeToString(deterministic=True))
    out.with_suffix(".yaml").write_text(
        "name: resnet50\nfeeds:\n  - {name: x, shape: [1, 224, 224, 3]}\nfetches:\n  - y\n"
    )
    print(f"wrote {out.with_suffix('.pb')} ({out.with_suffix('.pb').stat().st_size >> 20} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "build/resnet50"))
