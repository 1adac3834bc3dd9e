"""Attention fused per head (``passes/attention.py``, ``hlo/attention_plan.py``,
``codegen/kernels/attention.py``): multi-head attention as the TF front end and Keras emit it
(per-head biases, head transposes, a scale, an additive mask), run through the default
pipeline, compiled, run from C (single-threaded and on 2-thread pools: identical bits) and
compared with the evaluator on the unoptimized module; shapes off the vector width, rows
longer than one register tile, no batch dimensions, masked and nan rows."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from c_harness import run_compiled
from codegen_testing import compile_entry
from fixtures import load_hlo_fixture
from hlo_programs import REDUCERS
from mt_harness import run_multicore, split_every_kernel

from aotc.codegen import TargetSpec
from aotc.driver import compile_graph
from aotc.frontend.sources import load_source
from aotc.hlo.evaluate import evaluate
from aotc.hlo.fusion_plan import recorded_plan
from aotc.hlo.ir import FusionKind, Module, Opcode
from aotc.hlo.text import parse_module, print_module
from aotc.hlo.views import View
from aotc.passes import default_pipeline

RNG = np.random.default_rng(15)
X86_64 = "x86_64-unknown-linux-gnu"
BATCHED_DOT = (
    "lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}"
)


@dataclass(frozen=True)
class Attn:
    """Keras-style attention on [B, S, H, D] inputs; ``batch=False``: one head [S, D]."""

    b: int = 2
    h: int = 4
    s: int = 64
    t: int = 64
    d: int = 32
    e: int = 32
    mask: bool = False
    mask_first: bool = False
    divide: bool = False
    batch: bool = True
    select: bool = False  # Keras 3's mask: select(mask != 0, scores, -2.37e38)

    def text(self) -> str:
        return self._batched() if self.batch else self._single()

    def _softmax(self, x: str, shape: str, rows: str, kept: str, last: int) -> str:
        normalized = (
            f"""sb = f32[{shape}] broadcast(sum), dimensions={{{kept}}}
  p = f32[{shape}] divide(ex, sb)"""
            if self.divide
            else f"""one = f32[] constant(1)
  ob = f32[{rows}] broadcast(one), dimensions={{}}
  inv = f32[{rows}] divide(ob, sum)
  ib = f32[{shape}] broadcast(inv), dimensions={{{kept}}}
  p = f32[{shape}] multiply(ex, ib)"""
        )
        return f"""ninf = f32[] constant(-inf)
  mx = f32[{rows}] reduce({x}, ninf), dimensions={{{last}}}, to_apply=max
  mb = f32[{shape}] broadcast(mx), dimensions={{{kept}}}
  dx = f32[{shape}] subtract({x}, mb)
  ex = f32[{shape}] exponential(dx)
  zero = f32[] constant(0)
  sum = f32[{rows}] reduce(ex, zero), dimensions={{{last}}}, to_apply=add
  {normalized}"""

    def _scaled(self, shape: str, mask_shape: str, mask_dims: str) -> str:
        scale = f"""c = f32[] constant({1 / np.sqrt(self.d)})
  cb = f32[{shape}] broadcast(c), dimensions={{}}"""
        if not self.mask:
            return f"""{scale}
  x = f32[{shape}] multiply(sc, cb)"""
        if self.select:
            return f"""{scale}
  mk = f32[{mask_shape}] parameter(4)
  mp = pred[{mask_shape}] convert(mk)
  mpb = pred[{shape}] broadcast(mp), dimensions={{{mask_dims}}}
  y = f32[{shape}] multiply(sc, cb)
  fill = f32[] constant(-2.372671e+38)
  fb = f32[{shape}] broadcast(fill), dimensions={{}}
  x = f32[{shape}] select(mpb, y, fb)"""
        mask = f"""mk = f32[{mask_shape}] parameter(4)
  mkb = f32[{shape}] broadcast(mk), dimensions={{{mask_dims}}}"""
        if self.mask_first:
            return f"""{scale}
  {mask}
  y = f32[{shape}] add(mkb, sc)
  x = f32[{shape}] multiply(y, cb)"""
        return f"""{scale}
  {mask}
  y = f32[{shape}] multiply(sc, cb)
  x = f32[{shape}] add(y, mkb)"""

    def _batched(self) -> str:
        b, h, s, t, d, e = self.b, self.h, self.s, self.t, self.d, self.e
        shape, rows = f"{b},{h},{s},{t}", f"{b},{h},{s}"
        return f"""HloModule attention
{REDUCERS}
ENTRY main {{
  q = f32[{b},{s},{h * d}] parameter(0)
  k = f32[{b},{t},{h},{d}] parameter(1)
  v = f32[{b},{t},{h},{e}] parameter(2)
  bq = f32[{h},{d}] parameter(3)
  qr = f32[{b},{s},{h},{d}] reshape(q)
  bqb = f32[{b},{s},{h},{d}] broadcast(bq), dimensions={{2,3}}
  qb = f32[{b},{s},{h},{d}] add(qr, bqb)
  qt = f32[{b},{h},{s},{d}] transpose(qb), dimensions={{0,2,1,3}}
  kt = f32[{b},{h},{d},{t}] transpose(k), dimensions={{0,2,3,1}}
  vt = f32[{b},{h},{t},{e}] transpose(v), dimensions={{0,2,1,3}}
  sc = f32[{shape}] dot(qt, kt), {BATCHED_DOT}
  {self._scaled(shape, f"{b},{s},{t}", "0,2,3")}
  {self._softmax("x", shape, rows, "0,1,2", 3)}
  o = f32[{b},{h},{s},{e}] dot(p, vt), {BATCHED_DOT}
  ot = f32[{b},{s},{h},{e}] transpose(o), dimensions={{0,2,1,3}}
  r = f32[{b},{s},{h * e}] reshape(ot)
  ROOT tuple = (f32[{b},{s},{h * e}]) tuple(r)
}}"""

    def _single(self) -> str:
        s, t, d, e = self.s, self.t, self.d, self.e
        shape = f"{s},{t}"
        return f"""HloModule attention
{REDUCERS}
ENTRY main {{
  q = f32[{s},{d}] parameter(0)
  k = f32[{t},{d}] parameter(1)
  v = f32[{t},{e}] parameter(2)
  bq = f32[{d}] parameter(3)
  bqb = f32[{s},{d}] broadcast(bq), dimensions={{1}}
  qb = f32[{s},{d}] add(q, bqb)
  sc = f32[{shape}] dot(qb, k), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}
  {self._scaled(shape, f"{t}", "1")}
  {self._softmax("x", shape, str(s), "0", 1)}
  o = f32[{s},{e}] dot(p, v), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  ROOT tuple = (f32[{s},{e}]) tuple(o)
}}"""

    def inputs(self, special: bool = False) -> list[np.ndarray]:
        b, h, s, t, d, e = self.b, self.h, self.s, self.t, self.d, self.e
        dims = ((b, s, h * d), (b, t, h, d), (b, t, h, e), (h, d)) if self.batch else (
            (s, d), (t, d), (t, e), (d,))  # fmt: skip
        arrays = [RNG.standard_normal(x).astype(np.float32) for x in dims]
        if self.mask:
            shape = (b, s, t) if self.batch else (t,)
            masked = RNG.random(shape) < 0.3
            if self.batch:
                masked[0, 1, :] = True  # a fully masked row: nan, as in the evaluator
            if self.select:
                m = np.where(masked, 0, 1).astype(np.float32)  # fully masked: uniform weights
            else:
                m = np.where(masked, -np.inf, 0).astype(np.float32)
            arrays.append(m)
        if special:
            arrays[0].reshape(-1)[3] = np.nan
            arrays[1].reshape(-1)[5] = np.inf
        return arrays


def optimized(text: str) -> Module:
    module = parse_module(text)
    default_pipeline().run(module)
    return module


def attention_fusions(module: Module) -> list[object]:
    fusions = [i for i in module.entry.instructions if i.opcode is Opcode.FUSION]
    plans = [recorded_plan(f) for f in fusions]
    return [p.attention for p in plans if p is not None and p.attention is not None]


def check(case: Attn, special: bool = False, rtol: float = 3e-6) -> Module:
    text = case.text()
    inputs = case.inputs(special)
    (want,) = evaluate(parse_module(text), inputs)
    module = optimized(text)
    (plan,) = attention_fusions(module)
    kernels = [
        i for i in module.entry.instructions if i.opcode not in (Opcode.PARAMETER, Opcode.TUPLE)
    ]
    assert len(kernels) == 1, kernels  # the transposes and both dots are in the one kernel
    typed, buffers = run_compiled(compile_entry(module, "m"), inputs)
    np.testing.assert_array_equal(typed[0], buffers[0])
    scale = float(np.nanmax(np.abs(want), initial=1.0))
    np.testing.assert_allclose(typed[0], want, rtol=0, atol=rtol * scale)
    assert np.array_equal(np.isnan(typed[0]), np.isnan(want))
    return module


CASES = [
    Attn(),
    Attn(b=1, h=3, s=7, t=19, d=5, e=13),
    Attn(b=3, h=2, s=13, t=70, d=9, e=40, mask=True),
    Attn(b=2, h=2, s=9, t=150, d=16, e=20, mask=True, divide=True),
    Attn(b=1, h=1, s=1, t=1, d=1, e=1),
    Attn(s=10, t=33, d=8, e=17, batch=False),
    Attn(s=5, t=33, d=8, e=17, batch=False, mask=True, mask_first=True),
    Attn(b=2, h=5, s=17, t=24, d=16, e=48, mask=True, mask_first=True),
    Attn(b=2, h=2, s=8, t=32, d=8, e=16, mask=True),  # the mask read a vector at a time
    Attn(b=2, h=3, s=16, t=16, d=8, e=8, mask=True, select=True),
    Attn(b=1, h=2, s=5, t=90, d=8, e=12, mask=True, select=True, divide=True),
    Attn(s=6, t=21, d=4, e=3, batch=False, mask=True, select=True),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_attention_is_one_kernel_matching_the_evaluator(case: Attn) -> None:
    check(case)


@pytest.mark.parametrize("case", [CASES[2], CASES[3]], ids=str)
def test_nan_and_inf_inputs_make_the_evaluators_nan_rows(case: Attn) -> None:
    check(case, special=True)


@pytest.mark.parametrize("cpu", ["", "x86-64"])
def test_scores_far_below_the_row_max(cpu: str) -> None:
    """Q scaled by 40: most exp(x - max) fall below the smallest normal float (the kernel's
    exp flushes those to 0, as TF does) and the rest span the whole range; still the
    evaluator's rows."""
    case = CASES[2]
    inputs = case.inputs()
    inputs[0] *= 40
    (want,) = evaluate(parse_module(case.text()), inputs)
    target = TargetSpec(X86_64, cpu) if cpu else TargetSpec()
    typed, _ = run_compiled(compile_entry(optimized(case.text()), "m", target), inputs)
    scale = float(np.nanmax(np.abs(want), initial=1.0))
    np.testing.assert_allclose(typed[0], want, rtol=0, atol=3e-6 * scale)
    assert np.array_equal(np.isnan(typed[0]), np.isnan(want))


