#!/usr/bin/env python
"""TF1-style graphs for tfcompile compatibility: side effects behind control inputs, variables.

Run in a TensorFlow environment (see make_fixtures.py)::

    python tests/data/make_tfcompile_fixtures.py

Graphs are built the way tfcompile users build them (``tf.compat.v1`` graph mode, resource
variables, ``control_dependencies``), not through ``tf.function``. Writes under
``tests/data/tfcompile/``:

* ``effects_variable.pb``: a read, an ``AssignAddVariableOp`` ordered after it by a control
  input, a second read ordered after the update; ``result`` stacks both reads. The ``.npz``
  holds what TensorFlow computes from the initial value (``result0``: [[1000], [1042]]).
* ``effects_variable_tffrozen.pb``: the same graph frozen by TensorFlow's
  ``convert_variables_to_constants``. The freezer turns the second read into an Identity of
  the frozen value and drops its control input, so the update dangles: the graph computes
  [[1000], [1000]] (TensorFlow itself refuses to import it).
* ``effects_variable_frozen.pb``: frozen keeping the control inputs (variables become
  ``Const``, reads ``Identity``): the update is reached only through a control input.
* ``effects_print.pb``: ``y = x * 2`` ordered after a group of a ``PrintV2``, a queue
  enqueue and a ``WriteFile`` (never run here: only the graph is written).
* ``effects_assert.pb``: ``diff = x - y`` ordered after an ``Assert(all(x == y))``.
* ``variables_mixed.pb``: every update op (``AssignVariableOp``, ``AssignSubVariableOp``, and
  the reference ``Assign``, ``AssignAdd``, ``AssignSub``) on a resource and a reference
  variable, ordered by control inputs; its ``.npz`` holds two consecutive calls
  (``call{c}_result0``, ``call{c}_var{k}``) after ``arg0`` (the feed) and the variables'
  initial values.
* ``mlp.config.pb``: ``configs/mlp.config.pbtxt`` read and written in binary by TensorFlow's
  own ``tf2xla_pb2``.

Each ``NAME.pb`` has an aotc config ``NAME.yaml``; ``NAME.npz`` holds inputs and TensorFlow's
outputs (``arg0..``, ``result0..``) where TensorFlow can run the graph.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from make_fixtures import write_npz  # noqa: E402

v1 = tf.compat.v1
REPO = Path(__file__).resolve().parents[2]
OUT_DIR = REPO / "tests" / "data" / "tfcompile"


def graph_def(graph: tf.Graph) -> tf.compat.v1.GraphDef:
    return graph.as_graph_def()


def run(graph: tf.Graph, fetches: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Initialize the graph's variables, then run ``fetches`` once."""
    with v1.Session(graph=graph) as sess:
        sess.run(v1.variables_initializer(graph.get_collection("variables")))
        feed_dict = {f"{k}:0": v for k, v in feeds.items()}
        return [np.asarray(r) for r in sess.run([f"{f}:0" for f in fetches], feed_dict)]


def write(name: str, gd: tf.compat.v1.GraphDef, yaml: str, arrays: dict | None = None) -> None:
    (OUT_DIR / f"{name}.pb").write_bytes(gd.SerializeToString(deterministic=True))
    (OUT_DIR / f"{name}.yaml").write_text(yaml)
    if arrays is not None:
        write_npz(OUT_DIR / f"{name}.npz", arrays)


# --------------------------------------------------------------------------- variables


def variable_graph() -> tf.Graph:
    """tfcompile's ``tfvariable``: ``[old_x, x.assign_add(42)]``, the update after the read."""
    g = tf.Graph()
    with g.as_default():
        x = v1.Variable([1000.0], name="x", shape=[1], use_resource=True)
        old_x = x.value()
        with tf.control_dependencies([old_x]):
            new_x = x.assign_add([42.0])
        tf.stack([old_x, new_x], name="result")
    return g


def freeze_keeping_control(gd: tf.compat.v1.GraphDef, values: dict[str, np.ndarray]):
    """Variables -> Const, reads -> Identity, every input (control inputs too) kept."""
    out = v1.GraphDef()
    out.versions.CopyFrom(gd.versions)
    for node in gd.node:
        new = out.node.add()
        if node.op == "VarHandleOp":
            tensor = tf.make_tensor_proto(values[node.name])
            new.MergeFrom(tf.compat.v1.NodeDef(name=node.name, op="Const"))
            new.attr["dtype"].type = tensor.dtype
            new.attr["value"].tensor.CopyFrom(tensor)
        elif node.op == "ReadVariableOp":
            new.MergeFrom(tf.compat.v1.NodeDef(name=node.name, op="Identity", input=node.input))
            new.attr["T"].type = node.attr["dtype"].type
        else:
            new.CopyFrom(node)
    return v1.graph_util.extract_sub_graph(out, ["result"])


def make_variable_fixtures() -> None:
    g = variable_graph()
    (result,) = run(g, ["result"], {})
    assert result.tolist() == [[1000.0], [1042.0]], result
    yaml = "name: effects_variable\nfetches: [result]\n"
    write("effects_variable", graph_def(g), yaml, {"result0": result})
    with v1.Session(graph=g) as sess:
        sess.run(v1.global_variables_initializer())
        tffrozen = v1.graph_util.convert_variables_to_constants(sess, graph_def(g), ["result"])
        values = {"x": sess.run("x/Read/ReadVariableOp:0")}
    assert "AssignAddVariableOp" in {n.op for n in tffrozen.node}
    write("effects_variable_tffrozen", tffrozen, yaml.replace(": effects_variable", ": tffrozen"))
    frozen = freeze_keeping_control(graph_def(g), values)
    write("effects_variable_frozen", frozen, yaml.replace(": effects_variable", ": frozen"))


