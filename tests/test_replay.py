"""Kernels that would emit another's text with other weights are made from it (``replay.py``).

The module's text must be byte for byte what emitting every kernel makes (so ``variants.py``
merges the twins as before), with fewer kernels emitted; kernels that differ in more than
their weights (a one-element constant, which becomes an immediate; weights with an infinity,
which take another kernel) are emitted; and the compiled program computes what the evaluator
does.
"""

from __future__ import annotations

import numpy as np
import pytest
from c_harness import run_compiled
from codegen_testing import compile_entry
from hlo_programs import build, labels, window

import aotc.codegen.emitter as emitter
from aotc.codegen.dispatch import X86_64_LEVELS
from aotc.codegen.irtypes import module_bytes
from aotc.codegen.replay import twin_key
from aotc.driver import optimize
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import ConvAttrs, DotDims, Instruction, Module, Opcode
from aotc.hlo.shape import PrimitiveType, Shape

RNG = np.random.default_rng(17)
NHWC = labels("b01f_01io->b01f")
SAME3 = window((3, 1, 1, 1), (3, 1, 1, 1))
ROWS = Shape(PrimitiveType.F32, (8, 48))
IMAGE = Shape(PrimitiveType.F32, (1, 8, 12, 16))


def _weights(*dims: int) -> np.ndarray:
    return RNG.standard_normal(dims).astype(np.float32)


def _dense(b: ComputationBuilder, x: Instruction, scale: float) -> Instruction:
    """relu(x @ W + bias) * scale: its own weights and bias each time."""
    y = b.dot(x, b.constant(_weights(48, 48) * 0.2), DotDims((1,), (0,)))
    y = b.binary(Opcode.ADD, y, b.broadcast(b.constant(_weights(48)), ROWS.dims, (1,)))
    y = b.binary(Opcode.MAXIMUM, y, b.broadcast(b.constant(np.float32(0)), ROWS.dims, ()))
    return b.binary(Opcode.MULTIPLY, y, b.broadcast(b.constant(np.float32(scale)), ROWS.dims, ()))


def _conv(b: ComputationBuilder, x: Instruction, finite: bool = True) -> Instruction:
    """relu(conv3x3(x, W) + bias): its own weights and bias each time."""
    w = _weights(3, 3, 16, 16) * 0.1
    if not finite:
        w[1, 1, 0, 0] = np.inf  # skipping the padding's zeros would be wrong: another kernel
    y = b.convolution(x, b.constant(w), ConvAttrs(SAME3, NHWC))
    y = b.binary(Opcode.ADD, y, b.broadcast(b.constant(_weights(16)), IMAGE.dims, (3,)))
    return b.binary(Opcode.MAXIMUM, y, b.broadcast(b.constant(np.float32(0)), IMAGE.dims, ()))


def _blocks(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
    """Dense blocks alike but for weights, one scaled otherwise (an immediate); convolutions
    alike but for weights, one with an infinite weight (each odd one between two others, so
    that only that sets it apart)."""
    rows, image = ps
    for scale in (0.5, 0.5, 0.5, 0.25, 0.5):
        rows = _dense(b, rows, scale)
    for finite in (True, True, True, False, True):
        image = _conv(b, image, finite)
    return [rows, image]


def _module() -> Module:
    module = build([ROWS, IMAGE], _blocks)
    optimize(module)
    return module


def _emitted(module: Module, twins: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, int]:
    """The module's text for the portable levels, and how many functions were emitted."""
    count = [0]
    emit = emitter._emit_function

    def counted(*args: object, **kwargs: object) -> object:
        count[0] += 1
        return emit(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(emitter, "_emit_function", counted)
    levels = X86_64_LEVELS
    llvm_module, _ = emitter.emit_module_assigned(module, "m", levels, freeze=True, twins=twins)
    return bytes(module_bytes(llvm_module)), count[0]


def test_twins_are_made_from_text_exactly_as_emitted(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _module()
    replayed, fewer = _emitted(module, True, monkeypatch)
    emitted, every = _emitted(module, False, monkeypatch)
    assert replayed == emitted
    # per level: the third dense and conv blocks are twins of the second (the first reads
    # an argument, whose pointer is not known to be aligned: another call)
    assert every - fewer == 2 * len(X86_64_LEVELS), (every, fewer)


def test_twins_compute_what_the_evaluator_does() -> None:
    module = _module()
    inputs = [RNG.standard_normal(s.dims).astype(np.float32) for s in (ROWS, IMAGE)]
    expected = evaluate(module, inputs)
    typed, buffers = run_compiled(compile_entry(module), inputs)
    for got in (typed, buffers):
        for y, want in zip(got, expected, strict=True):
            np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_keys_tell_weights_apart_only_by_shape_and_finiteness() -> None:
    module = _module()
    kernels = [i for i in module.entry.instructions if i.opcode is Opcode.FUSION]
    assert len(kernels) == 10  # five dense blocks, then five convolutions
    d1, d2, d3, d4, _, c1, c2, c3, c4, _ = (twin_key(k, ())[0] for k in kernels)
    assert d2 == d3 and c2 == c3  # alike but for their weights and biases
    assert d1 != d2 and c1 != c2  # they read an argument, the others a kernel's result
    assert d4 != d3  # its scale, an immediate
    assert c4 != c3  # an infinite weight
