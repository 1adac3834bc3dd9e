"""TF2 functional control flow (While/If/Case bodies from the library) on edge cases.

The fixtures' numbers against TF are checked in test_control_flow_fixtures.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fixtures import CONTROL_FLOW_DATA, load_fixture
from google.protobuf import text_format

from aotc.errors import ShapeError, UnsupportedError
from aotc.frontend.sources import load_source
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import Module
from aotc.proto import aotc_tf_pb2 as pb


@pytest.mark.parametrize("index", [3, 7, -1, -(2**31)])
def test_case_index_out_of_range_runs_the_last_branch(index: int) -> None:
    # TF's Case kernel runs branches[N-1] for an index outside [0, N); XLA's conditional too.
    # Branch 2 of both cases is -|x|; the second case's index is (i + 1) mod 3.
    fx = load_fixture("switch_case_functional", CONTROL_FLOW_DATA)
    x = fx.args[1]
    got = evaluate(load_source(fx.graph, fx.config).module, [np.int32(index), x])
    np.testing.assert_array_equal(got[0], -np.abs(x))
    assert (index + 1) % 3 != 2 or np.array_equal(got[1], -np.abs(x))


F32 = 'attr { key: "T" value { type: DT_FLOAT } }'
GROWING_LOOP = f"""
node {{ name: "x" op: "Placeholder" attr {{ key: "dtype" value {{ type: DT_FLOAT }} }}
       attr {{ key: "shape" value {{ shape {{ dim {{ size: 3 }} }} }} }} }}
node {{ name: "loop" op: "StatelessWhile" input: "x"
       attr {{ key: "cond" value {{ func {{ name: "cond" }} }} }}
       attr {{ key: "body" value {{ func {{ name: "body" }} }} }} }}
node {{ name: "out" op: "Identity" input: "loop" {F32} }}
library {{
  function {{
    signature {{ name: "cond" input_arg {{ name: "a" type: DT_FLOAT }}
                output_arg {{ name: "go" type: DT_BOOL }} }}
    node_def {{ name: "t" op: "Const" attr {{ key: "dtype" value {{ type: DT_BOOL }} }}
               attr {{ key: "value" value {{ tensor {{ dtype: DT_BOOL bool_val: true }} }} }} }}
    ret {{ key: "go" value: "t:output:0" }}
  }}
  function {{
    signature {{ name: "body" input_arg {{ name: "a" type: DT_FLOAT }}
                output_arg {{ name: "b" type: DT_FLOAT }} }}
    node_def {{ name: "axis" op: "Const" attr {{ key: "dtype" value {{ type: DT_INT32 }} }}
               attr {{ key: "value" value {{ tensor {{ dtype: DT_INT32 int_val: 0 }} }} }} }}
    node_def {{ name: "c" op: "ConcatV2" input: "a" input: "a" input: "axis:output:0"
               attr {{ key: "N" value {{ i: 2 }} }} {F32}
               attr {{ key: "Tidx" value {{ type: DT_INT32 }} }} }}
    ret {{ key: "b" value: "c:output:0" }}
  }}
}}
"""


def test_a_carry_that_changes_shape_is_an_error_naming_the_node(tmp_path: Path) -> None:
    path = tmp_path / "grow.pbtxt"
    path.write_text(GROWING_LOOP)
    config = tmp_path / "grow.yaml"
    config.write_text(
        "feeds:\n  - {name: x, shape: [3], dtype: float32}\nfetches:\n  - {name: out}\n"
    )
    with pytest.raises(
        ShapeError,
        match=r"node 'loop' \(StatelessWhile\).*loop variable 0 "
        r"changes shape from f32\[3\] to f32\[6\]",
    ):
        load_source(path, config)


def _function(name: str, nodes: list[pb.NodeDef], result: str) -> pb.FunctionDef:
    """``name(p: bool, a: float) -> y = result``."""
    fn = pb.FunctionDef(node_def=nodes)
    fn.signature.name = name
    fn.signature.input_arg.add(name="p", type=pb.DT_BOOL)
    fn.signature.input_arg.add(name="a", type=pb.DT_FLOAT)
    fn.signature.output_arg.add(name="y", type=pb.DT_FLOAT)
    fn.ret["y"] = result
    return fn


def _nested_ifs(depth: int, shared: bool = False) -> pb.GraphDef:
    """f_i(p, a) = If(p, then f_{i+1}, else pass)(p, a); f_depth(p, a) = -a; main = f_0.
    ``shared``: both branches are f_{i+1} (2^depth paths through one chain of functions)."""
    graph = text_format.Parse(NESTED_MAIN, pb.GraphDef())
    library = graph.library.function
    library.append(_function("pass", [], "a"))
    library.append(_function(f"f{depth}", [pb.NodeDef(name="n", op="Neg", input=["a"])], "n:y:0"))
    for i in range(depth):
        node = pb.NodeDef(name="c", op="StatelessIf", input=["p", "p", "a"])
        node.attr["then_branch"].func.name = f"f{i + 1}"
        node.attr["else_branch"].func.name = f"f{i + 1}" if shared else "pass"
        library.append(_function(f"f{i}", [node], "c:output:0"))
    return graph


NESTED_MAIN = f"""
node {{ name: "p" op: "Placeholder" attr {{ key: "dtype" value {{ type: DT_BOOL }} }}
       attr {{ key: "shape" value {{ shape {{ }} }} }} }}
