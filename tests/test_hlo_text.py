"""The HLO text printer and parser: round trips, XLA's spellings, XLA/JAX dumps, errors."""

from __future__ import annotations

import time

import numpy as np
import pytest

from aotc.errors import HloError
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.ir import (
    CompareAttrs,
    ComparisonDirection,
    ComparisonType,
    Computation,
    ConvAttrs,
    ConvDims,
    Dimensions,
    DotDims,
    FusionAttrs,
    FusionKind,
    Instruction,
    Module,
    Opcode,
    PadAttrs,
    PadDim,
    ReduceWindowAttrs,
    SliceAttrs,
    TupleIndex,
    Window,
    WindowDim,
)
from aotc.hlo.shape import PrimitiveType, Shape, TupleShape
from aotc.hlo.testing import assert_hlo_equal, hlo_matches
from aotc.hlo.text import format_literal, parse_module, print_module

F32, S32, PRED = PrimitiveType.F32, PrimitiveType.S32, PrimitiveType.PRED


def f32(*dims: int) -> Shape:
    return Shape(F32, dims)


# ---- modules to round-trip -------------------------------------------------------------------


def _data_movement(mb: ModuleBuilder, b: ComputationBuilder) -> list[Instruction]:
    x = b.parameter(0, f32(2, 3), "x")
    zero = b.constant(np.float32(0))
    bcast = b.broadcast(x, (4, 2, 3), (1, 2))
    trans = b.transpose(bcast, (2, 0, 1))
    sliced = b.slice(trans, (0, 1, 0), (3, 4, 2), (1, 2, 1))
    padded = b.pad(x, zero, (PadDim(0, 0, 0), PadDim(1, 2, 1)))
    neg_pad = b.pad(x, zero, (PadDim(-1, 1), PadDim(0, 0)))
    cat = b.concatenate([x, x], 1)
    rev = b.reverse(cat, (0, 1))
    flat = b.reshape(rev, (12,))
    return [sliced, padded, neg_pad, flat]


def _elementwise(mb: ModuleBuilder, b: ComputationBuilder) -> list[Instruction]:
    y = b.parameter(1, f32(2, 3), "y")
    lt = b.compare(y, y, ComparisonDirection.LT)
    sel = b.select(lt, y, b.unary(Opcode.EXP, y))
    clamped = b.clamp(y, sel, b.binary(Opcode.ADD, y, y))
    ints = b.convert(clamped, S32)
    iota = b.iota(Shape(S32, (2, 3)), 1)
    return [b.binary(Opcode.MULTIPLY, ints, iota), b.unary(Opcode.IS_FINITE, y)]


def _contractions(mb: ModuleBuilder, b: ComputationBuilder) -> list[Instruction]:
    a = b.parameter(2, f32(5, 2, 3), "a")
    c = b.parameter(3, f32(5, 3, 4), "c")
    bdot = b.dot(a, c, DotDims((2,), (1,), (0,), (0,)))
    mat = b.dot(b.reshape(a, (10, 3)), b.reshape(c, (3, 20)), DotDims((1,), (0,)))
    zero = b.constant(np.float32(0))
    total = b.reduce([bdot], [zero], [0, 2], mb.reducer(Opcode.ADD, F32))
    big = b.constant(np.float32(-np.inf))
    top = b.reduce([mat], [big], [1], mb.reducer(Opcode.MAXIMUM, F32))
    pair = b.tuple([total, top])
    return [b.get_tuple_element(pair, 1), b.get_tuple_element(pair, 0)]


