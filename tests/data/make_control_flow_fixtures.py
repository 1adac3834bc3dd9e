#!/usr/bin/env python
"""Frozen GraphDefs with control flow: recurrent Keras layers, loops, conditionals (issue 11).

Run in a TensorFlow environment (see make_fixtures.py)::

    python tests/data/make_control_flow_fixtures.py

Writes ``NAME.{pb,yaml,npz}`` under ``tests/data/control_flow/`` with the contract of
make_fixtures.py (``arg0..`` inputs, ``result0..`` what the frozen graph computes), plus that
folder's README. The graphs have the forms users' freezing gives them:

* ``lowered`` (v1 frames): ``convert_variables_to_constants_v2`` with its default
  ``lower_control_flow=True`` turns TF2 ``While``/``If`` into ``Enter``/``Exit``/``Merge``/
  ``Switch``/``NextIteration``/``LoopCond`` frames, so a frozen Keras RNN has them;
* ``functional``: the same freezing with ``lower_control_flow=False`` keeps ``While`` and
  ``StatelessIf`` and their bodies in the function library (grappler still lowers ``Case``,
  so ``switch_case_functional`` is the graph of a function without variables, unfrozen);
* ``v1``: a ``tf.compat.v1`` graph built with control flow v1 (``Switch``/``Merge``
  conditionals, ``TensorArrayV3`` in ``dynamic_rnn``), frozen with
  ``tf.compat.v1.graph_util.convert_variables_to_constants``.

Sizes are small (an LSTM of 8 units over 5 steps of 4 features, batch 2); weights are seeded.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # before TensorFlow loads (keras loads it)
sys.path.insert(0, str(Path(__file__).parent))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from google.protobuf import text_format  # noqa: E402
from make_fixtures import (  # noqa: E402
    F32,
    I32,
    Fixture,
    build,
    build_v1,
    normal,
    op_types,
    rng,
    spec,
    verify_written,
    write_fixture,
)

OUT = Path(__file__).resolve().parent / "control_flow"
MAX_PB_BYTES = 200 * 1024
MAX_DIR_BYTES = 1024 * 1024
BATCH, STEPS, FEATURES, UNITS = 2, 5, 4, 8
LOWERED = {"Enter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond"}
FORMS = {"lowered": True, "functional": False, "unfrozen": None}  # freeze()'s lowering option
layers = keras.layers


@contextmanager
def control_flow_v1():
    """Build with TF1's control flow (Switch/Merge, v1 while frames) inside the block."""
    tf.compat.v1.disable_control_flow_v2()
    try:
        yield
    finally:
        tf.compat.v1.enable_control_flow_v2()


def fixture(name: str, fn, args, must_have: set[str], form: str, doc: str) -> Fixture:
    """A built tf.function fixture in one of the forms ``FORMS`` names."""
    fx = Fixture(
        name, fn, args, must_have, doc=doc, functions=form != "lowered",
        lower_control_flow=FORMS[form], out_dir=OUT,
    )  # fmt: skip
    build(fx)
    return fx


# ---- Keras recurrent layers ------------------------------------------------------------------


def randomize(model: keras.Model, seed: int) -> None:
    r = rng(seed)
    for w in model.weights:
        w.assign(normal(r, tuple(w.shape), 0.5))


def keras_fixture(name: str, make: Callable, seed: int, form: str = "lowered") -> Fixture:
    x = inp = keras.Input((STEPS, FEATURES), batch_size=BATCH, name="x")
    model = keras.Model(inp, make(x))
    randomize(model, seed)
    args = [normal(rng(seed + 1), [BATCH, STEPS, FEATURES])]
    if "masking" in name:
        args[0][1, 3:] = 0.0  # the second sequence is two steps shorter

    @tf.function(input_signature=[spec([BATCH, STEPS, FEATURES], name="x")])
    def f(x):
        return model(x, training=False)

    ops = {"TensorListReserve", *(LOWERED if form == "lowered" else {"While"})}
    doc = f"{make.__doc__} ({form})"
    fx = fixture(name, f, args, ops, form, doc)
    np.testing.assert_allclose(fx.results[0], np.asarray(model(args[0])), rtol=1e-5, atol=1e-6)
    return fx


