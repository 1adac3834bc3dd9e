"""Passes over control flow: call inlining, call-graph flattening, while-loop and conditional
simplification, and the other passes inside loop bodies and branches.

Each pass gets HLO text in and the expected form out, plus the differential check against the
reference evaluator (``pass_testing.assert_same_results``).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from pass_testing import assert_same_results, random_args, run_pass

from aotc.frontend.hlo_input import load_hlo
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import ComparisonDirection, Module, Opcode, WhileAttrs
from aotc.hlo.loop_analysis import InductionVariable, count_trips, trip_count
from aotc.hlo.text import parse_module, print_module
from aotc.passes import (
    AlgebraicSimplifier,
    CallInliner,
    ConditionalSimplifier,
    FlattenCallGraph,
    Fusion,
    Schedule,
    WhileLoopSimplifier,
    default_pipeline,
)
from aotc.passes.dump import render

HLO = Path(__file__).parent / "data" / "hlo"


def _opcodes(module: Module) -> list[str]:
    return [i.opcode.value for c in module.computations for i in c.instructions]


def _loops(module: Module) -> list[str]:
    return [i.name for c in module.computations for i in c.instructions if i.opcode is Opcode.WHILE]


# ---- call inlining -----------------------------------------------------------------------------

NESTED_CALLS = """
HloModule calls
relu {
  x = f32[4] parameter(0)
  zero = f32[] constant(0)
  zb = f32[4] broadcast(zero), dimensions={}
  ROOT m = f32[4] maximum(x, zb)
}
layer {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  s = f32[4] add(a, b)
  ROOT r = f32[4] call(s), to_apply=relu
}
identity { i = f32[4] parameter(0)  ROOT j = (f32[4]) tuple(i) }
ENTRY main {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  h = f32[4] call(p, q), to_apply=layer
  g = f32[4] call(h, p), to_apply=layer
  t = (f32[4]) call(g), to_apply=identity
  e = f32[4] get-tuple-element(t), index=0
  ROOT out = (f32[4]) tuple(e)
}
"""


def test_call_inliner_flattens_nested_calls() -> None:
    after = assert_same_results(CallInliner(), NESTED_CALLS)
    assert "call" not in _opcodes(after)
    assert [c.name for c in after.computations] == ["main"]
    names = [i.name for i in after.entry.instructions]
    assert len(names) == len(set(names))
    assert _opcodes(after).count("maximum") == 2  # one copy of relu per call of layer


def test_call_inliner_leaves_a_module_without_calls_alone() -> None:
    module, changed = run_pass(CallInliner(), _count(4))
    assert not changed


def test_jax_nested_jit_inlines_to_one_computation_of_code() -> None:
    module = load_hlo(HLO / "jax_nested_jit.hlo").module
    assert "call" in _opcodes(module)
    text = print_module(module)
    after = assert_same_results(CallInliner(), text)
    assert "call" not in _opcodes(after)


# ---- while loops: trip counts ------------------------------------------------------------------

COUNT = """
HloModule count
cond {
  c = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  n = s32[] constant(%(n)d)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  b = (s32[], f32[3], f32[3]) parameter(0)
  bi = s32[] get-tuple-element(b), index=0
  one = s32[] constant(1)
  next = s32[] add(bi, one)
  bx = f32[3] get-tuple-element(b), index=1
  bw = f32[3] get-tuple-element(b), index=2
  f = f32[] convert(bi)
  fb = f32[3] broadcast(f), dimensions={}
  y = f32[3] add(bx, fb)
  z = f32[3] multiply(y, bw)
  ROOT out = (s32[], f32[3], f32[3]) tuple(next, z, bw)
}
ENTRY main {
  x = f32[3] parameter(0)
  w = f32[3] parameter(1)
  start = s32[] constant(%(start)d)
  init = (s32[], f32[3], f32[3]) tuple(start, x, w)
  loop = (s32[], f32[3], f32[3]) while(init), condition=cond, body=body
  r = f32[3] get-tuple-element(loop), index=1
  ROOT t = (f32[3]) tuple(r)
}
"""


def _count(n: int, start: int = 0) -> str:
    return COUNT % {"n": n, "start": start}


@pytest.mark.parametrize(("n", "start"), [(0, 0), (-3, 5)])
def test_loop_of_no_trips_leaves_its_initial_carry(n: int, start: int) -> None:
    after = assert_same_results(WhileLoopSimplifier(), _count(n, start))
    assert _loops(after) == [] and [c.name for c in after.computations] == ["main"]
    read = after.entry.root.operands[0]  # element 1 of the initial carry
    assert read.opcode is Opcode.GET_TUPLE_ELEMENT and read.operands[0].name == "init"


def test_loop_of_one_trip_is_its_body_inlined() -> None:
    after = assert_same_results(WhileLoopSimplifier(), _count(3, 2))
    assert _loops(after) == [] and "multiply" in _opcodes(after)


def test_constant_trip_count_is_recorded() -> None:
    after = assert_same_results(WhileLoopSimplifier(), _count(7))
    loop = next(i for i in after.entry.instructions if i.opcode is Opcode.WHILE)
    assert loop.attrs == WhileAttrs(7)
    assert 'backend_config={"known_trip_count":{"n":"7"}}' in print_module(after)
    assert parse_module(print_module(after)).entry.root is not None  # and it parses back


@pytest.mark.parametrize("name", ["jax_fori_loop", "jax_scan_rnn"])
def test_jax_loops_have_known_trip_counts(name: str) -> None:
    module = load_hlo(HLO / f"{name}.hlo").module
    CallInliner().run(module)
    loop = next(i for i in module.entry.instructions if i.opcode is Opcode.WHILE)
    assert trip_count(loop) == {"jax_fori_loop": 7, "jax_scan_rnn": 6}[name]


# tf.range's loop: the limit and the step are carried through the body unchanged
CARRIED_LIMIT = """
HloModule carried_limit
cond {
  c = (s32[], s32[], s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  n = s32[] get-tuple-element(c), index=1
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  b = (s32[], s32[], s32[], f32[3]) parameter(0)
  bi = s32[] get-tuple-element(b), index=0
  bn = s32[] get-tuple-element(b), index=1
  bd = s32[] get-tuple-element(b), index=2
  next = s32[] add(bd, bi)
  bx = f32[3] get-tuple-element(b), index=3
  y = f32[3] add(bx, bx)
  ROOT out = (s32[], s32[], s32[], f32[3]) tuple(next, bn, bd, y)
}
ENTRY main {
  x = f32[3] parameter(0)
  start = s32[] constant(1)
  limit = s32[] constant(%(limit)s)
  delta = s32[] constant(2)
  init = (s32[], s32[], s32[], f32[3]) tuple(start, limit, delta, x)
  loop = (s32[], s32[], s32[], f32[3]) while(init), condition=cond, body=body
  r = f32[3] get-tuple-element(loop), index=3
  ROOT t = (f32[3]) tuple(r)
}
"""


def test_a_limit_and_step_carried_unchanged_give_the_trip_count() -> None:
    module = parse_module(CARRIED_LIMIT % {"limit": 8})
    loop = next(i for i in module.entry.instructions if i.opcode is Opcode.WHILE)
    assert trip_count(loop) == 4  # i = 1, 3, 5, 7
    after = assert_same_results(WhileLoopSimplifier(), CARRIED_LIMIT % {"limit": 8})
    assert any(i.attrs == WhileAttrs(4) for i in after.entry.instructions)


def test_a_carried_limit_the_body_changes_gives_no_trip_count() -> None:
    text = (CARRIED_LIMIT % {"limit": 8}).replace(
        "tuple(next, bn, bd, y)", "tuple(next, bd, bd, y)"
    )
    loop = next(i for i in parse_module(text).entry.instructions if i.opcode is Opcode.WHILE)
    assert trip_count(loop) is None


def test_data_dependent_loop_has_no_trip_count() -> None:
    module = load_hlo(HLO / "jax_while_loop.hlo").module
    loop = next(i for i in module.entry.instructions if i.opcode is Opcode.WHILE)
    assert trip_count(loop) is None


_DIRECTIONS = list(ComparisonDirection)


@pytest.mark.parametrize("direction", _DIRECTIONS, ids=lambda d: d.value)
def test_trip_count_formula_matches_running_the_counter(direction: ComparisonDirection) -> None:
    compare = {
        ComparisonDirection.LT: lambda a, b: a < b,
        ComparisonDirection.LE: lambda a, b: a <= b,
        ComparisonDirection.GT: lambda a, b: a > b,
        ComparisonDirection.GE: lambda a, b: a >= b,
        ComparisonDirection.EQ: lambda a, b: a == b,
        ComparisonDirection.NE: lambda a, b: a != b,
    }[direction]
    low, high = -128, 127  # an s8 counter: overflow is near
    for init, step, bound in itertools.product(
        range(-128, 128, 9), (-7, -1, 0, 1, 3), (-100, 0, 5, 120)
    ):
        iv = InductionVariable(0, init, step, direction, bound, low, high)
        value, trips = init, 0
        while compare(value, bound) and trips < 300:
            value, trips = value + step, trips + 1
        fits = trips < 300 and low <= value <= high
        wrapped = any(not low <= init + k * step <= high for k in range(trips + 1))
        want = trips if fits and not wrapped else None
        assert count_trips(iv) == want, (init, step, bound)


# ---- while loops: carry rewrites -------------------------------------------------------------

WEIGHTS = """
HloModule weights
cond {
  c = (s32[], f32[2,3], f32[3,3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  n = s32[] get-tuple-element(c), index=0
  ten = s32[] constant(10)
  ROOT lt = pred[] compare(i, ten), direction=LT
}
body {
  b = (s32[], f32[2,3], f32[3,3], f32[3]) parameter(0)
  bi = s32[] get-tuple-element(b), index=0
  one = s32[] constant(1)
  next = s32[] add(bi, one)
  h = f32[2,3] get-tuple-element(b), index=1
  bu = f32[3,3] get-tuple-element(b), index=2
  bv = f32[3] get-tuple-element(b), index=3
  ev = f32[3] exponential(bv)
  sv = f32[3] sine(ev)
  sb = f32[2,3] broadcast(sv), dimensions={1}
  d = f32[2,3] dot(h, bu), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = f32[2,3] add(d, sb)
  th = f32[2,3] tanh(s)
  ROOT out = (s32[], f32[2,3], f32[3,3], f32[3]) tuple(next, th, bu, bv)
}
ENTRY main {
  x = f32[2,3] parameter(0)
  v = f32[3] parameter(1)
  u = f32[3,3] constant({ {0.5, -0.25, 0.125}, {0.25, 0.5, -0.5}, {-0.125, 0.25, 0.5} })
  zero = s32[] constant(0)
  init = (s32[], f32[2,3], f32[3,3], f32[3]) tuple(zero, x, u, v)
  loop = (s32[], f32[2,3], f32[3,3], f32[3]) while(init), condition=cond, body=body
  r = f32[2,3] get-tuple-element(loop), index=1
  ru = f32[3,3] get-tuple-element(loop), index=2
  ROOT t = (f32[2,3], f32[3,3]) tuple(r, ru)
}
"""


def test_constant_weights_sink_and_invariant_work_is_hoisted() -> None:
    after = assert_same_results(WhileLoopSimplifier(), WEIGHTS)
    loop = next(i for i in after.entry.instructions if i.opcode is Opcode.WHILE)
    body = loop.called[1]
    body_ops = [i.opcode for i in body.instructions]
    dot = next(i for i in body.instructions if i.opcode is Opcode.DOT)
    assert dot.operands[1].opcode is Opcode.CONSTANT  # the weights, sunk: GEMM-packable
    assert Opcode.EXP not in body_ops and Opcode.SINE not in body_ops
    assert "sine" in [i.opcode.value for i in after.entry.instructions]  # once, before
    # The carry: counter, state, and the hoisted sin(exp(v)); u and v are dead now.
    assert str(loop.shape) == "(s32[], f32[2,3], f32[3])"
    assert after.entry.root.operands[1].name == "u"  # the invariant result, forwarded


U = "{ {0.5, -0.25, 0.1, 0}, {0.2, 0.5, -0.5, 0.1}, {-0.1, 0.2, 0.5, 0.2}, {0, 0.1, 0.2, 1} }"


def _rnn(projection: str, start: int = 0, steps: int = 5, step: str = "add(bi, one)") -> str:
    """An RNN over x: f32[5,2,3] (steps, batch, features); ``projection`` computes ``p``, the
    step's input times weights, from ``xt`` (step ``bi`` of x, f32[2,3]) and ``w``."""
    return f"""
HloModule rnn
cond {{
  c = (s32[], f32[2,4], f32[5,2,3], f32[3,4]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  n = s32[] constant({steps})
  ROOT lt = pred[] compare(i, n), direction=LT
}}
body {{
  b = (s32[], f32[2,4], f32[5,2,3], f32[3,4]) parameter(0)
  bi = s32[] get-tuple-element(b), index=0
  one = s32[] constant(1)
  next = s32[] {step}
  h = f32[2,4] get-tuple-element(b), index=1
  x = f32[5,2,3] get-tuple-element(b), index=2
  w = f32[3,4] get-tuple-element(b), index=3
  zero = s32[] constant(0)
  row = f32[1,2,3] dynamic-slice(x, bi, zero, zero), dynamic_slice_sizes={{1,2,3}}
  xt = f32[2,3] reshape(row)
  {projection}
  u = f32[4,4] constant({U})
  hu = f32[2,4] dot(h, u), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  s = f32[2,4] add(p, hu)
  th = f32[2,4] tanh(s)
  ROOT out = (s32[], f32[2,4], f32[5,2,3], f32[3,4]) tuple(next, th, x, w)
}}
ENTRY main {{
  xs = f32[5,2,3] parameter(0)
  ws = f32[3,4] parameter(1)
  h0 = f32[2,4] parameter(2)
  first = s32[] constant({start})
  init = (s32[], f32[2,4], f32[5,2,3], f32[3,4]) tuple(first, h0, xs, ws)
  loop = (s32[], f32[2,4], f32[5,2,3], f32[3,4]) while(init), condition=cond, body=body
  ROOT r = f32[2,4] get-tuple-element(loop), index=1
}}
"""


X_TIMES_W = "p = f32[2,4] dot(xt, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}"
# the same product with the step on the right: (w^T x_t^T)^T
W_TIMES_X = (
    "pt = f32[4,2] dot(w, xt), lhs_contracting_dims={0}, rhs_contracting_dims={1}\n"
    "  p = f32[2,4] transpose(pt), dimensions={1,0}"
)


def _loop_dots(module: Module) -> tuple[list[str], list[str]]:
    """The shapes of the dots before the loop and in its body."""
    loop = next(i for i in module.entry.instructions if i.opcode is Opcode.WHILE)
    return [
        [str(i.shape) for i in c.instructions if i.opcode is Opcode.DOT]
        for c in (module.entry, loop.called[1])
    ]  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("projection", "product"), [(X_TIMES_W, "f32[5,2,4]"), (W_TIMES_X, "f32[4,5,2]")]
)
def test_the_input_projection_of_every_step_is_one_dot_before_the_loop(
    projection: str, product: str
) -> None:
    after = assert_same_results(WhileLoopSimplifier(), _rnn(projection))
    before_loop, in_loop = _loop_dots(after)
    assert before_loop == [product]  # x @ W for all steps: one GEMM
    assert in_loop == ["f32[2,4]"]  # only h @ U is left in the loop
    loop = next(i for i in after.entry.instructions if i.opcode is Opcode.WHILE)
    assert "f32[5,2,3]" not in str(loop.shape)  # x itself is no longer carried


def test_a_projected_step_out_of_range_is_clamped_as_before() -> None:
    # steps 3..7 of 5: the slices of x and of x @ W clamp to the last step alike
    assert_same_results(WhileLoopSimplifier(), _rnn(X_TIMES_W, start=3, steps=8))


def test_a_row_not_indexed_by_a_counter_stays_in_the_loop() -> None:
    module = parse_module(_rnn(X_TIMES_W, step="multiply(bi, bi)", steps=2))
    WhileLoopSimplifier().run(module)
    assert _loop_dots(module) == [[], ["f32[2,4]", "f32[2,4]"]]


DEAD = """
HloModule dead
maximum { ma = f32[] parameter(0)  mb = f32[] parameter(1)  ROOT mm = f32[] maximum(ma, mb) }
cond {
  c = (s32[], f32[4], f32[4]) parameter(0)
  unused = s32[] get-tuple-element(c), index=0
  cx = f32[4] get-tuple-element(c), index=1
  big = f32[] constant(100)
  low = f32[] constant(-inf)
  xs = f32[] reduce(cx, low), dimensions={0}, to_apply=maximum
  ROOT go = pred[] compare(xs, big), direction=LT
}
body {
  b = (s32[], f32[4], f32[4]) parameter(0)
  bi = s32[] get-tuple-element(b), index=0
  one = s32[] constant(1)
  next = s32[] add(bi, one)
  bx = f32[4] get-tuple-element(b), index=1
  two = f32[] constant(2)
  tb = f32[4] broadcast(two), dimensions={}
  y = f32[4] multiply(bx, tb)
  junk = f32[4] get-tuple-element(b), index=2
  j2 = f32[4] add(junk, y)
  ROOT out = (s32[], f32[4], f32[4]) tuple(next, y, j2)
}
ENTRY main {
  p0 = f32[4] parameter(0)
  p = f32[4] exponential(p0)
  zero = s32[] constant(0)
  init = (s32[], f32[4], f32[4]) tuple(zero, p, p)
  loop = (s32[], f32[4], f32[4]) while(init), condition=cond, body=body
  r = f32[4] get-tuple-element(loop), index=1
  ROOT t = (f32[4]) tuple(r)
}
"""


def test_dead_carry_elements_are_dropped() -> None:
    after = assert_same_results(WhileLoopSimplifier(), DEAD)
    loop = next(i for i in after.entry.instructions if i.opcode is Opcode.WHILE)
    assert str(loop.shape) == "(f32[4])"  # the counter and junk are not needed
    assert all(str(c.parameters[0].shape) == "(f32[4])" for c in loop.called)


def test_loops_sharing_a_body_get_their_own() -> None:
    text = _count(4).replace(
        "ROOT t = (f32[3]) tuple(r)",
        "again = (s32[], f32[3], f32[3]) while(init), condition=cond, body=body\n"
        "  r2 = f32[3] get-tuple-element(again), index=1\n"
        "  ROOT t = (f32[3], f32[3]) tuple(r, r2)",
    )
    after = assert_same_results(FlattenCallGraph(), text)
    bodies = [i.called[1] for i in after.entry.instructions if i.opcode is Opcode.WHILE]
    assert len(bodies) == 2 and bodies[0] is not bodies[1]
    assert bodies[1].name == "body.1"


# ---- conditionals ------------------------------------------------------------------------------

SWITCH = """
HloModule switch
plus { a = f32[2] parameter(0)  one = f32[2] constant({1, 1})  ROOT p = f32[2] add(a, one) }
square { s = f32[2] parameter(0)  ROOT q = f32[2] multiply(s, s) }
minus { m = f32[2] parameter(0)  ROOT n = f32[2] negate(m) }
ENTRY main {
  x = f32[2] parameter(0)
  i = s32[] constant(%s)
  c = f32[2] conditional(i, x, x, x), branch_computations={plus, square, minus}
  ROOT t = (f32[2]) tuple(c)
}
"""


@pytest.mark.parametrize(("index", "op"), [("1", "multiply"), ("7", "negate"), ("-1", "negate")])
def test_conditional_on_a_constant_index_is_its_branch(index: str, op: str) -> None:
    after = assert_same_results(ConditionalSimplifier(), SWITCH % index)
    assert "conditional" not in _opcodes(after) and op in _opcodes(after)
    assert [c.name for c in after.computations] == ["main"]


def test_conditional_on_a_constant_pred_and_with_one_branch() -> None:
    pred = SWITCH.replace("i = s32[] constant(%s)", "i = pred[] constant(false)").replace(
        "conditional(i, x, x, x), branch_computations={plus, square, minus}",
        "conditional(i, x, x), true_computation=plus, false_computation=square",
    )
    after = assert_same_results(ConditionalSimplifier(), pred)
    assert "multiply" in _opcodes(after) and "add" not in _opcodes(after)
    one = SWITCH.replace("i = s32[] constant(%s)", "i = s32[] parameter(1)").replace(
        "conditional(i, x, x, x), branch_computations={plus, square, minus}",
        "conditional(i, x), branch_computations={minus}",
    )
    assert "negate" in _opcodes(assert_same_results(ConditionalSimplifier(), one))


# ---- simplifier rules for tuples and dynamic slices ----------------------------------------------


def test_tuple_and_dynamic_slice_rules() -> None:
    text = """
    ENTRY main {
      x = f32[5,4] parameter(0)
      u = f32[5,4] parameter(1)
      i = s32[] constant(9)
      j = s32[] constant(-2)
      s = f32[3,2] dynamic-slice(x, i, j), dynamic_slice_sizes={3,2}
      w = f32[5,4] dynamic-update-slice(x, u, i, j)
      t = (f32[3,2], f32[5,4]) tuple(s, w)
      a = f32[3,2] get-tuple-element(t), index=0
      b = f32[5,4] get-tuple-element(t), index=1
      ROOT r = (f32[3,2], f32[5,4]) tuple(a, b)
    }"""
    after = assert_same_results(AlgebraicSimplifier(), text)
    root = after.entry.root
    assert root.opcode is Opcode.TUPLE  # a root tuple of its elements stays a tuple
    assert root.operands[0].opcode is Opcode.SLICE and "slice={[2:5], [0:2]}" in print_module(after)
    assert root.operands[1].name == "u"


# ---- the pipeline inside loop bodies and branches ------------------------------------------------


def test_simplification_cse_and_fusion_run_in_loop_bodies() -> None:
    text = _count(4).replace(
        "  z = f32[3] multiply(y, bw)",
        "  zero = f32[3] constant({0, 0, 0})\n  y0 = f32[3] add(y, zero)\n"
        "  e1 = f32[3] exponential(y0)\n  e2 = f32[3] exponential(y0)\n"
        "  e = f32[3] add(e1, e2)\n  z = f32[3] multiply(e, bw)",
    )
    module = parse_module(text)
    args = random_args(module)
    want = evaluate(module, args)
    default_pipeline().run(module)
    np.testing.assert_allclose(evaluate(module, args)[0], want[0], rtol=1e-6)
    loop = next(i for i in module.entry.instructions if i.opcode is Opcode.WHILE)
    body = loop.called[1]
    fused = [i for i in body.instructions if i.opcode is Opcode.FUSION]
    assert len(fused) >= 1  # the body's elementwise chain is one kernel
    inner = [i.opcode.value for f in fused for i in f.called[0].instructions]
    assert inner.count("exponential") == 1 and "add" in inner  # CSE'd, x + 0 gone


def test_schedule_orders_every_computation() -> None:
    module = parse_module(_count(4))
    Fusion().run(module)
    assert Schedule().run(module) in (True, False)
    for comp in module.sequential_computations():
        position = {id(i): n for n, i in enumerate(comp.instructions)}
        assert all(position[id(o)] < position[id(i)] for i in comp.instructions for o in i.operands)


@pytest.mark.parametrize("fmt", ["dot", "html"])
def test_graph_dumps_draw_loop_bodies(fmt: str) -> None:
    module = parse_module(_count(4))
    drawn = render(module, fmt)
    assert "loop: condition=cond" in drawn and "loop: body=body" in drawn
    assert "bw" in drawn  # a body instruction is drawn


@pytest.mark.parametrize(
    "name",
    ["jax_fori_loop", "jax_while_loop", "jax_scan_rnn", "jax_cond", "jax_switch",
     "jax_nested_jit", "jax_dynamic_slice"],
)  # fmt: skip
def test_default_pipeline_keeps_jax_results(name: str) -> None:
    module = load_hlo(HLO / f"{name}.hlo").module
    data = np.load(HLO / f"{name}.npz")
    args = [data[f"arg{i}"] for i in range(len(module.entry.parameters))]
    want = evaluate(module, args)
    default_pipeline().run(module)
    assert "call" not in _opcodes(module)
    for got, expected in zip(evaluate(module, args), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