def _constants(mb: ModuleBuilder, b: ComputationBuilder) -> list[Instruction]:
    values = [
        np.array(True),
        np.array([True, False, True]),
        np.arange(-3, 3, dtype=np.int8),
        np.array([-32768, 32767], np.int16),
        np.array(-(2**31), np.int32),
        np.array([2**63 - 1, -(2**63)], np.int64),
        np.array([0, 255], np.uint8),
        np.array([65535], np.uint16),
        np.array([2**32 - 1], np.uint32),
        np.array([2**64 - 1, 0], np.uint64),
        np.array([0.1, -0.0, 65504, 6e-8, np.inf, -np.inf, np.nan], np.float16),
        np.array([0.1, 1 / 3, 3.4028235e38, 1e-45, -np.inf, np.nan, 1e10], np.float32),
        np.array([0.1, 1 / 3, 1.7976931348623157e308, 5e-324, np.inf, np.nan], np.float64),
        np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7,
        np.zeros((2, 0, 3), np.float32),
        np.zeros((0,), np.int32),
        np.array(1.5, np.float32),
    ]
    return [b.constant(v) for v in values]


def full_module() -> Module:
    mb = ModuleBuilder("everything")
    b = mb.computation("main")
    results = [
        *_data_movement(mb, b),
        *_elementwise(mb, b),
        *_contractions(mb, b),
        *_constants(mb, b),
    ]
    return mb.build(b.build(b.tuple(results)))


def _inst(
    name: str,
    opcode: Opcode,
    shape: Shape,
    operands: list[Instruction],
    attrs: object = None,
    called: list[Computation] | None = None,
) -> Instruction:
    return Instruction(name, opcode, shape, operands, attrs, called=called or [])  # type: ignore[arg-type]


def windowed_module() -> Module:
    """Convolution, reduce-window and fusion: built by hand (the builder has no helpers yet)."""
    mb = ModuleBuilder("windows")
    add = mb.reducer(Opcode.ADD, F32)
    fb = mb.computation("fused_computation")
    p = fb.parameter(0, f32(1, 4, 4, 2), "param_0")
    fused = fb.build(fb.unary(Opcode.TANH, p))
    b = mb.computation("main")
    img = b.parameter(0, f32(1, 5, 5, 2), "img")
    ker = b.parameter(1, f32(2, 2, 1, 4), "ker")
    dims = ConvDims(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2))
    window = Window((WindowDim(2, 2, 0, 1, 1, 2), WindowDim(2, 1, 1, 0, 1, 1)))
    conv = b.add(
        _inst(
            "conv",
            Opcode.CONVOLUTION,
            f32(1, 2, 5, 4),
            [img, ker],
            ConvAttrs(window, dims, feature_group_count=2),
        )
    )
    zero = b.constant(np.float32(0))
    pool_window = Window((WindowDim(1), WindowDim(2, 2), WindowDim(2, 1), WindowDim(1)))
    pool = b.add(
        _inst(
            "pool",
            Opcode.REDUCE_WINDOW,
            f32(1, 2, 4, 2),
            [img, zero],
            ReduceWindowAttrs(pool_window),
            [add],
        )
    )
    flat_dims = ConvDims(0, 1, (), 0, 1, (), 0, 1, ())
    plain = b.add(
        _inst(
            "conv.1x1",
            Opcode.CONVOLUTION,
            f32(1, 1),
            [b.reshape(ker, (1, 16)), b.reshape(ker, (16, 1))],
            ConvAttrs(Window(()), flat_dims),
        )
    )
    z = b.parameter(2, f32(1, 4, 4, 2), "z")
    fusion = b.add(
        _inst("fusion", Opcode.FUSION, f32(1, 4, 4, 2), [z], FusionAttrs(FusionKind.LOOP), [fused])
    )
    module = mb.build(b.build(b.tuple([conv, pool, plain, fusion])))
    module.add_computation(fused)
    return module


ROUND_TRIP_MODULES = [full_module, windowed_module]


def _assert_same_structure(a: Module, b: Module) -> None:
    assert a.name == b.name
    assert [c.name for c in a.computations] == [c.name for c in b.computations]
    for ca, cb in zip(a.computations, b.computations, strict=True):
        assert ca.root.name == cb.root.name
        for ia, ib in zip(ca.instructions, cb.instructions, strict=True):
            assert (ia.name, ia.opcode, ia.shape) == (ib.name, ib.opcode, ib.shape)
            assert ia.attrs == ib.attrs
            assert [o.name for o in ia.operands] == [o.name for o in ib.operands]
            assert [c.name for c in ia.called] == [c.name for c in ib.called]
            _assert_same_literal(ia.literal, ib.literal)