@pytest.mark.parametrize("case", [CASES[0], CASES[3]], ids=str)
def test_two_threads_split_over_heads_with_identical_bits(
    case: Attn, monkeypatch: pytest.MonkeyPatch
) -> None:
    split_every_kernel(monkeypatch)
    module = optimized(case.text())
    inputs = case.inputs()
    reference, pooled = run_multicore(compile_entry(module, "m"), inputs, pools=(0, 2))
    for n, results in pooled.items():
        np.testing.assert_array_equal(results[0], reference[0], err_msg=f"pool {n}")
    (want,) = evaluate(parse_module(case.text()), inputs)
    np.testing.assert_allclose(
        reference[0], want, rtol=0, atol=3e-6 * float(np.nanmax(np.abs(want)))
    )


def test_a_score_dot_read_twice_is_left_to_the_other_kernels() -> None:
    """The scores are also a result: the block stays as it was (no attention fusion)."""
    text = (
        Attn(b=1, h=2, s=4, t=6, d=3, e=5)
        .text()
        .replace(
            "ROOT tuple = (f32[1,4,10]) tuple(r)",
            "ROOT tuple = (f32[1,4,10], f32[1,2,4,6]) tuple(r, sc)",
        )
    )
    module = optimized(text)
    assert not attention_fusions(module)
    inputs = Attn(b=1, h=2, s=4, t=6, d=3, e=5).inputs()
    want = evaluate(parse_module(text), inputs)
    typed, _ = run_compiled(compile_entry(module, "m"), inputs)
    for got, expected in zip(typed, want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_the_plan_is_kcustom_and_survives_printing() -> None:
    module = optimized(Attn(b=1, h=2, s=8, t=8, d=4, e=4, mask=True).text())
    again = parse_module(print_module(module))
    fusion = next(i for i in again.entry.instructions if i.opcode is Opcode.FUSION)
    plan = recorded_plan(fusion)
    assert plan is not None and plan.kind is FusionKind.CUSTOM and plan.attention is not None
    (first,) = attention_fusions(module)
    got, want = plan.attention, first
    assert (got.q, got.k, got.v, got.out, got.divide) == (
        want.q,
        want.k,
        want.v,
        want.out,
        want.divide,
    )
    assert got.scores.opcode is want.scores.opcode is Opcode.ADD  # the mask's add


def test_views_regroup_and_slice_like_numpy() -> None:
    base = np.arange(2 * 6 * 12).reshape(2, 6, 12)
    view = View.row_major(base.shape).slice((0, 0, 4), (2, 6, 8), (1, 1, 1))
    assert view is not None
    view = view.reshape((2, 6, 2, 2))
    assert view is not None
    view = view.transpose((0, 2, 1, 3)).reshape((4, 6, 2))
    assert view is not None
    want = base[:, :, 4:8].reshape(2, 6, 2, 2).transpose(0, 2, 1, 3).reshape(4, 6, 2)
    got = np.empty(want.shape, dtype=base.dtype)
    for index in np.ndindex(*want.shape):
        offset = view.offset
        for i, atoms in zip(index, view.dims, strict=True):
            for size, stride in reversed(atoms):
                i, k = divmod(i, size)
                offset += k * stride
        got[index] = base.reshape(-1)[offset]
    np.testing.assert_array_equal(got, want)
    assert View.row_major((4, 6)).reshape((3, 8)) is not None
    merged = View.row_major((4, 6)).transpose((1, 0)).reshape((24,))
    assert merged is not None and merged.simple(0) is None  # two atoms: no single stride
    assert View.row_major((4, 6)).transpose((1, 0)).reshape((8, 3)) is None


@pytest.mark.parametrize("cpu", ["x86-64", "x86-64-v3"])
@pytest.mark.parametrize("case", [CASES[0], CASES[1], CASES[3], CASES[9]], ids=str)
def test_sse_and_avx2_levels_match_the_evaluator(case: Attn, cpu: str) -> None:
    """4 and 8 lanes, 16 registers: other panel heights and column blocks, the row buffer
    path for rows of more than two vectors."""
    text = case.text()
    inputs = case.inputs()
    (want,) = evaluate(parse_module(text), inputs)
    module = optimized(text)
    assert attention_fusions(module)
    model = compile_entry(module, "m", TargetSpec(X86_64, cpu))
    typed, _ = run_compiled(model, inputs)
    scale = float(np.nanmax(np.abs(want), initial=1.0))
    np.testing.assert_allclose(typed[0], want, rtol=0, atol=3e-6 * scale)


def test_jax_attention_fuses_and_runs_like_jax() -> None:
    """JAX's form (tests/data/make_jax_attention_fixtures.py): heads as batch dimensions 0 and
    2, P the value dot's rhs, a division scale, a boolean mask by ``where``, a fully masked
    row, the softmax's ``max(reduce_max(x), -inf)``: one attention kernel, JAX's results."""
    path, args, (want,) = load_hlo_fixture("jax_attention")
    module = load_source(path).module
    np.testing.assert_allclose(evaluate(module, args)[0], want, rtol=0, atol=2e-6)
    default_pipeline().run(module)
    assert len(attention_fusions(module)) == 1
    typed, buffers = run_compiled(compile_graph(path).model, args)
    np.testing.assert_array_equal(typed[0], buffers[0])
    np.testing.assert_allclose(typed[0], want, rtol=0, atol=2e-6)
