"""sort, topk and scatter (issue 13): the evaluator against numpy, and the compiled kernels,
linked into C, against the evaluator (bit for bit: these ops only move and fold values)."""

from __future__ import annotations

from pathlib import Path
from string import Template

import numpy as np
import pytest
from c_harness import run_compiled
from codegen_testing import compile_entry
from fixtures import assert_close, load_hlo_fixture

import aotc
from aotc.codegen.buffers import assign_buffers
from aotc.driver import compile_graph
from aotc.errors import AotcError, CodegenError, HloError
from aotc.frontend.sources import load_source
from aotc.hlo.evaluate import evaluate, stable_sort_order, total_order_keys
from aotc.hlo.ir import Module
from aotc.hlo.text import parse_module, print_module
from aotc.hlo.verify import verify_module

rng = np.random.default_rng(13)

_LESS = """less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
}"""

SORT = (
    _LESS
    + """
ENTRY main {
  x = f32[$R,$N] parameter(0)
  i = s32[$R,$N] iota(), iota_dimension=$D
  s = (f32[$R,$N], s32[$R,$N]) sort(x, i), dimensions={$D}, is_stable=true, to_apply=less
  v = f32[$R,$N] get-tuple-element(s), index=0
  w = s32[$R,$N] get-tuple-element(s), index=1
  ROOT r = (f32[$R,$N], s32[$R,$N]) tuple(v, w)
}"""
)

TOPK = """ENTRY main {
  x = $T[3,$N] parameter(0)
  t = ($T[3,$K], s32[3,$K]) topk(x), k=$K, largest=$L
  v = $T[3,$K] get-tuple-element(t), index=0
  w = s32[3,$K] get-tuple-element(t), index=1
  ROOT r = ($T[3,$K], s32[3,$K]) tuple(v, w)
}"""


def _module(text: str, **names: object) -> Module:
    module = parse_module(Template(text).substitute(names) if names else text)
    verify_module(module)
    assert print_module(parse_module(print_module(module))) == print_module(module)
    return module


def _compiled_equals_evaluator(module: Module, args: list[np.ndarray]) -> list[np.ndarray]:
    result = evaluate(module, args)
    expected = result if isinstance(result, list) else [result]
    typed, buffers = run_compiled(compile_entry(module, "m"), args)
    for j, (want, got, again) in enumerate(zip(expected, typed, buffers, strict=True)):
        np.testing.assert_array_equal(got, again, err_msg=f"result {j}: the two calls differ")
        np.testing.assert_array_equal(got, want, err_msg=f"result {j}")
    return expected


def _rows_with_ties(rows: int, n: int) -> np.ndarray:
    """Few distinct values (ties), NaNs of both signs, both zeros, infinities."""
    x = rng.integers(-3, 4, (rows, n)).astype(np.float32)
    specials = np.array([np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf], np.float32)
    picks = rng.random((rows, n)) < 0.2
    x[picks] = rng.choice(specials, picks.sum())
    return x


def _numpy_order(x: np.ndarray, axis: int, descending: bool = False) -> np.ndarray:
    keys = total_order_keys(x)
    return np.argsort(~keys if descending else keys, axis=axis, kind="stable")


# ---- sort ------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 7, 16, 17, 40, 300])
@pytest.mark.parametrize("dim", [0, 1])
def test_sort_is_a_stable_total_order_sort(n: int, dim: int) -> None:
    rows = 3
    dims = (n, rows) if dim == 0 else (rows, n)
    module = _module(SORT, R=dims[0], N=dims[1], D=dim)
    x = _rows_with_ties(*dims)
    values, order = _compiled_equals_evaluator(module, [x])
    want = _numpy_order(x, dim)
    np.testing.assert_array_equal(order, want)
    np.testing.assert_array_equal(
        values.view(np.int32), np.take_along_axis(x, want, dim).view(np.int32)
    )


def test_sort_of_one_operand_with_a_comparator_on_integers() -> None:
    text = """greater {
      a = s32[] parameter(0)
      b = s32[] parameter(1)
      ROOT gt = pred[] compare(a, b), direction=GT
    }
    ENTRY main {
      x = s32[4,50] parameter(0)
      s = s32[4,50] sort(x), dimensions={1}, to_apply=greater
      ROOT r = (s32[4,50]) tuple(s)
    }"""
    module = _module(text)
    x = rng.integers(-1000, 1000, (4, 50)).astype(np.int32)
    (got,) = _compiled_equals_evaluator(module, [x])
    np.testing.assert_array_equal(got, -np.sort(-x, axis=1))