def _assert_same_literal(a: np.ndarray | None, b: np.ndarray | None) -> None:
    if a is None or b is None:
        assert a is b
        return
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes(), (a, b)
    assert not b.flags.writeable


@pytest.mark.parametrize("make", ROUND_TRIP_MODULES)
def test_print_parse_print_is_identity(make) -> None:
    module = make()
    text = print_module(module)
    parsed = parse_module(text)
    assert print_module(parsed) == text
    _assert_same_structure(module, parsed)


@pytest.mark.parametrize("make", ROUND_TRIP_MODULES)
def test_verbose_style_parses_to_the_same_module(make) -> None:
    module = make()
    verbose = print_module(module, operand_shapes=True)
    assert " %" in verbose
    assert print_module(parse_module(verbose)) == print_module(module)


def test_float_literals_round_trip_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    for dtype, bits in [(np.float16, np.uint16), (np.float32, np.uint32), (np.float64, np.uint64)]:
        raw = rng.integers(0, np.iinfo(bits).max, 20000, dtype=bits, endpoint=True)
        values = raw.view(dtype)
        values = values[~np.isnan(values)]
        shape = Shape(PrimitiveType.from_numpy(dtype), values.shape)
        text = format_literal(values)
        from aotc.hlo.text import parse_literal

        assert parse_literal(text, shape).tobytes() == values.tobytes()


# ---- XLA's spellings -------------------------------------------------------------------------


def _lines(module: Module) -> list[str]:
    return [line.strip() for line in print_module(module).splitlines()]


def test_attribute_spellings_follow_xla() -> None:
    lines = _lines(full_module())
    expected = [
        "HloModule everything, entry_computation_layout={(f32[2,3]{1,0},f32[2,3]{1,0},"
        "f32[5,2,3]{2,1,0},f32[5,3,4]{2,1,0})->(",
        "broadcast = f32[4,2,3]{2,1,0} broadcast(x), dimensions={1,2}",
        "transpose = f32[3,4,2]{2,1,0} transpose(broadcast), dimensions={2,0,1}",
        "slice = f32[3,2,2]{2,1,0} slice(transpose), slice={[0:3], [1:4:2], [0:2]}",
        "pad = f32[2,8]{1,0} pad(x, constant), padding=0_0_0x1_2_1",
        "pad.1 = f32[2,3]{1,0} pad(x, constant), padding=-1_1x0_0",
        "concatenate = f32[2,6]{1,0} concatenate(x, x), dimensions={1}",
        "compare = pred[2,3]{1,0} compare(y, y), direction=LT",
        "iota = s32[2,3]{1,0} iota(), iota_dimension=1",
        "dot = f32[5,2,4]{2,1,0} dot(a, c), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
        "rhs_batch_dims={0}, rhs_contracting_dims={1}",
        "dot.1 = f32[10,20]{1,0} dot(reshape.1, reshape.2), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}",
        "reduce = f32[2]{0} reduce(dot, constant.1), dimensions={0,2}, to_apply=add_f32",
        "constant.2 = f32[] constant(-inf)",
        "get-tuple-element = f32[10]{0} get-tuple-element(tuple), index=1",
        "constant.3 = pred[] constant(true)",
        "constant.4 = pred[3]{0} constant({true, false, true})",
        "constant.7 = s32[] constant(-2147483648)",
        "constant.12 = u64[2]{0} constant({18446744073709551615, 0})",
        "constant.14 = f32[7]{0} constant({0.1, 0.33333334, 3.4028235e+38, 1e-45, -inf, nan, "
        "1e+10})",
        "constant.16 = f32[2,3,4]{2,1,0} constant({ { { 0, 0.14285715, 0.2857143, 0.42857143 }, ",
        "constant.17 = f32[2,0,3]{2,1,0} constant({ {}, {} })",
        "constant.18 = s32[0]{0} constant({})",
        "constant.19 = f32[] constant(1.5)",
    ]
    for want in expected:
        assert any(line.startswith(want) for line in lines), f"{want}\nnot in\n" + "\n".join(lines)


