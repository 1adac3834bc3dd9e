"""Functionalization of TF1 control flow (aotc/frontend/functionalize.py).

Hand-built graphs, made as ``tf.compat.v1`` makes them (tests/tf1_graphs.py), are evaluated,
before and after the optimizer, against what the same program computes in Python. The
fixtures of tests/data/functionalize (real TF graphs nesting loops and conditionals every way,
from tests/data/make_functionalize_fixtures.py) are also compiled and run from C against TF's
numbers; the control-flow fixtures (while_norm_lowered, cond_v1, ...) are in
test_control_flow_fixtures.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from c_harness import run_compiled
from click.testing import CliRunner
from fixtures import assert_close, fixture_names, load_fixture
from tf1_graphs import Tf1Graph, run

from aotc.cli import main
from aotc.config import load_config
from aotc.driver import compile_graph, optimize
from aotc.errors import AotcError, GraphError, ShapeError, UnsupportedError
from aotc.frontend.graphdef import load_graph
from aotc.frontend.options import SourceOptions
from aotc.frontend.signature import inferred_fetches
from aotc.frontend.sources import load_source
from aotc.hlo.evaluate import evaluate

X = np.array([0.5, -1.0, 2.0], np.float32)
DATA = Path(__file__).parent / "data" / "functionalize"
CHECKPOINTED = ["ckpt_loop_v1", "ckpt_loop_v2"]  # unfrozen graphs, compiled with --checkpoint
FROZEN = [name for name in fixture_names(DATA) if name not in CHECKPOINTED]


@pytest.mark.parametrize("name", FROZEN)
def test_tensorflow_graphs_match_through_the_evaluator_and_from_c(name: str) -> None:
    fx = load_fixture(name, DATA)
    module = load_source(fx.graph, fx.config).module
    for stage in ("translated", "optimized"):
        if stage == "optimized":
            optimize(module)
        for i, (got, want) in enumerate(zip(evaluate(module, fx.args), fx.results, strict=True)):
            assert_close(got, want, what=f"{name} {stage} result{i}")
    typed, _ = run_compiled(compile_graph(fx.graph, fx.config).model, fx.args)
    for i, (got, want) in enumerate(zip(typed, fx.results, strict=True)):
        assert_close(got, want, what=f"{name} from C result{i}")


@pytest.mark.parametrize("name", FROZEN)
def test_without_a_config_the_outputs_are_inferred_as_tf_had_them(name: str) -> None:
    # What only a collapsed structure read (a TF1 cond's pred_id) is gone, not an output.
    fx = load_fixture(name, DATA)
    inferred = {f.ref for f in inferred_fetches(load_graph(fx.graph))}
    assert inferred == {f.ref for f in load_config(fx.config).fetches}


def test_the_fixtures_are_there() -> None:
    assert len(fixture_names(DATA)) == 6, "tests/data/make_functionalize_fixtures.py writes 6"
    assert all((DATA / f"{name}.ckpt.index").is_file() for name in CHECKPOINTED)


@pytest.mark.parametrize("name", CHECKPOINTED)
def test_variables_read_in_a_loop_and_a_branch_are_frozen_from_the_checkpoint(name: str) -> None:
    # v1: ReadVariableOp of an Enter'd handle inside the frame; v2: While/If take the handle
    fx = load_fixture(name, DATA)
    options = SourceOptions(checkpoint=str(DATA / f"{name}.ckpt"))
    typed, buffers = run_compiled(
        compile_graph(fx.graph, fx.config, options=options).model, fx.args
    )
    for i, (got, again, want) in enumerate(zip(typed, buffers, fx.results, strict=True)):
        np.testing.assert_array_equal(got, again, err_msg=f"{name} result{i}: calls differ")
        assert_close(got, want, what=f"{name} from C result{i}")


@pytest.mark.parametrize("name", CHECKPOINTED)
def test_without_the_checkpoint_the_variable_is_named(name: str) -> None:
    fx = load_fixture(name, DATA)
    with pytest.raises(AotcError, match=r"'w' \(VarHandleOp\)"):
        load_source(fx.graph, fx.config)


def test_what_the_fetches_do_not_need_is_not_functionalized(tmp_path: Path) -> None:
    # tfcompile prunes to the fetches before it functionalizes: a bad Merge they do not
    # need cannot fail the compile; fetched, it is the error naming it
    g = Tf1Graph()
    a, b = g.placeholder("a"), g.placeholder("b")
    g.node("Merge", a, b, name="m")
    g.node("Tanh", a, name="t")
    g.write(tmp_path, {"a": X, "b": X}, ["t"])
    (got,) = evaluate(load_source(tmp_path / "graph.pb", tmp_path / "graph.yaml").module, [X, X])
    np.testing.assert_allclose(got, np.tanh(X), rtol=1e-6)
    g.write(tmp_path, {"a": X, "b": X}, ["t", "m"])
    with pytest.raises(UnsupportedError, match=r"node 'm' \(Merge\) is neither a loop's Merge"):
        load_source(tmp_path / "graph.pb", tmp_path / "graph.yaml")


def _counted(g: Tf1Graph, frame: str, trips: str | int, body, values: list[str], invariants=()):
    """``for i in range(trips): values = body(values)`` as a while frame with a counter."""

    def cond(g: Tf1Graph, merges: list[str], inv: list[str]) -> list[str]:
        limit = inv[-1] if isinstance(trips, str) else g.const(trips, merges[0], dtype=np.int32)
        return [g.node("Less", merges[0], limit)]

    def step(g: Tf1Graph, vals: list[str], inv: list[str]) -> list[str]:
        one = g.const(1, vals[0], dtype=np.int32)
        return [g.node("AddV2", vals[0], one), *body(g, vals[1:], inv)]

    start = g.const(0, *values[:1], dtype=np.int32)  # in the frame of the values, as TF puts it
    limit = [trips] if isinstance(trips, str) else []
    exits = g.while_loop(frame, cond, step, [start, *values], [*invariants, *limit])
    return exits[1:]


def test_nested_loops_with_loop_invariant_enters(tmp_path: Path) -> None:
    g = Tf1Graph()
    x, n = g.placeholder("x"), g.placeholder("n", np.int32)

    def inner(g: Tf1Graph, vals: list[str], inv: list[str]) -> list[str]:
        half = g.const(0.5, vals[0])
        return [g.node("AddV2", g.node("Mul", vals[0], half), inv[0])]

    def outer(g: Tf1Graph, vals: list[str], inv: list[str]) -> list[str]:
        (a,) = _counted(g, "outer/inner", 3, inner, [vals[0]], [inv[0]])
        return [g.node("AddV2", a, g.const(1.0, vals[0]))]

    (acc,) = _counted(g, "outer", n, outer, [g.const(np.zeros(3))], [x])
    out = g.node("Identity", acc, name="out")
    expected = np.zeros(3, np.float32)
    for _ in range(4):
        for _ in range(3):
            expected = expected * 0.5 + X
        expected = expected + 1
    got = run(g, tmp_path, {"x": X, "n": np.array(4, np.int32)}, [out])
    np.testing.assert_allclose(got[0], expected, rtol=1e-6)


def test_cond_inside_a_loop(tmp_path: Path) -> None:
    g = Tf1Graph()
    x = g.placeholder("x")

    def body(g: Tf1Graph, vals: list[str], inv: list[str]) -> list[str]:
        i, v = vals
        two = g.const(2, i, dtype=np.int32)
        even = g.node("Equal", g.node("FloorMod", i, two), g.const(0, i, dtype=np.int32))
        double = lambda g, xs, pivot: g.node("Mul", xs[0], g.const(2.0, pivot))  # noqa: E731
        minus = lambda g, xs, pivot: g.node("Sub", xs[0], g.const(1.0, pivot))  # noqa: E731
        return [g.node("AddV2", i, g.const(1, i, dtype=np.int32)), g.cond(even, [v], double, minus)]

    def cond(g: Tf1Graph, merges: list[str], inv: list[str]) -> list[str]:
        return [g.node("Less", merges[0], g.const(5, merges[0], dtype=np.int32))]

    exits = g.while_loop("loop", cond, body, [g.const(0, dtype=np.int32), x])
    out = g.node("Identity", exits[1], name="out")
    expected = X.copy()
    for i in range(5):
        expected = expected * 2 if i % 2 == 0 else expected - 1
    np.testing.assert_allclose(run(g, tmp_path, {"x": X}, [out])[0], expected)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_loop_inside_a_cond(tmp_path: Path, sign: float) -> None:
    g = Tf1Graph()
    x = g.placeholder("x")
    positive = g.node("Greater", g.node("Sum", x, g.const(0, dtype=np.int32)), g.const(0.0))

    def then(g: Tf1Graph, xs: list[str], pivot: str) -> str:
        double = lambda g, vals, inv: [g.node("Mul", vals[0], g.const(2.0, vals[0]))]  # noqa: E731
        start = g.const(0, pivot, dtype=np.int32)

        def cond(g: Tf1Graph, merges: list[str], inv: list[str]) -> list[str]:
            return [g.node("Less", merges[0], g.const(3, merges[0], dtype=np.int32))]

        def body(g: Tf1Graph, vals: list[str], inv: list[str]) -> list[str]:
            return [
                g.node("AddV2", vals[0], g.const(1, vals[0], dtype=np.int32)),
                *double(g, vals[1:], inv),
            ]

        return g.while_loop("cond/loop", cond, body, [start, xs[0]])[1]

    other = lambda g, xs, pivot: g.node("Sub", xs[0], g.const(1.0, pivot))  # noqa: E731
    out = g.node("Identity", g.cond(positive, [x], then, other), name="out")
    value = X * sign
    expected = value * 8 if value.sum() > 0 else value - 1
    np.testing.assert_allclose(run(g, tmp_path, {"x": value}, [out])[0], expected)


@pytest.mark.parametrize("index", [0, 1, 2, 5, -1])
def test_switch_n_case_runs_the_indexed_branch_and_the_last_out_of_range(
    tmp_path: Path, index: int
) -> None:
    g = Tf1Graph()
    i, x = g.placeholder("i", np.int32), g.placeholder("x")
    branches = [
        lambda g, xs, pivot: g.node("Mul", xs[0], g.const(2.0, pivot)),
        lambda g, xs, pivot: g.node("Tanh", xs[0]),
        lambda g, xs, pivot: g.node("Neg", xs[0]),
    ]
    out = g.node("Identity", g.case(i, x, branches), name="out")
    expected = [X * 2, np.tanh(X), -X][index if 0 <= index < 3 else 2]
    got = run(g, tmp_path, {"i": np.array(index, np.int32), "x": X}, [out])
    np.testing.assert_allclose(got[0], expected, rtol=1e-6)


def test_outer_values_read_without_an_enter_are_loop_invariants(tmp_path: Path) -> None:
    g = Tf1Graph()
    x = g.placeholder("x")
    scale = g.const(3.0)  # a root constant the body reads directly
    body = lambda g, vals, inv: [g.node("Mul", vals[0], scale)]  # noqa: E731
    (y,) = _counted(g, "loop", 2, body, [x])
    out = g.node("Identity", y, name="out")
    np.testing.assert_allclose(run(g, tmp_path, {"x": X}, [out])[0], X * 9)


def test_control_inputs_move_to_the_functional_nodes(tmp_path: Path) -> None:
    g = Tf1Graph()
    x = g.placeholder("x")
    before = g.node("NoOp", name="before")
    start = g.const(0, dtype=np.int32)
    step = lambda g, vals, inv: [g.node("Neg", vals[0], f"^{before}")]  # noqa: E731

    def cond(g: Tf1Graph, merges: list[str], inv: list[str]) -> list[str]:
        return [g.node("Less", merges[0], g.const(3, merges[0], dtype=np.int32))]

    def body(g: Tf1Graph, vals: list[str], inv: list[str]) -> list[str]:
        return [
            g.node("AddV2", vals[0], g.const(1, vals[0], dtype=np.int32)),
            *step(g, vals[1:], inv),
        ]

    counter, y = g.while_loop("loop", cond, body, [start, x])
    out = g.node("Identity", y, f"^{counter}", name="out")  # the counter's Exit: ordering only
    np.testing.assert_allclose(run(g, tmp_path, {"x": X}, [out])[0], -X)
    graph = load_graph(tmp_path / "graph.pb")
    assert graph.node("out").control_inputs == ["loop"]
    assert graph.node("loop").op == "StatelessWhile"
    assert graph.node("loop").control_inputs == ["before"]  # a body node's outer control input


def test_deeply_nested_conds_need_no_recursion(tmp_path: Path) -> None:
    depth = 300
    g = Tf1Graph()
    x = g.placeholder("x")
    total = g.node("Sum", x, g.const(0, dtype=np.int32))
    value, others = x, []
    for level in range(depth):  # built iteratively: level k is in the then branch of k-1
        pred = g.node("Greater", total, g.const(-float(level)))
        switch = g.node("Switch", value, pred)
        others.append(g.node("Neg", switch))
        value = g.node("Tanh", f"{switch}:1")
    for other in reversed(others):
        value = g.node("Merge", other, value)
    out = g.node("Identity", value, name="out")
    g.write(tmp_path, {"x": X}, [out])
    graph = load_graph(tmp_path / "graph.pb")
    assert not any(n.op in ("Switch", "Merge") for n in graph.nodes.values())
    assert len(graph.functions) == 2 * depth


def test_a_merge_of_no_loop_or_cond_is_an_error_naming_it(tmp_path: Path) -> None:
    g = Tf1Graph()
    a, b = g.placeholder("a"), g.placeholder("b")
    g.node("Merge", a, b, name="m")
    g.write(tmp_path, {"a": X, "b": X}, ["m"])
    with pytest.raises(UnsupportedError, match=r"node 'm' \(Merge\) is neither a loop's Merge"):
        load_graph(tmp_path / "graph.pb")


def test_the_cli_says_so_in_one_line_and_writes_nothing(tmp_path: Path) -> None:
    g = Tf1Graph()
    a, b = g.placeholder("a"), g.placeholder("b")
    g.node("Merge", a, b, name="m")
    path = g.write(tmp_path, {"a": X, "b": X}, ["m"])
    out = tmp_path / "out" / "m"
    result = CliRunner().invoke(main, ["compile", str(path), "-c", str(tmp_path / "graph.yaml"),
                                       "-o", str(out)])  # fmt: skip
    assert result.exit_code == 1
    (line,) = result.output.strip().splitlines()
    assert line.startswith("aotc: error: ") and "node 'm' (Merge) is neither" in line
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_merges_value_index_is_an_error_naming_its_reader(tmp_path: Path) -> None:
    g = Tf1Graph()
    x = g.placeholder("x")
    pred = g.node("Greater", g.node("Sum", x, g.const(0, dtype=np.int32)), g.const(0.0))
    then = lambda g, xs, pivot: g.node("Neg", xs[0])  # noqa: E731
    other = lambda g, xs, pivot: g.node("Abs", xs[0])  # noqa: E731
    merge = g.cond(pred, [x], then, other)
    g.node("Identity", f"{merge}:1", name="which")
    g.write(tmp_path, {"x": X}, ["which"])
    with pytest.raises(UnsupportedError, match=rf"node 'which' \(Identity\) reads '{merge}:1'"):
        load_graph(tmp_path / "graph.pb")


def test_a_carry_that_changes_shape_is_an_error_naming_the_loop(tmp_path: Path) -> None:
    g = Tf1Graph()
    x = g.placeholder("x")
    axis = g.const(0, dtype=np.int32)
    grow = lambda g, vals, inv: [g.node("ConcatV2", vals[0], vals[0], axis, N=2)]  # noqa: E731
    (y,) = _counted(g, "loop", 2, grow, [x])
    with pytest.raises(
        ShapeError, match=r"node 'loop' \(StatelessWhile\).*loop variable 1 changes shape"
    ):
        run(g, tmp_path, {"x": X}, [g.node("Identity", y, name="out")])


def test_a_value_read_from_inside_a_loop_without_exit_is_an_error(tmp_path: Path) -> None:
    g = Tf1Graph()
    x = g.placeholder("x")
    inside: list[str] = []

    def body(g: Tf1Graph, vals: list[str], inv: list[str]) -> list[str]:
        inside.append(g.node("Neg", vals[0], name="inside"))
        return [inside[0]]

    _counted(g, "loop", 2, body, [x])
    g.node("Identity", "inside", name="out")
    g.write(tmp_path, {"x": X}, ["out"])
    with pytest.raises(
        UnsupportedError,
        match=r"node 'out' \(Identity\) runs in loop 'loop' but neither its condition nor "
        r"its body needs it: a value leaves a loop only through an Exit",
    ):
        load_graph(tmp_path / "graph.pb")


def test_a_branch_value_read_without_its_merge_is_an_error(tmp_path: Path) -> None:
    g = Tf1Graph()
    x = g.placeholder("x")
    pred = g.node("Greater", g.node("Sum", x, g.const(0, dtype=np.int32)), g.const(0.0))
    then = lambda g, xs, pivot: g.node("Neg", xs[0], name="negated")  # noqa: E731
    other = lambda g, xs, pivot: g.node("Abs", xs[0])  # noqa: E731
    g.cond(pred, [x], then, other)
    g.node("Identity", "negated", name="out")
    g.write(tmp_path, {"x": X}, ["out"])
    with pytest.raises(
        UnsupportedError, match=r"node 'out' \(Identity\) reads 'negated' inside the conditional"
    ):
        load_graph(tmp_path / "graph.pb")


def test_a_cycle_through_no_next_iteration_is_an_error(tmp_path: Path) -> None:
    g = Tf1Graph()
    x = g.placeholder("x")
    g.node("AddV2", x, "b", name="a")
    g.node("Identity", "a", name="b")
    _counted(g, "loop", 1, lambda g, vals, inv: [g.node("Neg", vals[0])], [x])
    g.write(tmp_path, {"x": X}, ["b"])
    with pytest.raises(GraphError, match="is on a cycle that is not a TensorFlow while loop"):
        load_graph(tmp_path / "graph.pb")