def test_a_comparator_that_is_no_order_is_an_evaluator_error() -> None:
    def no_order(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (a * 3 + b) % 2 == 0  # of the positions: neither transitive nor asymmetric

    with pytest.raises(HloError, match="comparator is not a strict weak order"):
        stable_sort_order(no_order, 1, 4)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "ROOT s = f32[5] sort(x), dimensions={1}, to_apply=less1",
            "sort dimension 1 out of range",
        ),
        ("ROOT s = f32[5] sort(x), dimensions={0}, to_apply=less", "comparator less takes"),
    ],
)
def test_sort_verifier_errors(text: str, problem: str) -> None:
    less1 = "less1 {\n p = f32[] parameter(0)\n q = f32[] parameter(1)\n"
    less1 += " ROOT lt1 = pred[] compare(p, q), direction=LT\n}\n"
    module = parse_module(f"{_LESS}\n{less1}ENTRY main {{\n x = f32[5] parameter(0)\n {text}\n}}")
    with pytest.raises(HloError, match=problem):
        verify_module(module)


# ---- topk ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "k"), [(1, 1), (9, 1), (9, 3), (40, 32), (40, 33), (200, 200)])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_floats_in_total_order_ties_by_index(n: int, k: int, largest: bool) -> None:
    module = _module(TOPK, T="f32", N=n, K=k, L=str(largest).lower())
    x = _rows_with_ties(3, n)
    values, indices = _compiled_equals_evaluator(module, [x])
    want = _numpy_order(x, 1, descending=largest)[:, :k]
    np.testing.assert_array_equal(indices, want)
    np.testing.assert_array_equal(
        values.view(np.int32), np.take_along_axis(x, want, 1).view(np.int32)
    )


@pytest.mark.parametrize("dtype", ["s32", "u8", "s64"])
def test_topk_integers(dtype: str) -> None:
    module = _module(TOPK, T=dtype, N=30, K=4, L="true")
    numpy_type = {"s32": np.int32, "u8": np.uint8, "s64": np.int64}[dtype]
    x = rng.integers(0, 250, (3, 30)).astype(numpy_type)
    values, indices = _compiled_equals_evaluator(module, [x])
    want = np.argsort(-x.astype(np.int64), axis=1, kind="stable")[:, :4]
    np.testing.assert_array_equal(indices, want)


def test_a_row_too_long_for_i32_positions_is_a_codegen_error() -> None:
    text = f"""{_LESS}
    ENTRY main {{
      x = f32[{2**31}] parameter(0)
      i = s32[{2**31}] parameter(1)
      s = (f32[{2**31}], s32[{2**31}]) sort(x, i), dimensions={{0}}, to_apply=less
      v = f32[{2**31}] get-tuple-element(s), index=0
      ROOT r = (f32[{2**31}]) tuple(v)
    }}"""
    with pytest.raises(CodegenError, match="sorting rows of 2147483648 elements"):
        compile_entry(_module(text), "m")


def test_topk_of_a_small_k_selects_without_sorting() -> None:
    """Below SELECT_MAX the kernel is one pass over the row: no merge pass is emitted."""
    small = compile_entry(_module(TOPK, T="f32", N=500, K=5, L="true"), "m").llvm_ir
    large = compile_entry(_module(TOPK, T="f32", N=500, K=100, L="true"), "m").llvm_ir
    assert "merge.k" not in small and "merge.k" in large


# ---- scatter ---------------------------------------------------------------------------------

_ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}"""
_ASSIGN = """assign {
  old = f32[] parameter(0)
  ROOT new = f32[] parameter(1)
}"""


def _scatter_module(dims: str, shapes: tuple[str, str, str], to_apply: str) -> str:
    operand, indices, updates = shapes
    return f"""{_ADD}
{_ASSIGN}
ENTRY main {{
  x = f32[{operand}] parameter(0)
  i = s32[{indices}] parameter(1)
  u = f32[{updates}] parameter(2)
  sc = f32[{operand}] scatter(x, i, u), {dims}, to_apply={to_apply}
  ROOT r = (f32[{operand}]) tuple(sc)
}}"""


ROWS = (
    "update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
    "index_vector_dim=1"
)


def test_scatter_add_folds_repeated_indices_and_drops_out_of_bounds_rows() -> None:
    module = _module(_scatter_module(ROWS, ("5,3", "6,1", "6,3"), "add"))
    x = rng.standard_normal((5, 3)).astype(np.float32)
    i = np.array([[1], [4], [1], [-1], [5], [1]], np.int32)
    u = rng.standard_normal((6, 3)).astype(np.float32)
    (got,) = _compiled_equals_evaluator(module, [x, i, u])
    want = x.copy()
    for k in (0, 2, 5):
        want[1] += u[k]
    want[4] += u[1]
    np.testing.assert_array_equal(got, want)


def test_scatter_assign_takes_the_last_repeated_update() -> None:
    module = _module(_scatter_module(ROWS, ("5,3", "4,1", "4,3"), "assign"))
    x, u = np.zeros((5, 3), np.float32), np.arange(12, dtype=np.float32).reshape(4, 3)
    (got,) = _compiled_equals_evaluator(module, [x, np.array([[2], [0], [2], [9]], np.int32), u])
    np.testing.assert_array_equal(got[2], u[2])
    np.testing.assert_array_equal(got[0], u[1])


def test_scatter_skips_a_window_that_does_not_fit() -> None:
    """XLA's rule, which JAX shows: a window partly outside the operand is dropped whole."""
    dims = (
        "update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, "
        "index_vector_dim=1"
    )
    module = _module(_scatter_module(dims, ("5,4", "3,2", "3,2,3"), "add"))
    x = np.zeros((5, 4), np.float32)
    i = np.array([[4, 0], [1, 1], [0, 2]], np.int32)  # rows 4..5 do not fit; cols 2..4 neither
    (got,) = _compiled_equals_evaluator(module, [x, i, np.ones((3, 2, 3), np.float32)])
    want = np.zeros((5, 4), np.float32)
    want[1:3, 1:4] = 1
    np.testing.assert_array_equal(got, want)


