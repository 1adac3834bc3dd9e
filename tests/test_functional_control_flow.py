"""TF2 functional control flow (While/If/Case bodies from the library) on edge cases.

The fixtures' numbers against TF are checked in test_control_flow_fixtures.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fixtures import CONTROL_FLOW_DATA, load_fixture

from aotc.driver import load_frontend
from aotc.errors import ShapeError
from aotc.hlo.evaluate import evaluate


@pytest.mark.parametrize("index", [3, 7, -1, -(2**31)])
def test_case_index_out_of_range_runs_the_last_branch(index: int) -> None:
    # TF's Case kernel runs branches[N-1] for an index outside [0, N); XLA's conditional too.
    # Branch 2 of both cases is -|x|; the second case's index is (i + 1) mod 3.
    fx = load_fixture("switch_case_functional", CONTROL_FLOW_DATA)
    x = fx.args[1]
    got = evaluate(load_frontend(fx.graph, fx.config).module, [np.int32(index), x])
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
        load_frontend(path, config)