def lstm_seq(x):
    """Keras LSTM(8, return_sequences=True)"""
    return layers.LSTM(UNITS, return_sequences=True)(x)


def lstm_last(x):
    """Keras LSTM(8)"""
    return layers.LSTM(UNITS)(x)


def gru_seq(x):
    """Keras GRU(8, return_sequences=True)"""
    return layers.GRU(UNITS, return_sequences=True)(x)


def gru_last(x):
    """Keras GRU(8)"""
    return layers.GRU(UNITS)(x)


def simple_rnn(x):
    """Keras SimpleRNN(8)"""
    return layers.SimpleRNN(UNITS)(x)


def bilstm(x):
    """Keras Bidirectional(LSTM(8))"""
    return layers.Bidirectional(layers.LSTM(UNITS))(x)


def lstm_stacked(x):
    """Keras LSTM(8, return_sequences=True) -> LSTM(8)"""
    return layers.LSTM(UNITS)(layers.LSTM(UNITS, return_sequences=True)(x))


def lstm_masking(x):
    """Keras Masking -> LSTM(8); zero steps at the end of one sequence are masked"""
    return layers.LSTM(UNITS)(layers.Masking(0.0)(x))


# ---- tf.while_loop, tf.cond, tf.switch_case in tf.function ------------------------------------


def halve_until_small(x):
    def keep_going(i, v):
        return tf.norm(v) > 0.05

    def step(i, v):
        return i + 1, v * 0.5 + tf.sin(v) * 0.1

    i, v = tf.while_loop(keep_going, step, [tf.constant(0), x])
    return v, i


def while_norm(form: str) -> Fixture:
    f = tf.function(halve_until_small, input_signature=[spec([4], name="x")])
    x = np.array([3.0, -4.0, 1.5, 0.25], np.float32)
    ops = LOWERED if form == "lowered" else {"StatelessWhile"}
    doc = f"tf.while_loop until the norm falls below 0.05: the trip count depends on x ({form})"
    return fixture(f"while_norm_{form}", f, [x], ops, form, doc)


def nested_loops(x, n):
    def outer(i, acc):
        def inner(j, a):
            return j + 1, a + tf.tanh(tf.gather(x, j)) * tf.cast(i + 1, F32)

        _, a = tf.while_loop(lambda j, a: j < 3, inner, [tf.constant(0), acc])
        return i + 1, a * 0.5

    _, acc = tf.while_loop(lambda i, a: i < n, outer, [tf.constant(0), tf.zeros([4])])
    return acc


def while_nested(form: str) -> Fixture:
    f = tf.function(nested_loops, input_signature=[spec([3, 4], name="x"), spec([], I32, "n")])
    args = [normal(rng(701), [3, 4]), np.array(4, np.int32)]
    ops = LOWERED if form == "lowered" else {"StatelessWhile"}
    doc = f"tf.while_loop (n steps, n fed) around a tf.while_loop of 3 steps ({form})"
    return fixture(f"while_nested_{form}", f, args, ops, form, doc)


def two_conds(x):
    s = tf.reduce_sum(x)
    a = tf.cond(s > 0, lambda: tf.nn.relu(x) * 2.0, lambda: x - 1.0)  # one takes each branch
    b = tf.cond(s < 0, lambda: tf.exp(x), lambda: tf.square(x) + s)
    return a, b


def cond_v2() -> Fixture:
    f = tf.function(two_conds, input_signature=[spec([2, 3], name="x")])
    x = np.abs(normal(rng(702), [2, 3])) - 0.2
    doc = "two tf.cond on sum(x) > 0 and < 0, one taking each branch (functional StatelessIf)"
    return fixture("cond_v2", f, [x], {"StatelessIf"}, "functional", doc)


def cond_v1() -> Fixture:
    x_value = np.abs(normal(rng(702), [2, 3])) - 0.2

    def make():
        with control_flow_v1():
            x = tf.compat.v1.placeholder(F32, [2, 3], name="x")
            a, b = two_conds(x)
        return [x], [tf.identity(a, name="a"), tf.identity(b, name="b")]

    doc = "the same two tf.cond in a tf.compat.v1 graph with control flow v1 (Switch/Merge)"
    fx = Fixture("cond_v1", None, [x_value], {"Switch", "Merge"}, doc=doc, out_dir=OUT)
    build_v1(fx, make)
    return fx


