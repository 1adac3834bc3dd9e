"""Control flow in the HLO: while, conditional, call, dynamic-slice, dynamic-update-slice.

Text in XLA's syntax (as JAX prints it) round trips; the verifier checks the called
computations' signatures; the evaluator follows XLA's semantics (clamped start indices, an
out-of-range branch index runs the last branch) and runs loops and nesting of any depth
without recursion.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fixtures import assert_close

from aotc.errors import HloError, ShapeError
from aotc.frontend.hlo_input import load_hlo
from aotc.hlo.builder import ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import ComparisonDirection, Computation, Module, Opcode
from aotc.hlo.shape import PrimitiveType, Shape, TupleShape
from aotc.hlo.text import parse_module, print_module
from aotc.hlo.verify import verify_module

F32, S32, PRED = PrimitiveType.F32, PrimitiveType.S32, PrimitiveType.PRED
HLO = Path(__file__).parent / "data" / "hlo"
JAX_FIXTURES = [
    "jax_fori_loop",
    "jax_while_loop",
    "jax_scan_rnn",
    "jax_cond",
    "jax_switch",
    "jax_nested_jit",
    "jax_dynamic_slice",
]

COUNT_TO_N = """
HloModule count
cond {
  c = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  n = s32[] constant(%d)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  b = (s32[], f32[3]) parameter(0)
  bi = s32[] get-tuple-element(b), index=0
  one = s32[] constant(1)
  next = s32[] add(bi, one)
  bx = f32[3] get-tuple-element(b), index=1
  half = f32[3] constant({0.5, 0.5, 0.5})
  scaled = f32[3] multiply(bx, half)
  f = f32[] convert(bi)
  fb = f32[3] broadcast(f), dimensions={}
  y = f32[3] add(scaled, fb)
  ROOT out = (s32[], f32[3]) tuple(next, y)
}
ENTRY main {
  x = f32[3] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[3]) tuple(zero, x)
  w = (s32[], f32[3]) while(init), condition=cond, body=body
  ROOT r = f32[3] get-tuple-element(w), index=1
}
"""

SWITCH = """
HloModule switch
plus { a = f32[2] parameter(0)  one = f32[2] constant({1, 1})  ROOT p = f32[2] add(a, one) }
square { s = f32[2] parameter(0)  ROOT q = f32[2] multiply(s, s) }
minus { m = f32[2] parameter(0)  ROOT n = f32[2] negate(m) }
ENTRY main {
  i = s32[] parameter(0)
  x = f32[2] parameter(1)
  ROOT r = f32[2] conditional(i, x, x, x), branch_computations={plus, square, minus}
}
"""

IF_ELSE = """
HloModule if_else
yes { a = f32[2] parameter(0)  ROOT e = f32[2] exponential(a) }
no { b = s32[] parameter(0)  c = f32[] convert(b)  ROOT d = f32[2] broadcast(c), dimensions={} }
ENTRY main {
  p = pred[] parameter(0)
  x = f32[2] parameter(1)
  k = s32[] parameter(2)
  ROOT r = f32[2] conditional(p, x, k), true_computation=yes, false_computation=no
}
"""

SLICES = """
HloModule slices
ENTRY main {
  x = f32[5,4] parameter(0)
  i = s32[] parameter(1)
  j = s32[] parameter(2)
  s = f32[3,2] dynamic-slice(x, i, j), dynamic_slice_sizes={3,2}
  u = f32[5,4] dynamic-update-slice(x, s, j, i)
  ROOT t = (f32[3,2], f32[5,4]) tuple(s, u)
}
"""


def _module(text: str) -> Module:
    module = parse_module(text)
    verify_module(module)
    return module


def _module_of(entry: Computation) -> Module:
    """A verified module of ``entry`` and every computation it reaches."""
    module = Module("m", entry)
    for comp in module.called_computations():
        module.add_computation(comp)
    verify_module(module)
    return module


# ---- text ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [COUNT_TO_N % 4, SWITCH, IF_ELSE, SLICES])
def test_text_round_trips(text: str) -> None:
    printed = print_module(_module(text))
    assert print_module(parse_module(printed)) == printed


def test_conditional_prints_as_xla_does() -> None:
    switch = print_module(_module(SWITCH))
    assert "conditional(i, x, x, x), branch_computations={plus, square, minus}" in switch
    if_else = print_module(_module(IF_ELSE))
    assert "conditional(p, x, k), true_computation=yes, false_computation=no" in if_else
    loop = print_module(_module(COUNT_TO_N % 4))
    assert "while(init), condition=cond, body=body" in loop
    assert "dynamic_slice_sizes={3,2}" in print_module(_module(SLICES))


@pytest.mark.parametrize("name", JAX_FIXTURES)
def test_jax_text_round_trips(name: str) -> None:
    module = load_hlo(HLO / f"{name}.hlo").module
    printed = print_module(module)
    again = parse_module(printed)
    verify_module(again)
    assert print_module(again) == printed


def test_branch_list_must_be_braced() -> None:
    bad = r"<hlo>:9:64: bad 'branch_computations' value: expected \{name, ...\}"
    with pytest.raises(HloError, match=bad):
        parse_module(SWITCH.replace("{plus, square, minus}", "plus"))


# ---- verifier ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "old", "new", "problem"),
    [
        (COUNT_TO_N % 4, "ROOT lt = pred[] compare", "ROOT lt = pred[] compare", None),
        (
            COUNT_TO_N % 4,
            "ROOT out = (s32[], f32[3]) tuple(next, y)",
            "ROOT out = (s32[], f32[3], s32[]) tuple(next, y, bi)",
            r"main/w: while body body returns \(s32\[\], f32\[3\], s32\[\]\), "
            r"must return \(s32\[\], f32\[3\]\)",
        ),
        (
            COUNT_TO_N % 4,
            "ROOT lt = pred[] compare(i, n), direction=LT",
            "ROOT lt = s32[] add(i, n)",
            r"main/w: while condition cond returns s32\[\], must return pred\[\]",
        ),
        (
            SWITCH,
            "square { s = f32[2] parameter(0)  ROOT q = f32[2] multiply(s, s) }",
            "square { s = f32[3] parameter(0)  ROOT q = f32[2] slice(s), slice={[0:2]} }",
            r"main/r: branch 1 square takes \(f32\[3\]\), must take \(f32\[2\]\)",
        ),
        (
            SWITCH,
            "conditional(i, x, x, x)",
            "conditional(i, x, x)",
            r"main/r: a conditional of 3 branches takes 3 branch operands, got 2",
        ),
        (
            IF_ELSE,
            "true_computation=yes, false_computation=no",
            "branch_computations={yes, no, yes}",
            r"main/r: a conditional on a pred has two branches",
        ),
        (
            IF_ELSE,
            "ROOT d = f32[2] broadcast(c), dimensions={}",
            "ROOT d = f32[] add(c, c)",
            r"main/r: branch 1 no returns f32\[\], must return f32\[2\]",
        ),
        (
            SLICES,
            "dynamic-slice(x, i, j)",
            "dynamic-slice(x, i)",
            r"main/s: dynamic-slice of f32\[5,4\] needs 2 start indices, got 1",
        ),
        (
            SLICES,
            "dynamic_slice_sizes={3,2}",
            "dynamic_slice_sizes={3,5}",
            r"main/s: dynamic-slice sizes \[3, 5\] exceed f32\[5,4\]",
        ),
        (
            SLICES,
            "dynamic-update-slice(x, s, j, i)",
            "dynamic-update-slice(x, s, j, x)",
            r"main/u: dynamic-update-slice start index 1 must be an integer scalar",
        ),
    ],
)
def test_verifier_checks_signatures(text: str, old: str, new: str, problem: str | None) -> None:
    assert old in text
    module = parse_module(text.replace(old, new))
    if problem is None:
        verify_module(module)
        return
    with pytest.raises(HloError, match=problem):
        verify_module(module)


def test_call_operands_must_match_the_parameters() -> None:
    mb = ModuleBuilder("m")
    f = mb.computation("f")
    f_comp = f.build(f.unary(Opcode.NEGATE, f.parameter(0, Shape(F32, (2,)))))
    b = mb.computation("main")
    x = b.parameter(0, Shape(F32, (3,)))
    with pytest.raises(ShapeError, match=r"called computation f takes \(f32\[2\]\)"):
        b.call([x], f_comp)


# ---- evaluator -----------------------------------------------------------------------------


def test_while_runs_the_body_until_the_condition_fails() -> None:
    x = np.array([1, -2, 4], np.float32)
    want = x.copy()
    for i in range(5):
        want = want * np.float32(0.5) + np.float32(i)
    np.testing.assert_array_equal(evaluate(_module(COUNT_TO_N % 5), [x]), want)
    np.testing.assert_array_equal(evaluate(_module(COUNT_TO_N % 0), [x]), x)


def test_many_iterations_do_not_recurse() -> None:
    got = evaluate(_module(COUNT_TO_N % 3000), [np.zeros(3, np.float32)])
    assert np.isfinite(got).all() and got[0] > 2000


@pytest.mark.parametrize(("index", "branch"), [(0, 0), (1, 1), (2, 2), (3, 2), (-1, 2), (99, 2)])
def test_switch_runs_the_selected_branch_out_of_range_the_last(index: int, branch: int) -> None:
    x = np.array([3, -2], np.float32)
    want = [x + 1, x * x, -x][branch]
    np.testing.assert_array_equal(evaluate(_module(SWITCH), [np.int32(index), x]), want)


@pytest.mark.parametrize("pred", [True, False])
def test_if_else_passes_each_branch_its_own_operand(pred: bool) -> None:
    x = np.array([0, 1], np.float32)
    got = evaluate(_module(IF_ELSE), [np.bool_(pred), x, np.int32(7)])
    np.testing.assert_allclose(got, np.exp(x) if pred else [7, 7], rtol=1e-6)


@pytest.mark.parametrize(("i", "j"), [(0, 0), (1, 2), (4, 3), (-5, 1), (2, 99)])
def test_dynamic_slices_clamp_their_start_indices(i: int, j: int) -> None:
    x = np.arange(20, dtype=np.float32).reshape(5, 4)
    before = x.copy()
    window, updated = evaluate(_module(SLICES), [x, np.int32(i), np.int32(j)])
    r, c = min(max(i, 0), 5 - 3), min(max(j, 0), 4 - 2)
    np.testing.assert_array_equal(window, x[r : r + 3, c : c + 2])
    r2, c2 = min(max(j, 0), 5 - 3), min(max(i, 0), 4 - 2)
    want = x.copy()
    want[r2 : r2 + 3, c2 : c2 + 2] = window
    np.testing.assert_array_equal(updated, want)
    np.testing.assert_array_equal(x, before)  # the operand is not written


def _nested_calls(depth: int) -> Module:
    """``depth`` computations, each calling the next and adding one: x + depth."""
    mb = ModuleBuilder("nested")
    shape = Shape(F32, (2,))
    inner = None
    for level in range(depth):
        b = mb.computation(f"level{level}")
        x = b.parameter(0, shape, "x")
        y = b.call([x], inner) if inner is not None else x
        one = b.broadcast(b.constant(np.float32(1)), (2,), ())
        inner = b.build(b.binary(Opcode.ADD, y, one))
    assert inner is not None
    return _module_of(inner)


def test_nesting_depth_does_not_recurse() -> None:
    module = _nested_calls(1500)  # deeper than Python's recursion limit
    printed = print_module(module)
    again = parse_module(printed)
    verify_module(again)
    got = evaluate(again, [np.zeros(2, np.float32)])
    np.testing.assert_array_equal(got, [1500, 1500])


def test_nested_loops_evaluate() -> None:
    """A while whose body runs a while: 4 outer steps of 3 inner increments."""
    mb = ModuleBuilder("loops")
    carry = TupleShape((Shape(S32), Shape(S32)))

    def below(name: str, n: int) -> Computation:
        b = mb.computation(name)
        c = b.parameter(0, carry)
        bound = b.constant(np.int32(n))
        return b.build(b.compare(b.get_tuple_element(c, 0), bound, ComparisonDirection.LT))

    inner_body = mb.computation("inner_body")
    c = inner_body.parameter(0, carry)
    one = inner_body.constant(np.int32(1))
    i, total = (inner_body.get_tuple_element(c, k) for k in (0, 1))
    step = [inner_body.binary(Opcode.ADD, v, one) for v in (i, total)]
    inner = inner_body.build(inner_body.tuple(step))
    outer_body = mb.computation("outer_body")
    c = outer_body.parameter(0, carry)
    zero = outer_body.constant(np.int32(0))
    i, total = (outer_body.get_tuple_element(c, k) for k in (0, 1))
    ran = outer_body.while_loop(outer_body.tuple([zero, total]), below("inner_cond", 3), inner)
    one = outer_body.constant(np.int32(1))
    next_i = outer_body.binary(Opcode.ADD, i, one)
    outer = outer_body.build(outer_body.tuple([next_i, outer_body.get_tuple_element(ran, 1)]))
    main = mb.computation("main")
    start = main.parameter(0, Shape(S32))
    zero = main.constant(np.int32(0))
    loop = main.while_loop(main.tuple([zero, start]), below("outer_cond", 4), outer)
    module = _module_of(main.build(main.get_tuple_element(loop, 1)))
    assert int(evaluate(module, [np.int32(5)])) == 5 + 4 * 3


@pytest.mark.parametrize("name", JAX_FIXTURES)
def test_jax_fixtures_evaluate_to_jax_results(name: str) -> None:
    module = load_hlo(HLO / f"{name}.hlo").module
    data = np.load(HLO / f"{name}.npz")
    args = [data[f"arg{i}"] for i in range(len(module.entry.parameters))]
    results = evaluate(module, args)
    assert len(results) == sum(1 for k in data.files if k.startswith("result"))
    for i, got in enumerate(results):
        assert_close(got, data[f"result{i}"], rtol=1e-5, what=f"{name} result {i}")
