"""Kernels that differ only in the constants they read are compiled once (``variants.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from c_harness import run_compiled
from codegen_testing import compile_entry
from hlo_programs import build

from aotc.codegen import split, workers
from aotc.codegen.target import parse_ir
from aotc.codegen.variants import Constant, share_constant_variants
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import DotDims, Instruction, Module
from aotc.hlo.shape import PrimitiveType, Shape

RNG = np.random.default_rng(5)

_CONSTANTS = """\
@"a.w" = private unnamed_addr constant [8 x i8] c"\\00\\00\\80?\\00\\00\\00@", align 64
@"b.w" = private unnamed_addr constant [8 x i8] c"\\00\\00@@\\00\\00\\80@", align 64
@"c.w" = private unnamed_addr constant [4 x i8] c"\\00\\00@@", align 64
"""


_READ_ONLY = {"a.w": Constant(8, 64), "b.w": Constant(8, 64), "c.w": Constant(4, 64)}


def _shared(*functions: str) -> str:
    """The functions' text after ``share_constant_variants``, checked to be valid IR."""
    text = "\n".join(share_constant_variants(list(functions), _READ_ONLY))
    parse_ir(_CONSTANTS + _DECLARATIONS + text)
    return text


def _kernel(name: str, weights: str) -> str:
    return (
        f'define internal void @"{name}"(ptr noalias %".1", i64 %".2") nounwind {{\n'
        "entry:\n"
        f'  %".3" = getelementptr inbounds float, ptr @"{weights}", i64 %".2"\n'
        f'  %".4" = load float, ptr %".3"\n'
        f'  store float %".4", ptr %".1"\n'
        "  ret void\n"
        "}\n"
    )


_CALLER = """\
define void @"run"(ptr %".1", ptr %".2") nounwind {
entry:
  call void @"a"(ptr %".1", i64 1)
  call void @"b"(ptr %".2", i64 0)
  call void @"c"(ptr %".2", i64 1)
  store ptr @"c", ptr %".1"
  ret void
}
"""


def test_functions_alike_but_for_their_constants_become_one_taking_them() -> None:
    shared = _shared(_kernel("a", "a.w"), _kernel("b", "b.w"), _kernel("c", "a.w"), _CALLER)
    assert 'define internal void @"b"' not in shared
    assert 'dereferenceable(8) %"aotc.constant.0.0"' in shared
    assert 'call void @"a"(ptr %".1", i64 1, ptr @"a.w")' in shared
    assert 'call void @"a"(ptr %".2", i64 0, ptr @"b.w")' in shared
    # "c" has its address taken (a task handed to a thread pool): left alone
    assert 'define internal void @"c"' in shared
    assert 'call void @"c"(ptr %".2", i64 1)' in shared


def _caller_of(name: str, callee: str, weights: str) -> str:
    """A kernel reading ``weights`` that calls ``callee`` (which reads constants of its own)."""
    return (
        f'define internal void @"{name}"(ptr noalias %".1") nounwind {{\n'
        "entry:\n"
        f'  %".2" = load float, ptr @"{weights}"\n'
        f'  store float %".2", ptr %".1"\n'
        f'  call void @"{callee}"(ptr %".1", i64 0)\n'
        "  ret void\n"
        "}\n"
    )


def test_callers_merge_once_their_callees_did_and_survivors_merge_again() -> None:
    # Round 1: the kernels a, b, c merge (into a), and so do the callers p, q (of a) and r, s
    # (of c); round 2: the survivors p and r are alike now (both call a), and merge.
    kernels = _kernel("a", "a.w") + _kernel("b", "b.w") + _kernel("c", "b.w")
    callers = _caller_of("p", "a", "a.w") + _caller_of("q", "a", "b.w")
    callers += _caller_of("r", "c", "a.w") + _caller_of("s", "c", "b.w")
    calls = "".join(f'  call void @"{n}"(ptr %".1")\n' for n in "pqrs")
    calls += '  call void @"b"(ptr %".1", i64 0)\n'
    run = f'define void @"run"(ptr %".1") nounwind {{\nentry:\n{calls}  ret void\n}}\n'
    shared = _shared(kernels, callers, run)
    defined = [line.split('"')[1] for line in shared.splitlines() if line.startswith("define")]
    assert defined == ["a", "p", "run"], defined
    # p's arguments of each round: its own weights, then those it passes to a
    assert 'call void @"p"(ptr %".1", ptr @"b.w", ptr @"a.w")' in shared  # q's
    assert 'call void @"p"(ptr %".1", ptr @"a.w", ptr @"b.w")' in shared  # r's