def switch_case(form: str) -> Fixture:
    @tf.function(input_signature=[spec([], I32, "i"), spec([2, 3], name="x")])
    def f(i, x):
        branches = [lambda: x * 2.0, lambda: tf.tanh(x), lambda: -tf.abs(x)]
        return tf.switch_case(i, branches), tf.switch_case((i + 1) % 3, branches)

    args = [np.array(1, np.int32), normal(rng(703), [2, 3])]
    what = "tf.switch_case on a fed index and on (index + 1) % 3"
    if form == "lowered":  # freezing lowers Case to _SwitchN/Merge, whatever it is asked
        return fixture("switch_case", f, args, {"_SwitchN", "Merge"}, form, f"{what} (lowered)")
    doc = f"{what} (StatelessCase: the function's own graph, which has no variables)"
    return fixture("switch_case_functional", f, args, {"StatelessCase"}, form, doc)


# ---- tf.TensorArray in a tf.while_loop ---------------------------------------------------------


def running_tanh(x, element_shape):
    """Reads step i of x from a TensorArray, writes the running state to another."""
    steps = x.shape[0]
    xs = tf.TensorArray(F32, size=steps, element_shape=element_shape).unstack(x)
    ys = tf.TensorArray(F32, size=steps, element_shape=element_shape)

    def step(i, h, ys):
        h = tf.tanh(xs.read(i) + 0.5 * h)
        return i + 1, h, ys.write(i, h)

    _, h, ys = tf.while_loop(lambda i, h, ys: i < steps, step, [0, tf.zeros(x.shape[1:]), ys])
    return ys.stack(), h, ys.size()


def tensor_array_loop(name: str, element_shape) -> Fixture:
    @tf.function(input_signature=[spec([6, 3], name="x")])
    def f(x):
        return running_tanh(x, element_shape)

    ops = {"TensorListReserve", "TensorListFromTensor", "TensorListSetItem", "StatelessWhile"}
    known = "given" if element_shape else "not given: TF learns it from the writes"
    doc = f"tf.TensorArray read and written in a tf.while_loop, element_shape {known} (functional)"
    return fixture(name, f, [normal(rng(706), [6, 3])], ops, "functional", doc)


def list_ops_straight(x):
    """Every TensorList op outside loops: push/pop, set/get at a runtime index, length."""
    from tensorflow.python.ops import list_ops

    empty = list_ops.empty_tensor_list(element_shape=[3], element_dtype=F32, max_num_elements=4)
    grown = list_ops.tensor_list_push_back(empty, x[0])
    grown = list_ops.tensor_list_push_back(grown, x[1] * 2.0)
    grown = list_ops.tensor_list_push_back(grown, tf.tanh(x[2]))
    rest, last = list_ops.tensor_list_pop_back(grown, element_dtype=F32)
    i = tf.cast(tf.reduce_sum(x) > 0.0, tf.int32)  # 0 or 1, known only at run time
    reserved = list_ops.tensor_list_reserve([3], 4, F32)
    written = list_ops.tensor_list_set_item(reserved, i + 2, last)
    got = list_ops.tensor_list_get_item(rest, i, F32)
    stacked = list_ops.tensor_list_stack(written, F32, num_elements=4)
    shape = list_ops.tensor_list_element_shape(written, tf.int32)
    return stacked, got * tf.cast(list_ops.tensor_list_length(rest), F32), shape


def tensor_list_ops() -> Fixture:
    f = tf.function(list_ops_straight, input_signature=[spec([3, 3], name="x")])
    ops = {"EmptyTensorList", "TensorListPushBack", "TensorListPopBack", "TensorListLength",
           "TensorListElementShape", "TensorListSetItem", "TensorListGetItem"}  # fmt: skip
    doc = "TensorList ops outside loops: push_back x3, pop_back, set/get at a runtime index"
    return fixture("tensor_list_ops", f, [normal(rng(707), [3, 3])], ops, "lowered", doc)


