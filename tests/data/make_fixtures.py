#!/usr/bin/env python
"""Regenerate the TensorFlow test fixtures and the bundled MLP example.

This is the only place in the repository that imports TensorFlow. It needs a
separate environment::

    python -m venv .tfenv
    .tfenv/bin/pip install tensorflow-cpu==2.21.0
    .tfenv/bin/python tests/data/make_fixtures.py

For every fixture NAME it writes, under ``tests/data/tf/``:

* ``NAME.pb``   - frozen GraphDef (binary), from a ``tf.function`` concrete
  function passed through ``convert_variables_to_constants_v2``;
* ``NAME.yaml`` - the aotc config (feeds in argument order, fetches in result
  order, real node names of the frozen graph);
* ``NAME.npz``  - ``arg0, arg1, ...`` (inputs, feed order) and
  ``result0, result1, ...`` (what the frozen ``.pb`` computes for them, run by
  importing the GraphDef into a ``tf.compat.v1.Session``).

Some fixtures also get ``NAME.pbtxt`` (text format, same graph).
It also writes ``examples/mlp/{mlp.pb,expected.npz,expected.txt}``, ``configs/mlp.yaml`` and
``tests/data/tf/README.md``.

Everything is seeded; rerunning gives byte-identical files with the same TF.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# oneDNN rewrites can change results in the last ulp; keep the reference plain.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import io  # noqa: E402
import zipfile  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from google.protobuf import text_format  # noqa: E402
from tensorflow.python.framework.convert_to_constants import (  # noqa: E402
    convert_variables_to_constants_v2,
)

REPO = Path(__file__).resolve().parents[2]
OUT_DIR = REPO / "tests" / "data" / "tf"
EXAMPLE_DIR = REPO / "examples" / "mlp"
MAX_PB_BYTES = 300 * 1024
MAX_DIR_BYTES = 2 * 1024 * 1024

F32 = tf.float32
I32 = tf.int32
I64 = tf.int64


# --------------------------------------------------------------------------
# Freezing, running, writing
# --------------------------------------------------------------------------


@dataclass
class Fixture:
    name: str
    fn: Callable  # a tf.function with an input_signature
    args: list[np.ndarray]
    must_have: set[str]  # op types this fixture exists to exercise
    fetch_override: list[str] | None = None  # fetch names instead of the outputs
    pbtxt: bool = False
    doc: str = ""
    functions: bool = False  # the frozen graph keeps a function library (calls, While, If)
    lower_control_flow: bool | None = True  # lower While/If to v1 frames (TF's default); see freeze
    out_dir: Path = OUT_DIR
    # how far the frozen graph may be from the function (bfloat16: eager and graph kernels
    # may round an intermediate differently)
    tolerance: float = 1e-6
    # filled in by build():
    graph_def: tf.compat.v1.GraphDef | None = None
    feeds: list[tuple[str, list[int], str]] = field(default_factory=list)
    fetches: list[str] = field(default_factory=list)
    results: list[np.ndarray] = field(default_factory=list)


def freeze(
    fn, lower_control_flow: bool | None = True
) -> tuple[tf.compat.v1.GraphDef, list[str], list[str]]:
    """Freeze ``fn`` (a tf.function with input_signature) and return
    (graph_def, placeholder node names in argument order, output fetch names).
    ``lower_control_flow=None`` takes the function's own graph, for one without variables:
    freezing runs grappler, which lowers ``Case`` even with ``lower_control_flow=False``."""
    concrete = fn.get_concrete_function()
    if lower_control_flow is None:
        assert not concrete.captured_inputs, "a function with variables must be frozen"
        frozen = concrete
    else:
        frozen = convert_variables_to_constants_v2(concrete, lower_control_flow=lower_control_flow)
    graph_def = frozen.graph.as_graph_def()
    feed_names = [t.name for t in frozen.inputs]
    fetch_names = [t.name for t in frozen.outputs]
    canonicalize_placeholders(graph_def, [tensor_to_fetch(t) for t in feed_names])
    return graph_def, feed_names, fetch_names


def canonicalize_placeholders(graph_def, arg_order: list[str]) -> None:
    """TF emits the Placeholder nodes in an order that varies from run to run
    (set iteration). Put them, within the slots they already occupy, in argument
    order, so reruns are byte-identical. Node order carries no meaning in a GraphDef.
    (Lowered control flow adds ``unused_control_flow_input`` Placeholders: they stay put.)"""
    args = set(arg_order)
    slots = [i for i, n in enumerate(graph_def.node) if n.op == "Placeholder" and n.name in args]
    by_name = {graph_def.node[i].name: graph_def.node[i] for i in slots}
    assert sorted(by_name) == sorted(arg_order), (sorted(by_name), arg_order)
    ordered = [tf.compat.v1.NodeDef.FromString(by_name[n].SerializeToString()) for n in arg_order]
    for i, node in zip(slots, ordered, strict=True):
        graph_def.node[i].CopyFrom(node)


def tensor_to_fetch(tensor_name: str) -> str:
    """'Identity:0' -> 'Identity', 'foo:1' -> 'foo:1'."""
    node, _, idx = tensor_name.rpartition(":")
    return node if idx == "0" else f"{node}:{idx}"


def fetch_to_tensor(fetch: str) -> str:
    return fetch if ":" in fetch else fetch + ":0"


def run_graph_def(graph_def, feeds: list[str], args: list[np.ndarray], fetches: list[str]):
    """Run a GraphDef exactly as stored: import into a fresh graph, Session.run."""
    g = tf.Graph()
    with g.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    with tf.compat.v1.Session(graph=g) as sess:
        out = sess.run(
            [fetch_to_tensor(f) for f in fetches],
            feed_dict={fetch_to_tensor(n): a for n, a in zip(feeds, args, strict=True)},
        )
    return [np.asarray(o) for o in out]


def op_types(graph_def) -> list[str]:
    ops = {n.op for n in graph_def.node}
    for f in graph_def.library.function:
        ops |= {n.op for n in f.node_def}
    return sorted(ops)


def dtype_name(dt) -> str:
    return tf.as_dtype(dt).name


def build(fx: Fixture) -> None:
    graph_def, feed_tensors, out_tensors = freeze(fx.fn, fx.lower_control_flow)
    kept = bool(graph_def.library.function)
    assert kept == fx.functions, f"{fx.name}: function library kept: {kept}"
    nodes = {n.name: n for n in graph_def.node}

    spec = fx.fn.input_signature
    assert len(spec) == len(feed_tensors) == len(fx.args), fx.name
    fx.feeds = []
    for t, s, a in zip(feed_tensors, spec, fx.args, strict=True):
        node = tensor_to_fetch(t)
        assert nodes[node].op == "Placeholder", (fx.name, node, nodes[node].op)
        assert list(s.shape) == list(a.shape), (fx.name, node, s.shape, a.shape)
        assert s.dtype.as_numpy_dtype == a.dtype, (fx.name, node, s.dtype, a.dtype)
        fx.feeds.append((node, list(a.shape), dtype_name(s.dtype)))

    fx.fetches = fx.fetch_override or [tensor_to_fetch(t) for t in out_tensors]
    for f in fx.fetches:
        assert f.partition(":")[0] in nodes, (fx.name, f)

    ops = set(op_types(graph_def))
    missing = fx.must_have - ops
    assert not missing, f"{fx.name}: expected op types {sorted(missing)} not in graph {sorted(ops)}"

    # What the concrete function computes (reference) ...
    ref = fx.fn(*[tf.constant(a) for a in fx.args])
    ref = [np.asarray(r) for r in (ref if isinstance(ref, (list, tuple)) else [ref])]
    # ... and what the frozen GraphDef computes (the recorded results).
    feed_nodes = [f[0] for f in fx.feeds]
    res = run_graph_def(graph_def, feed_nodes, fx.args, fx.fetches)
    if fx.fetch_override is None or len(fx.fetch_override) == len(ref):
        assert len(ref) == len(res), fx.name
        for i, (r, s) in enumerate(zip(ref, res, strict=True)):
            assert r.dtype == s.dtype and r.shape == s.shape, (fx.name, i, r.dtype, s.dtype)
            tol = fx.tolerance
            np.testing.assert_allclose(
                s.astype(np.float64), r.astype(np.float64), rtol=tol, atol=tol,
                err_msg=f"{fx.name} result{i}",
            )  # fmt: skip
    fx.graph_def = graph_def
    fx.results = res


def build_v1(fx: Fixture, make: Callable) -> None:
    """A TF1-style fixture: ``make()`` builds a graph in graph mode and returns
    (placeholders in argument order, output tensors). Variables are initialized, the graph is
    frozen with ``tf.compat.v1.graph_util.convert_variables_to_constants`` (which keeps the
    function library and v1 control flow as they are), and run again from the GraphDef."""
    graph = tf.Graph()
    with graph.as_default():
        feeds, outputs = make()
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            feed_dict = dict(zip(feeds, fx.args, strict=True))
            ref = [np.asarray(r) for r in sess.run(outputs, feed_dict)]
            names = sorted({t.op.name for t in outputs})
            graph_def = tf.compat.v1.graph_util.convert_variables_to_constants(
                sess, graph.as_graph_def(), names
            )
    kept = bool(graph_def.library.function)
    assert kept == fx.functions, f"{fx.name}: function library kept: {kept}"
    fx.feeds = []
    for t, a in zip(feeds, fx.args, strict=True):
        assert t.op.type == "Placeholder" and list(t.shape) == list(a.shape), (fx.name, t)
        fx.feeds.append((t.op.name, list(a.shape), dtype_name(t.dtype)))
    fx.fetches = [tensor_to_fetch(t.name) for t in outputs]
    missing = fx.must_have - set(op_types(graph_def))
    assert not missing, f"{fx.name}: expected op types {sorted(missing)} not in graph"
    res = run_graph_def(graph_def, [f[0] for f in fx.feeds], fx.args, fx.fetches)
    for i, (r, s) in enumerate(zip(ref, res, strict=True)):
        assert r.dtype == s.dtype and r.shape == s.shape, (fx.name, i, r.dtype, s.dtype)
        np.testing.assert_allclose(s, r, rtol=1e-6, atol=1e-6, err_msg=f"{fx.name} result{i}")
    fx.graph_def = graph_def
    fx.results = res


def yaml_str(s: str) -> str:
    # node names are [A-Za-z0-9_./:-]; quote anything with ':' to stay valid YAML
    return f'"{s}"' if (":" in s or s[:1] in "-?!&*#|>'\"%@`{}[],") else s


def write_yaml(path: Path, name: str, feeds, fetches) -> None:
    lines = [f"name: {name}", "feeds:"]
    for node, shape, dtype in feeds:
        dims = ", ".join(str(d) for d in shape)
        lines.append(f"  - {{name: {yaml_str(node)}, shape: [{dims}], dtype: {dtype}}}")
    lines.append("fetches:")
    for f in fetches:
        lines.append(f"  - {{name: {yaml_str(f)}}}")
    path.write_text("\n".join(lines) + "\n")


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    # np.savez stores zip timestamps; pin them so reruns are byte-identical.
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        for key, arr in arrays.items():
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            buf = io.BytesIO()
            # asarray, not ascontiguousarray: that turns a 0-d array into shape (1,)
            np.lib.format.write_array(buf, np.asarray(arr, order="C"), allow_pickle=False)
            zf.writestr(info, buf.getvalue())


def write_fixture(fx: Fixture) -> None:
    out = fx.out_dir
    pb = out / f"{fx.name}.pb"
    pb.write_bytes(fx.graph_def.SerializeToString(deterministic=True))
    if fx.pbtxt:
        (out / f"{fx.name}.pbtxt").write_text(text_format.MessageToString(fx.graph_def))
    write_yaml(out / f"{fx.name}.yaml", fx.name, fx.feeds, fx.fetches)
    arrays = {f"arg{i}": a for i, a in enumerate(fx.args)}
    arrays.update({f"result{i}": r for i, r in enumerate(fx.results)})
    write_npz(out / f"{fx.name}.npz", arrays)


def verify_written(fx: Fixture) -> None:
    """Load the written files back (no in-memory state) and rerun in TF."""
    gd = tf.compat.v1.GraphDef()
    gd.ParseFromString((fx.out_dir / f"{fx.name}.pb").read_bytes())
    data = np.load(fx.out_dir / f"{fx.name}.npz")
    n_args = len([k for k in data.files if k.startswith("arg")])
    n_res = len([k for k in data.files if k.startswith("result")])
    assert n_args == len(fx.feeds) and n_res == len(fx.fetches), fx.name
    args = [npz_array(data[f"arg{i}"]) for i in range(n_args)]
    out = run_graph_def(gd, [f[0] for f in fx.feeds], args, fx.fetches)
    for i, o in enumerate(out):
        exp = npz_array(data[f"result{i}"])
        assert o.dtype == exp.dtype and o.shape == exp.shape, (fx.name, i)
        np.testing.assert_array_equal(o, exp, err_msg=f"{fx.name} result{i} (reloaded)")
    if fx.pbtxt:
        gt = text_format.Parse(
            (fx.out_dir / f"{fx.name}.pbtxt").read_text(), tf.compat.v1.GraphDef()
        )
        assert gt == gd, f"{fx.name}: pbtxt and pb differ"


# --------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------


def npz_array(array: np.ndarray) -> np.ndarray:
    """numpy's npz format stores bfloat16 as raw 2-byte voids (the only void type here)."""
    return array.view(tf.bfloat16.as_numpy_dtype) if array.dtype == np.dtype("V2") else array


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def normal(r, shape, scale=1.0) -> np.ndarray:
    return (r.standard_normal(shape) * scale).astype(np.float32)