def test_functions_called_from_outside_the_text_stay_as_they_are() -> None:
    # Part of a module compiled while the rest is emitted (stream.py): "b" is called by a
    # kernel not in this text (kept), "c" by nothing here (a level's body, which the entry
    # emitted later calls): merged, either would be called with its old name and arguments.
    kernels = _kernel("a", "a.w") + _kernel("b", "b.w") + _kernel("c", "b.w")
    run = (
        'define void @"run"(ptr %".1") nounwind {\nentry:\n'
        '  call void @"a"(ptr %".1", i64 0)\n  call void @"b"(ptr %".1", i64 0)\n'
        "  ret void\n}\n"
    )
    text = "\n".join(share_constant_variants([kernels, run], _READ_ONLY, frozenset({"b"})))
    parse_ir(_CONSTANTS + _DECLARATIONS + text)
    assert text == "\n".join([kernels, run])
    # without "b" kept, a and b merge: c still stays, called from nowhere in the text
    merged = "\n".join(share_constant_variants([kernels, run], _READ_ONLY))
    defined = [line.split('"')[1] for line in merged.splitlines() if line.startswith("define")]
    assert defined == ["a", "c", "run"], defined


def test_text_without_variants_is_unchanged() -> None:
    functions = [_kernel("a", "a.w"), _kernel("b", "a.w").replace("float", "i32")]
    assert _shared(*functions) == "\n".join(functions)


def test_dots_of_one_shape_by_other_weights_share_a_kernel_and_stay_right() -> None:
    shape = Shape(PrimitiveType.F32, (6, 40))

    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list[Instruction]:
        return [b.dot(x, b.constant(_weights()), DotDims((1,), (0,))) for x in ps]

    module = build([shape, shape], body)
    inputs = [RNG.standard_normal(shape.dims).astype(np.float32) for _ in range(2)]
    expected = evaluate(module, inputs)
    model = compile_entry(module)
    assert "aotc.constant.0" in model.llvm_ir  # one dot kernel, the weights its argument
    typed, buffers = run_compiled(model, inputs)
    for got in (typed, buffers):
        for y, want in zip(got, expected, strict=True):
            np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def _weights() -> np.ndarray:
    return RNG.standard_normal((40, 24)).astype(np.float32)


def _looping(name: str, weights: str, bound: str, line: str = "") -> str:
    """A kernel looping ``bound`` times over ``weights`` (as a typed pointer, the way llvmlite
    prints a global's type), with ``line`` in its loop."""
    size = _READ_ONLY[weights].size
    return (
        f'define internal void @"{name}"(ptr noalias %".1", i64 %".2") nounwind {{\n'
        "entry:\n"
        '  br label %"loop"\n'
        "loop:\n"
        '  %"k" = phi  i64 [0, %"entry"], [%".5", %"loop"]\n'
        f'  %".3" = getelementptr inbounds float, [{size} x i8]* @"{weights}", i64 %"k"\n'
        f'  %".4" = load float, [{size} x i8]* %".3"\n'
        f"{line}"
        '  store float %".4", ptr %".1"\n'
        '  %".5" = add nuw nsw i64 %"k", 1\n'
        f'  %".6" = icmp ult i64 %".5", {bound}\n'
        '  %".7" = icmp sgt i64 %".2", 2\n'
        '  br i1 %".6", label %"loop", label %"done"\n'
        "done:\n"
        "  ret void\n"
        "}\n"
    )


def _run_calling(*names: str) -> str:
    calls = "".join(f'  call void @"{n}"(ptr %".1", i64 3)\n' for n in names)
    return f'define void @"run"(ptr %".1") nounwind {{\nentry:\n{calls}  ret void\n}}\n'


def test_kernels_alike_but_for_loop_bounds_become_one_taking_them() -> None:
    # b: another bound over another (smaller) constant; c: a's bound again
    kernels = _looping("a", "a.w", "2") + _looping("b", "c.w", "1") + _looping("c", "b.w", "2")
    shared = _shared(kernels, _run_calling("a", "b", "c"))
    defined = [line.split('"')[1] for line in shared.splitlines() if line.startswith("define")]
    assert defined == ["a", "run"], defined
    # the least size of the constants: what LLVM may assume of each member's
    assert 'dereferenceable(4) %"aotc.constant.0.0", i64 %"aotc.literal.0.0")' in shared
    assert 'icmp ult i64 %".5", %"aotc.literal.0.0"' in shared
    assert 'icmp sgt i64 %".2", 2' in shared  # alike in every member: still a literal
    assert 'call void @"a"(ptr %".1", i64 3, ptr @"a.w", i64 2)' in shared
    assert 'call void @"a"(ptr %".1", i64 3, ptr @"c.w", i64 1)' in shared
    assert 'call void @"a"(ptr %".1", i64 3, ptr @"b.w", i64 2)' in shared


def test_literals_that_differ_alike_in_every_member_are_one_argument() -> None:
    twice = '  %".8" = icmp eq i64 7, %".2"\n'
    kernels = _looping("a", "a.w", "7", twice) + _looping("b", "a.w", "9", twice.replace("7", "9"))
    shared = _shared(kernels, _run_calling("a", "b"))
    assert 'icmp eq i64 %"aotc.literal.0.0", %".2"' in shared
    assert shared.count("aotc.literal.0.") == 3  # the parameter and its two uses
    assert 'call void @"a"(ptr %".1", i64 3, ptr @"a.w", i64 9)' in shared