def tensor_array_v1() -> Fixture:
    x_value = normal(rng(708), [4, 3])

    def make():
        x = tf.compat.v1.placeholder(F32, [4, 3], name="x")
        i = tf.cast(tf.reduce_sum(x) > 0.0, tf.int32)
        ta = tf.TensorArray(F32, size=5, element_shape=[3], clear_after_read=False)
        ta = ta.scatter([3, 1, 0, 2], x)  # a permutation of the first four (written once only)
        ta = ta.write(4, tf.tanh(ta.read(i + 1)))
        size = tf.raw_ops.TensorArraySizeV3(handle=ta.handle, flow_in=ta.flow)  # not folded
        outputs = {"g": ta.gather([2, 4, 0]), "s": ta.stack(), "n": size}
        return [x], [tf.identity(t, name=name) for name, t in outputs.items()]

    doc = "TensorArrayV3 outside loops: scatter, read at a runtime index, write, gather, size (v1)"
    must_have = {"TensorArrayV3", "TensorArrayScatterV3", "TensorArrayReadV3",
                 "TensorArrayWriteV3", "TensorArrayGatherV3", "TensorArraySizeV3"}  # fmt: skip
    fx = Fixture("tensor_array_v1", None, [x_value], must_have, doc=doc, out_dir=OUT)
    with control_flow_v1():
        build_v1(fx, make)
    return fx


def scatter_at_runtime(x):
    """TensorArray.scatter at indices computed from x (a permutation), TensorList scatter and
    gather at runtime indices."""
    from tensorflow.python.ops import list_ops

    perm = tf.argsort(x[:, 0])
    ta = tf.TensorArray(F32, size=5, element_shape=[3]).scatter(perm, x * 2.0)
    made = tf.raw_ops.TensorListScatterV2(
        tensor=tf.tanh(x), indices=perm + 1, element_shape=[3], num_elements=6
    )
    picked = list_ops.tensor_list_gather(made, tf.reverse(perm, [0]), F32, element_shape=[3])
    return ta.stack(), list_ops.tensor_list_stack(made, F32), picked


def tensor_list_scatter() -> Fixture:
    f = tf.function(scatter_at_runtime, input_signature=[spec([4, 3], name="x")])
    ops = {"TensorListScatterIntoExistingList", "TensorListScatterV2", "TensorListGather"}
    doc = "TensorArray.scatter, TensorList scatter and gather at indices computed from x (TF2)"
    return fixture("tensor_list_scatter", f, [normal(rng(710), [4, 3])], ops, "lowered", doc)


def tensor_array_scatter_v1() -> Fixture:
    x_value = normal(rng(711), [4, 3])

    def make():
        x = tf.compat.v1.placeholder(F32, [4, 3], name="x")
        perm = tf.argsort(x[:, 1], direction="DESCENDING")
        ta = tf.TensorArray(F32, size=5, element_shape=[3], clear_after_read=False)
        ta = ta.scatter(perm, tf.sin(x))
        ta = ta.write(4, ta.read(perm[0]) * 3.0)
        outputs = {"s": ta.stack(), "g": ta.gather(perm)}
        return [x], [tf.identity(t, name=name) for name, t in outputs.items()]

    doc = "TensorArrayV3 scattered at indices computed from x (an argsort), then read (v1)"
    must_have = {"TensorArrayV3", "TensorArrayScatterV3", "TensorArrayGatherV3"}
    fx = Fixture("tensor_array_scatter_v1", None, [x_value], must_have, doc=doc, out_dir=OUT)
    with control_flow_v1():
        build_v1(fx, make)
    return fx


# ---- TensorLists that grow or shrink in a tf.while_loop -----------------------------------------


def push_until_small(x):
    """Pushes v while its norm is above 0.05 (a fed trip count): max_num_elements bounds it."""
    from tensorflow.python.ops import list_ops

    empty = list_ops.empty_tensor_list(element_shape=[4], element_dtype=F32, max_num_elements=12)

    def step(v, grown):
        return v * 0.5 + tf.sin(v) * 0.1, list_ops.tensor_list_push_back(grown, v)

    _, grown = tf.while_loop(lambda v, _: tf.norm(v) > 0.05, step, [x, empty])
    n = list_ops.tensor_list_length(grown)
    rest, last = list_ops.tensor_list_pop_back(grown, element_dtype=F32)
    first = list_ops.tensor_list_get_item(rest, 0, F32)
    return last, first * 2.0, n