def test_scatter_with_batching_dims_and_implicit_index_vector() -> None:
    # operand [B=2, 6]; per batch b, 3 indices into dim 1: x[b, i[b, j]] += u[b, j].
    dims = (
        "update_window_dims={}, inserted_window_dims={1}, input_batching_dims={0}, "
        "scatter_indices_batching_dims={0}, scatter_dims_to_operand_dims={1}, index_vector_dim=2"
    )
    module = _module(_scatter_module(dims, ("2,6", "2,3", "2,3"), "add"))
    x, u = np.zeros((2, 6), np.float32), np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    i = np.array([[0, 5, 0], [3, 3, 7]], np.int32)
    (got,) = _compiled_equals_evaluator(module, [x, i, u])
    want = np.zeros((2, 6), np.float32)
    want[0, 0], want[0, 5], want[1, 3] = 1 + 3, 2, 4 + 5
    np.testing.assert_array_equal(got, want)


def test_variadic_scatter_updates_two_operands_together() -> None:
    text = """both {
      a = f32[] parameter(0)
      b = s32[] parameter(1)
      c = f32[] parameter(2)
      d = s32[] parameter(3)
      s = f32[] add(a, c)
      m = s32[] maximum(b, d)
      ROOT t = (f32[], s32[]) tuple(s, m)
    }
    ENTRY main {
      x = f32[4] parameter(0)
      y = s32[4] parameter(1)
      i = s32[3] parameter(2)
      u = f32[3] parameter(3)
      v = s32[3] parameter(4)
      sc = (f32[4], s32[4]) scatter(x, y, i, u, v), update_window_dims={},
        inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1,
        indices_are_sorted=true, to_apply=both
      f = f32[4] get-tuple-element(sc), index=0
      g = s32[4] get-tuple-element(sc), index=1
      ROOT r = (f32[4], s32[4]) tuple(f, g)
    }"""
    module = _module(text)
    args = [
        np.zeros(4, np.float32),
        np.zeros(4, np.int32),
        np.array([3, 3, 0], np.int32),
        np.array([1, 2, 4], np.float32),
        np.array([7, -2, 5], np.int32),
    ]
    f, s = _compiled_equals_evaluator(module, args)
    np.testing.assert_array_equal(f, [4, 0, 0, 3])
    np.testing.assert_array_equal(s, [5, 0, 0, 7])
    assert "indices_are_sorted=true" in print_module(module)


def test_scatter_verifier_errors() -> None:
    text = _scatter_module(ROWS.replace("{1}", "{0}", 1), ("5,3", "6,1", "6,3"), "add")
    with pytest.raises(HloError, match="scatter"):
        verify_module(parse_module(text))


def test_scatter_runs_in_place_when_its_operand_dies_there() -> None:
    """The operand's buffer is the output's: only the update rows are written, no copy."""
    text = (
        _scatter_module(ROWS, ("5,3", "2,1", "2,3"), "add")
        .replace(
            "sc = f32[5,3] scatter(x, i, u)",
            "e = f32[5,3] negate(x)\n  sc = f32[5,3] scatter(e, i, u)",
        )
        .replace(
            "ROOT r = (f32[5,3]) tuple(sc)",
            "n = f32[5,3] negate(sc)\n  ROOT r = (f32[5,3]) tuple(n)",
        )
    )
    module = _module(text)
    assignment = assign_buffers(module.entry)
    scatter = next(i for i in module.entry.instructions if i.name == "sc")
    assert id(scatter) in assignment.in_place
    x = rng.standard_normal((5, 3)).astype(np.float32)
    u = rng.standard_normal((2, 3)).astype(np.float32)
    (got,) = _compiled_equals_evaluator(module, [x, np.array([[3], [3]], np.int32), u])
    want = -x
    want[3] += u[0] + u[1]
    np.testing.assert_allclose(got, -want, rtol=1e-6)


