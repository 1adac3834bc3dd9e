"""The expand fusion: a depthwise convolution fused with the convolution producing its input.

Inverted residuals as MobileNetV2 and EfficientNet have them (1x1 expand + bias + relu6 or
swish, then depthwise 3x3 or 5x5 + bias + activation, with or without a residual add), and a
3x3 stride-2 stem as the producer, over odd widths, strides 1 and 2, SAME and Keras' folded
``ZeroPadding2D`` (0_1) padding, batch 2 and channel counts with a narrower last vector. Each
is nested by the pass, compiled, run from C (both entry points, and the multi-core entry with
pools of 2 and 3 threads, so ranges of rows start inside a window) and compared with the
evaluator; non-finite weights take the multiplying depthwise path or, in the producer under
padding, the path that keeps the producer's whole output in scratch.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from codegen_testing import compile_entry, run_and_compare
from hlo_programs import build, labels, same, window
from mt_harness import run_multicore, split_every_kernel

from aotc.codegen.kernels.conv_expand import ExpandDepthwise, expand_depthwise
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.fusion_plan import recorded_plan
from aotc.hlo.ir import (
    ConvAttrs,
    FusionAttrs,
    Instruction,
    Module,
    Opcode,
    Window,
    parameter_number,
)
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.hlo.text import parse_module, print_module
from aotc.jit import JitModel
from aotc.passes.expand_fusion import ExpandFusion
from aotc.passes.fusion import Fusion

RNG = np.random.default_rng(31)
NHWC = labels("b01f_01io->b01f")
Activation = Callable[[ComputationBuilder, Instruction], Instruction]


def f32(*dims: int) -> Shape:
    return Shape(PrimitiveType.F32, dims)


def weights(*dims: int) -> np.ndarray:
    return (RNG.standard_normal(dims) / np.sqrt(np.prod(dims[:-1]))).astype(np.float32)


def relu6(b: ComputationBuilder, x: Instruction) -> Instruction:
    dims = x.array_shape.dims
    zero, six = (b.broadcast(b.constant(np.float32(v)), dims, []) for v in (0.0, 6.0))
    return b.clamp(zero, x, six)


def swish(b: ComputationBuilder, x: Instruction) -> Instruction:
    return b.binary(Opcode.MULTIPLY, x, b.unary(Opcode.LOGISTIC, x))


def _biased(b: ComputationBuilder, conv: Instruction, act: Activation) -> Instruction:
    dims = conv.array_shape.dims
    bias = b.broadcast(b.constant(weights(dims[3]) + 0.1), dims, [3])
    return act(b, b.binary(Opcode.ADD, conv, bias))


def _block(
    b: ComputationBuilder,
    x: Instruction,
    expand: tuple[np.ndarray, Window],
    depthwise: tuple[np.ndarray, Window],
    act: Activation,
    residual: Instruction | None = None,
) -> Instruction:
    """producer conv + bias + act, then depthwise + bias + act (or + ``residual``)."""
    (w1, win1), (w2, win2) = expand, depthwise
    hidden = _biased(b, b.convolution(x, b.constant(w1), ConvAttrs(win1, NHWC)), act)
    groups = w2.shape[3]
    dw = b.convolution(hidden, b.constant(w2), ConvAttrs(win2, NHWC, feature_group_count=groups))
    if residual is not None:
        return b.binary(Opcode.ADD, dw, residual)
    return _biased(b, dw, act)


ONE = window((1,), (1,))
SAME3 = window(same(3), same(3))
FOLDED = window((3, 2, 0, 1), (3, 2, 0, 1))  # ZeroPadding2D((0, 1), (0, 1)) then VALID


def expand(cin: int, cout: int) -> tuple[np.ndarray, Window]:
    return weights(1, 1, cin, cout), ONE


def dw3(channels: int, win: Window = SAME3) -> tuple[np.ndarray, Window]:
    return weights(3, 3, 1, channels), win


def _mobilenet_body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
    x1, x2, x3, x4, residual = ps
    stem = (weights(3, 3, 3, 16), window(same(3, 2), same(3, 2)))
    dw5 = (weights(5, 5, 1, 20), window(same(5, 2), same(5, 2)))
    return [
        _block(b, x1, expand(8, 24), dw3(24), relu6),
        _block(b, x2, expand(16, 40), dw3(40, FOLDED), relu6),
        _block(b, x3, stem, dw3(16), relu6),
        _block(b, x4, expand(8, 20), dw5, swish),
        _block(b, x1, expand(8, 24), dw3(24), swish, residual),
    ]


SHAPES = [
    f32(2, 9, 13, 8),
    f32(1, 12, 11, 16),
    f32(1, 15, 17, 3),
    f32(1, 11, 10, 8),
    f32(2, 9, 13, 24),
]


def _fused(shapes: list[Shape], body: Callable) -> Module:
    module = build(shapes, body)
    assert Fusion().run(module)
    assert ExpandFusion(min_rows=1).run(module)
    return module


def _nested(module: Module) -> list[Instruction]:
    roots = module.entry.root.operands
    return [r for r in roots if any(i.opcode is Opcode.FUSION for i in r.called[0].instructions)]


def _inputs(shapes: list[Shape]) -> list[np.ndarray]:
    return [RNG.standard_normal(s.dims).astype(np.float32) for s in shapes]


@pytest.fixture
def split_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    split_every_kernel(monkeypatch)


def test_inverted_residuals_match_the_evaluator(split_everything: None) -> None:
    module = _fused(SHAPES, _mobilenet_body)
    assert len(_nested(module)) == 5
    inputs = _inputs(SHAPES)
    ir_text = run_and_compare(module, inputs, rtol=2e-5)
    assert ir_text.count("xr.body") >= 5 and ir_text.count("dwacc") > 0  # the row buffer
    model = compile_entry(module, "m")
    tasks = [t for t in model.llvm_ir.splitlines() if t.startswith("define") and ".task" in t]
    assert len(tasks) >= 5  # the fused kernels are split over the pool
    reference, pooled = run_multicore(model, inputs, (2, 3))
    for threads, results in pooled.items():
        for k, (got, want) in enumerate(zip(results, reference, strict=True)):
            assert got.tobytes() == want.tobytes(), f"result {k}, pool of {threads}"


def test_the_expanded_tensor_is_no_buffer() -> None:
    """The nested producer's output lives in the fusion's row buffer: KH rows, not H."""
    module = _fused(
        [f32(1, 40, 40, 16)], lambda mb, b, ps: [_block(b, ps[0], expand(16, 96), dw3(96), relu6)]
    )
    (fusion,) = _nested(module)
    form = expand_depthwise(_view(fusion), fusion)
    assert isinstance(form, ExpandDepthwise)
    model = compile_entry(module, "m")
    assert model.temp_bytes < 40 * 40 * 96 * 4
    inputs = _inputs([f32(1, 40, 40, 16)])
    np.testing.assert_allclose(
        compile_and_run(module, inputs), evaluate(module, inputs)[0], rtol=0, atol=2e-5 * 6
    )


def _view(fusion: Instruction) -> Instruction:
    """The nested producer with the outer fusion's operands, as codegen sees it."""
    plan = recorded_plan(fusion)
    assert plan is not None and plan.dot is not None
    nested = plan.dot.operands[0]
    operands = [fusion.operands[parameter_number(p)] for p in nested.operands]
    return Instruction(
        nested.name, Opcode.FUSION, nested.shape, operands, nested.attrs, called=list(nested.called)
    )


