"""Loops, conditionals and dynamic slices compiled, linked into C, run and compared.

HLO text runs through both entry points against the reference evaluator (``run_and_compare``,
straight to codegen: each case exercises buffer assignment's carry and branch handling
itself); the JAX fixtures run through the CLI's pipeline against JAX's own results, in-process
and under sanitizers (``test_control_flow_fixtures`` runs them in C through both entry points).
The object holds one loop, whatever the trip count.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from c_harness import SANITIZE_CFLAGS, run_compiled
from codegen_testing import compile_entry, entry_signature, run_and_compare
from fixtures import assert_close, load_hlo_fixture

import aotc
from aotc.codegen.buffers import BufferKind, assign_buffers
from aotc.codegen.compile import compile_module_assigned
from aotc.codegen.program import CarryIn, CarryOut, Stage
from aotc.driver import compile_graph
from aotc.errors import CodegenError
from aotc.hlo.ir import Module
from aotc.hlo.text import parse_module
from aotc.hlo.verify import verify_module
from aotc.passes import default_pipeline
from aotc.report import CompileReport, build_report

F32 = np.float32

COUNT = """
HloModule count
cond {
  c = (s32[], f32[3,8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  n = s32[] constant(%d)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  b = (s32[], f32[3,8], f32[8]) parameter(0)
  bi = s32[] get-tuple-element(b), index=0
  one = s32[] constant(1)
  next = s32[] add(bi, one)
  h = f32[3,8] get-tuple-element(b), index=1
  bw = f32[8] get-tuple-element(b), index=2
  wb = f32[3,8] broadcast(bw), dimensions={1}
  f = f32[] convert(bi)
  fb = f32[3,8] broadcast(f), dimensions={}
  m = f32[3,8] multiply(h, wb)
  s = f32[3,8] add(m, fb)
  t = f32[3,8] tanh(s)
  ROOT out = (s32[], f32[3,8], f32[8]) tuple(next, t, bw)
}
ENTRY main {
  x = f32[3,8] parameter(0)
  w = f32[8] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[3,8], f32[8]) tuple(zero, x, w)
  loop = (s32[], f32[3,8], f32[8]) while(init), condition=cond, body=body
  r = f32[3,8] get-tuple-element(loop), index=1
  ri = s32[] get-tuple-element(loop), index=0
  e = f32[3,8] exponential(x)
  ROOT results = (f32[3,8], s32[], f32[3,8]) tuple(r, ri, e)
}
"""


def _module(text: str) -> Module:
    module = parse_module(text)
    verify_module(module)
    return module


def _args(*shapes: tuple[int, ...], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(F32) for s in shapes]


@pytest.mark.parametrize("trips", [0, 1, 5])
def test_counted_loop(trips: int) -> None:
    module = _module(COUNT % trips)
    run_and_compare(module, _args((3, 8), (8,)))


def test_carry_lives_in_the_result_buffer_and_is_updated_in_place() -> None:
    module = _module(COUNT % 5)
    assignment = assign_buffers(module.entry)
    loop = next(i for i in module.entry.instructions if i.name == "loop")
    assert assignment.element(loop, 1).kind is BufferKind.RESULT  # the fetched state
    body = loop.called[1]
    tanh = next(i for i in body.instructions if i.name == "t")
    assert assignment.buffer(tanh).same_bytes(assignment.element(loop, 1))  # no copy out
    copies = [s for s in assignment.program if isinstance(s, (CarryIn, CarryOut))]
    # in: the counter, the state (from an argument), the weights; out: only the counter,
    # whose old value the body still reads after computing the new one.
    assert [(type(s).__name__, s.element) for s in copies] == [
        ("CarryIn", 0), ("CarryIn", 1), ("CarryIn", 2), ("CarryOut", 0),
    ]  # fmt: skip


WHILE_SMALL = """
HloModule halve
max { ma = f32[] parameter(0)  mb = f32[] parameter(1)  ROOT mm = f32[] maximum(ma, mb) }
cond {
  c = (f32[16], s32[]) parameter(0)
  cx = f32[16] get-tuple-element(c), index=0
  ax = f32[16] abs(cx)
  low = f32[] constant(0)
  big = f32[] reduce(ax, low), dimensions={0}, to_apply=max
  eps = f32[] constant(0.01)
  ROOT go = pred[] compare(big, eps), direction=GT
}
body {
  b = (f32[16], s32[]) parameter(0)
  x = f32[16] get-tuple-element(b), index=0
  half = f32[] constant(0.5)
  hb = f32[16] broadcast(half), dimensions={}
  y = f32[16] multiply(x, hb)
  k = s32[] get-tuple-element(b), index=1
  one = s32[] constant(1)
  k1 = s32[] add(k, one)
  ROOT out = (f32[16], s32[]) tuple(y, k1)
}
ENTRY main {
  p = f32[16] parameter(0)
  zero = s32[] constant(0)
  e = f32[16] exponential(p)
  init = (f32[16], s32[]) tuple(e, zero)
  loop = (f32[16], s32[]) while(init), condition=cond, body=body
  r = f32[16] get-tuple-element(loop), index=0
  n = s32[] get-tuple-element(loop), index=1
  ROOT results = (f32[16], s32[]) tuple(r, n)
}
"""


def test_data_dependent_loop_and_an_initial_value_that_dies_there() -> None:
    module = _module(WHILE_SMALL)
    run_and_compare(module, _args((16,)))
    assignment = assign_buffers(module.entry)
    copies_in = [s.element for s in assignment.program if isinstance(s, CarryIn)]
    assert copies_in == [1]  # exp(p) is computed straight into the carry buffer


SWAP = """
HloModule swap
cond {
  c = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  b = (s32[], f32[4], f32[4]) parameter(0)
  bi = s32[] get-tuple-element(b), index=0
  one = s32[] constant(1)
  next = s32[] add(bi, one)
  x = f32[4] get-tuple-element(b), index=1
  y = f32[4] get-tuple-element(b), index=2
  two = f32[4] constant({2, 2, 2, 2})
  y2 = f32[4] multiply(y, two)
  ROOT out = (s32[], f32[4], f32[4]) tuple(next, y2, x)
}
ENTRY main {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[4], f32[4]) tuple(zero, p, q)
  loop = (s32[], f32[4], f32[4]) while(init), condition=cond, body=body
  ra = f32[4] get-tuple-element(loop), index=1
  rb = f32[4] get-tuple-element(loop), index=2
  ROOT results = (f32[4], f32[4], f32[4]) tuple(ra, rb, ra)
}
"""


def test_body_returning_elements_in_another_order_stages_them() -> None:
    module = _module(SWAP)
    run_and_compare(module, _args((4,), (4,)))
    stages = [s for s in assign_buffers(module.entry).program if isinstance(s, Stage)]
    assert [s.element for s in stages] == [2]


NESTED = """
HloModule nested
inner_cond {
  c = (s32[], f32[2,4]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
inner_body {
  b = (s32[], f32[2,4]) parameter(0)
  ib = s32[] get-tuple-element(b), index=0
  one = s32[] constant(1)
  i1 = s32[] add(ib, one)
  x = f32[2,4] get-tuple-element(b), index=1
  s = f32[2,4] sine(x)
  ROOT out = (s32[], f32[2,4]) tuple(i1, s)
}
outer_cond {
  c2 = (s32[], f32[2,4], f32[2,4]) parameter(0)
  jc = s32[] get-tuple-element(c2), index=0
  m = s32[] constant(4)
  ROOT lt2 = pred[] compare(jc, m), direction=LT
}
outer_body {
  b2 = (s32[], f32[2,4], f32[2,4]) parameter(0)
  j = s32[] get-tuple-element(b2), index=0
  one2 = s32[] constant(1)
  j1 = s32[] add(j, one2)
  x2 = f32[2,4] get-tuple-element(b2), index=1
  acc = f32[2,4] get-tuple-element(b2), index=2
  zero2 = s32[] constant(0)
  start = (s32[], f32[2,4]) tuple(zero2, x2)
  inner = (s32[], f32[2,4]) while(start), condition=inner_cond, body=inner_body
  y = f32[2,4] get-tuple-element(inner), index=1
  acc1 = f32[2,4] add(acc, y)
  ROOT out2 = (s32[], f32[2,4], f32[2,4]) tuple(j1, y, acc1)
}
ENTRY main {
  p = f32[2,4] parameter(0)
  z = f32[2,4] constant({ {0, 0, 0, 0}, {0, 0, 0, 0} })
  zero = s32[] constant(0)
  init = (s32[], f32[2,4], f32[2,4]) tuple(zero, p, z)
  loop = (s32[], f32[2,4], f32[2,4]) while(init), condition=outer_cond, body=outer_body
  r = f32[2,4] get-tuple-element(loop), index=2
  ROOT t = (f32[2,4]) tuple(r)
}
"""


def test_nested_loops() -> None:
    run_and_compare(_module(NESTED), _args((2, 4)))


SWITCH = """
HloModule switch
plus { a = f32[6] parameter(0)  k = f32[] constant(1)  one = f32[6] broadcast(k), dimensions={}
       ROOT p = f32[6] add(a, one) }
same { s = f32[6] parameter(0)  ROOT s2 = f32[6] copy(s) }
echo { e = f32[6] parameter(0)  ROOT ee = f32[6] negate(e) }
ENTRY main {
  i = s32[] parameter(0)
  x = f32[6] parameter(1)
  c = f32[6] conditional(i, x, x, x), branch_computations={plus, same, echo}
  ROOT t = (f32[6]) tuple(c)
}
"""


@pytest.mark.parametrize("index", [0, 1, 2, 3, -4, 1 << 30])
def test_switch_runs_the_selected_branch(index: int) -> None:
    run_and_compare(_module(SWITCH), [np.int32(index), *_args((6,))])


IF_ELSE = """
HloModule if_else
yes {
  a = (f32[2,3], f32[3]) parameter(0)
  a0 = f32[2,3] get-tuple-element(a), index=0
  a1 = f32[3] get-tuple-element(a), index=1
  ab = f32[2,3] broadcast(a1), dimensions={1}
  s = f32[2,3] add(a0, ab)
  ROOT r = (f32[2,3], f32[3]) tuple(s, a1)
}
no {
  n = (f32[2,3], f32[3]) parameter(0)
  n0 = f32[2,3] get-tuple-element(n), index=0
  z = f32[3] constant({7, 8, 9})
  ROOT r2 = (f32[2,3], f32[3]) tuple(n0, z)
}
ENTRY main {
  x = f32[2,3] parameter(0)
  v = f32[3] parameter(1)
  lim = f32[] parameter(2)
  zero = f32[] constant(0)
  p = pred[] compare(lim, zero), direction=GT
  arg = (f32[2,3], f32[3]) tuple(x, v)
  c = (f32[2,3], f32[3]) conditional(p, arg, arg), true_computation=yes, false_computation=no
  c0 = f32[2,3] get-tuple-element(c), index=0
  c1 = f32[3] get-tuple-element(c), index=1
  d = f32[2,3] multiply(c0, x)
  ROOT t = (f32[2,3], f32[3]) tuple(d, c1)
}
"""


@pytest.mark.parametrize("lim", [1.0, -1.0])
def test_if_else_with_tuple_results(lim: float) -> None:
    x, v = _args((2, 3), (3,))
    run_and_compare(_module(IF_ELSE), [x, v, F32(lim)])


SLICES = """
HloModule slices
ENTRY main {
  x = f32[6,40] parameter(0)
  i = s32[] parameter(1)
  j = s32[] parameter(2)
  u = f32[2,33] parameter(3)
  s = f32[3,33] dynamic-slice(x, i, j), dynamic_slice_sizes={3,33}
  e = f32[6,40] exponential(x)
  w = f32[6,40] dynamic-update-slice(e, u, j, i)
  nw = f32[6,40] negate(w)
  keep = f32[6,40] dynamic-update-slice(x, u, i, j)
  z = f32[6,40] add(keep, x)
  ROOT t = (f32[3,33], f32[6,40], f32[6,40]) tuple(s, nw, z)
}
"""


@pytest.mark.parametrize(("i", "j"), [(0, 0), (2, 5), (-3, 99), (5, -1), (1 << 31 - 1, 3)])
def test_dynamic_slices_clamp_and_update_in_place(i: int, j: int) -> None:
    module = _module(SLICES)
    x, u = _args((6, 40), (2, 33))
    run_and_compare(module, [x, np.int32(i), np.int32(j), u])
    assignment = assign_buffers(module.entry)
    in_place = {k.name for k in assignment.kernels if id(k) in assignment.in_place}
    assert "w" in in_place and "keep" not in in_place  # x is an argument; e dies at w


def test_unsigned_start_indices_clamp_to_the_end() -> None:
    text = SLICES.replace("s32[] parameter", "u32[] parameter")
    run_and_compare(
        _module(text),
        [*_args((6, 40))[:1], np.uint32(7), np.uint32(4_000_000_000), *_args((2, 33))],
    )


LOOP_IN_BRANCH = """
HloModule loop_in_branch
cond { cc = (s32[], f32[5]) parameter(0)  i = s32[] get-tuple-element(cc), index=0
       n = s32[] constant(4)  ROOT lt = pred[] compare(i, n), direction=LT }
body { b = (s32[], f32[5]) parameter(0)  bi = s32[] get-tuple-element(b), index=0
       one = s32[] constant(1)  next = s32[] add(bi, one)
       bx = f32[5] get-tuple-element(b), index=1  y = f32[5] cosine(bx)
       ROOT out = (s32[], f32[5]) tuple(next, y) }
looping { a = f32[5] parameter(0)  zero = s32[] constant(0)
          init = (s32[], f32[5]) tuple(zero, a)
          w = (s32[], f32[5]) while(init), condition=cond, body=body
          ROOT r = f32[5] get-tuple-element(w), index=1 }
plain { q = f32[5] parameter(0)  ROOT nq = f32[5] negate(q) }
ENTRY main {
  p = pred[] parameter(0)
  x = f32[5] parameter(1)
  c = f32[5] conditional(p, x, x), true_computation=looping, false_computation=plain
  ROOT t = (f32[5]) tuple(c)
}
"""


@pytest.mark.parametrize("p", [True, False])
def test_loop_inside_a_branch(p: bool) -> None:
    run_and_compare(_module(LOOP_IN_BRANCH), [np.bool_(p), *_args((5,))])


ARRAY_CARRY = """
HloModule array_carry
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = f32[] add(a, b) }
cond { c = f32[8] parameter(0)  z = f32[] constant(0)
       s = f32[] reduce(c, z), dimensions={0}, to_apply=add
       lim = f32[] constant(100)  ROOT lt = pred[] compare(s, lim), direction=LT }
body { x = f32[8] parameter(0)  ax = f32[8] abs(x)  k = f32[] constant(1)
       one = f32[8] broadcast(k), dimensions={}  ROOT y = f32[8] add(ax, one) }
ENTRY main { p = f32[8] parameter(0)  w = f32[8] while(p), condition=cond, body=body
             ROOT t = (f32[8]) tuple(w) }
"""


def test_loop_with_an_array_carry() -> None:
    run_and_compare(_module(ARRAY_CARRY), _args((8,)))


def test_a_call_left_for_codegen_is_an_error() -> None:
    text = """
    f { a = f32[2] parameter(0)  ROOT n = f32[2] negate(a) }
    ENTRY main { x = f32[2] parameter(0)  c = f32[2] call(x), to_apply=f
                 ROOT t = (f32[2]) tuple(c) }"""
    with pytest.raises(CodegenError, match=r"call %c reached codegen; calls are inlined"):
        compile_entry(_module(text))


def test_a_body_shared_by_two_loops_is_an_error() -> None:
    text = COUNT % 3
    text = text.replace(
        "  e = f32[3,8] exponential(x)",
        "  again = (s32[], f32[3,8], f32[8]) while(init), condition=cond, body=body\n"
        "  e = f32[3,8] get-tuple-element(again), index=1",
    )
    with pytest.raises(CodegenError, match=r"computation cond is run by two instructions"):
        compile_entry(_module(text))


# ---- the object has one loop -------------------------------------------------------------------


def test_object_size_does_not_depend_on_the_trip_count() -> None:
    sizes = {n: len(compile_entry(_module(COUNT % n)).object_bytes) for n in (2, 2000)}
    assert sizes[2] == sizes[2000]


# ---- JAX fixtures: under sanitizers, and in-process (test_control_flow_fixtures runs them in C)

JAX_FIXTURES = [
    "jax_fori_loop",
    "jax_while_loop",
    "jax_scan_rnn",
    "jax_cond",
    "jax_switch",
    "jax_nested_jit",
    "jax_dynamic_slice",
]


@pytest.mark.parametrize("name", ["jax_scan_rnn", "jax_cond"])
def test_jax_fixture_under_sanitizers(name: str) -> None:
    path, args, expected = load_hlo_fixture(name)
    typed, _ = run_compiled(compile_graph(path).model, args, SANITIZE_CFLAGS)
    for k, want in enumerate(expected):
        assert_close(typed[k], want, rtol=1e-5, what=f"{name} result {k}")


@pytest.mark.parametrize("name", JAX_FIXTURES)
def test_jax_fixture_runs_in_process(name: str) -> None:
    path, args, expected = load_hlo_fixture(name)
    out = aotc.compile(path)(*args)
    outs = out if isinstance(out, list) else [out]
    for k, want in enumerate(expected):
        assert_close(outs[k], want, rtol=1e-5, what=f"{name} result {k}")


def test_scan_state_and_outputs_are_written_in_place() -> None:
    """The RNN's state and its stacked outputs live in the result buffers; each step writes
    one row of the outputs (no copy of the whole array per step). The new state is the output
    of the GEMM that reads the old one (the input projection is hoisted out of the loop), so
    it is copied into place: one row of the batch per sequence, not the outputs."""
    from aotc.frontend.hlo_input import load_hlo

    module = load_hlo(load_hlo_fixture("jax_scan_rnn")[0]).module
    default_pipeline().run(module)
    assignment = assign_buffers(module.entry)
    loop = next(i for i in module.entry.instructions if i.opcode.value == "while")
    update = next(
        i for i in loop.called[1].instructions if i.opcode.value == "dynamic-update-slice"
    )
    assert id(update) in assignment.in_place
    outs = [s for s in assignment.program if isinstance(s, CarryOut)]
    assert [s.element for s in outs] == [0, 1]  # the step counter and the state


# ---- loop bodies are optimized like the entry, and reported --------------------------------------


def _optimized(text: str) -> Module:
    module = _module(text)
    default_pipeline().run(module)
    return module


def test_loop_body_kernels_are_fused_and_vectorized() -> None:
    wide = (COUNT % 7).replace("f32[3,8]", "f32[4,64]").replace("f32[8]", "f32[64]")
    module = _optimized(wide)
    args = _args((4, 64), (64,))
    ir_text = run_and_compare(module, args)
    report = _report(module)
    (loop,) = report.loops
    assert loop.trip_count == 7 and loop.computation == "main"
    body = [k for k in report.kernels if k.name in loop.body_kernels]
    (state,) = [k for k in body if "tanh" in k.fused_ops]  # and one for the counter
    assert {"multiply", "add", "tanh"} <= set(state.fused_ops) and state.in_place
    found = re.search(rf'define [^\n]*@"?kernel\.{re.escape(state.name)}"?\(', ir_text)
    assert found is not None
    body_kernel = ir_text[found.start() : ir_text.index("\n}\n", found.start())]
    assert " x float>" in body_kernel  # vectorized, as kernels of the entry are


def test_report_summary_shows_loops() -> None:
    report = _report(_optimized(WHILE_SMALL))
    (loop,) = report.loops
    assert loop.trip_count is None and loop.body_kernels and loop.condition_kernels
    assert f"loop {loop.name} in main: trip count unknown" in report.summary()


def _report(module: Module) -> CompileReport:
    _, assignment = compile_module_assigned(module, "model", *entry_signature(module))
    return build_report(assignment)
