#!/usr/bin/env python
"""TF1 control flow nested every way, for functionalization (aotc/frontend/functionalize.py).

Run in a TensorFlow environment (see make_fixtures.py)::

    python tests/data/make_functionalize_fixtures.py

Writes ``NAME.{pb,yaml,npz}`` under ``tests/data/functionalize/`` with the contract of
make_fixtures.py (``arg0..`` inputs, ``result0..`` what the frozen graph computes):

* ``v1_mixed_*``: a ``tf.compat.v1`` graph built with control flow v1: a ``tf.cond`` and a
  while loop whose trip count is the outer counter inside a ``tf.while_loop`` with
  ``maximum_iterations``, a while loop inside a ``tf.cond``, and a ``tf.cond`` of two outputs;
  ``_pos`` and ``_neg`` take different branches;
* ``lowered_mixed_n*``: a ``tf.function`` frozen with lowering (v1 frames, Switch/Merge,
  _SwitchN): a nested ``tf.cond`` inside a loop inside a ``tf.cond``, and a ``tf.switch_case``
  on its result; ``n`` picks the branches;
* ``ckpt_loop_v1`` / ``ckpt_loop_v2``: an unfrozen ``tf.compat.v1`` graph whose variables (one
  resource, one ref) are read inside a while loop and a ``tf.cond``, built with control flow
  v1 (frames) or v2 (``While``/``If`` taking the variable handles), with the variables' values
  in a V2 checkpoint ``NAME.ckpt.*`` (for ``--checkpoint``); ``NAME.pb`` is not frozen.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from make_control_flow_fixtures import canonicalize, control_flow_v1  # noqa: E402
from make_fixtures import (  # noqa: E402
    Fixture,
    build,
    build_v1,
    dtype_name,
    normal,
    rng,
    tensor_to_fetch,
    verify_written,
    write_fixture,
)

OUT = Path(__file__).resolve().parent / "functionalize"
v1 = tf.compat.v1


def mixed_v1() -> tuple[list, list]:
    with control_flow_v1():
        x = v1.placeholder(tf.float32, [3], name="x")

        def body(i, v):
            v = tf.cond(tf.equal(i % 2, 0), lambda: v * 2.0, lambda: tf.sin(v) - 1.0)
            step = lambda j, w: (j + 1, w + tf.cast(j, tf.float32))  # noqa: E731
            _, v = tf.while_loop(lambda j, w: j < i, step, (0, v))
            return i + 1, v

        _, v = tf.while_loop(lambda i, v: i < 5, body, (0, x), maximum_iterations=7)
        halve = lambda k, a: (k + 1, a * 0.5)  # noqa: E731
        y = tf.cond(
            tf.reduce_sum(v) > 0, lambda: tf.while_loop(lambda k, a: k < 3, halve, (0, v))[1],
            lambda: -v,
        )  # fmt: skip
        a, b = tf.cond(tf.reduce_sum(x) > 0, lambda: (x + 1, x * 3), lambda: (x - 1, x / 3))
    outputs = [tf.identity(y, name="y"), tf.identity(a, name="a"), tf.identity(b, name="b")]
    return [x], outputs


@tf.function(
    input_signature=[tf.TensorSpec([4], tf.float32, "x"), tf.TensorSpec([], tf.int32, "n")]
)
def mixed_tf2(x, n):
    def body(i, v):
        inner = lambda: tf.cond(tf.reduce_max(v) > 1.0, lambda: v * 0.5, lambda: v + 1.0)  # noqa: E731
        return i + 1, tf.cond(i > 1, inner, lambda: v * v)

    r = tf.cond(
        n > 2, lambda: tf.while_loop(lambda i, v: i < n, body, [0, x])[1], lambda: tf.nn.relu(x)
    )
    return r, tf.switch_case(n % 3, [lambda: r + 1.0, lambda: tf.tanh(r), lambda: r * r])


def weighted_loop(x, w, b):
    """A loop and a cond reading variables w and b (the body and a branch read them)."""
    step = lambda i, v: (i + 1, tf.tanh(v * w.value() + b.value()))  # noqa: E731
    _, v = tf.while_loop(lambda i, v: i < 3, step, (0, x))
    return tf.cond(tf.reduce_sum(v) > 0, lambda: v * w.value(), lambda: v - b.value())


def checkpoint_loop(name: str, cf_v1: bool) -> Fixture:
    """The unfrozen graph of ``weighted_loop`` and a checkpoint of its variables."""
    x_value = normal(rng(720), [3])
    graph = tf.Graph()
    with graph.as_default():
        with control_flow_v1() if cf_v1 else contextlib.nullcontext():
            x = v1.placeholder(tf.float32, [3], name="x")
            w = v1.Variable(tf.zeros([3]), name="w", use_resource=True)
            b = v1.Variable(tf.zeros([3]), name="b", use_resource=False)
            y = tf.identity(weighted_loop(x, w, b), name="y")
        saver = v1.train.Saver()
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            r = rng(721)
            sess.run([w.assign(normal(r, [3], 1.0)), b.assign(normal(r, [3], 0.3))])
            saver.save(sess, str(OUT / f"{name}.ckpt"), write_meta_graph=False, write_state=False)
            result = sess.run(y, {x: x_value})
    ops = {n.op for n in graph.as_graph_def().node}
    assert ({"Enter", "Switch"} if cf_v1 else {"While", "If"}) <= ops, (name, sorted(ops))
    control = "v1 frames" if cf_v1 else "v2 While/If"
    doc = f"unfrozen: variables read in a loop body and a cond branch ({control}), --checkpoint"
    fx = Fixture(name, None, [x_value], set(), doc=doc, out_dir=OUT)
    fx.graph_def = graph.as_graph_def()
    fx.feeds = [("x", [3], dtype_name(tf.float32))]
    fx.fetches = [tensor_to_fetch(y.name)]
    fx.results = [np.asarray(result)]
    return fx


def fixtures() -> list[Fixture]:
    frames = {"Enter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond"}
    built = []
    for name, x in (("pos", [0.5, -1.0, 2.0]), ("neg", [-3.5, -1.0, 2.0])):
        doc = f"v1 loops and conds nested both ways, x = {x}"
        fx = Fixture(
            f"v1_mixed_{name}", None, [np.array(x, np.float32)], frames, doc=doc, out_dir=OUT
        )
        build_v1(fx, mixed_v1)
        built.append(fx)
    for n in (5, 1):
        args = [np.array([0.3, -1.2, 2.0, 0.7], np.float32), np.array(n, np.int32)]
        doc = f"lowered cond in a loop in a cond, and a switch_case, n = {n}"
        fx = Fixture(
            f"lowered_mixed_n{n}", mixed_tf2, args, frames | {"_SwitchN"}, doc=doc, out_dir=OUT
        )
        build(fx)
        built.append(fx)
    return built + [checkpoint_loop("ckpt_loop_v1", True), checkpoint_loop("ckpt_loop_v2", False)]


def readme(built: list[Fixture]) -> str:
    lines = [
        "# Functionalization fixtures",
        "",
        "TF1 control flow nested every way, written by `tests/data/make_functionalize_fixtures.py`",
        f"(see its docstring). TensorFlow {tf.__version__}. Files as in `tests/data/tf`.",
        "",
        "| fixture | what | feeds | fetches |",
        "|---|---|---|---|",
    ]
    for fx in built:
        feeds = ", ".join(f"`{n}` {d}{s}" for n, s, d in fx.feeds)
        lines.append(f"| {fx.name} | {fx.doc} | {feeds} | {', '.join(fx.fetches)} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    OUT.mkdir(exist_ok=True)
    built = fixtures()
    for fx in built:
        fx.graph_def = canonicalize(fx.graph_def)
        write_fixture(fx)
        if not fx.name.startswith("ckpt_"):  # an unfrozen graph runs only with its variables
            verify_written(fx)
        print(f"{fx.name:24s} {(OUT / f'{fx.name}.pb').stat().st_size:8d} bytes  {fx.doc}")
    (OUT / "README.md").write_text(readme(built))
    return 0


if __name__ == "__main__":
    sys.exit(main())