node {{ name: "x" op: "Placeholder" attr {{ key: "dtype" value {{ type: DT_FLOAT }} }}
       attr {{ key: "shape" value {{ shape {{ dim {{ size: 2 }} }} }} }} }}
node {{ name: "top" op: "PartitionedCall" input: "p" input: "x"
       attr {{ key: "f" value {{ func {{ name: "f0" }} }} }} }}
node {{ name: "out" op: "Identity" input: "top" {F32} }}
"""


def _load_nested(tmp_path: Path, graph: pb.GraphDef) -> Module:
    path = tmp_path / "nested.pb"
    path.write_bytes(graph.SerializeToString())
    config = tmp_path / "nested.yaml"
    config.write_text(
        "feeds:\n  - {name: p, shape: [], dtype: bool}\n  - {name: x, shape: [2], dtype: float32}\n"
        "fetches:\n  - {name: out}\n"
    )
    return load_source(path, config).module


def test_branches_nest_deeper_than_the_python_stack(tmp_path: Path) -> None:
    depth = 1200  # past Python's default recursion limit of 1000
    module = _load_nested(tmp_path, _nested_ifs(depth))
    assert sum(c.name.startswith("f") for c in module.computations) == depth
    x = np.array([1.5, -2.0], np.float32)
    np.testing.assert_array_equal(evaluate(module, [np.bool_(True), x])[0], -x)
    np.testing.assert_array_equal(evaluate(module, [np.bool_(False), x])[0], x)


def test_a_function_is_translated_once_per_signature(tmp_path: Path) -> None:
    # Both branches of every level are the next function: one computation each, not 2^40.
    module = _load_nested(tmp_path, _nested_ifs(40, shared=True))
    assert sum(c.name.startswith("f") for c in module.computations) == 40
    x = np.array([1.5, -2.0], np.float32)
    np.testing.assert_array_equal(evaluate(module, [np.bool_(False), x])[0], -x)


def test_an_error_in_a_nested_body_names_every_enclosing_node(tmp_path: Path) -> None:
    graph = _nested_ifs(2)
    leaf = next(f for f in graph.library.function if f.signature.name == "f2")
    leaf.node_def[0].op = "Bogus"
    with pytest.raises(
        UnsupportedError,
        match=r"nested.pb: node 'top/c' \(StatelessIf\) with inputs \(pred\[\], pred\[\], "
        r"f32\[2\]\): node 'f1/c' \(StatelessIf\) .*\): function 'f2': 1 node\(s\) .* "
        r"'f2/n' \(Bogus\)",
    ):
        _load_nested(tmp_path, graph)
