"""Element generators composed into one loop nest (as the fused emitter does), run with the JIT.

The per-instruction kernels only ever compose a generator with buffer readers; here a whole
computation of elementwise and data-movement ops becomes a single loop, so every index
remapping (including reshape, which buffer assignment otherwise aliases) is exercised in
combination. Results must match the reference evaluator exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from codegen_testing import run_fused

from aotc.hlo.evaluate import evaluate
from aotc.hlo.text import parse_module

RNG = np.random.default_rng(7)


CASES = {
    "reshape_transpose_broadcast": """
  x = f32[2,3,4] parameter(0)
  v = f32[6] parameter(1)
  r = f32[6,4] reshape(x)
  t = f32[4,6] transpose(r), dimensions={1,0}
  b = f32[4,6] broadcast(v), dimensions={1}
  s = f32[4,6] multiply(t, b)
  f = f32[3,8] reshape(s)
  ROOT out = (f32[3,8]) tuple(f)""",
    "slice_pad_reverse_concat": """
  x = f32[2,3,4] parameter(0)
  v = f32[6] parameter(1)
  z = f32[] constant(0.5)
  s = f32[2,2,2] slice(x), slice={[0:2], [1:3], [0:4:2]}
  p = f32[3,4,2] pad(s, z), padding=1_0x0_1_1x0_0
  rv = f32[3,4,2] reverse(p), dimensions={0,1}
  r = f32[3,2] reshape(v)
  b = f32[3,1,2] reshape(r)
  c = f32[3,5,2] concatenate(rv, b), dimensions={1}
  e = f32[3,5,2] exponential(c)
  ROOT out = (f32[3,5,2]) tuple(e)""",
    "iota_compare_select_convert": """
  x = f32[2,3,4] parameter(0)
  v = f32[6] parameter(1)
  i = s32[2,3,4] iota(), iota_dimension=2
  f = f32[2,3,4] convert(i)
  k = pred[2,3,4] compare(x, f), direction=LT
  s = f32[2,3,4] select(k, x, f)
  n = s32[2,3,4] convert(s)
  ROOT out = (s32[2,3,4]) tuple(n)""",
    "bitcast_reinterprets_bits": """
  x = f32[2,3,4] parameter(0)
  v = f32[6] parameter(1)
  i = s32[6,4] bitcast(x)
  m = s32[] constant(2147483647)
  ms = s32[6,4] broadcast(m), dimensions={}
  flipped = s32[6,4] xor(i, ms)
  back = f32[24] bitcast(flipped)
  ROOT out = (f32[24]) tuple(back)""",
}


@pytest.mark.parametrize("case", list(CASES))
def test_composed_generators_match_the_evaluator(case: str) -> None:
    module = parse_module(f"HloModule m\nENTRY main {{{CASES[case]}\n}}")
    x = (RNG.standard_normal((2, 3, 4)) * 3).astype(np.float32)
    v = RNG.standard_normal(6).astype(np.float32)
    expected = evaluate(module, [x, v])[0]
    np.testing.assert_allclose(run_fused(module, [x, v]), expected, rtol=1e-6)