def test_window_conv_and_fusion_spellings() -> None:
    lines = _lines(windowed_module())
    expected = [
        "conv = f32[1,2,5,4]{3,2,1,0} convolution(img, ker), window={size=2x2 stride=2x1 "
        "pad=0_1x1_0 rhs_dilate=2x1}, dim_labels=b01f_01io->b01f, feature_group_count=2",
        "pool = f32[1,2,4,2]{3,2,1,0} reduce-window(img, constant), "
        "window={size=1x2x2x1 stride=1x2x1x1}, to_apply=add_f32",
        "conv.1x1 = f32[1,1]{1,0} convolution(reshape, reshape.1), dim_labels=bf_io->bf",
        "fusion = f32[1,4,4,2]{3,2,1,0} fusion(z), kind=kLoop, calls=fused_computation",
        "fused_computation {",
    ]
    for want in expected:
        assert want in lines, f"{want}\nnot in\n" + "\n".join(lines)


def test_large_constants_are_elided_only_when_asked() -> None:
    b = ComputationBuilder("main")
    small = b.constant(np.arange(8, dtype=np.float32))
    large = b.constant(np.arange(9, dtype=np.float32))
    module = Module("m", b.build(b.tuple([small, large])))
    text = print_module(module, print_large_constants=False)
    assert "constant({0, 1, 2, 3, 4, 5, 6, 7})" in text
    assert "constant.1 = f32[9]{0} constant({...})" in text
    assert "{...}" not in print_module(module)


def test_printing_a_100mb_constant_elided_is_fast() -> None:
    b = ComputationBuilder("main")
    weights = b.constant(np.zeros(25_000_000, np.float32))
    module = Module("big", b.build(b.unary(Opcode.NEGATE, weights)))
    start = time.perf_counter()
    text = print_module(module, print_large_constants=False)
    assert time.perf_counter() - start < 0.5
    assert len(text) < 1000


def test_printing_and_parsing_a_million_elements_is_reasonable() -> None:
    values = np.random.default_rng(1).standard_normal((1000, 1000)).astype(np.float32)
    b = ComputationBuilder("main")
    module = Module("m", b.build(b.constant(values)))
    start = time.perf_counter()
    parsed = parse_module(print_module(module))
    assert time.perf_counter() - start < 20
    _assert_same_literal(module.entry.root.literal, parsed.entry.root.literal)


# ---- XLA, JAX and TensorFlow dumps -----------------------------------------------------------

JAX_REDUCE = """\
HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[8,128]{1,0:T(8,128)})->f32[8]{0}}, allow_spmd_sharding_propagation_to_output={true}, frontend_attributes={fingerprint_before_lhs="d41d8"}

%region_0.1 (Arg_0.2: f32[], Arg_1.3: f32[]) -> f32[] {
  %Arg_0.2 = f32[] parameter(0), metadata={op_name="jit(f)/jit(main)/reduce_sum[axes=(1,)]"}
  %Arg_1.3 = f32[] parameter(1), metadata={op_name="jit(f)/jit(main)/reduce_sum[axes=(1,)]"}
  ROOT %add.4 = f32[] add(f32[] %Arg_0.2, f32[] %Arg_1.3), metadata={op_name="jit(f)/jit(main)/reduce_sum[axes=(1,)]" source_file="/tmp/f.py" source_line=4}
}

ENTRY %main.8 (Arg_0.1: f32[8,128]) -> f32[8] {
  %Arg_0.1 = f32[8,128]{1,0:T(8,128)} parameter(0), sharding={replicated}
  /* a comment */ %constant.5 = f32[] constant(0) // another
  %multiply.1 = f32[8,128]{1,0} multiply(f32[8,128]{1,0} %Arg_0.1, f32[8,128]{1,0} %Arg_0.1), backend_config="{\\"flag\\": \\"x,y}\\"}"
  ROOT %reduce.7 = f32[8]{0} reduce(f32[8,128]{1,0} %multiply.1, f32[] %constant.5), dimensions={1}, to_apply=%region_0.1, metadata={op_name="jit(f)/jit(main)/reduce_sum[axes=(1,)]" source_file="/tmp/f.py" source_line=4}
}
"""  # noqa: E501