def list_push_loop(form: str) -> Fixture:
    f = tf.function(push_until_small, input_signature=[spec([4], name="x")])
    x = np.array([3.0, -4.0, 1.5, 0.25], np.float32)
    ops = {"EmptyTensorList", "TensorListPushBack", "TensorListPopBack", "TensorListLength"}
    ops |= LOWERED if form == "lowered" else {"StatelessWhile"}
    doc = f"TensorListPushBack in a tf.while_loop of a fed trip count, max_num_elements 12 ({form})"
    return fixture(f"list_push_loop_{form}", f, [x], ops, form, doc)


def push_pop_counted(x):
    """Counted loops: push two pop one into a list of unknown size and element shape; pop
    three off a list made from x; read x back from a TensorArray grown by tf.range writes;
    push in a loop of 2 inside a loop of 3."""
    from tensorflow.python.ops import list_ops

    empty = list_ops.empty_tensor_list(element_shape=None, element_dtype=F32, max_num_elements=-1)
    rows = list_ops.tensor_list_from_tensor(x, element_shape=[3])

    def step(i, grown, rows, total):
        v = tf.cast(i, F32) * x[0] + 1.0
        grown = list_ops.tensor_list_push_back(grown, v)
        grown = list_ops.tensor_list_push_back(grown, tf.tanh(v))
        grown, popped = list_ops.tensor_list_pop_back(grown, element_dtype=F32)
        rows, row = list_ops.tensor_list_pop_back(rows, element_dtype=F32)
        return i + 1, grown, rows, total + tf.reshape(popped, [3]) * row

    _, grown, rows, total = tf.while_loop(
        lambda i, *_: i < 3, step, [0, empty, rows, tf.zeros([3])]
    )
    ta = tf.TensorArray(F32, size=0, dynamic_size=True)
    for i in tf.range(4):
        ta = ta.write(i, tf.exp(-tf.gather(x, i)) * tf.cast(i, F32))
    stacked = list_ops.tensor_list_stack(grown, F32)
    left = list_ops.tensor_list_stack(rows, F32, element_shape=[3])
    return stacked, left, total, ta.stack(), nested_pushes(x)


def nested_pushes(x):
    from tensorflow.python.ops import list_ops

    def outer(i, pushed):
        def inner(j, pushed):
            item = tf.gather(x, i + j) * tf.cast(j + 1, F32)
            return j + 1, list_ops.tensor_list_push_back(pushed, item)

        return i + 1, tf.while_loop(lambda j, _: j < 2, inner, [0, pushed])[1]

    empty = list_ops.empty_tensor_list(element_shape=[3], element_dtype=F32, max_num_elements=-1)
    _, pushed = tf.while_loop(lambda i, _: i < 3, outer, [0, empty])
    return list_ops.tensor_list_stack(pushed, F32, element_shape=[3])


def list_push_pop_counted(form: str) -> Fixture:
    f = tf.function(push_pop_counted, input_signature=[spec([5, 3], name="x")])
    ops = {"EmptyTensorList", "TensorListPushBack", "TensorListPopBack", "TensorListSetItem"}
    ops |= LOWERED if form == "lowered" else {"StatelessWhile"}
    doc = (
        "TensorList push/pop and a dynamic_size TensorArray in loops of constant trip counts, "
        f"no size given, also nested: the lengths follow from the trip counts ({form})"
    )
    return fixture(f"list_push_pop_counted_{form}", f, [normal(rng(709), [5, 3])], ops, form, doc)


# ---- tf.compat.v1.nn.dynamic_rnn ---------------------------------------------------------------


class TinyLSTMCell:
    """What ``dynamic_rnn`` needs of a cell (``tf.compat.v1.nn.rnn_cell`` needs Keras 2): an
    LSTM whose state is ``[c, h]`` concatenated, with seeded constant weights."""

    def __init__(self, units: int, features: int, seed: int) -> None:
        r = rng(seed)
        self.units = units
        self.kernel = tf.compat.v1.Variable(normal(r, [features + units, 4 * units], 0.5))
        self.bias = tf.compat.v1.Variable(normal(r, [4 * units], 0.1))

    @property
    def state_size(self) -> int:
        return 2 * self.units

    @property
    def output_size(self) -> int:
        return self.units

    def zero_state(self, batch: int, dtype):
        return tf.zeros([batch, 2 * self.units], dtype)

    def __call__(self, inputs, state):
        c, h = tf.split(state, 2, axis=1)
        gates = tf.matmul(tf.concat([inputs, h], 1), self.kernel) + self.bias
        i, j, f, o = tf.split(gates, 4, axis=1)
        c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(j)
        h = tf.sigmoid(o) * tf.tanh(c)
        return h, tf.concat([c, h], 1)


