"""Constant folding: constant subgraphs become constants, within the size caps."""

from __future__ import annotations

from pass_testing import assert_same_results, run_pass

from aotc.hlo.testing import assert_hlo_equal
from aotc.passes import ConstantFolding


def test_folds_arithmetic_on_constants() -> None:
    module, changed = run_pass(
        ConstantFolding(),
        """
        HloModule m
        ENTRY main {
          p = f32[3] parameter(0)
          a = f32[3] constant({1, 2, 3})
          b = f32[3] constant({10, 20, 30})
          s = f32[3] add(a, b)
          n = f32[3] negate(s)
          ROOT r = f32[3] multiply(p, n)
        }""",
    )
    assert changed
    assert_hlo_equal(
        module,
        """
        ENTRY main {
          p = f32[3] parameter(0)
          constant.1 = f32[3] constant({-11, -22, -33})
          ROOT r = f32[3] multiply(p, constant.1)
        }""",
    )


def test_splat_results_become_scalar_broadcasts() -> None:
    module, _ = run_pass(
        ConstantFolding(),
        """
        HloModule m
        ENTRY main {
          p = f32[100] parameter(0)
          a = f32[] constant(2)
          b = f32[100] broadcast(a), dimensions={}
          c = f32[100] multiply(b, b)
          ROOT r = f32[100] add(p, c)
        }""",
    )
    assert_hlo_equal(
        module,
        """...
          constant = f32[] constant(4)
          broadcast = f32[100] broadcast(constant), dimensions={}
          ROOT r = f32[100] add(p, broadcast)
        }""",
    )


def test_does_not_materialise_big_broadcasts_or_fold_parameters() -> None:
    _, changed = run_pass(
        ConstantFolding(),
        """
        HloModule m
        ENTRY main {
          p = f32[1000] parameter(0)
          a = f32[10] constant({0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
          b = f32[100,10] broadcast(a), dimensions={1}
          i = s32[1000] iota(), iota_dimension=0
          n = f32[1000] negate(p)
          ROOT r = (f32[100,10], s32[1000], f32[1000]) tuple(b, i, n)
        }""",
    )
    assert not changed


def test_folds_small_broadcasts_and_iota_operands() -> None:
    module, _ = run_pass(
        ConstantFolding(),
        """
        HloModule m
        ENTRY main {
          a = f32[2] constant({1, 2})
          b = f32[2,2] broadcast(a), dimensions={1}
          i = s32[4] iota(), iota_dimension=0
          j = s32[4] multiply(i, i)
          ROOT r = (f32[2,2], s32[4]) tuple(b, j)
        }""",
    )
    assert_hlo_equal(module, "... { { 1, 2 }, { 1, 2 } } ... s32[4] constant({0, 1, 4, 9}) ...")


def test_max_elements_cap() -> None:
    _, changed = run_pass(
        ConstantFolding(max_elements=2),
        """
        HloModule m
        ENTRY main {
          a = f32[3] constant({1, 2, 3})
          ROOT n = f32[3] negate(a)
        }""",
    )
    assert not changed


def test_constant_folding_differential() -> None:
    assert_same_results(
        ConstantFolding(),
        """
        HloModule m
        add_f32 {
          lhs = f32[] parameter(0)
          rhs = f32[] parameter(1)
          ROOT sum = f32[] add(lhs, rhs)
        }
        ENTRY main {
          p = f32[3] parameter(0)
          a = f32[2,3] constant({ { 1, 2, 3 }, { 4, 5, 6 } })
          zero = f32[] constant(0)
          s = f32[3] reduce(a, zero), dimensions={0}, to_apply=add_f32
          t = f32[3,2] transpose(a), dimensions={1,0}
          e = f32[3,2] exponential(t)
          f = f32[6] reshape(e)
          k = f32[3] slice(f), slice={[0:6:2]}
          m = f32[3] multiply(p, s)
          ROOT r = f32[3] add(m, k)
        }""",
    )
