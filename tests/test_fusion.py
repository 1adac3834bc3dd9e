"""Fusion: HLO text in and out, differential tests against the evaluator, fused codegen."""

from __future__ import annotations

import numpy as np
import pytest
from c_harness import run_compiled
from codegen_testing import compile_entry, compile_hlo_report
from hlo_programs import DENSE_RELU, REDUCERS, SOFTMAX
from pass_testing import fused

from aotc.codegen import CompiledModel
from aotc.errors import HloError
from aotc.hlo import fusion_plan
from aotc.hlo.evaluate import evaluate
from aotc.hlo.fusion_plan import FusionPlan
from aotc.hlo.ir import FusionAttrs, FusionKind, Instruction, Module, Opcode
from aotc.hlo.testing import assert_hlo_equal
from aotc.hlo.text import parse_module, print_module
from aotc.hlo.verify import verify_module
from aotc.passes.fusion import Fusion
from aotc.passes.simplify import AlgebraicSimplifier
from aotc.report import CompileReport

RNG = np.random.default_rng(7)
REDUCE_SUM = (
    REDUCERS
    + """
ENTRY main {
  x = f32[1024] parameter(0)
  y = f32[1024] parameter(1)
  z = f32[1024] parameter(2)
  yz = f32[1024] multiply(y, z)
  s = f32[1024] add(x, yz)
  zero = f32[] constant(0)
  r = f32[] reduce(s, zero), dimensions={0}, to_apply=add
  ROOT t = (f32[]) tuple(r)
}"""
)


LAYER_NORM = (
    REDUCERS
    + """
ENTRY main {
  x = f32[16,64] parameter(0)
  gamma = f32[64] parameter(1)
  zero = f32[] constant(0)
  n = f32[] constant(64)
  sum = f32[16] reduce(x, zero), dimensions={1}, to_apply=add
  nb = f32[16] broadcast(n), dimensions={}
  mean = f32[16] divide(sum, nb)
  meanb = f32[16,64] broadcast(mean), dimensions={0}
  xc = f32[16,64] subtract(x, meanb)
  sq = f32[16,64] multiply(xc, xc)
  ss = f32[16] reduce(sq, zero), dimensions={1}, to_apply=add
  var = f32[16] divide(ss, nb)
  eps = f32[] constant(1e-5)
  epsb = f32[16] broadcast(eps), dimensions={}
  ve = f32[16] add(var, epsb)
  inv = f32[16] rsqrt(ve)
  invb = f32[16,64] broadcast(inv), dimensions={0}
  xn = f32[16,64] multiply(xc, invb)
  gb = f32[16,64] broadcast(gamma), dimensions={1}
  y = f32[16,64] multiply(xn, gb)
  ROOT t = (f32[16,64]) tuple(y)
}"""
)


ELEMENTWISE = """
ENTRY main {
  x = f32[64,128] parameter(0)
  y = f32[64,128] parameter(1)
  b = f32[128] parameter(2)
  bb = f32[64,128] broadcast(b), dimensions={1}
  a = f32[64,128] add(x, bb)
  m = f32[64,128] multiply(a, y)
  t = f32[64,128] tanh(m)
  ROOT r = (f32[64,128]) tuple(t)
}"""


def random_args(module: Module) -> list[np.ndarray]:
    return [
        RNG.standard_normal(p.array_shape.dims).astype(np.float32) for p in module.entry.parameters
    ]


def fusions(module: Module) -> list[str]:
    kinds = [
        i.attrs_as(FusionAttrs).kind for i in module.entry.instructions if i.opcode is Opcode.FUSION
    ]
    return [k.value for k in kinds]