def dynamic_rnn_v1() -> Fixture:
    x_value = normal(rng(704), [BATCH, STEPS, FEATURES])

    def make():
        with control_flow_v1():
            x = tf.compat.v1.placeholder(F32, [BATCH, STEPS, FEATURES], name="x")
            cell = TinyLSTMCell(UNITS, FEATURES, seed=705)
            outputs, state = tf.compat.v1.nn.dynamic_rnn(
                cell, x, sequence_length=[STEPS, STEPS - 2], dtype=F32
            )
        return [x], [tf.identity(outputs, name="outputs"), tf.identity(state, name="state")]

    doc = "tf.compat.v1.nn.dynamic_rnn of an LSTM cell, sequence_length [5, 3] (v1, TensorArrayV3)"
    must_have = {"TensorArrayV3", "TensorArrayScatterV3", "TensorArrayReadV3"} | LOWERED
    fx = Fixture("dynamic_rnn_v1", None, [x_value], must_have, doc=doc, out_dir=OUT)
    build_v1(fx, make)
    return fx


# ---- canonical form ---------------------------------------------------------------------------

UID = re.compile(r"_\d+")
TRACING_ATTRS = ("_has_manual_control_dependencies",)  # set or not from run to run
UNUSED_INPUT = "unused_control_flow_input"
REDUNDANT = re.compile(r"_\d+(___redundant_placeholder\d+)")


def canonicalize(graph_def):
    """The graph in a form reruns reproduce byte for byte, saying the same thing. TF writes
    nodes in a run-dependent order, sets a tracing hint on some nodes in some runs, names
    functions (and arguments after them) with a process-wide counter (``while_body_11137``),
    and lowering leaves a run-dependent set of unconnected ``unused_control_flow_input``
    Placeholders. Nodes are sorted by name, the hint and the unconnected Placeholders dropped,
    and functions renamed ``<name without numbers>_<k>`` in order of first use."""
    used = {i.lstrip("^").split(":")[0] for n in all_nodes(graph_def) for i in n.input}
    nodes = [n for n in graph_def.node if not n.name.startswith(UNUSED_INPUT) or n.name in used]
    del graph_def.node[:]
    graph_def.node.extend(sorted(nodes, key=lambda n: n.name))
    for node in all_nodes(graph_def):
        for key in TRACING_ATTRS:
            if key in node.attr:
                del node.attr[key]
    library = {f.signature.name: f for f in graph_def.library.function}
    order = first_uses(graph_def, library)
    assert set(order) == set(library), sorted(set(library) - set(order))
    functions = [library[old] for old in order]
    del graph_def.library.function[:]
    graph_def.library.function.extend(functions)
    return rename_functions(
        graph_def, {old: f"{UID.sub('', old)}_{k}" for k, old in enumerate(order)}
    )


def rename_functions(graph_def, renamed: dict[str, str]):
    """Every occurrence of each old name, also inside argument names, in the text form; and
    grappler's unused arguments (``<pre-grappler name>_9853___redundant_placeholder0``) lose
    the number."""
    text = text_format.MessageToString(graph_def)
    if renamed:
        names = sorted(renamed, key=len, reverse=True)
        pattern = re.compile("|".join(re.escape(n) for n in names) + r"(?!\d)")
        text = pattern.sub(lambda m: renamed[m.group(0)], text)
    text = REDUNDANT.sub(r"\1", text)
    return text_format.Parse(text, tf.compat.v1.GraphDef())


def funcs(node) -> list:
    """The function references (``NameAttrList``) among ``node``'s attribute values."""
    refs = []
    for _, value in sorted(node.attr.items()):
        kind = value.WhichOneof("value")
        refs += [value.func] if kind == "func" else list(value.list.func) if kind == "list" else []
    return refs


