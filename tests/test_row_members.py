"""Row fusions whose expensive member several loops read (softmax's exp, kept in a stack row by
the first reduce loop), and short rows emitted in blocks: fused by the fusion pass, compiled,
run from C (single-threaded and on the thread pool) and compared with the evaluator, on edge
inputs (-inf, nan, masked rows) and shapes (row lengths off the vector width, row counts off
the block)."""

from __future__ import annotations

import numpy as np
import pytest
from c_harness import run_compiled
from codegen_testing import compile_entry
from hlo_programs import REDUCERS
from mt_harness import run_multicore
from pass_testing import fused

from aotc.codegen.kernels.fusion import ROW_BLOCK, SHORT_ROW
from aotc.hlo.evaluate import evaluate
from aotc.hlo.fusion_plan import MAX_ROW_ELEMENTS
from aotc.hlo.ir import FusionAttrs, Module, Opcode

RNG = np.random.default_rng(7)


def softmax(dims: tuple[int, ...], divide: bool = False) -> str:
    """Softmax over the last dimension, normalized by the sum's inverse (as the TF front end
    emits it) or by a division per element."""
    shape = ",".join(map(str, dims))
    rows = ",".join(map(str, dims[:-1]))
    kept = ",".join(map(str, range(len(dims) - 1)))
    last = len(dims) - 1
    normalized = (
        f"""sb = f32[{shape}] broadcast(s), dimensions={{{kept}}}
  y = f32[{shape}] divide(e, sb)"""
        if divide
        else f"""one = f32[] constant(1)
  ob = f32[{rows}] broadcast(one), dimensions={{}}
  inv = f32[{rows}] divide(ob, s)
  ib = f32[{shape}] broadcast(inv), dimensions={{{kept}}}
  y = f32[{shape}] multiply(e, ib)"""
    )
    return f"""HloModule softmax
{REDUCERS}
ENTRY main {{
  x = f32[{shape}] parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[{rows}] reduce(x, ninf), dimensions={{{last}}}, to_apply=max
  mbc = f32[{shape}] broadcast(m), dimensions={{{kept}}}
  d = f32[{shape}] subtract(x, mbc)
  e = f32[{shape}] exponential(d)
  zero = f32[] constant(0)
  s = f32[{rows}] reduce(e, zero), dimensions={{{last}}}, to_apply=add
  {normalized}
  ROOT t = (f32[{shape}]) tuple(y)
}}"""


def run_and_compare(module: Module, inputs: list[np.ndarray]) -> None:
    """Both entry points from C against the evaluator; nan where the evaluator has nan."""
    (want,) = evaluate(module, inputs)
    typed, buffers = run_compiled(compile_entry(module, "m"), inputs)
    np.testing.assert_array_equal(typed[0], buffers[0])
    np.testing.assert_allclose(typed[0], want, rtol=1e-5, atol=1e-7)


def row_fusions(module: Module) -> list[FusionAttrs]:
    return [i.attrs_as(FusionAttrs) for i in module.entry.instructions if i.opcode is Opcode.FUSION]


def logits(dims: tuple[int, ...]) -> np.ndarray:
    """Random logits with -inf (masked) entries, a fully masked row, a nan and a +inf."""
    x = (RNG.standard_normal(dims) * 4).astype(np.float32)
    flat = x.reshape(-1, dims[-1])
    flat[:, ::3] = -np.inf
    flat[0, :] = -np.inf  # a masked row: 0 / 0, nan as in TF
    if flat.shape[0] > 2 and flat.shape[1] > 2:
        flat[1, 1] = np.nan
        flat[2, 2] = np.inf
    return x


# rows: 4 x 64 (blocks of 4 short rows), 5 x 37 and 12 x 37 (a row count off the block; a row
# off the vector width), 3 x 4 x 1 (rows of one element), 8 x 1000 (long rows, no blocks)
SHAPES = [(4, 64), (5, 37), (12, 37), (3, 4, 1), (8, 1000), (2, 4, 64, 64)]


@pytest.mark.parametrize("dims", SHAPES)
@pytest.mark.parametrize("divide", [False, True])
def test_softmax_is_one_kernel_computing_exp_once(dims: tuple[int, ...], divide: bool) -> None:
    module = fused(softmax(dims, divide))
    (attrs,) = row_fusions(module)
    assert attrs.plan is not None and [m.opcode for m in attrs.plan.rows] == [Opcode.EXP]
    exps = [i for c in module.computations for i in c.instructions if i.opcode is Opcode.EXP]
    assert len(exps) == 1
    run_and_compare(module, [logits(dims)])


def test_softmax_matches_numpy_on_masked_and_special_rows() -> None:
    dims = (12, 37)
    x = logits(dims)
    module = fused(softmax(dims))
    (got,) = evaluate(module, [x])
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        want = e * (1 / e.sum(axis=-1, keepdims=True))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)
    assert np.isnan(got[0]).all() and np.isnan(got[1]).all()  # masked row, a nan in the row
    run_and_compare(module, [x])


def test_a_row_member_read_by_two_reduces_and_the_root() -> None:
    """The sums of e and of e * e both read the buffered row; the root reads it again."""
    text = f"""HloModule twice
{REDUCERS}
ENTRY main {{
  x = f32[16,50] parameter(0)
  e = f32[16,50] exponential(x)
  zero = f32[] constant(0)
  s = f32[16] reduce(e, zero), dimensions={{1}}, to_apply=add
  sb = f32[16,50] broadcast(s), dimensions={{0}}
  ee = f32[16,50] multiply(e, e)
  q = f32[16] reduce(ee, zero), dimensions={{1}}, to_apply=add
  qb = f32[16,50] broadcast(q), dimensions={{0}}
  n = f32[16,50] divide(e, sb)
  y = f32[16,50] add(n, qb)
  ROOT t = (f32[16,50]) tuple(y)
}}"""
    module = fused(text)
    (attrs,) = row_fusions(module)
    assert attrs.plan is not None and [m.name for m in attrs.plan.rows] == ["e"]
    run_and_compare(module, [RNG.standard_normal((16, 50)).astype(np.float32)])


def test_a_row_too_long_for_a_buffer_is_not_a_row_member() -> None:
    dims = (2, MAX_ROW_ELEMENTS + 16)
    module = fused(softmax(dims))
    assert all(not a.plan or not a.plan.rows for a in row_fusions(module))
    assert len(row_fusions(module)) == 2  # exp with the max, the sum with the normalization
    run_and_compare(module, [logits(dims)])


def test_blocked_rows_split_over_threads_match_one_thread() -> None:
    dims = (64, 4, 64)  # 64 KiB: the kernel is split over the pool
    assert dims[-1] <= SHORT_ROW and dims[-2] % ROW_BLOCK == 0
    module = fused(softmax(dims))
    x = logits(dims)
    reference, pooled = run_multicore(compile_entry(module, "m"), [x])
    (want,) = evaluate(module, [x])
    np.testing.assert_allclose(reference[0], want, rtol=0, atol=2e-6)
    for threads, results in pooled.items():
        np.testing.assert_array_equal(results[0], reference[0], err_msg=f"{threads} threads")