def compile_and_run(module: Module, inputs: list[np.ndarray]) -> np.ndarray:
    return JitModel.from_compiled(compile_entry(module, "m"))(*inputs)[0]


def test_non_finite_weights_multiply_the_padding() -> None:
    """inf in the depthwise kernel: rows off the input are multiplied in (read from a slot
    of the buffer and zeroed); inf in a padded producer: no row form, the whole tensor goes
    to scratch. NaN lands where the evaluator has it."""
    w_dw = weights(3, 3, 1, 24)
    w_dw[0, 1, 0, 5] = np.inf
    w_dw[2, 2, 0, 7] = np.nan
    w_stem = weights(3, 3, 3, 16)
    w_stem[0, 0, 1, 3] = -np.inf

    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
        x1, x2 = ps
        return [
            _block(b, x1, expand(8, 24), (w_dw, SAME3), relu6),
            _block(b, x2, (w_stem, SAME3), dw3(16), relu6),
        ]

    shapes = [f32(1, 7, 9, 8), f32(1, 8, 6, 3)]
    module = _fused(shapes, body)
    first, second = _nested(module)
    assert expand_depthwise(_view(first), first) is not None
    assert expand_depthwise(_view(second), second) is None
    inputs = _inputs(shapes)
    expected = evaluate(module, inputs)
    got = JitModel.from_compiled(compile_entry(module, "m"))(*inputs)
    for have, want in zip(got, expected, strict=True):
        assert np.isnan(want).any()  # an infinity did meet a zero
        np.testing.assert_array_equal(np.isnan(have), np.isnan(want))
        finite = np.isfinite(want)
        np.testing.assert_allclose(have[finite], want[finite], rtol=0, atol=2e-5 * 6)


def test_the_pass_leaves_shared_and_small_producers_alone() -> None:
    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
        x, y = ps
        w1 = b.constant(weights(1, 1, 8, 16))
        hidden = _biased(b, b.convolution(x, w1, ConvAttrs(ONE, NHWC)), relu6)
        depthwise = ConvAttrs(SAME3, NHWC, feature_group_count=16)
        dw = b.convolution(hidden, b.constant(weights(3, 3, 1, 16)), depthwise)
        small = _block(b, y, expand(8, 16), dw3(16), relu6)
        return [_biased(b, dw, relu6), hidden, small]  # hidden is a result too: a buffer

    module = build([f32(1, 30, 30, 8), f32(1, 20, 30, 8)], body)
    assert Fusion().run(module)
    assert not ExpandFusion().run(module)  # shared; 20 rows is below MIN_ROWS
    assert not _nested(module)
    assert ExpandFusion(min_rows=20).run(module)
    assert len(_nested(module)) == 1


def test_nested_fusions_print_and_parse_back() -> None:
    module = _fused(SHAPES, _mobilenet_body)
    again = parse_module(print_module(module))
    assert print_module(again) == print_module(module)
    for fusion in _nested(again):
        plan = fusion.attrs_as(FusionAttrs).plan
        assert plan is not None and plan.dot is not None
        assert expand_depthwise(_view(fusion), fusion) is not None
