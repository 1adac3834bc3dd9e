"""Big constants without copies: literal facts read in place, and constant bytes that reach
LLVM as themselves (each byte one character of the IR text, latin-1) whatever their value.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from codegen_testing import run_and_compare
from hlo_programs import build
from llvmlite import ir

from aotc.codegen import TargetSpec
from aotc.codegen.emitter import emit_module_assigned
from aotc.codegen.irtypes import I8, I64, freeze_functions, module_bytes, readonly_global
from aotc.codegen.target import create_target_machine, emit_object, parse_ir
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.ir import Instruction, Opcode
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.passes import literals


def test_all_equal_compares_bytes_chunk_by_chunk() -> None:
    n = literals.CHUNK * 2 + 3
    same = np.full(n, 1.5, np.float32)
    assert literals.all_equal(same) and literals.all_equal(np.float32(7))
    late = same.copy()
    late[-1] = 2.0  # in the last, short chunk
    assert not literals.all_equal(late)
    for k in (1, literals.PEEK - 1, literals.PEEK, literals.PEEK + literals.CHUNK):
        early = same.copy()
        early[k] = 2.0  # in the first look, at either side of its end, in the next chunk
        assert not literals.all_equal(early)
    assert not literals.all_equal(np.array([0.0, -0.0], np.float32))  # bits, not values
    assert literals.all_equal(np.array([np.nan, np.nan], np.float32))
    assert literals.all_equal(np.ones((3, 4), ml_dtypes.bfloat16)[:, ::2])  # strided view
    assert not literals.all_equal(np.array([[1, 2], [1, 1]], np.int64).T)


def test_raw_bytes_views_contiguous_literals_and_orders_others_like_tobytes() -> None:
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    view = literals.raw_bytes(a)
    assert view.obj is not None and np.shares_memory(np.asarray(view), a)
    assert bytes(view) == a.tobytes()
    assert bytes(literals.raw_bytes(a.transpose(2, 0, 1))) == a.transpose(2, 0, 1).tobytes()


def test_constants_of_every_byte_value_compile_to_those_bytes() -> None:
    # every byte value (NUL, '"', '\\', above 127) in a constant the kernel adds to zeros
    data = np.tile(np.arange(256, dtype=np.uint8), (8, 1))
    shapes = [Shape(PrimitiveType.U8, (8, 256))]

    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list[Instruction]:
        return [b.binary(Opcode.ADD, ps[0], b.constant(data.copy()))]

    ir_text = run_and_compare(build(shapes, body), [np.zeros((8, 256), np.uint8)], rtol=0)
    assert "add <" in ir_text or "add i8" in ir_text


def test_parse_ir_reads_latin1_text_exactly() -> None:
    module = build([Shape(PrimitiveType.F32, (4,))], lambda mb, b, ps: [ps[0]])
    llvm_module, _ = emit_module_assigned(module, "m")
    text = str(llvm_module) + '@raw = constant [4 x i8] c"\\00\\22\\5C\xff"\n'
    parsed = parse_ir(text)
    assert '[4 x i8] c"\\00\\22\\\\\\FF"' in str(parsed)  # LLVM prints a backslash as two
    tm, _ = create_target_machine(TargetSpec())
    assert emit_object(parsed, tm)[:4] == b"\x7fELF"


def _two_functions() -> tuple[ir.Module, ir.Function]:
    module = ir.Module("m")
    table = readonly_global(module, "table", bytes(range(256)) * 32)
    callee = ir.Function(module, ir.FunctionType(I8, [I64]), "callee")
    b = ir.IRBuilder(callee.append_basic_block())
    b.ret(b.load(b.gep(table, [callee.args[0]]), typ=I8))
    caller = ir.Function(module, ir.FunctionType(I8, [I64]), "caller")
    b = ir.IRBuilder(caller.append_basic_block())
    b.ret(b.call(callee, [caller.args[0]]))
    return module, callee


def test_functions_frozen_early_print_as_they_would_have_and_stay_unchanged() -> None:
    whole = module_bytes(_two_functions()[0])
    module, callee = _two_functions()
    freeze_functions(module)  # both printed and freed here
    assert not callee.blocks
    assert module_bytes(module) == whole
    module, callee = _two_functions()
    caller = module.globals["caller"]
    freeze_functions(module, building=caller)  # the function being built is left alone
    assert not callee.blocks and caller.blocks
    assert module_bytes(module) == whole
    module, callee = _two_functions()
    freeze_functions(module)
    callee.attributes.add("noinline")
    with pytest.raises(AssertionError, match="callee changed"):
        module_bytes(module)
