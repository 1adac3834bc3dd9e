"""CSE: structurally equal instructions merge; different ones do not."""

from __future__ import annotations

from pass_testing import assert_same_results, run_pass

from aotc.hlo.testing import assert_hlo_equal
from aotc.passes import CSE


def test_cse_merges_equal_adds() -> None:
    module, changed = run_pass(
        CSE(),
        """
        HloModule m
        ENTRY main {
          p = f32[4] parameter(0)
          a = f32[4] add(p, p)
          b = f32[4] add(p, p)
          ROOT r = f32[4] multiply(a, b)
        }""",
    )
    assert changed
    assert_hlo_equal(module, "... ROOT r = f32[4] multiply(a, a) ...")


def test_cse_merges_commutative_operands_but_not_subtract() -> None:
    module, _ = run_pass(
        CSE(),
        """
        HloModule m
        ENTRY main {
          p = f32[4] parameter(0)
          q = f32[4] parameter(1)
          a = f32[4] add(p, q)
          b = f32[4] add(q, p)
          c = f32[4] subtract(p, q)
          d = f32[4] subtract(q, p)
          ROOT r = (f32[4], f32[4], f32[4], f32[4]) tuple(a, b, c, d)
        }""",
    )
    assert_hlo_equal(module, "... ROOT r = (f32[4], f32[4], f32[4], f32[4]) tuple(a, a, c, d) ...")


def test_cse_merges_constants_by_bytes_and_shape() -> None:
    module, _ = run_pass(
        CSE(),
        """
        HloModule m
        ENTRY main {
          a = f32[3] constant({1, 2, 3})
          b = f32[3] constant({1, 2, 3})
          c = s32[3] constant({1, 2, 3})
          d = f32[3] constant({1, 2, 4})
          e = f32[] constant(-0)
          f = f32[] constant(0)
          ROOT r = (f32[3], f32[3], s32[3], f32[3], f32[], f32[]) tuple(a, b, c, d, e, f)
        }""",
    )
    assert_hlo_equal(module, "... tuple(a, a, c, d, e, f) ...")


def test_cse_respects_attributes_and_parameters() -> None:
    _, changed = run_pass(
        CSE(),
        """
        HloModule m
        ENTRY main {
          p = f32[2,3] parameter(0)
          q = f32[2,3] parameter(1)
          a = f32[3,2] transpose(p), dimensions={1,0}
          s1 = f32[1,3] slice(p), slice={[0:1], [0:3]}
          s2 = f32[1,3] slice(p), slice={[1:2], [0:3]}
          ROOT r = (f32[3,2], f32[1,3], f32[1,3], f32[2,3]) tuple(a, s1, s2, q)
        }""",
    )
    assert not changed


def test_cse_does_not_merge_across_computations() -> None:
    _, changed = run_pass(
        CSE(),
        """
        HloModule m
        add_f32 {
          lhs = f32[] parameter(0)
          rhs = f32[] parameter(1)
          ROOT s = f32[] add(lhs, rhs)
        }
        ENTRY main {
          p = f32[4] parameter(0)
          zero = f32[] constant(0)
          ROOT r = f32[] reduce(p, zero), dimensions={0}, to_apply=add_f32
        }""",
    )
    assert not changed


def test_cse_differential() -> None:
    assert_same_results(
        CSE(),
        """
        HloModule m
        ENTRY main {
          p = f32[4] parameter(0)
          c1 = f32[4] constant({1, 2, 3, 4})
          c2 = f32[4] constant({1, 2, 3, 4})
          a = f32[4] multiply(p, c1)
          b = f32[4] multiply(c2, p)
          e1 = f32[4] exponential(a)
          e2 = f32[4] exponential(b)
          ROOT r = f32[4] subtract(e1, e2)
        }""",
    )
