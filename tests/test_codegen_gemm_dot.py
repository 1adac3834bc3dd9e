"""Dots and convolutions on the GEMM engine: compiled, run from C, compared with the evaluator.

Each test puts many variants into one module (layouts, constant or runtime B, batches, GEMV,
fused epilogues, fallbacks), so a few compiles cover the fast paths and their edges.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from codegen_testing import run_and_compare
from hlo_programs import build, labels, window

from aotc.codegen import TargetSpec, TensorInfo, compile_module
from aotc.codegen.emitter import emit_module
from aotc.codegen.kernels.conv import pointwise_gemm
from aotc.codegen.kernels.dot import dot_scratch_bytes
from aotc.codegen.kernels.dot_gemm import SMALL_GEMM_K, gemm_dot
from aotc.codegen.vector import AVX512
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.fusion_plan import recorded_plan
from aotc.hlo.ir import ConvAttrs, DotDims, Instruction, Module
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.hlo.text import parse_module
from aotc.passes.fusion import Fusion

RNG = np.random.default_rng(5)
F32 = PrimitiveType.F32


def f32(*dims: int) -> Shape:
    return Shape(F32, dims)


def weights(*dims: int) -> np.ndarray:
    return RNG.standard_normal(dims).astype(np.float32)


def _dot(
    b: ComputationBuilder, x: Instruction, y: Instruction, *dims: tuple[int, ...]
) -> Instruction:
    return b.dot(x, y, DotDims(*dims))


def dots_body(b: ComputationBuilder, p: list[Instruction]) -> list[Instruction]:
    x, w, wt, a, bb, bt, v, xt, x3, xk, wk = p
    wc, wct = b.constant(weights(37, 29)), b.constant(weights(29, 37))
    return [
        _dot(b, x, w, (1,), (0,)),  # runtime B
        _dot(b, x, wc, (1,), (0,)),  # constant B, pre-packed
        _dot(b, x, wct, (1,), (1,)),  # constant transpose_b: packed from w.T
        _dot(b, x, wt, (1,), (1,)),  # runtime transposed B
        _dot(b, a, bb, (2,), (1,), (0,), (0,)),  # batched
        _dot(b, a, bt, (2,), (2,), (0,), (0,)),  # batched, B transposed (attention scores)
        _dot(b, v, wc, (1,), (0,)),  # GEMV, packed B
        _dot(b, v, w, (1,), (0,)),  # GEMV, runtime B
        _dot(b, v, wt, (1,), (1,)),  # GEMV on B^T: loop kernel
        _dot(b, xt, w, (0,), (0,)),  # transposed A: loop kernel
        _dot(b, x3, wc, (2,), (0,)),  # two lhs free dims flatten into M
        _dot(b, xk, wk, (1,), (0,)),  # K over two blocks, N over a short last panel
    ]


DOT_SHAPES = [
    f32(5, 37), f32(37, 29), f32(29, 37), f32(3, 6, 20), f32(3, 20, 9), f32(3, 9, 20),
    f32(1, 37), f32(37, 5), f32(2, 3, 37), f32(9, 300), f32(300, 40),
]  # fmt: skip


def test_dot_layouts_batches_and_gemv() -> None:
    module = build(DOT_SHAPES, lambda mb, b, ps: dots_body(b, ps))
    dots = [r for r in module.entry.root.operands]
    fast = [gemm_dot(d) is not None for d in dots]
    assert fast == [True] * 8 + [False, False, True, True]
    ir_text = run_and_compare(module, [weights(*s.dims) for s in DOT_SHAPES], rtol=1e-5)
    assert re.search(r"fmuladd\.v16f32|fma <16 x float>", ir_text), "no 16-lane FMAs"


EPILOGUES = """
HloModule m
ENTRY main {
  x = f32[7,40] parameter(0)
  w = f32[40,33] parameter(1)
  bias = f32[33] parameter(2)
  xk = f32[6,300] parameter(3)
  wk = f32[300,20] parameter(4)
  a = f32[2,5,24] parameter(5)
  bt = f32[2,8,24] parameter(6)
  r = f32[6,20] parameter(7)
  d = f32[7,33] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[7,33] broadcast(bias), dimensions={1}
  s = f32[7,33] add(d, bb)
  zero = f32[] constant(0)
  zb = f32[7,33] broadcast(zero), dimensions={}
  relu = f32[7,33] maximum(s, zb)
  d2 = f32[7,33] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s2 = f32[7,33] add(d2, bb)
  half = f32[] constant(0.5)
  hb = f32[7,33] broadcast(half), dimensions={}
  rs = f32[] constant(0.70710678)
  rsb = f32[7,33] broadcast(rs), dimensions={}
  one = f32[] constant(1)
  ob = f32[7,33] broadcast(one), dimensions={}
  m1 = f32[7,33] multiply(s2, rsb)
  e = f32[7,33] erf(m1)
  m2 = f32[7,33] multiply(s2, hb)
  e1 = f32[7,33] add(e, ob)
  gelu = f32[7,33] multiply(m2, e1)
  rexp = f32[6,20] exponential(r)
  dk = f32[6,20] dot(xk, wk), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  res = f32[6,20] add(dk, rexp)
  db = f32[2,5,8] dot(a, bt), lhs_batch_dims={0}, lhs_contracting_dims={2},
    rhs_batch_dims={0}, rhs_contracting_dims={2}
  sc = f32[] constant(0.25)
  scb = f32[2,5,8] broadcast(sc), dimensions={}
  scaled = f32[2,5,8] multiply(db, scb)
  ROOT t = (f32[7,33], f32[7,33], f32[6,20], f32[2,5,8]) tuple(relu, gelu, res, scaled)
}"""


def test_output_fusions_run_their_epilogue_in_the_gemm_tile_store() -> None:
    module = parse_module(EPILOGUES)
    assert Fusion().run(module)
    kinds = [r.opcode.value for r in module.entry.root.operands]
    assert kinds == ["fusion"] * 4, kinds
    inputs = [weights(*p.array_shape.dims) for p in module.entry.parameters]
    ir_text = run_and_compare(module, inputs, rtol=1e-5)
    assert ir_text.count(".gemm.tile") > 0  # the fused dots took the GEMM path


VECTOR_EPILOGUES = """
HloModule m
ENTRY main {
  x = f32[9,40] parameter(0)
  w = f32[40,35] parameter(1)
  bias = f32[35] parameter(2)
  rowb = f32[9] parameter(3)
  other = f32[9,35] parameter(4)
  d1 = f32[9,35] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[9,35] broadcast(bias), dimensions={1}
  s1 = f32[9,35] add(d1, bb)
  zero = f32[] constant(0)
  six = f32[] constant(6)
  relu6 = f32[9,35] clamp(zero, s1, six)
  d2 = f32[9,35] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s2 = f32[9,35] add(d2, bb)
  t2 = f32[9,35] tanh(s2)
  d3 = f32[9,35] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  rb = f32[9,35] broadcast(rowb), dimensions={0}
  s3 = f32[9,35] subtract(d3, rb)
  m3 = f32[9,35] multiply(s3, other)
  d4 = f32[9,35] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s4 = f32[9,35] add(d4, bb)
  zb = f32[9,35] broadcast(zero), dimensions={}
  positive = pred[9,35] compare(s4, zb), direction=GT
  lg = f32[9,35] logistic(s4)
  sel = f32[9,35] select(positive, s4, lg)
  d5 = f32[9,35] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s5 = f32[9,35] add(d5, bb)
  fb = f32[9,35] sine(s5)
  ROOT t = (f32[9,35], f32[9,35], f32[9,35], f32[9,35], f32[9,35]) tuple(relu6, t2, m3, sel, fb)
}"""


def test_vector_epilogues_bias_activations_broadcasts_and_fallback() -> None:
    """relu6 (clamp), tanh, a per-row broadcast times a plain operand, compare/select/logistic,
    and sine (no vector form: lane by lane), all on N = 35 (two full vectors and an edge)."""
    module = parse_module(VECTOR_EPILOGUES)
    assert Fusion().run(module)
    assert [r.opcode.value for r in module.entry.root.operands] == ["fusion"] * 5
    inputs = [weights(*p.array_shape.dims) for p in module.entry.parameters]
    ir_text = run_and_compare(module, inputs, rtol=1e-5)
    assert ir_text.count(".gemm.tile") > 0


def _tile_functions(ir_text: str) -> list[str]:
    return re.findall(r"^define internal [^@]*@\"?[^(]*gemm\.tile.*?^}$", ir_text, re.M | re.S)


DENSE_RELU = """
HloModule m
ENTRY main {
  x = f32[20,64] parameter(0)
  w = f32[64,40] constant({...})
  bias = f32[40] parameter(1)
  d = f32[20,40] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[20,40] broadcast(bias), dimensions={1}
  s = f32[20,40] add(d, bb)
  zero = f32[] constant(0)
  zb = f32[20,40] broadcast(zero), dimensions={}
  relu = f32[20,40] maximum(s, zb)
  ROOT t = (f32[20,40]) tuple(relu)
}"""


def test_dense_bias_relu_epilogue_stores_whole_vectors() -> None:
    """The f32 dense + bias + relu epilogue is vector code: no lane is extracted in the tile."""
    literal = "{" + ",".join("{" + ",".join(["0.5"] * 40) + "}" for _ in range(64)) + "}"
    module = parse_module(DENSE_RELU.replace("{...}", literal))
    assert Fusion().run(module)
    emitted = str(emit_module(module, "gd", AVX512)[0])  # before LLVM's SLP could re-form it
    optimized = run_and_compare(module, [weights(20, 64), weights(40)], rtol=1e-5)
    for ir_text in (emitted, optimized):
        tiles = _tile_functions(ir_text)
        assert tiles, "no GEMM tile functions"
        assert not any("extractelement" in t for t in tiles)
        assert any("<16 x float>" in t for t in tiles)


STEP_INPUT = """
HloModule m
ENTRY main {
  h = f32[20,64] parameter(0)
  u = f32[64,40] parameter(1)
  xs = f32[5,20,40] parameter(2)
  t = s32[] parameter(3)
  zero = s32[] constant(0)
  row = f32[1,20,40] dynamic-slice(xs, t, zero, zero), dynamic_slice_sizes={1,20,40}
  xt = f32[20,40] reshape(row)
  d = f32[20,40] dot(h, u), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = f32[20,40] add(xt, d)
  ROOT r = (f32[20,40]) tuple(s)
}"""


@pytest.mark.parametrize("step", [3, 7, -2])
def test_an_epilogue_reads_a_step_of_the_hoisted_input_projection_as_vectors(step: int) -> None:
    """h @ U + xs[t] (an RNN step after loop_projection): whole rows of the dynamic slice are
    vector loads at the clamped step (an index out of range clamps, as the evaluator does)."""
    module = parse_module(STEP_INPUT)
    assert Fusion().run(module)
    args = [weights(20, 64), weights(64, 40), weights(5, 20, 40), np.int32(step)]
    run_and_compare(module, args, rtol=1e-5)
    # the tiles are the ones of a plain row operand: no lane is built one by one
    plain = STEP_INPUT.replace("xt = f32[20,40] reshape(row)", "xt = f32[20,40] parameter(4)")
    lanes = [_lane_inserts(parse_module(text)) for text in (STEP_INPUT, plain)]
    assert lanes[0] == lanes[1]


def _lane_inserts(module: Module) -> int:
    assert Fusion().run(module)
    tiles = _tile_functions(str(emit_module(module, "gd", AVX512)[0]))
    assert tiles
    return sum(t.count("insertelement") for t in tiles)


SHARED_PLANS = """
HloModule m
ENTRY main {
  x1 = f32[20,64] parameter(0)
  x2 = f32[20,64] parameter(1)
  w1 = f32[64,40] parameter(2)
  w2 = f32[64,40] parameter(3)
  bias = f32[40] parameter(4)
  d1 = f32[20,40] dot(x1, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d2 = f32[20,40] dot(x2, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[20,40] broadcast(bias), dimensions={1}
  zero = f32[] constant(0)
  zb = f32[20,40] broadcast(zero), dimensions={}
  e1 = f32[20,40] dot(x1, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s1 = f32[20,40] add(e1, bb)
  r1 = f32[20,40] maximum(s1, zb)
  e2 = f32[20,40] dot(x2, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s2 = f32[20,40] add(e2, bb)
  r2 = f32[20,40] maximum(s2, zb)
  ROOT t = (f32[20,40], f32[20,40], f32[20,40], f32[20,40]) tuple(d1, d2, r1, r2)
}"""


def _defined(ir_text: str, pattern: str) -> list[str]:
    return re.findall(rf'^define internal [^@]*@"?([^"(]*{pattern})"?\(', ir_text, re.M)


def test_dots_with_the_same_plan_share_their_gemm_functions() -> None:
    """Two plain dots of one plan share the GEMM driver and micro-kernels; two fused dots with
    the same bias + relu epilogue share theirs: each body reaches LLVM once."""
    module = parse_module(SHARED_PLANS)
    assert Fusion().run(module)
    emitted = str(emit_module(module, "gd", AVX512)[0])
    drivers, tiles = _defined(emitted, r"\.gemm"), _defined(emitted, r"\.gemm\.tile\w+")
    kinds = {t.rsplit(".", 1)[1] for t in tiles}
    assert len(drivers) == 2, drivers  # one plain, one with the epilogue
    assert len(tiles) == 2 * len(kinds), tiles  # per tile kind: plain and with the epilogue
    for ir_text in (emitted, str(emit_module(module, "gd", AVX512)[0])):
        callees = set(re.findall(r'call void @"?([^"(]*\.gemm)"?\(', ir_text))
        assert callees == set(drivers)  # every kernel calls a kept driver
    inputs = [weights(*p.array_shape.dims) for p in module.entry.parameters]
    run_and_compare(module, inputs, rtol=1e-5)


def test_short_k_dots_keep_the_loop_kernel() -> None:
    """K <= SMALL_GEMM_K (M > 1): loop kernel, no scratch; GEMV and longer K: the GEMM."""
    k = SMALL_GEMM_K
    shapes = [f32(8, k), f32(k, 24), f32(1, k), f32(8, 2 * k), f32(2 * k, 24)]
    module = build(shapes, lambda mb, b, p: [
        _dot(b, p[0], p[1], (1,), (0,)),
        _dot(b, p[2], p[1], (1,), (0,)),
        _dot(b, p[3], p[4], (1,), (0,)),
    ])  # fmt: skip
    dots = list(module.entry.root.operands)
    assert [gemm_dot(d) is not None for d in dots] == [False, True, True]
    assert dot_scratch_bytes(dots[0], AVX512) == 0
    run_and_compare(module, [weights(*s.dims) for s in shapes], rtol=1e-5)


def test_dot_ir_uses_neon_vectors_for_aarch64() -> None:
    module = build([f32(8, 64), f32(64, 32)], lambda mb, b, ps: [_dot(b, *ps, (1,), (0,))])
    args = [TensorInfo(p.name, p.array_shape) for p in module.entry.parameters]
    target = TargetSpec("aarch64-unknown-linux-gnu", "generic")
    model = compile_module(module, "gd", args, [TensorInfo("o", f32(8, 32))], target)
    assert "fmuladd.v4f32" in model.llvm_ir  # the micro-kernel's FMAs are NEON-wide
    assert not re.search(r"fmuladd\.v(8|16)f32", model.llvm_ir)


# ---- convolutions ----------------------------------------------------------------------------

NHWC = labels("b01f_01io->b01f")


def conv_body(mb: ModuleBuilder, b: ComputationBuilder, p: list[Instruction]) -> list:
    x, xd, w1, w3 = p
    one = window((1,), (1,))

    def conv(lhs: Instruction, rhs: Instruction, win: object, groups: int = 1) -> Instruction:
        return b.convolution(lhs, rhs, ConvAttrs(win, NHWC, groups))  # type: ignore[arg-type]

    return [
        conv(x, b.constant(weights(1, 1, 8, 12)), one),  # 1x1, constant kernel: GEMM
        conv(x, w1, one),  # 1x1, runtime kernel: GEMM
        conv(x, w1, window((1, 2), (1, 2))),  # 1x1 stride 2: loop kernel
        conv(x, w3, window((3, 1, 1, 1), (3, 1, 1, 1))),  # 3x3 SAME
        conv(x, w3, window((3,), (3,))),  # 3x3 VALID
        conv(x, w3, window((3, 2, 1, 1), (3, 2, 0, 1))),  # stride 2
        conv(x, w3, window((3, 1, 2, 2, 1, 2), (3, 1, 2, 2, 1, 2))),  # dilation 2
        conv(xd, b.constant(weights(3, 3, 1, 16)), window((3, 1, 1, 1), (3, 1, 1, 1)), 16),
        conv(xd, b.constant(weights(3, 3, 1, 32)), window((3, 2, 1, 1), (3, 2, 1, 1)), 16),
        conv(x, b.constant(weights(3, 3, 4, 6)), window((3, 1, 1, 1), (3, 1, 1, 1)), 2),
    ]


def test_convolutions_pointwise_depthwise_and_general() -> None:
    shapes = [f32(2, 7, 6, 8), f32(1, 9, 9, 16), f32(1, 1, 8, 12), f32(3, 3, 8, 5)]
    module = build(shapes, conv_body)
    fast = [pointwise_gemm(c) is not None for c in module.entry.root.operands]
    assert fast == [True, True] + [False] * 8
    run_and_compare(module, [weights(*s.dims) for s in shapes], rtol=1e-5)


IN_PLACE_LONG_K = """
HloModule m
ENTRY main {
  x = f32[2,9,300] parameter(0)
  w = f32[300,40] parameter(1)
  bias = f32[40] parameter(2)
  p = f32[2,9,40] parameter(3)
  res = f32[2,9,40] negate(p)
  d = f32[2,9,40] dot(x, w), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  bb = f32[2,9,40] broadcast(bias), dimensions={2}
  a = f32[2,9,40] add(d, bb)
  r = f32[2,9,40] add(res, a)
  ROOT t = (f32[2,9,40]) tuple(r)
}"""


def test_an_in_place_epilogue_over_two_k_blocks_takes_all_of_k_in_one() -> None:
    """The residual add may write over ``res`` (it dies there), so partial sums must not pass
    through the output: K = 300 > KC runs as one K block on the GEMM, not the loop kernel."""
    module = parse_module(IN_PLACE_LONG_K)
    assert Fusion().run(module)
    fusion = module.entry.root.operands[0]
    assert fusion.opcode.value == "fusion" and recorded_plan(fusion).in_place
    inputs = [weights(*p.array_shape.dims) for p in module.entry.parameters]
    ir_text = run_and_compare(module, inputs, rtol=1e-5)
    assert ir_text.count(".gemm.tile") > 0


ATTENTION_DOTS = """
HloModule m
ENTRY main {
  q = f32[8,64,32] parameter(0)
  kt = f32[8,32,64] parameter(1)
  v = f32[8,64,32] parameter(2)
  x = f32[150,20] parameter(3)
  w = f32[20,300] parameter(4)
  s = f32[8,64,64] dot(q, kt), lhs_batch_dims={0}, lhs_contracting_dims={2},
    rhs_batch_dims={0}, rhs_contracting_dims={1}
  o = f32[8,64,32] dot(s, v), lhs_batch_dims={0}, lhs_contracting_dims={2},
    rhs_batch_dims={0}, rhs_contracting_dims={1}
  wide = f32[150,300] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[8,64,32], f32[150,300]) tuple(o, wide)
}"""


def test_narrow_gemms_read_a_in_place_and_wide_ones_pack_it() -> None:
    """Attention's per-head dots (N = 64, 32) have no A packing loop; N = 300 packs A."""
    module = parse_module(ATTENTION_DOTS)
    inputs = [weights(*p.array_shape.dims) for p in module.entry.parameters]
    ir_text = run_and_compare(module, inputs, rtol=1e-5)
    kernels = dict(_function_bodies(ir_text))  # the GEMM drivers are inlined into these
    packs = {name: "pak" in kernels[f"kernel.{name}"] for name in ("s", "o", "wide")}
    assert packs == {"s": False, "o": False, "wide": True}  # "pak": the A packing loop


def _function_bodies(ir_text: str) -> list[tuple[str, str]]:
    """(name, text) of each function defined in ``ir_text``."""
    parts = re.split(r"^define ", ir_text, flags=re.M)[1:]
    return [(re.search(r'@"?([^"(]+)"?\(', part).group(1), part) for part in parts]


GELU_IN_PLACE = """
HloModule m
ENTRY main {
  x = f32[20,48] parameter(0)
  w = f32[48,35] parameter(1)
  res = f32[20,35] parameter(2)
  d = f32[20,35] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  a = f32[20,35] add(d, res)
  c = f32[] constant(0.70710677)
  cb = f32[20,35] broadcast(c), dimensions={}
  y = f32[20,35] multiply(a, cb)
  e = f32[20,35] erf(y)
  one = f32[] constant(1)
  ob = f32[20,35] broadcast(one), dimensions={}
  p = f32[20,35] add(ob, e)
  h = f32[20,35] multiply(a, p)
  ROOT t = (f32[20,35]) tuple(h)
}"""


def test_a_long_epilogue_runs_row_by_row_from_a_parked_tile_even_in_place() -> None:
    """GELU after a residual add that may overwrite ``res``: the erf epilogue runs in a loop
    over each tile's rows on values parked on the stack (not in C, which aliases ``res``);
    M = 20 (a full tile and a short one), N = 35 (an edge vector)."""
    module = parse_module(GELU_IN_PLACE)
    assert Fusion().run(module)
    fusion = module.entry.root.operands[0]
    assert fusion.opcode.value == "fusion" and recorded_plan(fusion).in_place
    inputs = [weights(*p.array_shape.dims) for p in module.entry.parameters]
    ir_text = run_and_compare(module, inputs, rtol=1e-5)
    assert "epilogue.row" in ir_text and "tile.park" in ir_text
