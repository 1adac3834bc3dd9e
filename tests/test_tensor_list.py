"""TensorLists and TensorArrays whose length or element shape aotc cannot know statically.

The numbers of the ops against TF are checked by the fixtures in test_control_flow_fixtures.py
(tensor_list_ops, tensor_array_v1, tensor_array_loop*, the functional Keras RNNs).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fixtures import CONTROL_FLOW_DATA

from aotc.errors import AotcError, ShapeError, UnsupportedError
from aotc.frontend.sources import load_source
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import Module
from aotc.proto import aotc_tf_pb2 as pb

I32 = "attr { key: 'dtype' value { type: DT_INT32 } }"
ELEMENT = "attr { key: 'element_dtype' value { type: DT_FLOAT } }"
SHAPE_TYPE = "attr { key: 'shape_type' value { type: DT_INT32 } }"


def _const(name: str, value: int | list[int]) -> str:
    """An int32 constant: a scalar, or a vector of ``value``."""
    values = value if isinstance(value, list) else [value]
    dims = f"dim {{ size: {len(values)} }}" if isinstance(value, list) else ""
    ints = " ".join(f"int_val: {v}" for v in values)
    tensor = f"tensor {{ dtype: DT_INT32 tensor_shape {{ {dims} }} {ints} }}"
    return (
        f"node {{ name: '{name}' op: 'Const' {I32} attr {{ key: 'value' value {{ {tensor} }} }} }}"
    )


def _feed(name: str, dtype: str, dims: list[int]) -> str:
    shape = " ".join(f"dim {{ size: {d} }}" for d in dims)
    return (
        f"node {{ name: '{name}' op: 'Placeholder' "
        f"attr {{ key: 'dtype' value {{ type: {dtype} }} }}"
        f" attr {{ key: 'shape' value {{ shape {{ {shape} }} }} }} }}"
    )


def _load(tmp_path: Path, text: str, feeds: str, fetch: str) -> Module:
    (tmp_path / "g.pbtxt").write_text(text)
    (tmp_path / "g.yaml").write_text(f"feeds:\n{feeds}fetches:\n  - {{name: {fetch}}}\n")
    return load_source(tmp_path / "g.pbtxt", tmp_path / "g.yaml").module


X = "  - {name: x, shape: [3], dtype: float32}\n"
X_VALUE = np.ones(3, np.float32)


def _list_graph(
    shape: int | list[int], length: str, stack_shape: list[int], extra: str = ""
) -> str:
    return "\n".join(
        [
            _feed("x", "DT_FLOAT", [3]),
            _feed("n", "DT_INT32", []),
            _const("shape", shape),
            _const("stack_shape", stack_shape),
            _const("four", 4),
            _const("i", 1),
            f"node {{ name: 'l' op: 'TensorListReserve' input: 'shape' input: '{length}' "
            f"{ELEMENT} {SHAPE_TYPE} }}",
            extra
            or "node { name: 'w' op: 'TensorListSetItem' input: 'l' input: 'i' input: 'x' "
            f"{ELEMENT} }}",
            f"node {{ name: 's' op: 'TensorListStack' input: 'w' input: 'stack_shape' {ELEMENT} }}",
        ]
    )


def test_a_list_written_once_stacks(tmp_path: Path) -> None:
    # the graph the error tests below change in one thing each
    x = np.array([1.0, -2.0, 3.0], np.float32)
    (got,) = evaluate(_load(tmp_path, _list_graph([3], "four", [3]), X, "s"), [x])
    np.testing.assert_array_equal(got, np.stack([0 * x, x, 0 * x, 0 * x]))


def test_a_list_length_from_a_feed_is_an_error_naming_the_node(tmp_path: Path) -> None:
    text = _list_graph([3], "n", [3])
    feeds = X + "  - {name: n, shape: [], dtype: int32}\n"
    with pytest.raises(ShapeError, match=r"node 'l' \(TensorListReserve\).*compile-time constant"):
        _load(tmp_path, text, feeds, "s")


def test_an_element_shape_nothing_fixes_is_an_error_naming_the_reader(tmp_path: Path) -> None:
    extra = (
        "node { name: 'w' op: 'Identity' input: 'l' attr { key: 'T' value { type: DT_VARIANT } } }"
    )
    text = _list_graph(-1, "four", -1, extra)
    with pytest.raises(ShapeError, match=r"node 's' \(TensorListStack\).*element shape"):
        _load(tmp_path, text, X, "s")


def test_an_unwritten_list_of_known_read_shape_is_zeros(tmp_path: Path) -> None:
    extra = (
        "node { name: 'w' op: 'Identity' input: 'l' attr { key: 'T' value { type: DT_VARIANT } } }"
    )
    (got,) = evaluate(_load(tmp_path, _list_graph(-1, "four", [2, 2], extra), X, "s"), [X_VALUE])
    np.testing.assert_array_equal(got, np.zeros([4, 2, 2], np.float32))


def test_a_write_that_would_grow_the_list_is_refused(tmp_path: Path) -> None:
    extra = (
        "node { name: 'w' op: 'TensorListSetItem' input: 'l' input: 'i' input: 'x' "
        f"{ELEMENT} attr {{ key: 'resize_if_index_out_of_bounds' value {{ b: true }} }} }}"
    )
    with pytest.raises(UnsupportedError, match=r"node 'w' \(TensorListSetItem\).*bounded"):
        _load(tmp_path, _list_graph([3], "four", [3], extra), X, "s")


def test_an_element_of_another_shape_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(AotcError, match=r"node 's' \(TensorListStack\).*\[2\] does not match"):
        _load(tmp_path, _list_graph([3], "four", [2]), X, "s")


def _without_max_num_elements(tmp_path: Path, name: str) -> Path:
    """Fixture ``name`` with its EmptyTensorList's max_num_elements set to -1 (no bound)."""
    graph = pb.GraphDef.FromString((CONTROL_FLOW_DATA / f"{name}.pb").read_bytes())
    (bound,) = [n for n in graph.node if n.name == "EmptyTensorList/max_num_elements"]
    bound.attr["value"].tensor.int_val[:] = [-1]
    (tmp_path / f"{name}.pb").write_bytes(graph.SerializeToString())
    (tmp_path / f"{name}.yaml").write_text((CONTROL_FLOW_DATA / f"{name}.yaml").read_text())
    return tmp_path / f"{name}.pb"


