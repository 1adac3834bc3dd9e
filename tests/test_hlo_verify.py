"""The verifier: a valid module passes; each broken one names the instruction at fault."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from aotc.errors import HloError
from aotc.hlo import shape_inference as si
from aotc.hlo.builder import ModuleBuilder
from aotc.hlo.ir import (
    ComparisonDirection,
    ConvAttrs,
    ConvDims,
    Dimensions,
    DotDims,
    FusionAttrs,
    FusionKind,
    Instruction,
    Module,
    Opcode,
    PadDim,
    ParameterAttrs,
    ReduceWindowAttrs,
    SliceAttrs,
    Window,
    WindowDim,
)
from aotc.hlo.shape import PrimitiveType, Shape, TupleShape
from aotc.hlo.verify import verify_module

F32, S32, PRED = PrimitiveType.F32, PrimitiveType.S32, PrimitiveType.PRED


def valid_module() -> Module:
    """Parameters, constant, broadcast, dot, reduce, compare/select, pad, slice, conv,
    reduce-window, fusion and a tuple root: every instruction named for the tests below."""
    mb = ModuleBuilder("m")
    b = mb.computation("main")
    x = b.parameter(0, Shape(F32, (2, 3)), "x")
    w = b.parameter(1, Shape(F32, (3, 4)), "w")
    bias = b.constant(np.arange(4, dtype=np.float32))
    dot = b.dot(x, w, DotDims((1,), (0,)))
    biased = b.binary(Opcode.ADD, dot, b.broadcast(bias, (2, 4), (1,)))
    zero = b.constant(0, F32)
    relu = b.select(
        b.compare(biased, b.broadcast(zero, (2, 4), ()), ComparisonDirection.GT),
        biased,
        b.broadcast(zero, (2, 4), ()),
    )
    total = b.reduce([relu], [zero], [1], mb.reducer(Opcode.ADD, F32))
    padded = b.pad(relu, zero, (PadDim(1, 1), PadDim(0, -1, 1)))
    sliced = b.slice(padded, (0, 0), (4, 6), (2, 3))
    image = b.reshape(relu, (1, 2, 4, 1))
    kernel = b.constant(np.ones((2, 2, 1, 3), np.float32))
    conv_attrs = ConvAttrs(
        Window((WindowDim(2, 1, 0, 1), WindowDim(2, 2, 0, 0))),
        ConvDims(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2)),
    )
    conv_shape = si.infer_convolution_shape(image.array_shape, kernel.array_shape, conv_attrs)
    conv = b.add(Instruction("conv", Opcode.CONVOLUTION, conv_shape, [image, kernel], conv_attrs))
    window = Window((WindowDim(2, 1, 0, 1), WindowDim(3, 1, 1, 1)))
    pool = b.add(
        Instruction(
            "pool",
            Opcode.REDUCE_WINDOW,
            si.infer_reduce_window_shape([relu.array_shape], [Shape(F32)], window),
            [relu, zero],
            ReduceWindowAttrs(window),
            called=[mb.reducer(Opcode.MAXIMUM, F32)],
        )
    )
    fb = mb.computation("fused")
    fp = fb.parameter(0, Shape(F32, (2,)), "fp")
    fused = fb.build(fb.unary(Opcode.EXP, fp))
    fusion = b.add(
        Instruction(
            "fusion",
            Opcode.FUSION,
            Shape(F32, (2,)),
            [total],
            FusionAttrs(FusionKind.LOOP),
            called=[fused],
        )
    )
    root = b.tuple([fusion, sliced, conv, pool, b.iota(Shape(S32, (3,)), 0)])
    module = mb.build(b.build(root))
    module.add_computation(fused)
    return module


def find(module: Module, name: str) -> Instruction:
    return next(i for c in module.computations for i in c.instructions if i.name == name)


def assert_rejected(module: Module, where: str, problem: str) -> None:
    with pytest.raises(HloError, match=problem) as info:
        verify_module(module)
    assert str(info.value).startswith(f"verifier: {where}: "), str(info.value)


def test_valid_module_passes() -> None:
    verify_module(valid_module())


def test_argmax_reducer_passes() -> None:
    mb = ModuleBuilder("argmax")
    rb = mb.computation("reducer")
    av, ai = rb.parameter(0, Shape(F32), "av"), rb.parameter(1, Shape(S32), "ai")
    bv, bi = rb.parameter(2, Shape(F32), "bv"), rb.parameter(3, Shape(S32), "bi")
    gt = rb.compare(av, bv, ComparisonDirection.GT)
    reducer = rb.build(rb.tuple([rb.select(gt, av, bv), rb.select(gt, ai, bi)]))
    b = mb.computation("main")
    x = b.parameter(0, Shape(F32, (4, 5)), "x")
    inits = [b.constant(-np.inf, F32), b.constant(0, S32)]
    r = b.reduce([x, b.iota(Shape(S32, (4, 5)), 1)], inits, [1], reducer)
    verify_module(Module("argmax", b.build(r), [reducer]))


Mutation = Callable[[Module], None]


def set_shape(name: str, shape: Shape) -> Mutation:
    return lambda m: setattr(find(m, name), "shape", shape)


def set_attrs(name: str, attrs: object) -> Mutation:
    return lambda m: setattr(find(m, name), "attrs", attrs)


def swap_first(name: str, other: str) -> Mutation:
    def mutate(m: Module) -> None:
        insts = m.entry.instructions
        i, j = insts.index(find(m, name)), insts.index(find(m, other))
        insts[i], insts[j] = insts[j], insts[i]

    return mutate


def use_foreign_operand(m: Module) -> None:
    find(m, "add").operands[1] = find(m, "fp")


def make_cycle(m: Module) -> None:
    find(m, "dot").operands[0] = find(m, "add")


def drop_root(m: Module) -> None:
    m.entry.root = find(m, "fp")


def duplicate_name(m: Module) -> None:
    find(m, "add").name = "dot"


def bad_reducer_arity(m: Module) -> None:
    add_comp = find(m, "reduce").called[0]
    add_comp.instructions.append(
        Instruction("extra", Opcode.PARAMETER, Shape(F32), attrs=ParameterAttrs(2))
    )


def bad_reducer_types(m: Module) -> None:
    for inst in find(m, "reduce").called[0].instructions:  # a consistent s32 reducer
        inst.shape = Shape(S32)


def fusion_not_in_module(m: Module) -> None:
    m.computations = [c for c in m.computations if c.name != "fused"]


def negative_dims(m: Module) -> None:
    find(m, "x").shape = Shape(F32, (2, -3))


def wrong_literal(m: Module) -> None:
    find(m, "constant").literal = np.arange(5, dtype=np.float32)


def call_cycle(m: Module) -> None:
    fused = find(m, "fusion").called[0]
    inner = fused.instructions[0]
    fused.instructions.append(
        Instruction(
            "again",
            Opcode.FUSION,
            Shape(F32, (2,)),
            [inner],
            FusionAttrs(FusionKind.LOOP),
            called=[fused],
        )
    )


@pytest.mark.parametrize(("mutate", "where", "problem"), [
    (set_shape("add", Shape(F32, (4, 2))), "main/add", r"does not match f32\[2,4\], inferred"),
    (set_shape("dot", Shape(S32, (2, 4))), "main/dot", r"s32\[2,4\] does not match f32\[2,4\]"),
    (set_shape("compare", Shape(F32, (2, 4))), "main/compare", r"f32\[2,4\] does not match pred"),
    (set_shape("slice", Shape(F32, (2, 3))), "main/slice", r"does not match f32\[2,2\]"),
    (set_shape("conv", Shape(F32, (1, 2, 4, 3))), "main/conv", r"f32\[1,2,2,3\], inferred"),
    (set_shape("pool", Shape(F32, (1, 4))), "main/pool", r"f32\[2,4\], inferred"),
    (set_shape("fusion", Shape(F32, (3,))), "main/fusion", r"does not match f32\[2\]"),
    (use_foreign_operand, "main/add", "operand fp belongs to computation fused"),
    (swap_first("dot", "add"), "main/add", "operand dot is used before it is defined"),
    (make_cycle, "main/dot", "operand add is used before it is defined"),
    (drop_root, "main/fp", "root is not an instruction of this computation"),
    (duplicate_name, "main/dot", "name is used twice in the module"),
    (set_attrs("w", ParameterAttrs(2)), "main/w", "parameter number 2 leaves a gap"),
    (set_attrs("w", ParameterAttrs(0)), "main/w", "parameter number 0 is also used by x"),
    (set_attrs("broadcast", SliceAttrs((0,), (1,), (1,))), "main/broadcast",
     "broadcast needs Dimensions attrs, got SliceAttrs"),
    (set_attrs("add", Dimensions((0,))), "main/add", "add takes no attrs"),
    (set_attrs("reduce", Dimensions((0,))), "main/reduce", r"does not match f32\[4\]"),
    (bad_reducer_arity, "main/reduce", r"reducer add_f32 takes \(f32\[\], f32\[\], f32\[\]\)"),
    (bad_reducer_types, "main/reduce",
     r"reducer add_f32 takes \(s32\[\], s32\[\]\), must take \(f32\[\], f32\[\]\)"),
    (fusion_not_in_module, "main/fusion", "calls computation fused, which is not in the module"),
    (negative_dims, "main/x", r"shape f32\[2,-3\] has a negative dimension"),
    (wrong_literal, "main/constant", r"literal float32\[5\] does not match the shape f32\[4\]"),
    (call_cycle, "fused/again", "calls fused, which calls it back: fused -> fused"),
])  # fmt: skip
def test_broken_module_is_rejected(mutate: Mutation, where: str, problem: str) -> None:
    module = valid_module()
    mutate(module)
    assert_rejected(module, where, problem)


def test_operand_count_and_called_computations() -> None:
    module = valid_module()
    find(module, "add").operands.append(find(module, "x"))
    assert_rejected(module, "main/add", "add takes 2 operands, got 3")
    module = valid_module()
    find(module, "add").called = [find(module, "fusion").called[0]]
    assert_rejected(module, "main/add", "add calls no computation")


def test_reducer_must_return_scalar() -> None:
    module = valid_module()
    reducer = find(module, "reduce").called[0]
    lhs = find(module, "lhs")
    wide = Instruction("wide", Opcode.BROADCAST, Shape(F32, (2,)), [lhs], Dimensions(()))
    reducer.instructions.append(wide)
    reducer.root = wide
    assert_rejected(module, "main/reduce", r"reducer add_f32 returns f32\[2\], must return f32\[\]")


def test_fusion_parameters_must_match_operands() -> None:
    module = valid_module()
    find(module, "fp").shape = Shape(F32, (3,))
    find(module, "exponential").shape = Shape(F32, (3,))
    assert_rejected(
        module,
        "main/fusion",
        r"fused computation fused takes \(f32\[3\]\), operands are \(f32\[2\]\)",
    )


def test_tuple_shapes_are_checked() -> None:
    module = valid_module()
    root = module.entry.root
    assert isinstance(root.shape, TupleShape)
    root.shape = TupleShape(root.shape.elements[:-1])
    assert_rejected(module, "main/tuple", "does not match")


def test_dtype_rules() -> None:
    mb = ModuleBuilder("m")
    b = mb.computation("main")
    x = b.parameter(0, Shape(S32, (3,)), "x")
    bad = b.add(Instruction("exp", Opcode.EXP, Shape(S32, (3,)), [x]))
    assert_rejected(mb.build(b.build(bad)), "main/exp", "exponential needs a floating-point")
    mb = ModuleBuilder("m")
    b = mb.computation("main")
    p = b.parameter(0, Shape(PRED, (3,)), "p")
    bad = b.add(Instruction("sub", Opcode.SUBTRACT, Shape(PRED, (3,)), [p, p]))
    assert_rejected(mb.build(b.build(bad)), "main/sub", "subtract is not defined for pred")