def first_uses(graph_def, library) -> list[str]:
    """Library functions in order of first reference, top-level nodes first, breadth first."""
    order: dict[str, None] = {}
    queue = [list(graph_def.node)]
    while queue:
        for node in queue.pop(0):
            called = [node.op] if node.op in library else []
            for name in called + [f.name for f in funcs(node)]:
                if name in library and name not in order:
                    order[name] = None
                    queue.append(sorted(library[name].node_def, key=lambda n: n.name))
    return list(order)


def all_nodes(graph_def):
    yield from graph_def.node
    for f in graph_def.library.function:
        yield from f.node_def


# ---- all of them -----------------------------------------------------------------------------

KERAS = [
    ("keras_lstm_seq", lstm_seq),
    ("keras_lstm_last", lstm_last),
    ("keras_gru_seq", gru_seq),
    ("keras_gru_last", gru_last),
    ("keras_simple_rnn", simple_rnn),
    ("keras_bilstm", bilstm),
    ("keras_lstm_stacked", lstm_stacked),
    ("keras_lstm_masking", lstm_masking),
]

# the same layers frozen without lowering: While with TensorList ops in its body
FUNCTIONAL_KERAS = (
    "keras_gru_last",
    "keras_simple_rnn",
    "keras_bilstm",
    "keras_lstm_stacked",
    "keras_lstm_masking",
)


def fixtures() -> list[Fixture]:
    out = [keras_fixture(name, make, 800 + 10 * i) for i, (name, make) in enumerate(KERAS)]
    out.append(keras_fixture("keras_lstm_seq_functional", lstm_seq, 800, "functional"))
    for i, (name, make) in enumerate(KERAS):
        if name in FUNCTIONAL_KERAS:
            out.append(keras_fixture(f"{name}_functional", make, 800 + 10 * i, "functional"))
    out += [
        tensor_array_loop("tensor_array_loop", [3]),
        tensor_array_loop("tensor_array_loop_unknown", None),
    ]
    out += [tensor_list_ops(), tensor_array_v1(), tensor_list_scatter(), tensor_array_scatter_v1()]
    for form in ("lowered", "functional"):
        out += [list_push_loop(form), list_push_pop_counted(form)]
    for form in ("lowered", "functional"):
        out += [while_norm(form), while_nested(form)]
    out += [cond_v2(), cond_v1(), switch_case("lowered"), switch_case("unfrozen")]
    return [*out, dynamic_rnn_v1()]


def readme(built: list[Fixture]) -> str:
    lines = [
        "# Control-flow fixtures (issue 11)",
        "",
        "Frozen GraphDefs with loops and conditionals, written by",
        "`tests/data/make_control_flow_fixtures.py` (see its docstring for the three forms:",
        "`lowered` v1 frames, `functional` While/If/Case with a function library, `v1` graphs",
        f"built with control flow v1). TensorFlow {tf.__version__}, Keras {keras.__version__}.",
        "Files as in `tests/data/tf`: `NAME.pb`, `NAME.yaml`, `NAME.npz`.",
        "",
        "| fixture | what | feeds | fetches | op types (graph and functions) |",
        "|---|---|---|---|---|",
    ]
    for fx in built:
        feeds = ", ".join(f"`{n}` {d}{s}" for n, s, d in fx.feeds)
        fetches = ", ".join(f"`{f}`" for f in fx.fetches)
        ops = " ".join(op_types(fx.graph_def))
        lines.append(f"| {fx.name} | {fx.doc} | {feeds} | {fetches} | {ops} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    keras.utils.set_random_seed(7)
    OUT.mkdir(exist_ok=True)
    built = fixtures()
    for fx in built:
        fx.graph_def = canonicalize(fx.graph_def)
        write_fixture(fx)
        verify_written(fx)
        size = (OUT / f"{fx.name}.pb").stat().st_size
        assert size < MAX_PB_BYTES, (fx.name, size)
        print(f"{fx.name:28s} {size:8d} bytes")
    (OUT / "README.md").write_text(readme(built))
    total = sum(p.stat().st_size for p in OUT.iterdir())
    assert total < MAX_DIR_BYTES, total
    print(f"tests/data/control_flow total: {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