def test_parses_a_jax_dump() -> None:
    module = parse_module(JAX_REDUCE)
    assert module.name == "jit_f"
    assert [c.name for c in module.computations] == ["region_0.1", "main.8"]
    entry = module.entry
    assert entry.name == "main.8" and entry.root.name == "reduce.7"
    reduce = entry.root
    assert reduce.opcode is Opcode.REDUCE and reduce.attrs == Dimensions((1,))
    assert reduce.called == [module.computations[0]]
    assert [o.name for o in reduce.operands] == ["multiply.1", "constant.5"]
    assert reduce.shape == f32(8)
    assert [p.name for p in entry.parameters] == ["Arg_0.1"]
    assert module.computations[0].root.operands == module.computations[0].parameters


XLA_OLD_STYLE = """\
HloModule Pad_and_slice

ENTRY %entry (input: f32[1,25,7,7], p: (f32[2], s32[])) -> (f32[1,25,17,11], f32[2], f32[]) {
  %input = f32[1,25,7,7]{3,2,1,0} parameter(0)
  %p = (f32[2]{0}, s32[]) parameter(1)
  %gte = f32[2]{0} get-tuple-element((f32[2]{0}, s32[]) %p), index=0
  %constant = f32[] constant(-5.123)
  %pad = f32[1,25,17,11]{3,2,1,0} pad(f32[1,25,7,7]{3,2,1,0} %input, f32[] %constant), padding=0_0_0x0_0_0x2_2_1x2_2_0
  %scalar = f32[] slice(f32[] %constant), slice={}
  %window = f32[1,25,7,7]{3,2,1,0} reduce-window(f32[1,25,7,7]{3,2,1,0} %input, f32[] %constant), window={size=1x1x3x3 pad=0_0x0_0x1_1x1_1 rhs_reversal=0x0x0x0}, to_apply=%max
  %compare = pred[2]{0} compare(f32[2]{0} %gte, f32[2]{0} %gte), direction=GE, type=TOTALORDER
  %big = f32[3,2,1,1]{3,2,1,0} constant({ { /*i0=0*/ { /*i1=0*/ {-1} }, { /*i1=1*/ {4.1} } }, { /*i0=1*/ { /*i1=0*/ {2} }, { /*i1=1*/ {4.1} } }, { /*i0=2*/ { /*i1=0*/ {5} }, { /*i1=1*/ {4.4} } } })
  %preds = pred[2,3]{1,0} constant({ { 0, 1, 0 }, { 1, 0, 1 } })
  ROOT %tuple = (f32[1,25,17,11]{3,2,1,0}, f32[2]{0}, /*index=2*/f32[]) tuple(%pad, %gte, %scalar)
}

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %maximum = f32[] maximum(f32[] %a, f32[] %b)
}
"""  # noqa: E501