def positive(r, shape) -> np.ndarray:
    return (np.abs(r.standard_normal(shape)) + 0.1).astype(np.float32)


def away_from_zero(r, shape, low=0.5) -> np.ndarray:
    x = r.standard_normal(shape)
    return (np.sign(x) * (np.abs(x) + low)).astype(np.float32)


def spec(shape, dtype=F32, name=None):
    return tf.TensorSpec(shape, dtype, name=name)


# --------------------------------------------------------------------------
# Keras MLP
# --------------------------------------------------------------------------


def exact_gelu(x):
    import keras

    return keras.activations.gelu(x, approximate=False)


def make_mlp(widths: list[int], acts: list, seed: int, name: str):
    """Keras 3 Sequential MLP with deterministic (numpy-seeded) weights and biases."""
    import keras

    layers = [keras.Input(shape=(widths[0],), name="x")]
    for i, (w, a) in enumerate(zip(widths[1:], acts, strict=True)):
        layers.append(keras.layers.Dense(w, activation=a, name=f"dense{i}"))
    model = keras.Sequential(layers, name=name)
    r = rng(seed)
    for layer, fan_in, fan_out in zip(model.layers, widths[:-1], widths[1:], strict=True):
        limit = np.sqrt(6.0 / (fan_in + fan_out))  # glorot-uniform scale
        w = r.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32)
        b = (r.standard_normal(fan_out) * 0.1).astype(np.float32)
        layer.set_weights([w, b])
    return model


