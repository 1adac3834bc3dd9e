"""DCE: unused instructions and computations go; parameters and the root stay."""

from __future__ import annotations

from pass_testing import assert_same_results, run_pass

from aotc.hlo.testing import assert_hlo_equal
from aotc.passes import DCE

DEAD = """
HloModule m

add_f32 {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT s = f32[] add(lhs, rhs)
}

ENTRY main {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  dead = f32[4] multiply(p, q)
  zero = f32[] constant(0)
  unused_sum = f32[] reduce(dead, zero), dimensions={0}, to_apply=add_f32
  ROOT r = (f32[4]) tuple(p)
}
"""


def test_dce_removes_unused_instructions_and_computations() -> None:
    module, changed = run_pass(DCE(), DEAD)
    assert changed
    assert_hlo_equal(
        module,
        """
        ENTRY main {
          p = f32[4] parameter(0)
          q = f32[4] parameter(1)
          ROOT r = (f32[4]) tuple(p)
        }""",
    )
    assert [c.name for c in module.computations] == ["main"]


def test_dce_keeps_live_code_and_reports_no_change() -> None:
    _, changed = run_pass(
        DCE(),
        DEAD.replace("tuple(p)", "tuple(unused_sum)").replace("(f32[4]) tuple", "(f32[]) tuple"),
    )
    assert not changed


def test_dce_differential() -> None:
    assert_same_results(DCE(), DEAD)