def test_parses_xla_style_with_callee_after_use() -> None:
    module = parse_module(XLA_OLD_STYLE)
    entry = module.entry
    assert entry.name == "entry" and module.computations[-1] is entry
    by_name = {i.name: i for i in entry.instructions}
    assert by_name["pad"].attrs == PadAttrs(
        (PadDim(0, 0), PadDim(0, 0), PadDim(2, 2, 1), PadDim(2, 2))
    )
    assert by_name["scalar"].attrs == SliceAttrs((), (), ())
    assert by_name["gte"].attrs == TupleIndex(0)
    assert by_name["p"].shape == TupleShape((f32(2), Shape(S32)))
    total = ComparisonType.TOTALORDER  # kept: it decides NaN and -0 (once skipped, unlike XLA)
    assert by_name["compare"].attrs == CompareAttrs(ComparisonDirection.GE, total)
    window = by_name["window"].attrs
    assert isinstance(window, ReduceWindowAttrs)
    assert window.window.dims[2] == WindowDim(3, 1, 1, 1)
    assert by_name["window"].called[0].name == "max"
    assert by_name["big"].literal.reshape(-1).tolist() == pytest.approx([-1, 4.1, 2, 4.1, 5, 4.4])
    assert by_name["preds"].literal.tolist() == [[False, True, False], [True, False, True]]
    assert by_name["constant"].literal == np.float32(-5.123)


def test_parses_text_without_header_and_with_forward_references() -> None:
    module = parse_module("""
    ENTRY main {
      ROOT r = f32[4] multiply(a, a)
      a = f32[4] add(p, p)
      p = f32[4] parameter(0)
    }""")
    assert module.name == "module"
    root = module.entry.root
    assert root.name == "r" and root.operands[0].operands[0].name == "p"


def test_last_computation_is_entry_without_entry_marker() -> None:
    module = parse_module(
        "c1 {\n ROOT p = f32[] parameter(0)\n}\nc2 {\n ROOT q = s32[] parameter(0)\n}"
    )
    assert module.entry.name == "c2"


# ---- errors ----------------------------------------------------------------------------------

ERRORS = {
    "unknown opcode": (
        "ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT s = f32[2] custom-call(p)\n}",
        r"<hlo>:3:19: unsupported opcode\(s\) 'custom-call' \(1x, first at line 3\)",
    ),
    "undefined operand": (
        "ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT s = f32[2] add(p, q)\n}",
        r"<hlo>:3:26: operand 'q' is not defined in computation 'e'",
    ),
    "elided constant": (
        "ENTRY e {\n  ROOT c = f32[9] constant({...})\n}",
        r"<hlo>:2:28: bad constant .*elided",
    ),
    "dynamic shape": (
        "ENTRY e {\n  ROOT p = f32[<=4] parameter(0)\n}",
        r"<hlo>:2:12: dynamic shapes are unsupported",
    ),
    "unbounded dynamic shape": (
        "ENTRY e {\n  ROOT p = f32[?,4] parameter(0)\n}",
        r"<hlo>:2:12: dynamic shapes are unsupported",
    ),
    "truncated": (
        "HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT s = f32[2] add(p,",
        r"<hlo>:5:25: expected an operand name, found end of input",
    ),
    "truncated body": (
        "ENTRY e {\n  ROOT p = f32[2] parameter(0)\n",
        r"<hlo>:3:1: expected an instruction name or '}', found end of input",
    ),
    "mismatched paren": (
        "ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT s = f32[2] add(p, p}\n}",
        r"<hlo>:3:27: expected ',' or '\)', found '}'",
    ),
    "mismatched attribute bracket": (
        'ENTRY e {\n  ROOT p = f32[2] parameter(0), metadata={op_name="x"]\n}',
        r"<hlo>:2:54: '\]' does not close '{'",
    ),
    "token": (
        "ENTRY e {\n  ROOT t = token[] after-all()\n}",
        r"<hlo>:2:12: element type 'token' in token\[\] is unsupported",
    ),
    "f8e4m3fn": (
        "ENTRY e {\n  ROOT p = f8e4m3fn[2] parameter(0)\n}",
        r"<hlo>:2:12: element type 'f8e4m3fn'",
    ),
    "missing computation": (
        "ENTRY e {\n  p = f32[2] parameter(0)\n  z = f32[] constant(0)\n"
        "  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=%sum\n}",
        r"<hlo>:4:57: computation 'sum' is not defined",
    ),
    "missing attribute": (
        "ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT b = f32[3,2] broadcast(p)\n}",
        r"<hlo>:3:8: broadcast 'b' needs a 'dimensions' attribute",
    ),
    "bad attribute": (
        "ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT c = pred[2] compare(p, p), direction=XX\n}",
        r"<hlo>:3:45: bad 'direction' value 'XX'",
    ),
    "window reversal": (
        "ENTRY e {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
        "  ROOT r = f32[4] reduce-window(p, z), window={size=2 rhs_reversal=1}, to_apply=e\n}",
        r"<hlo>:4:47: .*window field 'rhs_reversal' is unsupported",
    ),
    "constant size": (
        "ENTRY e {\n  ROOT c = f32[3] constant({1, 2})\n}",
        r"<hlo>:2:28: .*has 2 values but f32\[3\] has 3",
    ),
    "constant value": (
        "ENTRY e {\n  ROOT c = s8[2] constant({1, 300})\n}",
        r"<hlo>:2:27: bad constant .*not a valid int8",
    ),
    "duplicate name": (
        "ENTRY e {\n  p = f32[2] parameter(0)\n  p = f32[2] parameter(1)\n"
        "  ROOT r = f32[2] add(p, p)\n}",
        r"<hlo>:3:3: instruction 'p' is defined twice",
    ),
    "two roots": (
        "ENTRY e {\n  ROOT p = f32[2] parameter(0)\n  ROOT q = f32[2] parameter(1)\n}",
        r"<hlo>:3:8: computation 'e' has more than one ROOT",
    ),
    "unterminated comment": (
        "ENTRY e {\n  /* never closed\n  ROOT p = f32[2] parameter(0)\n}",
        r"<hlo>:2:3: expected an instruction name or '}', found '/\*'",
    ),
    "empty": ("  // nothing\n", r"<hlo>:2:1: expected a computation"),
    "tuple nested 3000 deep": (  # was a RecursionError
        "ENTRY e {\n  ROOT p = " + "(" * 3000 + "f32[]" + ")" * 3000 + " parameter(0)\n}",
        r"<hlo>:2:77: tuple shape nested deeper than 64 levels",
    ),
}


