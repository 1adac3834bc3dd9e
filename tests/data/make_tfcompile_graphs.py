#!/usr/bin/env python
"""tfcompile's own test graphs, re-made: what TensorFlow's
tensorflow/compiler/aot/tests/make_test_graphs.py builds, written here in the same TF1 style
(``tf.compat.v1`` graph mode, placeholders, variables, ``control_dependencies``).

Run in a TensorFlow environment (see make_fixtures.py)::

    python tests/data/make_tfcompile_graphs.py

For each graph ``test_graph_NAME`` it writes under ``tests/data/tfcompile/``:

* ``test_graph_NAME.pb``: the GraphDef as tfcompile reads it (not frozen);
* ``test_graph_NAME.config.pbtxt``: its tfcompile config (``tensorflow.tf2xla.Config`` text,
  checked here by TensorFlow's own ``tf2xla_pb2``);
* ``test_graph_NAME.npz``: ``arg0..`` (the feeds, then the variables' values before the first
  call) and, for each of ``calls`` consecutive calls ``c``, ``call{c}_result{j}`` (what
  TensorFlow fetches) and ``call{c}_var{k}`` (each updated variable's value after the call).
  Inputs too big to store (``tfmatmul_with_constant``'s) are ``exact_input`` ramps the test
  rebuilds; the ``.npz`` then says ``ramp{i}`` with the shape.

The checkpoint graphs (``tfadd_with_ckpt``, ``tfadd_with_ckpt_saver``) also get
``test_graph_NAME_frozen.pb``, frozen by ``convert_variables_to_constants``, and their
checkpoint in TensorFlow's V2 format (``test_graph_NAME.ckpt.index`` / ``.data-*``).
``tfscatter``'s graph is not in TensorFlow's script (only its config is): it is made here from
the config's names; ``tfrandom_uniform`` likewise, as a seeded ``RandomUniform`` plus a feed
(aotc computes TF's own Philox stream, so the first run's numbers match exactly).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from google.protobuf import text_format  # noqa: E402
from make_fixtures import write_npz  # noqa: E402
from tensorflow.compiler.tf2xla import tf2xla_pb2  # noqa: E402
from tensorflow.python.framework import function  # noqa: E402

v1 = tf.compat.v1
REPO = Path(__file__).resolve().parents[2]
OUT_DIR = REPO / "tests" / "data" / "tfcompile"


def exact_input(shape: tuple[int, ...]) -> np.ndarray:
    """A float32 ramp of small multiples of 1/8: exact, and rebuilt the same by the tests."""
    n = int(np.prod(shape))
    return (((np.arange(n) * 37) % 23 - 11) / 8).astype(np.float32).reshape(shape)


@dataclass
class TestGraph:
    name: str
    build: Callable[[], None]  # adds the graph's nodes to the default graph
    config: str  # tfcompile config text
    feeds: list[np.ndarray] = field(default_factory=list)
    variables: dict[str, np.ndarray] = field(default_factory=dict)  # config order
    calls: int = 1
    ramps: tuple[int, ...] = ()  # feeds stored as exact_input ramps
    checkpoint: bool = False  # y_saved = 42 comes from a checkpoint (also: frozen graph)


# --------------------------------------------------------------------------- the graphs


def tfadd() -> None:
    x = tf.constant([1], name="x_const")
    y = tf.constant([2], name="y_const")
    tf.add(x, y, name="x_y_sum")


def tfadd_with_ckpt() -> None:
    x = v1.placeholder(tf.int32, name="x_hold")
    y = v1.Variable(tf.constant([0]), name="y_saved", use_resource=False)
    tf.add(x, y, name="x_y_sum")


def tfassert_eq() -> None:
    x = v1.placeholder(tf.int32, name="x_hold")
    y = v1.placeholder(tf.int32, name="y_hold")
    tf.debugging.Assert(tf.equal(x, y), ["Expected x == y."], name="assert_eq")
    tf.add(x, tf.negative(y), name="x_y_diff")


def tfcond() -> None:
    # TF1 control flow (Switch/Merge), as tfcompile's make_test_graphs.py builds it in graph mode.
    v1.disable_control_flow_v2()
    try:
        p = v1.placeholder(tf.bool, name="p_hold")
        x = v1.placeholder(tf.int32, name="x_hold")
        y = v1.placeholder(tf.int32, name="y_hold")
        z = tf.cond(p, lambda: x, lambda: y)
        tf.identity(z, name="result")
    finally:
        v1.enable_control_flow_v2()


def tfgather() -> None:
    params = v1.placeholder(tf.float32, name="params")
    indices = v1.placeholder(tf.int32, name="indices")
    tf.gather(params, indices, name="gather_output")


def tfmatmul() -> None:
    x = v1.placeholder(tf.float32, name="x_hold")
    y = v1.placeholder(tf.float32, name="y_hold")
    tf.matmul(x, y, name="x_y_prod")


def tfmatmulandadd() -> None:
    x = v1.placeholder(tf.float32, name="x_hold")
    y = v1.placeholder(tf.float32, name="y_hold")
    tf.matmul(x, y, name="x_y_prod")
    tf.add(x, y, name="x_y_sum")


def tfmatmul_with_constant() -> None:
    x = v1.placeholder(tf.float32, name="x_hold")
    weights = np.random.default_rng(12).standard_normal((1024, 4)).astype(np.float32)
    tf.matmul(x, tf.constant(weights, name="y_const"), name="x_constant_y_prod")


def tffunction() -> None:
    @function.Defun(tf.int32, tf.int32)
    def test_func(a: tf.Tensor, b: tf.Tensor) -> tf.Tensor:
        return a + b

    x = tf.constant([1], name="x_const")
    y = tf.constant([2], name="y_const")
    test_func(x, y, name="func_call")


def tfsplits() -> None:
    x = v1.placeholder(tf.float32, shape=[2, 2], name="x")
    y = v1.placeholder(tf.float32, shape=[2, 2], name="y")
    for _ in range(3):
        x0, x1 = tf.split(x, 2, 0)
        y0, y1 = tf.split(y, 2, 0)
        x0 += 1
        y0 += 1
        z = tf.matmul(x, y, name="x_y_prod")
        a = tf.concat([x0, y1], axis=0, name="concat_x0_y1")
        b = tf.concat([y0, x1], axis=0, name="concat_y0_x1")
        x = tf.matmul(a, b, name="a_b")
        y = tf.add(x, z)
    tf.identity(y, name="result")


def tftop_k() -> None:
    x = v1.placeholder(tf.int32, shape=[5], name="x")
    output = tf.nn.top_k(x, 2, name="values")
    tf.identity(output[1], name="indices")


def tfscatter() -> None:
    """Made from its config (feeds indices_0/updates_0/indices_1/updates_1, fetches
    result_0/result_1): a ScatterNd and a TensorScatterUpdate, as the names suggest."""
    indices_0 = v1.placeholder(tf.int32, shape=[4, 1], name="indices_0")
    updates_0 = v1.placeholder(tf.float32, shape=[4], name="updates_0")
    indices_1 = v1.placeholder(tf.int32, shape=[4, 1], name="indices_1")
    updates_1 = v1.placeholder(tf.float32, shape=[4], name="updates_1")
    tf.scatter_nd(indices_0, updates_0, [8], name="result_0")
    base = tf.constant([10.0, 20, 30, 40, 50, 60, 70, 80], name="base")
    tf.tensor_scatter_nd_update(base, indices_1, updates_1, name="result_1")


def tfrandom_uniform() -> None:
    """A seeded draw (op seeds fixed: the same numbers on every run) shifted by a feed."""
    x = v1.placeholder(tf.float32, shape=[2, 3], name="x_hold")
    noise = tf.random.uniform([2, 3], minval=-1.0, maxval=1.0, seed=17, name="noise")
    tf.add(x, noise, name="result")


def tfvariable() -> None:
    x = tf.Variable([1000.0], name="x", shape=[1])
    old_x = x.value()
    with tf.control_dependencies([old_x]):
        new_x = x.assign_add([42.0])
    tf.stack([old_x, new_x], name="result")


def tfvariable_readonly() -> None:
    x = tf.Variable(1000.0, name="x")
    tf.Variable(1000.0, name="y")  # unused
    old_x = x.value()
    with tf.control_dependencies([old_x]):
        new_value = tf.add(old_x, 42.0)
    tf.identity(new_value, name="result")


def tfvariable_sequential_updates() -> None:
    x = tf.Variable(1.0, name="x")
    y = tf.Variable(1.0, name="y")
    updates = tf.no_op()
    for _ in range(3):
        with tf.control_dependencies([updates]):
            x_val = x.read_value() + y
            updates = x.assign_sub(0.1 * x_val)
    tf.identity(updates, name="result")


# --------------------------------------------------------------------------- configs


def feed(node: str, dims: list[int], name: str = "") -> str:
    shape = "".join(f"    dim {{ size: {d} }}\n" for d in dims)
    named = f'  name: "{name}"\n' if name else ""
    return f'feed {{\n  id {{ node_name: "{node}" }}\n  shape {{\n{shape}  }}\n{named}}}\n'


def fetch(node: str, name: str = "") -> str:
    named = f'  name: "{name}"\n' if name else ""
    return f'fetch {{\n  id {{ node_name: "{node}" }}\n{named}}}\n'


def variable(node: str, dims: list[int] | None, readonly: bool = False) -> str:
    """A DT_FLOAT variable; ``dims`` None leaves the shape out (a scalar, as in tfcompile)."""
    sizes = "".join(f"    dim {{ size: {d} }}\n" for d in dims or [])
    shape = "" if dims is None else f"  shape {{\n{sizes}  }}\n"
    flag = "  readonly: true\n" if readonly else ""
    return f'variable {{\n  node_name: "{node}"\n{shape}  type: DT_FLOAT\n{flag}}}\n'


HEADER = "# Text form of tensorflow.tf2xla.Config proto.\n"
I32 = np.int32
F32 = np.float32

GRAPHS = [
    TestGraph("tfadd", tfadd,
              HEADER + feed("x_const", [1]) + feed("y_const", [1]) + fetch("x_y_sum"),
              [np.array([3], I32), np.array([39], I32)]),
    TestGraph("tfadd_with_ckpt", tfadd_with_ckpt, HEADER + feed("x_hold", [1]) + fetch("x_y_sum"),
              [np.array([7], I32)], checkpoint=True),
    TestGraph("tfadd_with_ckpt_saver", tfadd_with_ckpt,
              HEADER + feed("x_hold", [1]) + fetch("x_y_sum"), [np.array([-3], I32)],
              checkpoint=True),
    TestGraph("tfassert_eq", tfassert_eq,
              HEADER + feed("x_hold", [1]) + feed("y_hold", [1]) + fetch("x_y_diff"),
              [np.array([32], I32), np.array([2], I32)]),
    TestGraph("tfcond", tfcond,
              HEADER + feed("p_hold", []) + feed("x_hold", [1]) + feed("y_hold", [1])
              + fetch("result"),
              [np.array(False), np.array([10], I32), np.array([20], I32)]),
    TestGraph("tfgather", tfgather,
              HEADER + feed("params", [4]) + feed("indices", [2]) + fetch("gather_output"),
              [np.array([-1.5, 2.0, 3.25, 4.0], F32), np.array([3, 1], I32)]),
    TestGraph("tfmatmul", tfmatmul,
              HEADER + feed("x_hold", [2, 3]) + feed("y_hold", [3, 2]) + fetch("x_y_prod"),
              [np.arange(1, 7, dtype=F32).reshape(2, 3),
               np.arange(7, 13, dtype=F32).reshape(3, 2)]),
    TestGraph("tfmatmulandadd", tfmatmulandadd,
              HEADER + feed("x_hold", [2, 2], "x") + feed("y_hold", [2, 2], "y")
              + fetch("x_y_prod", "x_y_prod") + fetch("x_y_sum", "x_y_sum"),
              [np.array([[1, 2], [3, 4]], F32), np.array([[5, 6], [7, 8]], F32)]),
    TestGraph("tfmatmul_with_constant", tfmatmul_with_constant,
              HEADER + feed("x_hold", [512, 1024]) + fetch("x_constant_y_prod"),
              [exact_input((512, 1024))], ramps=(0,)),
    TestGraph("tffunction", tffunction,
              HEADER + feed("x_const", [1]) + feed("y_const", [1]) + fetch("func_call"),
              [np.array([10], I32), np.array([32], I32)]),
    TestGraph("tfsplits", tfsplits,
              HEADER + feed("x", [2, 2]) + feed("y", [2, 2]) + fetch("result"),
              [np.array([[1, 2], [3, 4]], F32), np.array([[-1, 0.5], [2, -3]], F32)]),
    TestGraph("tftop_k", tftop_k, HEADER + feed("x", [5]) + fetch("values") + fetch("indices"),
              [np.array([4, 9, -1, 9, 3], I32)]),
    TestGraph("tfscatter", tfscatter,
              HEADER + feed("indices_0", [4, 1]) + feed("updates_0", [4])
              + feed("indices_1", [4, 1]) + feed("updates_1", [4])
              + fetch("result_0") + fetch("result_1"),
              [np.array([[4], [3], [1], [7]], I32), np.array([9, 10, 11, 12], F32),
               np.array([[0], [6], [2], [5]], I32), np.array([-1, -2, -3, -4], F32)]),
    TestGraph("tfrandom_uniform", tfrandom_uniform,
              HEADER + feed("x_hold", [2, 3]) + fetch("result"),
              [np.arange(6, dtype=F32).reshape(2, 3)]),
    TestGraph("tfvariable", tfvariable, HEADER + fetch("result") + variable("x", [1]),
              variables={"x": np.array([23], F32)}, calls=3),
    TestGraph("tfvariable_readonly", tfvariable_readonly,
              HEADER + fetch("result") + variable("x", [], readonly=True),
              variables={"x": np.array(23, F32)}, calls=2),
    TestGraph("tfvariable_sequential_updates", tfvariable_sequential_updates,
              HEADER + fetch("result") + variable("x", None) + variable("y", None, readonly=True),
              variables={"x": np.array(2, F32), "y": np.array(1, F32)}, calls=2),
]  # fmt: skip


# --------------------------------------------------------------------------- writing


def parse_config(text: str) -> tf2xla_pb2.Config:
    return text_format.Parse(text, tf2xla_pb2.Config())


def reference(tg: TestGraph, graph: tf.Graph) -> dict[str, np.ndarray]:
    """TensorFlow's results (and updated variables) over ``tg.calls`` consecutive calls."""
    config = parse_config(tg.config)
    feeds = {
        f"{f.id.node_name}:{f.id.output_index}": a
        for f, a in zip(config.feed, tg.feeds, strict=True)
    }
    fetches = [f"{f.id.node_name}:{f.id.output_index}" for f in config.fetch]
    updated = [v.node_name for v in config.variable if not v.readonly]
    arrays = {f"arg{i}": a for i, a in enumerate([*tg.feeds, *tg.variables.values()])}
    with v1.Session(graph=graph) as sess:
        sess.run(v1.variables_initializer(graph.get_collection("variables")))
        preset = {"y_saved": np.array([42], I32)} if tg.checkpoint else tg.variables
        for name, value in preset.items():
            sess.run(v1.assign(_variable(graph, name), value))
        for c in range(tg.calls):
            for j, result in enumerate(sess.run(fetches, feeds)):
                arrays[f"call{c}_result{j}"] = np.asarray(result)
            for k, name in enumerate(updated):
                arrays[f"call{c}_var{k}"] = np.asarray(sess.run(_variable(graph, name).value()))
    return arrays