@pytest.mark.parametrize("text", [REDUCE_SUM, SOFTMAX, LAYER_NORM, DENSE_RELU, ELEMENTWISE])
def test_fusion_preserves_values_and_round_trips(text: str) -> None:
    before = parse_module(text)
    after = fused(text)
    args = random_args(before)
    for want, got in zip(evaluate(before, args), evaluate(after, args), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert print_module(parse_module(print_module(after))) == print_module(after)


def test_reduce_sum_of_elementwise_is_one_input_fusion() -> None:
    assert_hlo_equal(
        fused(REDUCE_SUM),
        """...
        fused_input {
          param_0 = f32[1024] parameter(0)
          param_1 = f32[1024] parameter(1)
          param_2 = f32[1024] parameter(2)
          yz = f32[1024] multiply(param_0, param_1)
          s = f32[1024] add(param_2, yz)
          zero = f32[] constant(0)
          ROOT r = f32[] reduce(s, zero), dimensions={0}, to_apply=add
        }
        ENTRY main {
          x = f32[1024] parameter(0)
          y = f32[1024] parameter(1)
          z = f32[1024] parameter(2)
          fusion = f32[] fusion(y, z, x), kind=kInput, calls=fused_input
          ROOT t = (f32[]) tuple(fusion)
        }""",
    )


def test_softmax_is_one_row_fusion_computing_exp_once() -> None:
    module = fused(SOFTMAX)
    assert fusions(module) == ["kInput"]
    exps = [i for c in module.computations for i in c.instructions if i.opcode is Opcode.EXP]
    assert len(exps) == 1
    (fusion,) = [i for i in module.entry.instructions if i.opcode is Opcode.FUSION]
    plan = fusion.attrs_as(FusionAttrs).plan
    assert plan is not None and [m.opcode for m in plan.rows] == [Opcode.EXP]  # a row member
    assert [m.opcode for m in plan.cached] == [Opcode.REDUCE, Opcode.REDUCE]


def test_layer_norm_is_one_row_fusion() -> None:
    module = fused(LAYER_NORM)
    assert fusions(module) == ["kInput"]


def test_dot_bias_relu_is_an_output_fusion() -> None:
    assert_hlo_equal(
        fused(DENSE_RELU),
        """...
        fused_output {
          param_0 = f32[4,32] parameter(0)
          param_1 = f32[32,16] parameter(1)
          param_2 = f32[16] parameter(2)
          d = f32[4,16] dot(param_0, param_1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
          ...
          ROOT r = f32[4,16] maximum(a, zb)
        }
        ENTRY main {
          ...
          fusion = f32[4,16] fusion(x, w, b), kind=kOutput, calls=fused_output
          ROOT t = (f32[4,16]) tuple(fusion)
        }""",
    )


def test_expensive_producer_with_two_users_is_not_duplicated() -> None:
    module = parse_module("""
    ENTRY main {
      x = f32[32] parameter(0)
      e = f32[32] exponential(x)
      a = f32[32] add(e, x)
      m = f32[32] multiply(e, x)
      ROOT t = (f32[32], f32[32]) tuple(a, m)
    }""")
    assert not Fusion().run(module)  # nothing to fuse: e is needed by two kernels
    assert_hlo_equal(module, "... e = f32[32] exponential(x) ...")


def test_cheap_producer_is_duplicated() -> None:
    module = fused("""
    ENTRY main {
      x = f32[32] parameter(0)
      c = f32[] constant(2)
      cb = f32[32] broadcast(c), dimensions={}
      e = f32[32] exponential(x)
      a = f32[32] add(e, cb)
      l = f32[32] log(x)
      m = f32[32] multiply(l, cb)
      ROOT t = (f32[32], f32[32]) tuple(a, m)
    }""")
    assert fusions(module) == ["kLoop", "kLoop"]
    assert [i.opcode for i in module.entry.instructions].count(Opcode.BROADCAST) == 0


def test_expensive_producer_under_expanding_broadcast_stays_out() -> None:
    module = fused("""
    ENTRY main {
      x = f32[8] parameter(0)
      y = f32[8,100] parameter(1)
      e = f32[8] exponential(x)
      eb = f32[8,100] broadcast(e), dimensions={0}
      a = f32[8,100] add(eb, y)
      ROOT t = (f32[8,100]) tuple(a)
    }""")
    assert_hlo_equal(module, "... e = f32[8] exponential(x) ... fusion(e, y) ...")


# ---- fused codegen (compiled, run from C, compared with the evaluator) ------------------------


def run_fused(text: str) -> tuple[CompiledModel, CompileReport]:
    """Fuse, compile and run ``text``; check it against the evaluator; model and report."""
    module = fused(text)
    model, report = compile_hlo_report(print_module(module))
    args = random_args(module)
    want = evaluate(parse_module(text), args)
    got, again = run_compiled(model, args)
    for w, g, g2 in zip(want, got, again, strict=True):
        np.testing.assert_array_equal(g, g2)
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
    return model, report


def test_reduce_sum_example_compiles_to_one_kernel_without_temp() -> None:
    model, report = run_fused(REDUCE_SUM)
    assert len(report.kernels) == 1
    assert model.temp_bytes == 0


def test_softmax_compiles_to_one_kernel() -> None:
    assert len(run_fused(SOFTMAX)[1].kernels) == 1


def test_layer_norm_and_dense_relu_run_correctly() -> None:
    assert len(run_fused(LAYER_NORM)[1].kernels) == 1
    assert len(run_fused(DENSE_RELU)[1].kernels) == 1


def test_fused_elementwise_kernel_vectorizes() -> None:
    model, report = run_fused(ELEMENTWISE)
    assert len(report.kernels) == 1
    assert " x float>" in model.llvm_ir


# ---- the recorded plan -------------------------------------------------------------------------


def fusion_instructions(module: Module) -> list[Instruction]:
    return [i for i in module.entry.instructions if i.opcode is Opcode.FUSION]


def plan_of(fusion: Instruction) -> FusionPlan:
    plan = fusion.attrs_as(FusionAttrs).plan
    assert plan is not None, f"%{fusion.name} has no plan"
    return plan


def described(plan: FusionPlan) -> tuple[object, ...]:
    """The plan with instructions by name (names are unique module-wide)."""
    return plan.kind, plan.row_rank, [m.name for m in plan.named()], sorted(plan.in_place)


@pytest.mark.parametrize("text", [SOFTMAX, LAYER_NORM, DENSE_RELU, REDUCE_SUM, ELEMENTWISE])
def test_printed_fusions_parse_back_to_their_plans_and_compile_the_same(text: str) -> None:
    module = fused(text)
    again = parse_module(print_module(module))
    recorded = [described(plan_of(f)) for f in fusion_instructions(module)]
    assert recorded == [described(plan_of(f)) for f in fusion_instructions(again)]
    assert [k for k, *_ in recorded] == [
        f.attrs_as(FusionAttrs).kind for f in fusion_instructions(module)
    ]
    assert compile_entry(module).object_bytes == compile_entry(again).object_bytes


def test_codegen_reads_the_recorded_plan_and_never_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    modules = [fused(SOFTMAX), fused(LAYER_NORM), fused(DENSE_RELU)]
    kinds = {plan_of(f).kind for m in modules for f in fusion_instructions(m)}
    assert kinds == {FusionKind.INPUT, FusionKind.OUTPUT}
    assert any(plan_of(f).cached for f in fusion_instructions(modules[1]))  # a row group

    def no_planning(*args: object) -> None:
        raise AssertionError("codegen planned a fusion again")

    monkeypatch.setattr(fusion_plan, "plan_group", no_planning)
    for module in modules:
        compile_entry(module)


def test_a_plan_naming_a_replaced_instruction_fails_verification() -> None:
    module = fused(DENSE_RELU)
    (fusion,) = fusion_instructions(module)
    comp, dot = fusion.called[0], plan_of(fusion).dot
    assert dot is not None
    copy = Instruction("d.copy", dot.opcode, dot.shape, list(dot.operands), dot.attrs)
    for inst in comp.instructions:
        inst.operands = [copy if op is dot else op for op in inst.operands]
    comp.instructions = [copy if i is dot else i for i in comp.instructions]
    with pytest.raises(
        HloError, match=r"main/fusion: its fusion plan names %d, which fused_output"
    ):
        verify_module(module)


ADD_ZERO = """
  p = f32[8] parameter(0)
  z = f32[] constant(0)
  zb = f32[8] broadcast(z), dimensions={}
  a = f32[8] add(p, zb)
  ROOT e = f32[8] exponential(a)
"""
FUSED_ADD_ZERO = f"""
fused_loop {{{ADD_ZERO}}}

ENTRY main {{
  x = f32[8] parameter(0)
  f = f32[8] fusion(x), kind=kLoop, calls=fused_loop
  ROOT t = (f32[8]) tuple(f)
}}"""


def test_passes_leave_fused_computations_and_their_plans_alone() -> None:
    assert AlgebraicSimplifier().run(parse_module(f"ENTRY main {{{ADD_ZERO}}}"))  # x + 0 -> x
    module = parse_module(FUSED_ADD_ZERO)
    before = print_module(module)
    assert not AlgebraicSimplifier().run(module)
    assert print_module(module) == before
    verify_module(module)


def test_the_parser_records_the_kind_the_plan_gives() -> None:
    module = fused(REDUCE_SUM)
    printed = print_module(module).replace("kind=kInput", "kind=kLoop")  # as XLA's CPU backend
    (fusion,) = fusion_instructions(parse_module(printed))
    assert fusion.attrs_as(FusionAttrs).kind is FusionKind.INPUT is plan_of(fusion).kind


def test_an_unknown_fusion_kind_is_a_parse_error() -> None:
    text = FUSED_ADD_ZERO.replace("kind=kLoop", "kind=kScatter")
    with pytest.raises(HloError, match="kScatter"):
        parse_module(text)
