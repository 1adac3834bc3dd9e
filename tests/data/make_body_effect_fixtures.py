#!/usr/bin/env python
"""TF2 control flow whose bodies hold side effects the results do not need.

Run in a TensorFlow environment (see make_fixtures.py)::

    python tests/data/make_body_effect_fixtures.py

TensorFlow runs every stateful op of a function body (tf.function adds each to the body's
control outputs), so a compiler that keeps only what the results need would drop them.
Writes under ``tests/data/effects/`` (functional control flow, as tf.function emits it):

* ``while_print.pb``: a ``tf.while_loop`` whose body prints its counter (``PrintV2``).
* ``cond_print.pb``: a ``tf.cond`` whose true branch prints (``PrintV2``).
* ``while_assert.pb``: a ``tf.while_loop`` whose body asserts its values are below 1e30
  (``Assert``, dropped as tfcompile drops it); ``while_assert.npz`` holds ``arg0`` and
  TensorFlow's ``result0``.

Each ``NAME.pb`` has an aotc config ``NAME.yaml``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fixtures import freeze  # noqa: E402

OUT = Path(__file__).resolve().parent / "effects"
SPEC = [tf.TensorSpec([4], tf.float32)]


@tf.function(input_signature=SPEC)
def while_print(x):
    def body(i, v):
        tf.print("step", i)
        return i + 1, v * 2.0

    return tf.while_loop(lambda i, v: i < 3, body, [tf.constant(0), x])[1]


@tf.function(input_signature=SPEC)
def cond_print(x):
    def then():
        tf.print("positive")
        return x * 2.0

    return tf.cond(tf.reduce_sum(x) > 0, then, lambda: x - 1.0)


@tf.function(input_signature=SPEC)
def while_assert(x):
    def body(i, v):
        tf.debugging.Assert(tf.reduce_all(v < 1e30), ["too big"])
        return i + 1, v * 2.0

    return tf.while_loop(lambda i, v: i < 3, body, [tf.constant(0), x])[1]


def write(name: str, fn, check: bool) -> None:
    graph_def, feeds, fetches = freeze(fn, lower_control_flow=None)
    (OUT / f"{name}.pb").write_bytes(graph_def.SerializeToString(deterministic=True))
    feed, fetch = feeds[0].split(":")[0], fetches[0].split(":")[0]
    (OUT / f"{name}.yaml").write_text(
        f"feeds:\n  - {{name: {feed}, shape: [4], dtype: float32}}\nfetches:\n  - {fetch}\n"
    )
    if check:
        x = np.array([1.0, -2.0, 3.5, 0.25], np.float32)
        np.savez(OUT / f"{name}.npz", arg0=x, result0=fn(tf.constant(x)).numpy())


def main() -> int:
    OUT.mkdir(exist_ok=True)
    write("while_print", while_print, check=False)
    write("cond_print", cond_print, check=False)
    write("while_assert", while_assert, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
