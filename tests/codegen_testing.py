"""Codegen test helpers: compile HLO for the host, run it from C, compare with the evaluator."""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numpy as np
from c_harness import run_compiled
from llvmlite import ir

from aotc.codegen import CompiledModel, TargetSpec, TensorInfo, compile_module
from aotc.codegen.compile import compile_module_assigned
from aotc.codegen.irtypes import PTR, VOID
from aotc.codegen.kernels.base import ElementGenerator, buffer_reader
from aotc.codegen.kernels.elemental import emit_store_loop, make_generator
from aotc.codegen.loops import function_builder
from aotc.codegen.target import create_target_machine, parse_ir
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import Module, Opcode, parameter_number
from aotc.hlo.text import parse_module
from aotc.report import CompileReport, build_report


def entry_signature(module: Module) -> tuple[list[TensorInfo], list[TensorInfo]]:
    """One argument per entry parameter (named after it), one result per root element (outJ)."""
    args = [TensorInfo(p.name, p.array_shape) for p in module.entry.parameters]
    results = [
        TensorInfo(f"out{j}", r.array_shape) for j, r in enumerate(module.entry.root.operands)
    ]
    return args, results


def compile_entry(
    module: Module, name: str = "model", target: TargetSpec | None = None
) -> CompiledModel:
    """``module`` compiled with one argument per entry parameter and one result per root element."""
    return compile_module(module, name, *entry_signature(module), target or TargetSpec())


def compile_hlo_report(text: str) -> tuple[CompiledModel, CompileReport]:
    """Compile HLO text for the host; the model and the compile report of its kernels."""
    module = parse_module(text)
    model, assignment = compile_module_assigned(module, "model", *entry_signature(module))
    return model, build_report(assignment)


def compile_hlo(
    text: str, name: str = "model", target: TargetSpec | None = None
) -> tuple[Module, CompiledModel]:
    module = parse_module(text)
    return module, compile_entry(module, name, target)


def run_and_compare(module: Module, inputs: list[np.ndarray], rtol: float = 2e-6) -> str:
    """Compile for the host, run both entry points from C, compare with the evaluator.

    The tolerance is relative to the largest expected magnitude of each result; returns the
    LLVM IR so that tests can also check what code was emitted.
    """
    expected = evaluate(module, inputs)
    model = compile_entry(module, "m")
    typed, buffers = run_compiled(model, inputs)
    for j, (want, got, again) in enumerate(zip(expected, typed, buffers, strict=True)):
        np.testing.assert_array_equal(got, again, err_msg=f"result {j}: the two calls differ")
        assert got.shape == want.shape and got.dtype == want.dtype, f"result {j}"
        scale = float(np.max(np.abs(want.astype(np.float64)), initial=1.0))
        np.testing.assert_allclose(got, want, rtol=0, atol=rtol * scale, err_msg=f"result {j}")
    return model.llvm_ir


def fused_loop(module: Module) -> ir.Module:
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
    """JIT the single fused loop of ``module``'s root (no buffers, no entry points) and run it."""
    tm, _ = create_target_machine(TargetSpec())
    compiled = parse_ir(str(fused_loop(module)))
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