@pytest.mark.parametrize("case", ERRORS)
def test_errors_name_line_and_column(case: str) -> None:
    text, message = ERRORS[case]
    with pytest.raises(HloError, match=message):
        parse_module(text)


def test_error_names_the_source() -> None:
    with pytest.raises(HloError, match=r"^model\.hlo:1:1: "):
        parse_module("}", "model.hlo")


# ---- assert_hlo_equal ------------------------------------------------------------------------


def test_assert_hlo_equal_ignores_layouts_sigils_and_spacing() -> None:
    module = parse_module(JAX_REDUCE)
    assert_hlo_equal(
        module,
        """
    region_0.1 {
      Arg_0.2 = f32[] parameter(0)
      Arg_1.3 = f32[] parameter(1)
      ROOT add.4 = f32[] add(Arg_0.2,Arg_1.3)
    }
    ENTRY main.8 {
      %Arg_0.1 = f32[8,128] parameter(0)
      constant.5 = f32[] constant(0)
      multiply.1 = f32[8,128] multiply(Arg_0.1, Arg_0.1)
      ROOT reduce.7 = f32[8]{0} reduce(multiply.1, constant.5), dimensions={1}, to_apply=region_0.1
    }""",
    )


def test_assert_hlo_equal_wildcards_and_failures() -> None:
    module = parse_module(JAX_REDUCE)
    assert_hlo_equal(module, "... ROOT reduce.7 = f32[8] reduce(...), dimensions={1}, ... }")
    assert_hlo_equal(module, "HloModule jit_f, ...")
    assert_hlo_equal(module.entry, "main.8 { ... }")
    assert not hlo_matches("ENTRY e { ROOT a = f32[] add(x, y) }", "... add(y, x) ...")
    with pytest.raises(AssertionError, match="HLO differs"):
        assert_hlo_equal(module, "... ROOT reduce.7 = f32[8] reduce(...), dimensions={0}, ...")