@pytest.mark.parametrize("form", ["functional", "lowered"])
def test_a_list_pushed_in_a_loop_nothing_bounds_is_an_error_naming_it(
    tmp_path: Path, form: str
) -> None:
    # list_push_loop pushes while a norm is large: without max_num_elements nothing bounds it
    graph = _without_max_num_elements(tmp_path, f"list_push_loop_{form}")
    with pytest.raises(
        UnsupportedError, match=r"TensorList \('EmptyTensorList'\).*max_num_elements"
    ):
        load_source(graph, graph.with_suffix(".yaml"))


def test_a_list_scattered_at_runtime_indices_needs_a_length(tmp_path: Path) -> None:
    # TensorListScatter's length is one past the largest index: unknown for fed indices
    text = "\n".join(
        [
            _feed("m", "DT_FLOAT", [2, 3]),
            _feed("ix", "DT_INT32", [2]),
            _const("shape", [3]),
            "node { name: 'l' op: 'TensorListScatter' input: 'm' input: 'ix' input: 'shape' "
            f"{ELEMENT} {SHAPE_TYPE} }}",
            f"node {{ name: 's' op: 'TensorListStack' input: 'l' input: 'shape' {ELEMENT} }}",
        ]
    )
    feeds = (
        "  - {name: m, shape: [2, 3], dtype: float32}\n  - {name: ix, shape: [2], dtype: int32}\n"
    )
    with pytest.raises(ShapeError, match=r"node 'l' \(TensorListScatter\).*compile-time constant"):
        _load(tmp_path, text, feeds, "s")
