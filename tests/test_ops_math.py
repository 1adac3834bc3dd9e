"""Unit tests for the lowering logic of math, reduction and contraction translators.

Each test translates one TF op on parameters (or constants) and runs the reference evaluator;
expected numbers come from numpy or from TF's documented formulas.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aotc.errors import AotcError, ShapeError, UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.contraction import parse_einsum
from aotc.frontend.ops.registry import lookup
from aotc.frontend.sources import load_source
from aotc.frontend.translate import TranslationContext
from aotc.hlo.builder import ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.proto import aotc_tf_pb2 as pb

DT = {np.float32: 1, np.int32: 3, np.int16: 5, np.int64: 9}


class Const:
    """An input the translator sees as a constant (axes, dimension)."""

    def __init__(self, value: Any, dtype: Any = np.int32):
        self.value = np.asarray(value, dtype)


def _node(op: str, attrs: dict[str, Any]) -> Node:
    proto = pb.NodeDef(name="node", op=op)
    for key, value in attrs.items():
        if isinstance(value, bool):
            proto.attr[key].b = value
        elif isinstance(value, str):
            proto.attr[key].s = value.encode()
        elif isinstance(value, float):
            proto.attr[key].f = value
        else:
            proto.attr[key].type = DT[value]
    return Node(proto)


def run_op(op: str, *inputs: np.ndarray | Const, **attrs: Any) -> Any:
    """Translate ``op`` on ``inputs`` (parameters, or constants for Const) and evaluate."""
    mb = ModuleBuilder("test")
    ctx = TranslationContext(mb, mb.computation("main"))
    ctx.node = node = _node(op, attrs)
    args = [x for x in inputs if not isinstance(x, Const)]
    values = []
    for x in inputs:
        if isinstance(x, Const):
            values.append(ctx.builder.constant(x.value))
        else:
            shape = Shape(PrimitiveType.from_numpy(x.dtype), x.shape)
            values.append(ctx.builder.parameter(len(values), shape))
    translator = lookup(op)
    assert translator is not None, op
    out = translator(ctx, node, *values)
    return evaluate(mb.build(ctx.builder.build(out)), args)


# ---- Einsum ----------------------------------------------------------------------------------


def test_parse_einsum_keras_attention() -> None:
    spec = parse_einsum("aecd,abcd->acbe", [4, 4])
    assert spec.inputs == (tuple("aecd"), tuple("abcd"))
    assert spec.output == tuple("acbe")


def test_parse_einsum_ellipsis_aligns_right() -> None:
    spec = parse_einsum("...ij,...jk->...ik", [4, 3])
    assert spec.inputs == (("...0", "...1", "i", "j"), ("...1", "j", "k"))
    assert spec.output == ("...0", "...1", "i", "k")


@pytest.mark.parametrize(
    ("equation", "output"), [("ij,kj", ("i", "k")), ("ii", ()), ("ba", ("a", "b"))]
)
def test_parse_einsum_implicit_output(equation: str, output: tuple[str, ...]) -> None:
    assert parse_einsum(equation, [2] * (equation.count(",") + 1)).output == output


@pytest.mark.parametrize(
    ("equation", "ranks", "error"),
    [
        ("ij,jk->ik", [2, 3], ShapeError),  # rank mismatch
        ("ij->ik", [2], UnsupportedError),  # output label in no operand
        ("ij->ii", [2], UnsupportedError),  # repeated output label
        ("i1->i", [2], UnsupportedError),  # not a letter
        ("ij,jk->ik", [2], UnsupportedError),  # operand count
    ],
)
def test_parse_einsum_rejects(equation: str, ranks: list[int], error: type[Exception]) -> None:
    with pytest.raises(error):
        parse_einsum(equation, ranks)


EINSUMS = [
    ("abc,cde->abde", [(2, 3, 6), (6, 2, 4)]),
    ("aecd,abcd->acbe", [(2, 5, 2, 4), (2, 3, 2, 4)]),
    ("acbe,aecd->abcd", [(2, 2, 3, 5), (2, 5, 2, 4)]),
    ("abcd,cde->abe", [(2, 3, 2, 4), (2, 4, 6)]),
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk->ki", [(3, 4), (4, 5)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(3,), (3,)]),
    ("ij,jk->k", [(3, 4), (4, 5)]),  # i is summed before the dot
    ("ii,ij->j", [(3, 3), (3, 4)]),  # a diagonal, then a contraction
    ("iji->j", [(3, 2, 3)]),
    ("ij->ji", [(3, 4)]),
    ("ij,kj", [(3, 4), (5, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (3, 4, 5)]),
    ("b...,b->...", [(3, 2, 2), (3,)]),
]


@pytest.mark.parametrize(("equation", "shapes"), EINSUMS)
def test_einsum_matches_numpy(equation: str, shapes: list[tuple[int, ...]]) -> None:
    r = np.random.default_rng(0)
    xs = [r.standard_normal(s).astype(np.float32) for s in shapes]
    got = run_op("Einsum", *xs, equation=equation)
    want = np.einsum(equation, *xs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ---- floor division and modulo ---------------------------------------------------------------

INT_X = np.array([7, -7, 7, -7, 6, -6, 0, 1, -1, -2147483647], np.int32)
INT_Y = np.array([2, 2, -2, -2, 3, -3, 5, -5, 5, 2], np.int32)


def test_floor_div_and_mod_of_ints_follow_python() -> None:
    np.testing.assert_array_equal(run_op("FloorDiv", INT_X, INT_Y), INT_X // INT_Y)
    np.testing.assert_array_equal(run_op("FloorMod", INT_X, INT_Y), INT_X % INT_Y)


def test_floor_div_and_mod_of_floats() -> None:
    x = np.array([7.5, -7.5, 7.5, -7.5, 6, -6, 0, -0.0, 1e-30], np.float32)
    y = np.array([2, 2, -2, -2, 3, 3, 5, 5, 3], np.float32)
    np.testing.assert_array_equal(run_op("FloorDiv", x, y), np.floor(x / y))
    # TF: fmod, moved into the divisor's sign when the signs differ (and it is nonzero).
    np.testing.assert_array_equal(run_op("FloorMod", x, y), np.mod(x, y))


def test_floor_mod_of_unsigned_is_remainder() -> None:
    x, y = np.array([7, 200], np.uint8), np.array([3, 7], np.uint8)
    np.testing.assert_array_equal(run_op("FloorMod", x, y), x % y)
    np.testing.assert_array_equal(run_op("FloorDiv", x, y), x // y)


# ---- unary -----------------------------------------------------------------------------------


def test_round_is_half_to_even() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999998], np.float32)
    np.testing.assert_array_equal(run_op("Round", x), np.array([0, 2, 2, -0, -2, -2, 2]))


def test_softplus_is_stable_at_both_ends() -> None:
    x = np.array([-200, -20, -13, 0, 13, 20, 200], np.float32)
    want = np.logaddexp(0, x.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(run_op("Softplus", x), want, rtol=1e-6)


def test_clip_by_value_takes_min_then_max() -> None:
    x = np.array([0.0, 5.0], np.float32)
    got = run_op("ClipByValue", x, Const(2.0, np.float32), Const(1.0, np.float32))
    np.testing.assert_array_equal(got, [2.0, 2.0])  # TF: max(min(x, 1), 2)


def test_select_with_a_vector_condition_picks_rows() -> None:
    cond = np.array([True, False])
    x, y = np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)
    np.testing.assert_array_equal(run_op("Select", cond, x, y), [[1, 1, 1], [0, 0, 0]])


# ---- reductions ------------------------------------------------------------------------------


def test_reductions_with_negative_repeated_and_empty_axes() -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(run_op("Sum", x, Const([-1, 2, 0])), x.sum(axis=(0, 2)))
    np.testing.assert_array_equal(run_op("Sum", x, Const([])), x)
    got = run_op("Max", x, Const(1), keep_dims=True)
    np.testing.assert_array_equal(got, x.max(axis=1, keepdims=True))


def test_integer_mean_truncates_and_does_not_wrap() -> None:
    i = np.array([[-3, -4], [5, 4]], np.int32)
    np.testing.assert_array_equal(run_op("Mean", i, Const([1])), [-3, 4])
    u = np.array([[250, 251, 253]], np.uint8)
    np.testing.assert_array_equal(run_op("Mean", u, Const([1])), [251])


def test_argmax_takes_the_first_of_ties_and_skips_nan() -> None:
    nan = np.nan
    x = np.array([[1, nan, 3, 3], [nan, nan, 2, 5], [4, 4, 1, nan], [nan] * 4], np.float32)
    got = run_op("ArgMax", x, Const(1), output_type=np.int32)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, [2, 3, 0, 0])  # what TF's CPU kernel returns
    np.testing.assert_array_equal(run_op("ArgMin", x, Const(-1)), [0, 2, 2, 0])


def test_argmax_rejects_other_output_types() -> None:
    with pytest.raises(UnsupportedError, match="output_type=int16.*int32 or int64"):
        run_op("ArgMax", np.zeros((2, 3), np.float32), Const(1), output_type=np.int16)


# ---- errors through the whole front end ------------------------------------------------------

GRAPH = """
node { name: "x" op: "Placeholder"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "shape" value { shape { dim { size: 2 } dim { size: 3 } } } } }
node { name: "axes" op: "Placeholder"
  attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "shape" value { shape { dim { size: 1 } } } } }
node { name: "total" op: "Sum" input: "x" input: "axes"
  attr { key: "T" value { type: DT_FLOAT } } attr { key: "Tidx" value { type: DT_INT32 } } }
"""


def test_fed_axes_fail_naming_node_and_input(tmp_path: Path) -> None:
    path = tmp_path / "g.pbtxt"
    path.write_text(GRAPH)
    with pytest.raises(
        AotcError, match=r"'total' \(Sum\).*axes input \(input 1\).*constant.*feed 'axes'"
    ):
        load_source(path)