#: Lines of a kernel whose literals (4 against 8, unless given) must not become arguments:
#: positions where a runtime value would not mean the same, and those where it would but
#: costs (strides and offsets fold into addressing, loop starts hide trip counts): see
#: ``literals.py``.
_KEPT_APART = [
    '  %".8" = mul nuw nsw i64 %".2", {}',  # a stride
    '  %".8" = add i64 %".2", {}',  # an offset
    '  %".8" = sub i64 {}, %".2"',
    '  %".8" = shl i64 %".2", {}',
    '  %".8" = getelementptr inbounds float, ptr %".1", i64 {}',
    '  %".8" = getelementptr {{i64, [9 x i64]}}, ptr %".1", i64 0, i32 1, i64 {}',
    '  %".8" = udiv i64 %".2", {}',  # a divisor: a multiply only while constant
    '  %".8" = urem i64 %".2", {}',
    '  %".8" = select  i1 true, i64 %".2", i64 {}',
    '  store i64 {}, ptr %".1"',
    '  %".8" = load i64, ptr %".1", align {}',
    '  %".8" = alloca [{} x float]',
    '  %".8" = alloca i64, i64 {}',
    '  %".8" = load <{} x float>, ptr %".1"',
    '  %".8" = extractelement <16 x float> zeroinitializer, i32 {}',
    '  %".8" = shufflevector <8 x i32> zeroinitializer, <8 x i32> zeroinitializer, '
    "<2 x i32> <i32 0, i32 {}>",
    '  %".8" = icmp ult <2 x i64> zeroinitializer, <i64 1, i64 {}>',
    '  %".8" = fadd float %".4", {}.0',
    '  call void @"llvm.memset.p0.i64"(ptr %".1", i8 0, i64 {}, i1 false)',
    '  %".8" = call i64 @"aotc.divide"(i64 %".2", i64 1, i64 {})',
]


@pytest.mark.parametrize("line", _KEPT_APART)
def test_literals_where_an_argument_would_not_do_keep_kernels_apart(line: str) -> None:
    one, other = (line.format(v) + "\n" for v in (4, 8))
    kernels = _looping("a", "a.w", "2", one) + _looping("b", "a.w", "2", other)
    shared = _shared(kernels, _run_calling("a", "b"))
    assert 'define internal void @"b"' in shared, line
    assert "aotc.literal" not in shared


def test_prefetch_immediates_keep_kernels_apart() -> None:
    line = '  call void @"llvm.prefetch.p0"(ptr %".1", i32 0, i32 {}, i32 1)\n'
    kernels = _looping("a", "a.w", "2", line.format(1)) + _looping("b", "a.w", "2", line.format(3))
    assert 'define internal void @"b"' in _shared(kernels, _run_calling("a", "b"))


_DECLARATIONS = """\
declare void @"llvm.prefetch.p0"(ptr, i32 immarg, i32 immarg, i32 immarg)
declare void @"llvm.memset.p0.i64"(ptr, i8, i64, i1 immarg)
declare i64 @"aotc.divide"(i64, i64, i64)
"""


def _gemm_module() -> tuple[Module, list[np.ndarray]]:
    """A dot whose reduction (320) is one K block of 256 and one of 64: the GEMM's tile
    kernels for the two blocks differ only in their loop's bound."""
    shape = Shape(PrimitiveType.F32, (49, 320))
    weights = RNG.standard_normal((320, 96)).astype(np.float32)

    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list[Instruction]:
        return [b.dot(ps[0], b.constant(weights), DotDims((1,), (0,)))]

    return build([shape], body), [RNG.standard_normal(shape.dims).astype(np.float32)]


def test_gemm_tiles_of_other_reduction_lengths_share_a_kernel_and_stay_right() -> None:
    module, inputs = _gemm_module()
    expected = evaluate(module, inputs)
    model = compile_entry(module)
    assert "aotc.literal.0.0" in model.llvm_ir  # k256 and k64: one kernel, the bound its argument
    assert "k64" not in model.llvm_ir
    typed, buffers = run_compiled(model, inputs)
    for got in (typed, buffers):
        for y, want in zip(got, expected, strict=True):
            np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


def test_merged_objects_are_the_same_bytes_for_any_number_of_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(split, "CHUNK_BYTES", 1)
    module = _gemm_module()[0]
    objects = []
    try:
        for jobs in (1, 2, 1):
            workers.set_codegen_workers(jobs)
            objects.append(compile_entry(module).object_bytes)
    finally:
        workers.set_codegen_workers(None)
    assert objects[0] == objects[1] == objects[2]
