"""Variables: arguments after the feeds, updated in place, in program order (issue 12, item 2).

TensorFlow graphs from tests/data/make_tfcompile_fixtures.py and make_tfcompile_graphs.py;
small hand-written graphs for the errors.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from c_harness import run_calls
from click.testing import CliRunner
from fixtures import assert_close

import aotc
from aotc.cli import main
from aotc.driver import compile_graph
from aotc.errors import ArgumentError, CodegenError, ConfigError, GraphError, UnsupportedError

DATA = Path(__file__).parent / "data" / "tfcompile"
TFVARIABLE = DATA / "test_graph_tfvariable.pb"


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- TF graphs


def test_every_update_op_on_resource_and_reference_variables_matches_tensorflow() -> None:
    # AssignVariableOp, AssignSubVariableOp and the reference Assign, AssignAdd, AssignSub,
    # with a read of the reference (an Identity TensorFlow forwards) seen after a later update.
    data = np.load(DATA / "variables_mixed.npz")
    model = compile_graph(DATA / "variables_mixed.pb", DATA / "variables_mixed.yaml").model
    assert [(a.name, a.variable, a.updated) for a in model.args] == [
        ("a", False, False), ("v", True, True), ("r", True, True),
    ]  # fmt: skip
    runs = run_calls(model, [data["arg0"], data["arg1"], data["arg2"]], 2)
    for c, (results, variables) in enumerate(runs):
        assert_close(results[0], data[f"call{c}_result0"], what=f"call {c}")
        for k, value in enumerate(variables):
            assert_close(value, data[f"call{c}_var{k}"], what=f"call {c} variable {k}")


def test_yaml_variables_compile_like_the_tfcompile_config(tmp_path: Path) -> None:
    yaml = write(tmp_path / "v.yaml", "fetches: [result]\nvariables:\n  - {name: x, shape: [1]}\n")
    from_yaml = compile_graph(TFVARIABLE, yaml).model
    from_pbtxt = compile_graph(TFVARIABLE, DATA / "test_graph_tfvariable.config.pbtxt").model
    assert from_yaml.args == from_pbtxt.args and from_yaml.results == from_pbtxt.results


def test_header_says_which_arguments_are_variables() -> None:
    graph = DATA / "test_graph_tfvariable_sequential_updates"
    model = compile_graph(graph.with_suffix(".pb"), graph.with_suffix(".config.pbtxt")).model
    header = model.header
    assert "(float *x, const float *y, float *result, void *temp)" in header
    assert "/* x: float32[], variable, updated in place */" in header
    assert "/* y: float32[], variable, read-only */" in header
    assert "Variables (arguments after the feeds): x updated in place" in header


def test_python_api_updates_the_variable_array_in_place() -> None:
    fn = aotc.compile(TFVARIABLE, config=DATA / "test_graph_tfvariable.config.pbtxt")
    x = np.array([23], np.float32)
    assert fn(x).ravel().tolist() == [23, 65] and x.tolist() == [65]
    assert fn(x=x).ravel().tolist() == [65, 107] and x.tolist() == [107]
    frozen = np.array([1], np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ArgumentError, match="updates in place needs a writable C-contiguous"):
        fn(frozen)
    mixed = aotc.compile(DATA / "variables_mixed.pb", config=DATA / "variables_mixed.yaml")
    strided = np.zeros(4, np.float32)[::2]
    with pytest.raises(ArgumentError, match=r"argument v: float32\[2\]: a variable the model"):
        mixed(np.ones(2, np.float32), strided, np.ones(2, np.float32))


def test_read_only_variable_accepts_a_read_only_array() -> None:
    graph = DATA / "test_graph_tfvariable_readonly"
    fn = aotc.compile(graph.with_suffix(".pb"), config=graph.with_suffix(".config.pbtxt"))
    x = np.array(23, np.float32)
    x.flags.writeable = False
    assert fn(x).tolist() == 65


def test_aotc_run_saves_updated_variables(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.array([23], np.float32))
    args = ["run", str(TFVARIABLE), "-c", str(DATA / "test_graph_tfvariable.config.pbtxt")]
    args += ["--input", f"x={tmp_path / 'x.npy'}", "-d", str(tmp_path / "out"), "--reference"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert np.load(tmp_path / "out" / "x.npy").tolist() == [65]
    assert np.load(tmp_path / "out" / "result.npy").ravel().tolist() == [23, 65]
    assert np.load(tmp_path / "x.npy").tolist() == [23]  # the input file is left alone


# --------------------------------------------------------------------------- config errors


@pytest.mark.parametrize(
    ("variables", "needle"),
    [
        ("[{name: x, readonly: yes please}]", "variables[0].readonly: expected true or false"),
        ("[{name: 'x:1'}]", "variables[0].name: 'x:1': name the variable node"),
        ("[x, x]", "variables[1].name: duplicate variable 'x' (same as variables[0])"),
        ("[{name: x, size: 1}]", "variables[0]: unknown key 'size'"),
        ("[{name: result}]", "variables[0] 'result': node 'result' (Pack) is not a variable"),
        ("[{name: x, dtype: int32}]", "config dtype int32 disagrees with the graph's float32"),
        ("[{name: x, shape: [2]}]", "config shape [2] does not fit the graph's [1]"),
        ("[{name: ghost}]", "variables[0] 'ghost': no node named 'ghost'"),
    ],
)
def test_yaml_variable_errors(tmp_path: Path, variables: str, needle: str) -> None:
    config = write(tmp_path / "v.yaml", f"fetches: [result]\nvariables: {variables}\n")
    with pytest.raises(ConfigError) as info:
        compile_graph(TFVARIABLE, config)
    assert needle in str(info.value) and str(config) in str(info.value), info.value


@pytest.mark.parametrize(
    ("variables", "needle"),
    [
        ('variable { type: DT_FLOAT }', ":2: variable[0].node_name: missing"),
        ('variable { node_name: "x" shape { dim { size: 1 } } }\n' * 2,
         ":3: variable[1].node_name: duplicate variable 'x' (same as variable[0])"),
        ('variable { node_name: "x" name: "result" shape { dim { size: 1 } } }\n'
         'fetch { id { node_name: "ReadVariableOp" } name: "result" }',
         ":2: variable[0].name: duplicate C name 'result' (same as fetch[1])"),
        ('variable { node_name: "x" }', ":2: variable[0] 'x': config shape [] does not fit"),
    ],
)  # fmt: skip
def test_tfcompile_variable_errors(tmp_path: Path, variables: str, needle: str) -> None:
    config = write(
        tmp_path / "v.config.pbtxt", f'fetch {{ id {{ node_name: "result" }} }}\n{variables}\n'
    )
    with pytest.raises(ConfigError) as info:
        compile_graph(TFVARIABLE, config)
    assert needle in str(info.value), info.value


def test_undeclared_variables_are_listed(tmp_path: Path) -> None:
    config = write(tmp_path / "v.yaml", "fetches: [result]\n")
    with pytest.raises(
        ConfigError, match=r"1 variable\(s\) the config does not declare: 'x' \(VarHandleOp\)"
    ):
        compile_graph(TFVARIABLE, config)


def test_update_of_a_read_only_variable(tmp_path: Path) -> None:
    config = write(
        tmp_path / "v.yaml", "fetches: [result]\nvariables: [{name: x, readonly: true}]\n"
    )
    with pytest.raises(
        ConfigError, match=r"variables\[0\] 'x': declared read-only, but node 'AssignAddVariableOp'"
    ):
        compile_graph(TFVARIABLE, config)


def test_writable_variable_never_updated(tmp_path: Path) -> None:
    graph = DATA / "test_graph_tfvariable_readonly.pb"
    config = write(tmp_path / "v.yaml", "fetches: [result]\nvariables: [x]\n")
    with pytest.raises(
        ConfigError, match=r"'x': declared writable, but the fetches never update it"
    ):
        compile_graph(graph, config)


# --------------------------------------------------------------------------- ordering

DT = 'attr { key: "dtype" value { type: DT_FLOAT } }'
VAR = (
    'node { name: "%s" op: "VarHandleOp" '
    + DT
    + ' attr { key: "shape" value { shape { dim { size: 2 } } } } }\n'
)
ONE = (
    'node { name: "one" op: "Const" ' + DT + ' attr { key: "value" value { tensor {'
    " dtype: DT_FLOAT tensor_shape { dim { size: 2 } } float_val: 1 } } } }\n"
)


def node(name: str, op: str, *inputs: str) -> str:
    listed = "".join(f'input: "{i}" ' for i in inputs)
    t = 'attr { key: "T" value { type: DT_FLOAT } }'
    return f'node {{ name: "{name}" op: "{op}" {listed}{DT} {t} }}\n'


def compile_text(tmp_path: Path, text: str, config: str) -> object:
    graph = write(tmp_path / "g.pbtxt", text)
    return compile_graph(graph, write(tmp_path / "g.yaml", config)).model


def test_a_read_and_an_update_no_edge_orders_are_an_error(tmp_path: Path) -> None:
    text = (
        VAR % "v"
        + ONE
        + node("r", "ReadVariableOp", "v")
        + node("a", "AssignAddVariableOp", "v", "one")
    )
    text += node("y", "Identity", "r", "^a")
    with pytest.raises(
        GraphError,
        match=r"node 'r' \(ReadVariableOp\) and node 'a' .* with no data or control edge ordering",
    ):
        compile_text(tmp_path, text, "fetches: [y]\nvariables: [v]\n")
    ordered = text.replace('input: "v" attr', 'input: "v" input: "^a" attr', 1)
    model = compile_text(tmp_path, ordered, "fetches: [y]\nvariables: [v]\n")
    (runs,) = run_calls(model, [np.array([1, 2], np.float32)], 1)  # type: ignore[arg-type]
    assert runs[0][0].tolist() == [2, 3] and runs[1][0].tolist() == [2, 3]


def test_swapping_two_variables_is_an_error(tmp_path: Path) -> None:
    text = (
        VAR % "v"
        + VAR % "w"
        + node("rv", "ReadVariableOp", "v")
        + node("rw", "ReadVariableOp", "w")
    )
    text += node("av", "AssignVariableOp", "v", "rw", "^rv")
    text += node("aw", "AssignVariableOp", "w", "rv", "^rw")
    text += node("y", "AddV2", "rv", "rw", "^av", "^aw")
    with pytest.raises(CodegenError, match=r"updated with each other's values"):
        compile_text(tmp_path, text, "fetches: [y]\nvariables: [v, w]\n")


def test_shape_changing_view_of_an_updated_reference_variable(tmp_path: Path) -> None:
    ref = (
        'node { name: "r" op: "VariableV2" '
        + DT
        + ' attr { key: "shape" value { shape { dim { size: 2 } } } } }\n'
    )
    shape = (
        'node { name: "s" op: "Const" attr { key: "dtype" value { type: DT_INT32 } } attr { key:'
        ' "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } } int_val: 2'
        " int_val: 1 } } } }\n"
    )
    text = (
        ref
        + ONE
        + shape
        + node("view", "Reshape", "r", "s")
        + node("a", "AssignAdd", "r", "one", "^view")
    )
    text += node("y", "Identity", "view", "^a")
    with pytest.raises(
        UnsupportedError, match=r"node 'view' \(Reshape\) is a view of reference variable 'r'"
    ):
        compile_text(tmp_path, text, "fetches: [y]\nvariables: [r]\n")


def test_variables_in_a_config_for_a_savedmodel_are_an_error(tmp_path: Path) -> None:
    saved = Path(__file__).parent / "data" / "savedmodel" / "module"
    config = write(tmp_path / "v.yaml", "variables: [x]\n")
    with pytest.raises(ConfigError, match=r"variables: are for GraphDefs; a SavedModel's"):
        compile_graph(saved, config)