# --------------------------------------------------------------------------- other effects


def print_graph() -> tf.Graph:
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [2], name="x")
        printed = tf.print(x, name="print")
        queue = tf.queue.FIFOQueue(3, [tf.float32], shapes=[[2]], name="queue")
        enqueue = queue.enqueue(x, name="enqueue")
        written = tf.io.write_file("effects_print.txt", tf.constant("x was fed"), name="write")
        with tf.control_dependencies([tf.group(printed, enqueue, written, name="effects")]):
            tf.identity(x * 2.0, name="y")
    return g


def assert_graph() -> tf.Graph:
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.int32, [2], name="x_hold")
        y = v1.placeholder(tf.int32, [2], name="y_hold")
        check = tf.debugging.Assert(tf.reduce_all(tf.equal(x, y)), ["Expected x == y."])
        with tf.control_dependencies([check]):
            tf.add(x, tf.negative(y), name="x_y_diff")
    return g


def make_effect_fixtures() -> None:
    write("effects_print", graph_def(print_graph()), "name: effects_print\nfetches: [y]\n")
    g = assert_graph()
    ops = {n.op for n in graph_def(g).node}
    assert "Assert" in ops, ops
    x = np.array([3, -7], np.int32)
    (diff,) = run(g, ["x_y_diff"], {"x_hold": x, "y_hold": x})
    yaml = "name: effects_assert\nfetches: [x_y_diff]\n"
    write("effects_assert", graph_def(g), yaml, {"arg0": x, "arg1": x, "result0": diff})


def mixed_variables_graph() -> tf.Graph:
    """Every update op on a resource variable ``v`` and a reference variable ``r``, each access
    ordered by edges (``tf.identity`` reads an update's result where it happens)."""
    g = tf.Graph()
    with g.as_default():
        a = v1.placeholder(tf.float32, [2], name="a")
        v = v1.Variable([1.0, 2.0], name="v", use_resource=True)
        r = v1.Variable([10.0, 20.0], name="r", use_resource=False)
        read0 = v.read_value()
        with tf.control_dependencies([read0]):
            u1 = tf.identity(v.assign(a * 2.0))  # AssignVariableOp, then a read ordered by it
        with tf.control_dependencies([u1]):
            u2 = r.assign_add(u1)  # AssignAdd (reference)
        with tf.control_dependencies([u2]):
            u3 = v1.assign_sub(r, a)  # AssignSub (reference)
        with tf.control_dependencies([u3]):
            r_now = tf.identity(r, name="r_now")  # a read of the reference
            v_now = tf.identity(v.assign_sub(read0))  # AssignSubVariableOp, then a read
        with tf.control_dependencies([v1.assign(r, r_now * 0.5)]):  # Assign (reference)
            tf.stack([read0, u1, r_now, v_now], name="out")
    return g


def make_mixed_variables_fixture(calls: int = 2) -> None:
    """``variables_mixed``: two calls in one session; ``arg0..`` are the feed then the
    variables' initial values, ``call{c}_result0`` / ``call{c}_var{k}`` what TF gives."""
    g = mixed_variables_graph()
    a = np.array([1.0, 3.0], np.float32)
    arrays = {"arg0": a}
    with v1.Session(graph=g) as sess:
        sess.run(v1.global_variables_initializer())
        variables = {v.op.name: v for v in g.get_collection("variables")}
        arrays["arg1"], arrays["arg2"] = sess.run([variables["v"].value(), variables["r"].value()])
        for c in range(calls):
            arrays[f"call{c}_result0"] = sess.run("out:0", {"a:0": a})
            for k, name in enumerate(("v", "r")):
                arrays[f"call{c}_var{k}"] = sess.run(variables[name].value())
    yaml = (
        "name: variables_mixed\nfeeds: [a]\nfetches: [out]\n"
        "variables:\n  - {name: v}\n  - {name: r, shape: [2], dtype: float32}\n"
    )
    write("variables_mixed", graph_def(g), yaml, arrays)


# --------------------------------------------------------------------------- configs


def make_config_fixtures() -> None:
    """``mlp.config.pb``: configs/mlp.config.pbtxt parsed and written by TensorFlow's own
    tf2xla proto, so aotc's schema is checked against TensorFlow's in both directions."""
    from google.protobuf import text_format
    from tensorflow.compiler.tf2xla import tf2xla_pb2

    text = (REPO / "configs" / "mlp.config.pbtxt").read_text()
    config = text_format.Parse(text, tf2xla_pb2.Config())
    (OUT_DIR / "mlp.config.pb").write_bytes(config.SerializeToString(deterministic=True))


def main() -> int:
    OUT_DIR.mkdir(exist_ok=True)
    make_variable_fixtures()
    make_effect_fixtures()
    make_mixed_variables_fixture()
    make_config_fixtures()
    for path in sorted(OUT_DIR.iterdir()):
        print(path.relative_to(REPO), path.stat().st_size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