# ---- JAX fixtures (tests/data/make_jax_sort_scatter_fixtures.py) -----------------------------

JAX = ["jax_sort", "jax_top_k", "jax_scatter", "jax_scatter_batched"]


def _matches(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Sorted and selected values are exact (and hold infinities); scatter sums are close."""
    if np.all(np.isfinite(want)):
        assert_close(got, want, what=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("name", JAX)
def test_jax_fixture_evaluates_compiles_and_runs_like_jax(name: str) -> None:
    path, args, expected = load_hlo_fixture(name)
    module = load_source(path).module
    for k, (got, want) in enumerate(zip(evaluate(module, args), expected, strict=True)):
        _matches(got, want, f"{name} evaluated result {k}")
    typed, buffers = run_compiled(compile_graph(path).model, args)
    for k, (got, again, want) in enumerate(zip(typed, buffers, expected, strict=True)):
        np.testing.assert_array_equal(got, again, err_msg=f"{name} result {k}: calls differ")
        _matches(got, want, f"{name} compiled result {k}")


def test_scatter_prints_its_batching_dims_where_xla_does() -> None:
    path, _, _ = load_hlo_fixture("jax_scatter_batched")
    printed = print_module(parse_module(path.read_text()))
    assert (
        "scatter_dims_to_operand_dims={1}, input_batching_dims={0}, "
        "scatter_indices_batching_dims={0}, index_vector_dim=2"
    ) in printed


def test_jax_fixture_runs_in_process() -> None:
    path, args, expected = load_hlo_fixture("jax_scatter")
    for k, (got, want) in enumerate(zip(aotc.compile(path)(*args), expected, strict=True)):
        assert_close(got, want, what=f"jax_scatter in-process result {k}")


# ---- TF ops (their fixtures are tests/data/tf/sort_topk and scatter) --------------------------

_TOPK_V1 = """
node { name: "x" op: "Placeholder"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "shape" value { shape { dim { size: 2 } dim { size: 6 } } } } }
node { name: "top" op: "TopK" input: "x"
  attr { key: "k" value { i: 2 } }
  attr { key: "T" value { type: DT_FLOAT } } }
"""


def test_tf_top_k_v1_takes_k_from_its_attribute(tmp_path: Path) -> None:
    """TopK (v1) was removed from GraphDef version 7, so TF cannot make a fixture any more."""
    graph, config = tmp_path / "topk.pbtxt", tmp_path / "topk.yaml"
    graph.write_text(_TOPK_V1)
    config.write_text("feeds: [{name: x}]\nfetches: ['top:0', 'top:1']\n")
    x = np.array([[1, 5, 5, 2, -1, 0], [3, 3, 3, 3, 9, 3]], np.float32)
    (values, indices), _ = run_compiled(compile_graph(graph, config).model, [x])
    np.testing.assert_array_equal(indices, [[1, 2], [4, 0]])
    np.testing.assert_array_equal(values, [[5, 5], [9, 3]])


def test_tf_scatter_with_a_bad_update_shape_names_the_node(tmp_path: Path) -> None:
    graph, config = tmp_path / "s.pbtxt", tmp_path / "s.yaml"
    graph.write_text(
        _placeholder("i", "DT_INT32", [2, 1])
        + _placeholder("u", "DT_FLOAT", [3, 4])
        + 'node { name: "shape" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }\n'
        '  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } }\n'
        "  int_val: 5 int_val: 4 } } } }\n"
        'node { name: "nd" op: "ScatterNd" input: "i" input: "u" input: "shape"\n'
        '  attr { key: "T" value { type: DT_FLOAT } }\n'
        '  attr { key: "Tindices" value { type: DT_INT32 } } }\n'
    )
    config.write_text("feeds: [{name: i}, {name: u}]\nfetches: [nd]\n")
    with pytest.raises(AotcError, match=r"nd.*ScatterNd.*updates f32\[3,4\] must have the shape"):
        compile_graph(graph, config)


def _placeholder(name: str, dtype: str, dims: list[int]) -> str:
    shape = " ".join(f"dim {{ size: {d} }}" for d in dims)
    return (
        f'node {{ name: "{name}" op: "Placeholder"\n'
        f'  attr {{ key: "dtype" value {{ type: {dtype} }} }}\n'
        f'  attr {{ key: "shape" value {{ shape {{ {shape} }} }} }} }}\n'
    )
