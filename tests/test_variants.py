"""Kernels that differ only in the constants they read are compiled once (``variants.py``)."""

from __future__ import annotations

import numpy as np
from c_harness import run_compiled
from codegen_testing import compile_entry
from hlo_programs import build

from aotc.codegen.target import parse_ir
from aotc.codegen.variants import Constant, share_constant_variants
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import DotDims, Instruction
from aotc.hlo.shape import PrimitiveType, Shape

RNG = np.random.default_rng(5)

_CONSTANTS = """\
@"a.w" = private unnamed_addr constant [8 x i8] c"\\00\\00\\80?\\00\\00\\00@", align 64
@"b.w" = private unnamed_addr constant [8 x i8] c"\\00\\00@@\\00\\00\\80@", align 64
"""


_READ_ONLY = {"a.w": Constant(8, 64), "b.w": Constant(8, 64)}


def _shared(*functions: str) -> str:
    """The functions' text after ``share_constant_variants``, checked to be valid IR."""
    text = "\n".join(share_constant_variants(list(functions), _READ_ONLY))
    parse_ir(_CONSTANTS + text)
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
    run = f'define void @"run"(ptr %".1") nounwind {{\nentry:\n{calls}  ret void\n}}\n'
    shared = _shared(kernels, callers, run)
    defined = [line.split('"')[1] for line in shared.splitlines() if line.startswith("define")]
    assert defined == ["a", "p", "run"], defined
    # p's arguments of each round: its own weights, then those it passes to a
    assert 'call void @"p"(ptr %".1", ptr @"b.w", ptr @"a.w")' in shared  # q's
    assert 'call void @"p"(ptr %".1", ptr @"a.w", ptr @"b.w")' in shared  # r's


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