def mlp_fn(model, batch: int, out_name: str | None = None):
    @tf.function(input_signature=[spec([batch, model.input_shape[-1]], name="x")])
    def f(x):
        y = model(x, training=False)
        if out_name is not None:
            y = tf.identity(y, name=out_name)
        return y

    return f


MLP_OPS = {"Placeholder", "Const", "MatMul", "BiasAdd", "Relu", "Erfc", "Softmax", "Identity"}


# --------------------------------------------------------------------------
# Op-family graphs
# --------------------------------------------------------------------------


def binary_fixture() -> Fixture:
    r = rng(1)
    a = normal(r, [2, 3, 4])
    b = away_from_zero(r, [4])
    c = away_from_zero(r, [3, 1])
    d = normal(r, [1, 4])

    @tf.function(
        input_signature=[
            spec([2, 3, 4], name="a"),
            spec([4], name="b"),
            spec([3, 1], name="c"),
            spec([1, 4], name="d"),
        ]
    )
    def f(a, b, c, d):
        k = tf.constant(2.5, F32)
        R = tf.raw_ops
        return [
            R.Add(x=a, y=b),  # [2,3,4] + [4]
            R.AddV2(x=a, y=c),  # [2,3,4] + [3,1]
            R.Sub(x=a, y=k),  # [2,3,4] - scalar Const
            R.Sub(x=d, y=c),  # [1,4] - [3,1] -> [3,4]
            R.Mul(x=a, y=c),  # [2,3,4] * [3,1]
            R.Mul(x=d, y=c),  # [1,4] * [3,1]
            R.RealDiv(x=a, y=b),  # [2,3,4] / [4]
            R.RealDiv(x=k, y=c),  # scalar Const / [3,1]
            R.Div(x=a, y=c),  # float Div, [2,3,4] / [3,1]
            R.Div(x=d, y=b),  # [1,4] / [4]
            R.Maximum(x=a, y=d),  # [2,3,4] vs [1,4]
            R.Minimum(x=d, y=c),  # [1,4] vs [3,1]
            R.Maximum(x=a, y=tf.constant(0.25, F32)),  # with scalar Const
            R.AddV2(x=R.Mul(x=a, y=a), y=R.Minimum(x=a, y=b)),  # chained
        ]

    return Fixture(
        "binary",
        f,
        [a, b, c, d],
        {"Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "Maximum", "Minimum"},
        pbtxt=True,
    )


def unary_fixture() -> Fixture:
    r = rng(2)
    x = normal(r, [2, 3, 4])
    p = positive(r, [2, 3, 4])

    @tf.function(input_signature=[spec([2, 3, 4], name="x"), spec([2, 3, 4], name="p")])
    def f(x, p):
        R = tf.raw_ops
        return [
            R.Neg(x=x),
            R.Abs(x=x),
            R.Square(x=x),
            R.Sqrt(x=p),
            R.Rsqrt(x=p),
            R.Exp(x=x),
            R.Log(x=p),
            R.Tanh(x=x),
            R.Sigmoid(x=x),
            R.Erf(x=x),
            R.Erfc(x=x),
            R.Log(x=R.Exp(x=R.Tanh(x=R.Abs(x=x)))),  # a chain
        ]

    return Fixture(
        "unary",
        f,
        [x, p],
        {"Neg", "Abs", "Square", "Sqrt", "Rsqrt", "Exp", "Log", "Tanh", "Sigmoid", "Erf", "Erfc"},
    )


def activations_fixture() -> Fixture:
    r = rng(3)
    x = normal(r, [2, 3, 4], scale=4.0)  # wide enough to hit both Relu6 clamps
    s2 = normal(r, [4, 10], scale=3.0)
    s3 = normal(r, [2, 3, 5], scale=3.0)

    @tf.function(
        input_signature=[
            spec([2, 3, 4], name="x"),
            spec([4, 10], name="s2"),
            spec([2, 3, 5], name="s3"),
        ]
    )
    def f(x, s2, s3):
        R = tf.raw_ops
        bias = tf.constant([0.5, -1.0, 2.0, -0.25], F32)
        return [
            R.Relu(features=x),
            R.Relu6(features=x),
            R.Softmax(logits=s2),
            R.Softmax(logits=s3),
            R.BiasAdd(value=x, bias=bias),  # data_format NHWC (default)
            R.Relu(features=R.BiasAdd(value=x, bias=bias)),
        ]

    return Fixture("activations", f, [x, s2, s3], {"Relu", "Relu6", "Softmax", "BiasAdd"})


def matmul_fixture() -> Fixture:
    r = rng(4)
    a = normal(r, [3, 4])
    b = normal(r, [4, 5])
    c = normal(r, [5, 3])
    w45 = normal(rng(40), [4, 5])
    w54 = normal(rng(41), [5, 4])
    w52 = normal(rng(42), [5, 2])

    @tf.function(
        input_signature=[spec([3, 4], name="a"), spec([4, 5], name="b"), spec([5, 3], name="c")]
    )
    def f(a, b, c):
        M = tf.raw_ops.MatMul
        return [
            M(a=a, b=b),  # [3,4]@[4,5]
            M(a=a, b=tf.constant(w45), transpose_a=False, transpose_b=False),
            M(a=a, b=tf.constant(w54), transpose_b=True),  # [3,4]@[4,5]
            M(a=c, b=tf.constant(w52), transpose_a=True),  # [3,5]@[5,2]
            M(a=a, b=a, transpose_a=True),  # [4,3]@[3,4]
            M(a=b, b=b, transpose_b=True),  # [4,5]@[5,4]
            M(a=c, b=b, transpose_a=True, transpose_b=True),  # [3,5]@[5,4]
            M(a=tf.constant(w45), b=a, transpose_a=True, transpose_b=True),  # [5,4]@[4,3]
        ]

    return Fixture("matmul", f, [a, b, c], {"MatMul"})


def reshape_cast_fixture() -> Fixture:
    r = rng(5)
    x = normal(r, [2, 3, 4], scale=3.0)
    # pin down Cast float->int: exact zeros, halves, negative fractions
    x.flat[:12] = [0.0, -0.0, -0.5, 0.5, -1.5, 1.5, -2.7, 2.7, -0.2, 0.2, -3.999, 3.999]
    i = r.integers(-20, 21, [2, 3, 4]).astype(np.int32)
    sign = r.choice([-1, 1], [2, 3, 4]).astype(np.int32)
    j = r.integers(1, 21, [2, 3, 4]).astype(np.int32) * sign
    # make sure all four sign combinations of an inexact division appear
    i.flat[:4] = [7, -7, 7, -7]
    j.flat[:4] = [2, 2, -2, -2]

    @tf.function(
        input_signature=[
            spec([2, 3, 4], name="x"),
            spec([2, 3, 4], I32, name="i"),
            spec([2, 3, 4], I32, name="j"),
        ]
    )
    def f(x, i, j):
        R = tf.raw_ops
        as_bool = R.Cast(x=x, DstT=tf.bool)
        return [
            R.Reshape(tensor=x, shape=tf.constant([-1, 4], I32)),  # [6,4]
            R.Reshape(tensor=x, shape=tf.constant([4, 3, 2], I32)),  # explicit
            R.Reshape(tensor=x, shape=tf.constant([2, -1], I32)),  # [2,12]
            R.Cast(x=x, DstT=I32),  # f32 -> i32
            R.Cast(x=i, DstT=F32),  # i32 -> f32
            as_bool,  # f32 -> bool
            R.Cast(x=as_bool, DstT=F32),  # bool -> f32
            R.Add(x=i, y=j),
            R.Mul(x=i, y=j),
            R.Maximum(x=i, y=j),
            R.Minimum(x=i, y=j),
            R.Neg(x=i),
            R.Abs(x=i),
            R.Sub(x=i, y=j),
            R.Div(x=i, y=j),  # int32 Div
            R.AddV2(
                x=R.Reshape(tensor=i, shape=tf.constant([-1], I32)), y=tf.constant(3, I32)
            ),  # int reshape + scalar
        ]

    return Fixture(
        "reshape_cast",
        f,
        [x, i, j],
        {
            "Reshape",
            "Cast",
            "Add",
            "AddV2",
            "Mul",
            "Maximum",
            "Minimum",
            "Neg",
            "Abs",
            "Sub",
            "Div",
        },
    )


def float64_fixture() -> Fixture:
    r = rng(6)
    x = normal(r, [2, 3])

    @tf.function(input_signature=[spec([2, 3], name="x")])
    def f(x):
        R = tf.raw_ops
        d = R.Cast(x=x, DstT=tf.float64)
        y = R.AddV2(x=R.Mul(x=d, y=d), y=tf.constant(1.0 / 3.0, tf.float64))
        return [d, y, R.Cast(x=y, DstT=F32)]

    return Fixture("float64", f, [x], {"Cast", "Mul", "AddV2"})


def plumbing_fixture() -> Fixture:
    r = rng(7)
    a = normal(r, [2, 3])
    b = normal(r, [3])

    @tf.function(input_signature=[spec([2, 3], name="a"), spec([3], name="b")])
    def f(a, b):
        R = tf.raw_ops
        s = R.AddV2(x=a, y=b)
        ida = R.Identity(input=s, name="ida")
        pair = R.IdentityN(input=[s, R.Mul(x=a, y=b)], name="pair")
        sg = R.StopGradient(input=pair[0], name="sg")
        dep = R.NoOp(name="dep")
        with tf.control_dependencies([dep]):
            gated = R.Neg(x=pair[1], name="gated")
        const = tf.constant([[1.0, 2.0], [3.0, 4.0]], F32, name="const_out")
        return [ida, pair[1], sg, gated, const]

    fx = Fixture(
        "plumbing",
        f,
        [a, b],
        {"Identity", "IdentityN", "StopGradient", "NoOp", "Const"},
        pbtxt=True,
        # fetch the named inner nodes (the function's own outputs are
        # Identity_N copies of them); `pair:1` is output 1 of IdentityN
        fetch_override=["ida", "pair:1", "sg", "gated", "const_out"],
    )
    return fx


def int64_fixture() -> Fixture:
    r = rng(8)
    a = r.integers(-1000, 1000, [2, 3]).astype(np.int64)
    b = r.integers(-1000, 1000, [2, 3]).astype(np.int64)
    a.flat[0] = 3_000_000_000  # beyond int32
    b.flat[0] = 3

    @tf.function(input_signature=[spec([2, 3], I64, name="a"), spec([2, 3], I64, name="b")])
    def f(a, b):
        R = tf.raw_ops
        s = R.AddV2(x=a, y=b)
        p = R.Mul(x=a, y=b)
        m = R.Maximum(x=a, y=tf.constant(7, I64))
        return [s, p, m, R.Cast(x=R.Add(x=s, y=p), DstT=F32)]

    return Fixture("int64", f, [a, b], {"AddV2", "Add", "Mul", "Maximum", "Cast"})


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------


def main() -> int:
    import keras

    keras.utils.set_random_seed(0)
    np.random.seed(0)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    EXAMPLE_DIR.mkdir(parents=True, exist_ok=True)

    mlp = make_mlp([784, 32, 32, 10], ["relu", exact_gelu, "softmax"], seed=100, name="mlp")
    r = rng(9)
    fixtures = [
        Fixture("mlp_b1", mlp_fn(mlp, 1), [normal(r, [1, 784])], MLP_OPS),
        Fixture("mlp_b8", mlp_fn(mlp, 8), [normal(r, [8, 784])], MLP_OPS),
        binary_fixture(),
        unary_fixture(),
        activations_fixture(),
        matmul_fixture(),
        reshape_cast_fixture(),
        float64_fixture(),
        plumbing_fixture(),
        int64_fixture(),
    ]

    for fx in fixtures:
        build(fx)

    # Keras MLP fixtures: the frozen graph must agree with the Keras model itself.
    for fx in fixtures[:2]:
        np.testing.assert_allclose(fx.results[0], np.asarray(mlp(fx.args[0])), rtol=1e-5, atol=1e-6)

    # plumbing: at least one fetch of the form NODE:1
    plumb = next(f for f in fixtures if f.name == "plumbing")
    assert any(f.endswith(":1") for f in plumb.fetches), plumb.fetches

    # Other fixture scripts (make_*_fixtures.py) write into the same folder: touch only ours.
    for fx in fixtures:
        write_fixture(fx)
        verify_written(fx)
        size = (OUT_DIR / f"{fx.name}.pb").stat().st_size
        assert size < MAX_PB_BYTES, (fx.name, size)

    # ---- bundled example ------------------------------------------------
    ex_model = make_mlp(
        [784, 128, 64, 10], ["relu", exact_gelu, "softmax"], seed=200, name="mlp_example"
    )
    ex = Fixture(
        "mlp",
        mlp_fn(ex_model, 1, out_name="y"),
        [np.linspace(-1, 1, 784, dtype=np.float32).reshape(1, 784)],
        MLP_OPS,
        fetch_override=["y"],
    )
    build(ex)
    keras_y = np.asarray(ex_model(ex.args[0]))
    np.testing.assert_allclose(ex.results[0], keras_y, rtol=1e-5, atol=1e-6)
    (EXAMPLE_DIR / "mlp.pb").write_bytes(ex.graph_def.SerializeToString(deterministic=True))
    write_yaml(REPO / "configs" / "mlp.yaml", "mlp", ex.feeds, ex.fetches)
    y = ex.results[0]
    write_npz(EXAMPLE_DIR / "expected.npz", {"x": ex.args[0], "y": y})
    (EXAMPLE_DIR / "expected.txt").write_text(
        "".join(f"{v:.6f}\n" for v in y.reshape(-1)) + f"{int(np.argmax(y))}\n"
    )
    gd = tf.compat.v1.GraphDef()
    gd.ParseFromString((EXAMPLE_DIR / "mlp.pb").read_bytes())
    again = run_graph_def(gd, ["x"], [np.load(EXAMPLE_DIR / "expected.npz")["x"]], ["y"])[0]
    np.testing.assert_array_equal(again, y)

    # ---- semantics worth recording ------------------------------------------
    rc = next(f for f in fixtures if f.name == "reshape_cast")
    i, j = rc.args[1].reshape(-1)[:4], rc.args[2].reshape(-1)[:4]
    q = rc.results[14].reshape(-1)[:4]
    div_rows = [f"{a} / {b} = {c}" for a, b, c in zip(i, j, q, strict=True)]
    div_kind = (
        "truncates toward zero (C semantics)"
        if list(q) == [3, -3, -3, 3]
        else "floors (Python semantics)"
        if list(q) == [3, -4, -4, 3]
        else "??"
    )
    xs = rc.args[0].reshape(-1)[:12]
    cs = rc.results[3].reshape(-1)[:12]
    cast_rows = [f"{a:g} -> {c}" for a, c in zip(xs, cs, strict=True)]
    truncates = np.array_equal(np.trunc(xs).astype(np.int32), cs)
    cast_kind = "truncates toward zero" if truncates else "??"

    xs_all, b_all, bf_all = rc.args[0], rc.results[5], rc.results[6]
    assert b_all.dtype == np.bool_ and np.array_equal(b_all, xs_all != 0), "Cast f32->bool"
    assert not b_all.flat[1] and np.signbit(xs_all.flat[1]), "-0.0 -> false"
    assert np.array_equal(bf_all, b_all.astype(np.float32)), "Cast bool->f32"

    # ---- table + README -------------------------------------------------
    table = []
    for fx in fixtures + [ex]:
        table.append((fx.name, op_types(fx.graph_def)))
    width = max(len(n) for n, _ in table)
    print()
    for n, ops in table:
        print(f"{n:<{width}}  {' '.join(ops)}")
    print()
    print("int32 Div:", div_kind, "|", "; ".join(div_rows))
    print("Cast f32->i32:", cast_kind, "|", "; ".join(cast_rows))

    readme = [
        "# TensorFlow fixtures",
        "",
        "Frozen GraphDefs produced by real TensorFlow, with the inputs fed and the",
        "outputs TensorFlow computed. The aotc tests read these files and never import",
        "TensorFlow.",
        "",
        f"Generated with TensorFlow {tf.__version__} (Keras {keras.__version__}, "
        f"NumPy {np.__version__}), with `TF_ENABLE_ONEDNN_OPTS=0`.",
        "",
        "## Regenerating",
        "",
        "```sh",
        "python -m venv .tfenv",
        ".tfenv/bin/pip install tensorflow-cpu==2.21.0",
        ".tfenv/bin/python tests/data/make_fixtures.py",
        "```",
        "",
        "The script also rewrites `examples/mlp/{mlp.pb,expected.npz,expected.txt}`,",
        "`configs/mlp.yaml` and this README. It is seeded; with the same TF version the output",
        "is byte-identical.",
        "The other fixtures here come from sibling scripts with the same contract, each",
        "writing only its own files: `make_math_fixtures.py` (math, reductions, contractions,",
        "types), `make_array_fixtures.py` (shape and data movement, gather),",
        "`make_conv_fixtures.py` (convolution, pooling, batch norm, resize),",
        "`make_model_fixtures.py` (whole Keras models: `model_*`),",
        "`make_call_fixtures.py` (frozen graphs that keep function calls: `call_*`),",
        "`make_sort_scatter_fixtures.py` (TopKV2, tf.sort/argsort, ScatterNd, TensorScatter*)",
        "`make_bits_fixtures.py` (bitwise ops: `bitwise`), `make_bf16_fixtures.py`",
        "(bfloat16: `bf16_model`), `make_random_fixtures.py` (seeded random ops) and",
        "`make_fft_fixtures.py` (FFTs, complex numbers, audio front ends: `fft_ops`,",
        "`stft_mel`, `mfcc`, `spectrogram`).",
        "Elsewhere under `tests/data`: `make_control_flow_fixtures.py` writes",
        "`tests/data/control_flow/` (loops and conditionals, issue 11; its own README),",
        "`hlo/make_hlo.py`, `make_jax_control_flow_fixtures.py` and",
        "`make_jax_sort_scatter_fixtures.py`, `make_jax_fft_fixtures.py` the HLO text in",
        "`tests/data/hlo/`, `savedmodel/make_savedmodels.py` the SavedModels,",
        "and `make_tfcompile_fixtures.py` the TF1-style graphs in `tests/data/tfcompile/`.",
        "",
        "## Files",
        "",
        "Per fixture `NAME`: `NAME.pb` (binary frozen GraphDef), `NAME.yaml` (aotc config:",
        "feeds in argument order, fetches in result order), `NAME.npz` (`arg0..` inputs in",
        "feed order, `result0..` outputs of the frozen graph, in fetch order).",
        "`binary.pbtxt` and `plumbing.pbtxt` are the same graphs in text format.",
        "",
        "| fixture | feeds | fetches | op types |",
        "|---|---|---|---|",
    ]
    for fx in fixtures + [ex]:
        feeds = ", ".join(f"`{n}` {d}{s}" for n, s, d in fx.feeds)
        fetches = ", ".join(f"`{f}`" for f in fx.fetches)
        name = fx.name if fx is not ex else "mlp (examples/mlp)"
        readme.append(f"| {name} | {feeds} | {fetches} | {' '.join(op_types(fx.graph_def))} |")
    readme += [
        "",
        "## Semantics observed in TensorFlow (pinned by `reshape_cast`)",
        "",
        f"* int32 `Div` {div_kind}: " + ", ".join(f"`{s}`" for s in div_rows) + ".",
        "  (`FloorDiv` is the op that floors; `Div` on integers is C division.)",
        f"* `Cast` float32 -> int32 {cast_kind}: " + ", ".join(f"`{s}`" for s in cast_rows) + ".",
        "* `Cast` float32 -> bool is `x != 0` (so -0.0 -> false); bool -> float32 gives 0/1.",
        "",
        "## Notes",
        "",
        "* Keras 3 `Dense` lowers to `MatMul` + `BiasAdd`; freezing turns each",
        "  `ReadVariableOp` into `Const` -> `Identity`, and a `NoOp` that depends on those",
        "  `Identity` nodes is a control input (`^NoOp`) of the output `Identity`.",
        "* Exact GELU (`approximate=False`) lowers to " + gelu_note(fixtures[0].graph_def) + ":",
        "  `0.5 * x * erfc(-x * 0.70710677)` (`Mul`, `Neg`, `Erfc`), not `Erf`; `Erf` is",
        "  covered by `unary`.",
        "* TF writes the Placeholder nodes in a run-dependent order; the script reorders",
        "  them (in place) into argument order so that reruns are byte-identical.",
        "* `Cast` carries a `Truncate` attr (false here); `MatMul` carries `grad_a`/`grad_b`.",
        "* Outputs of a `tf.function` are `Identity` nodes named `Identity`, `Identity_1`, ...;",
        "  placeholders are named after the arguments. In `examples/mlp` the fetch is the",
        '  node `y` (a `tf.identity(..., name="y")` inside the function), which feeds the',
        "  `Identity` output node.",
        "* `plumbing` fetches `pair:1` (second output of an `IdentityN`) and has a `NoOp`",
        "  (`dep`) as a control input of `gated`.",
        "* `float64` is separate so that a missing f64 path does not take down `reshape_cast`.",
        "",
    ]
    (OUT_DIR / "README.md").write_text("\n".join(readme))

    total = sum(p.stat().st_size for p in OUT_DIR.iterdir())
    print(f"\ntests/data/tf total: {total} bytes")
    for p in sorted(OUT_DIR.iterdir()) + sorted(EXAMPLE_DIR.iterdir()):
        print(f"  {p.relative_to(REPO)}  {p.stat().st_size}")
    assert total < MAX_DIR_BYTES, total
    return 0


def gelu_note(graph_def) -> str:
    ops = {n.op for n in graph_def.node}
    used = [o for o in ("Erf", "Erfc") if o in ops]
    return "`" + "`, `".join(used) + "`-based code" if used else "no Erf/Erfc"


if __name__ == "__main__":
    sys.exit(main())