def _variable(graph: tf.Graph, name: str) -> tf.Variable:
    (found,) = [v for v in graph.get_collection("variables") if v.op.name == name]
    return found


def write(tg: TestGraph) -> None:
    graph = tf.Graph()
    with graph.as_default():
        tg.build()
        name = "abcprefix" if "saver" in tg.name else None
        saver = v1.train.Saver(name=name) if tg.checkpoint else None
    gd = graph.as_graph_def()
    if saver is not None:
        _save_checkpoint(tg, graph, gd, saver)
    arrays = reference(tg, graph)
    for i in tg.ramps:
        arrays[f"ramp{i}"] = np.array(arrays.pop(f"arg{i}").shape)
        assert np.array_equal(exact_input(tuple(arrays[f"ramp{i}"])), tg.feeds[i])
    stem = OUT_DIR / f"test_graph_{tg.name}"
    stem.with_suffix(".pb").write_bytes(gd.SerializeToString(deterministic=True))
    stem.with_suffix(".config.pbtxt").write_text(tg.config)
    write_npz(stem.with_suffix(".npz"), arrays)


def _save_checkpoint(
    tg: TestGraph, graph: tf.Graph, gd: tf.compat.v1.GraphDef, saver: v1.train.Saver
) -> None:
    """y_saved = 42 in a V2 checkpoint, and the graph frozen with that value."""
    prefix = OUT_DIR / f"test_graph_{tg.name}.ckpt"
    with v1.Session(graph=graph) as sess:
        sess.run(v1.global_variables_initializer())
        y = _variable(graph, "y_saved")
        sess.run(y.assign(y + 42))
        saver.save(sess, str(prefix), write_meta_graph=False, write_state=False)
        frozen = v1.graph_util.convert_variables_to_constants(sess, gd, ["x_y_sum"])
    path = OUT_DIR / f"test_graph_{tg.name}_frozen.pb"
    path.write_bytes(frozen.SerializeToString(deterministic=True))


def main() -> int:
    OUT_DIR.mkdir(exist_ok=True)
    for tg in GRAPHS:
        parse_config(tg.config)  # TensorFlow's own parser accepts it
        write(tg)
    for path in sorted(OUT_DIR.glob("test_graph_*")):
        print(path.relative_to(REPO), path.stat().st_size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
