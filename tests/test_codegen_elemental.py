"""Element generators composed into one loop nest (what fusion will do), run with the JIT.

The per-instruction kernels only ever compose a generator with buffer readers; here a whole
computation of elementwise and data-movement ops becomes a single loop, so every index
remapping (including reshape, which buffer assignment otherwise aliases) is exercised in
combination. Results must match the reference evaluator exactly.
"""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir

from aotc.codegen.irtypes import PTR, VOID
from aotc.codegen.kernels.base import ElementGenerator, buffer_reader
from aotc.codegen.kernels.elemental import emit_store_loop, make_generator
from aotc.codegen.loops import function_builder
from aotc.codegen.target import TargetSpec, create_target_machine
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import Module, Opcode, parameter_number
from aotc.hlo.text import parse_module

RNG = np.random.default_rng(7)


def fused(module: Module) -> ir.Module:
    """``void fused(out, arg0, ...)``: the entry's single result from one composed generator."""
    entry = module.entry
    llvm_module = ir.Module("fused")
    params = entry.parameters
    fn = ir.Function(llvm_module, ir.FunctionType(VOID, [PTR] * (1 + len(params))), "fused")
    b = function_builder(fn)
    generators: dict[int, ElementGenerator] = {}
    for inst in entry.post_order():
        if inst.opcode is Opcode.PARAMETER:
            generators[id(inst)] = buffer_reader(
                fn.args[1 + parameter_number(inst)], inst.array_shape
            )
        elif inst.opcode is not Opcode.TUPLE:
            generators[id(inst)] = make_generator(
                inst, [generators[id(op)] for op in inst.operands]
            )
    result = entry.root.operands[0]
    emit_store_loop(b, generators[id(result)], fn.args[0], result.array_shape)
    b.ret_void()
    return llvm_module


def run_fused(module: Module, inputs: list[np.ndarray]) -> np.ndarray:
    tm, _ = create_target_machine(TargetSpec())
    compiled = llvm.parse_assembly(str(fused(module)))
    compiled.verify()
    engine = llvm.create_mcjit_compiler(compiled, tm)
    engine.finalize_object()
    shape = module.entry.root.operands[0].array_shape
    out = np.full(shape.dims, 123, dtype=shape.dtype.numpy)
    arrays = [np.ascontiguousarray(x) for x in inputs]
    pointers = [ctypes.c_void_p(a.ctypes.data) for a in [out, *arrays]]
    function = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(pointers))
    function(engine.get_function_address("fused"))(*pointers)
    return out


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
}


@pytest.mark.parametrize("case", list(CASES))
def test_composed_generators_match_the_evaluator(case: str) -> None:
    module = parse_module(f"HloModule m\nENTRY main {{{CASES[case]}\n}}")
    x = (RNG.standard_normal((2, 3, 4)) * 3).astype(np.float32)
    v = RNG.standard_normal(6).astype(np.float32)
    expected = evaluate(module, [x, v])[0]
    np.testing.assert_allclose(run_fused(module, [x, v]), expected, rtol=1e-6)
