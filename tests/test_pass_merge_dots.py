"""merge-dots: dots of one input with constant weights become one dot and column slices."""

from __future__ import annotations

import numpy as np
from pass_testing import assert_same_results, run_pass

from aotc.hlo.ir import Opcode
from aotc.hlo.text import parse_module, print_module
from aotc.passes import MergeDots


def _constant(name: str, rows: int, cols: int, seed: int) -> str:
    values = np.random.default_rng(seed).standard_normal((rows, cols)).round(2)
    body = ", ".join("{ " + ", ".join(str(v) for v in row) + " }" for row in values)
    return f"{name} = f32[{rows},{cols}] constant({{ {body} }})"


QKV = f"""
HloModule m
ENTRY main {{
  x = f32[2,3,4] parameter(0)
  {_constant("wq", 4, 5, 1)}
  {_constant("wk", 4, 5, 2)}
  {_constant("wv", 4, 6, 3)}
  q = f32[2,3,5] dot(x, wq), lhs_contracting_dims={{2}}, rhs_contracting_dims={{0}}
  k = f32[2,3,5] dot(x, wk), lhs_contracting_dims={{2}}, rhs_contracting_dims={{0}}
  v = f32[2,3,6] dot(x, wv), lhs_contracting_dims={{2}}, rhs_contracting_dims={{0}}
  qr = f32[2,3,5,1] reshape(q)
  kr = f32[2,3,5,1] reshape(k)
  vr = f32[2,3,6,1] reshape(v)
  ROOT t = (f32[2,3,5,1], f32[2,3,5,1], f32[2,3,6,1]) tuple(qr, kr, vr)
}}"""


def test_query_key_value_become_one_dot_and_three_slices() -> None:
    module = assert_same_results(MergeDots(), QKV)
    dots = [i for i in module.entry.instructions if i.opcode is Opcode.DOT]
    assert len(dots) == 1 and dots[0].array_shape.dims == (2, 3, 16), print_module(module)
    slices = [i for i in module.entry.instructions if i.opcode is Opcode.SLICE]
    assert len(slices) == 3 and all(s.operands[0] is dots[0] for s in slices)


TRANSPOSED = f"""
HloModule m
ENTRY main {{
  x = f32[3,4] parameter(0)
  {_constant("w1", 5, 4, 4)}
  {_constant("w2", 2, 4, 5)}
  a = f32[3,5] dot(x, w1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}
  b = f32[3,2] dot(x, w2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}
  ROOT t = (f32[3,5], f32[3,2]) tuple(a, b)
}}"""


def test_transposed_weights_concatenate_along_their_rows() -> None:
    module = assert_same_results(MergeDots(), TRANSPOSED)
    (dot,) = [i for i in module.entry.instructions if i.opcode is Opcode.DOT]
    assert dot.operands[1].array_shape.dims == (7, 4)


UNCHANGED = {
    "epilogue": f"""
HloModule m
ENTRY main {{
  x = f32[3,4] parameter(0)
  {_constant("w1", 4, 5, 1)}
  {_constant("w2", 4, 5, 2)}
  a = f32[3,5] dot(x, w1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  b = f32[3,5] dot(x, w2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  ra = f32[3,5] tanh(a)
  rb = f32[3,5] tanh(b)
  ROOT t = (f32[3,5], f32[3,5]) tuple(ra, rb)
}}""",
    "runtime_weights": """
HloModule m
ENTRY main {
  x = f32[3,4] parameter(0)
  w1 = f32[4,5] parameter(1)
  w2 = f32[4,5] parameter(2)
  a = f32[3,5] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b = f32[3,5] dot(x, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[3,5], f32[3,5]) tuple(a, b)
}""",
    "different_inputs": f"""
HloModule m
ENTRY main {{
  x = f32[3,4] parameter(0)
  y = f32[3,4] parameter(1)
  {_constant("w1", 4, 5, 1)}
  {_constant("w2", 4, 5, 2)}
  a = f32[3,5] dot(x, w1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  b = f32[3,5] dot(y, w2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  ROOT t = (f32[3,5], f32[3,5]) tuple(a, b)
}}""",
}


def test_dots_with_an_epilogue_runtime_weights_or_other_inputs_stay() -> None:
    for name, text in UNCHANGED.items():
        _, changed = run_pass(MergeDots(), text)
        assert not changed, name


def test_merged_module_prints_and_parses_back() -> None:
    module, _ = run_pass(MergeDots(), QKV)
    text = print_module(module, print_large_constants=True)
    assert print_module(parse_module(text), print_large_constants=True) == text
