"""Side effects behind control inputs are never dropped silently (issue 12, item 3).

Real TensorFlow graphs from tests/data/make_tfcompile_fixtures.py, and one synthetic case per
stateful op of TensorFlow's registry.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from c_harness import run_compiled
from click.testing import CliRunner
from graph_specs import graph

from aotc.cli import main
from aotc.driver import compile_graph
from aotc.errors import UnsupportedError
from aotc.frontend.effects import (
    DROPPED_OPS,
    NO_EFFECT_WHEN_UNUSED,
    Effect,
    check_effects,
    effect_of,
)
from aotc.frontend.stateful_ops import STATEFUL_OPS, STATELESS_OPS, VARIABLE_UPDATE_OPS
from aotc.tensor_ref import TensorRef

DATA = Path(__file__).parent / "data" / "tfcompile"
BODIES = Path(__file__).parent / "data" / "effects"  # tests/data/make_body_effect_fixtures.py
LOST = sorted(STATEFUL_OPS - NO_EFFECT_WHEN_UNUSED - DROPPED_OPS)


def compile_error(name: str) -> str:
    with pytest.raises(UnsupportedError) as info:
        compile_graph(DATA / f"{name}.pb", DATA / f"{name}.yaml")
    return str(info.value)


# --------------------------------------------------------------------------- real TF graphs


def test_update_reached_through_a_control_input_is_an_error() -> None:
    # The silent-drop case: the second read is ordered after the update only by ^update.
    message = compile_error("effects_variable_frozen")
    assert "'AssignAddVariableOp' (AssignAddVariableOp)" in message
    assert "through control inputs" in message and "before freezing" in message


def test_update_left_dangling_by_tensorflows_freezer_is_an_error() -> None:
    # TF's convert_variables_to_constants drops the read's ^update: without this check the
    # graph compiles and gives [[1000], [1000]] where TensorFlow gives [[1000], [1042]].
    expected = np.load(DATA / "effects_variable.npz")["result0"]
    assert expected.tolist() == [[1000.0], [1042.0]]
    message = compile_error("effects_variable_tffrozen")
    assert "'AssignAddVariableOp' (AssignAddVariableOp)" in message
    assert "freezing turned into a constant" in message


def test_every_lost_effect_is_listed_in_one_error() -> None:
    message = compile_error("effects_print")
    for node in ("'print' (PrintV2)", "'enqueue' (QueueEnqueueV2)", "'write' (WriteFile)"):
        assert node in message
    assert "4 node(s)" in message
    assert "StringFormat" not in message  # stateless: only PrintV2's input


def test_assert_is_dropped_with_a_note_and_the_result_matches_tensorflow() -> None:
    data = np.load(DATA / "effects_assert.npz")
    result = compile_graph(DATA / "effects_assert.pb", DATA / "effects_assert.yaml")
    (note,) = result.report.notes
    assert "'Assert/Assert' (Assert)" in note and "tfcompile" in note
    for outputs in run_compiled(result.model, [data["arg0"], data["arg1"]]):
        np.testing.assert_array_equal(outputs[0], data["result0"])


def test_assert_note_in_verbose_output_and_report(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    args = ["compile", str(DATA / "effects_assert.pb"), "-o", str(tmp_path / "m")]
    args += ["-c", str(DATA / "effects_assert.yaml"), "--no-cache", "-v", "--report", str(report)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    notes = [line for line in result.output.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and "Assert" in notes[0]
    assert json.loads(report.read_text())["notes"] == [notes[0].removeprefix("note: ")]


def test_cli_reports_a_lost_effect_as_one_line(tmp_path: Path) -> None:
    args = ["compile", str(DATA / "effects_print.pb"), "-c", str(DATA / "effects_print.yaml")]
    result = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "m")])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aotc: error: "), result.output
    assert "PrintV2" in lines[0]
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------- effects in function bodies


@pytest.mark.parametrize(
    ("name", "caller", "printer"),
    [
        ("while_print", "'while' (While)", "while/PrintV2"),
        ("cond_print", "'cond' (If)", "cond/PrintV2"),
    ],
)
def test_effect_in_a_body_the_results_do_not_need_is_an_error(
    name: str, caller: str, printer: str
) -> None:
    # TensorFlow prints on every iteration (or when the branch runs); before this check the
    # print was dropped without a word.
    with pytest.raises(UnsupportedError) as info:
        compile_graph(BODIES / f"{name}.pb", BODIES / f"{name}.yaml")
    message = str(info.value)
    assert caller in message and f"{printer}' (PrintV2)" in message


def test_assert_in_a_loop_body_is_dropped_with_a_note() -> None:
    data = np.load(BODIES / "while_assert.npz")
    result = compile_graph(BODIES / "while_assert.pb", BODIES / "while_assert.yaml")
    (note,) = result.report.notes
    assert "while/Assert/Assert' (Assert)" in note and "tfcompile" in note
    for outputs in run_compiled(result.model, [data["arg0"]]):
        np.testing.assert_array_equal(outputs[0], data["result0"])


# --------------------------------------------------------------------------- every op


def effect_graph(op: str) -> list[str]:
    """``y = x``, ordered after a node of ``op`` (with two data inputs) by a control input."""
    return ["x = Placeholder()", "c = Const()", f"s = {op}(c, x)", "y = Identity(x, ^s)"]


def check(*specs: str) -> list[str]:
    dropped = check_effects(graph(*specs), [TensorRef("y")], [TensorRef("x")])
    return [n.name for n in dropped]


def test_table_is_consistent() -> None:
    assert not STATEFUL_OPS & STATELESS_OPS
    assert VARIABLE_UPDATE_OPS <= STATEFUL_OPS
    assert NO_EFFECT_WHEN_UNUSED <= STATEFUL_OPS and DROPPED_OPS <= STATEFUL_OPS
    assert {"AssignAddVariableOp", "AssignSubVariableOp", "Assign", "ScatterUpdate"} <= (
        VARIABLE_UPDATE_OPS
    )
    assert {"Print", "PrintV2", "QueueEnqueueV2", "WriteFile", "WriteScalarSummary"} <= set(LOST)


@pytest.mark.parametrize(
    "op",
    [
        "AssignAddVariableOp", "AssignSubVariableOp", "AssignVariableOp", "Assign", "AssignAdd",
        "AssignSub", "ScatterUpdate", "ResourceApplyGradientDescent", "Print", "PrintV2",
        "QueueEnqueueV2", "QueueDequeueV2", "WriteFile", "WriteScalarSummary", "SaveV2",
        "RestoreV2", "StatefulPartitionedCall", "CheckNumerics",
    ],
)  # fmt: skip
def test_stateful_op_behind_a_control_input_is_an_error(op: str) -> None:
    with pytest.raises(UnsupportedError, match=rf"'s' \({op}\)"):
        check(*effect_graph(op))


def test_every_stateful_op_of_the_registry_is_an_error_or_harmless() -> None:
    for op in sorted(STATEFUL_OPS):
        expected = effect_of(op)
        try:
            dropped = check(*effect_graph(op))
        except UnsupportedError as err:
            assert expected is Effect.STATEFUL and f"'s' ({op})" in str(err), op
        else:
            assert expected is not Effect.STATEFUL, op
            assert dropped == (["s"] if op in DROPPED_OPS else []), op


def test_unknown_op_behind_a_control_input_is_an_error() -> None:
    with pytest.raises(UnsupportedError, match=r"ops aotc does not know.*'s' \(MyCustomOp\)"):
        check(*effect_graph("MyCustomOp"))


@pytest.mark.parametrize("op", ["NoOp", "Identity", "StringFormat", "Relu", "ReadVariableOp"])
def test_harmless_control_targets(op: str) -> None:
    assert check(*effect_graph(op)) == []


def test_effects_behind_noop_and_identity_sinks_are_found() -> None:
    specs = [
        "x = Placeholder()",
        "v = VarHandleOp()",
        "one = Const()",
        "a = AssignAddVariableOp(v, one)",
        "p = PrintV2(one)",
        "group = NoOp(^a)",
        "sink = Identity(one, ^group, ^p)",
        "y = Identity(x, ^sink)",
    ]
    with pytest.raises(UnsupportedError, match=r"2 node\(s\).*'a' \(AssignAddVariableOp\), 'p'"):
        check(*specs)


def test_effect_feeding_a_control_reached_value_is_found() -> None:
    specs = ["x = Placeholder()", "c = Const()", "p = Print(c, c)", "m = Mul(p, c)"]
    with pytest.raises(UnsupportedError, match=r"'p' \(Print\)"):
        check(*specs, "y = Identity(x, ^m)")


def test_control_inputs_of_a_fed_node_are_not_followed() -> None:
    # Feeding x replaces the node: TensorFlow runs neither its inputs nor its control inputs.
    assert check("c = Const()", "p = PrintV2(c)", "x = Identity(c, ^p)", "y = Relu(x)") == []


def test_effect_not_reached_from_the_fetches_is_ignored() -> None:
    assert check("x = Placeholder()", "c = Const()", "p = PrintV2(c)", "y = Relu(x)") == []


def test_update_of_a_frozen_variable_is_reported_when_ordered_into_the_computation() -> None:
    specs = ["x = Placeholder()", "v = Const()", "a = AssignAddVariableOp(v, one)"]
    assert check(*specs, "one = Const()", "y = Relu(x)") == []  # v unread
    # An initializer or restore op: only the variable links it to the fetches.
    assert check(*specs, "one = Const()", "y = AddV2(x, v)") == []
    with pytest.raises(UnsupportedError, match="freezing turned into a constant"):
        check(*specs, "one = Const(^x)", "y = AddV2(x, v)")  # ordered after reading x
