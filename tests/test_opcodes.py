"""The opcode table: one row per opcode, and every stage covers every row.

``SAMPLES`` holds one small module per opcode whose root is that opcode: a new row fails here
until it has a sample, and its sample fails until the parser, printer, verifier (with its
shape rule) and evaluator all handle it.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from pass_testing import random_args

from aotc.hlo import evaluate as ev
from aotc.hlo import shape_inference as si
from aotc.hlo import verify
from aotc.hlo.ir import Dimensions, DotDims, Instruction, Opcode
from aotc.hlo.opcodes import (
    ELEMENTWISE,
    Category,
    ElementTypes,
    OpcodeInfo,
)
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.hlo.text import parse_module, print_module
from aotc.hlo.verify import verify_module

_ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}"
_FUSED = "fused {\n  fp = f32[2,3] parameter(0)\n  ROOT e = f32[2,3] exponential(fp)\n}"
_LESS = """less {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT lt = pred[] compare(lhs, rhs), direction=LT, type=TOTALORDER
}"""
_NEGATE = "negated {\n  np = f32[2,3] parameter(0)\n  ROOT n = f32[2,3] negate(np)\n}"
# A while carry (s32 counter, value): three iterations of value * 2.
_BELOW_3 = """below3 {
  cond_in = (s32[], f32[2,3]) parameter(0)
  cond_i = s32[] get-tuple-element(cond_in), index=0
  three = s32[] constant(3)
  ROOT below = pred[] compare(cond_i, three), direction=LT
}"""
_TWICE = """twice {
  body_in = (s32[], f32[2,3]) parameter(0)
  body_i = s32[] get-tuple-element(body_in), index=0
  one = s32[] constant(1)
  next = s32[] add(body_i, one)
  body_x = f32[2,3] get-tuple-element(body_in), index=1
  doubled = f32[2,3] add(body_x, body_x)
  ROOT body_out = (s32[], f32[2,3]) tuple(next, doubled)
}"""

_EXPLICIT: dict[Opcode, str] = {
    Opcode.PARAMETER: "ROOT r = f32[2,3] parameter(0)",
    Opcode.CONSTANT: "ROOT r = f32[2,2] constant({ { 1, 2 }, { 3, 4 } })",
    Opcode.IOTA: "ROOT r = s32[2,3] iota(), iota_dimension=1",
    Opcode.CONVERT: "x = f32[2,3] parameter(0)\nROOT r = s32[2,3] convert(x)",
    Opcode.IS_FINITE: "x = f32[2,3] parameter(0)\nROOT r = pred[2,3] is-finite(x)",
    Opcode.REDUCE_PRECISION: "x = f32[2,3] parameter(0)\n"
    "ROOT r = f32[2,3] reduce-precision(x), exponent_bits=5, mantissa_bits=10",
    Opcode.BITCAST_CONVERT: "x = f32[2,3] parameter(0)\nROOT r = u32[2,3] bitcast-convert(x)",
    Opcode.COMPARE: "x = f32[2,3] parameter(0)\ny = f32[2,3] parameter(1)\n"
    "ROOT r = pred[2,3] compare(x, y), direction=LT",
    Opcode.COMPLEX: "x = f32[2,3] parameter(0)\ny = f32[2,3] parameter(1)\n"
    "ROOT r = c64[2,3] complex(x, y)",
    Opcode.REAL: "x = c64[2,3] parameter(0)\nROOT r = f32[2,3] real(x)",
    Opcode.IMAG: "x = c64[2,3] parameter(0)\nROOT r = f32[2,3] imag(x)",
    Opcode.FFT: "x = f32[2,8] parameter(0)\n"
    "ROOT r = c64[2,5] fft(x), fft_type=RFFT, fft_length={8}",
    Opcode.SELECT: "p = pred[2,3] parameter(0)\nx = f32[2,3] parameter(1)\n"
    "ROOT r = f32[2,3] select(p, x, x)",
    Opcode.BITCAST: "x = f32[2,3] parameter(0)\nROOT r = s32[3,2] bitcast(x)",
    Opcode.BROADCAST: "x = f32[3] parameter(0)\nROOT r = f32[2,3] broadcast(x), dimensions={1}",
    Opcode.CONCATENATE: "x = f32[2,3] parameter(0)\ny = f32[2,1] parameter(1)\n"
    "ROOT r = f32[2,4] concatenate(x, y), dimensions={1}",
    Opcode.GATHER: "x = f32[5,3] parameter(0)\ni = s32[4] parameter(1)\n"
    "ROOT r = f32[4,3] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, "
    "start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}",
    Opcode.PAD: "x = f32[2,3] parameter(0)\nz = f32[] constant(0)\n"
    "ROOT r = f32[5,8] pad(x, z), padding=1_2_0x0_1_2",
    Opcode.RESHAPE: "x = f32[2,3] parameter(0)\nROOT r = f32[3,2] reshape(x)",
    Opcode.REVERSE: "x = f32[2,3] parameter(0)\nROOT r = f32[2,3] reverse(x), dimensions={1}",
    Opcode.SLICE: "x = f32[2,3] parameter(0)\nROOT r = f32[1,2] slice(x), slice={[1:2], [0:3:2]}",
    Opcode.TRANSPOSE: "x = f32[2,3] parameter(0)\nROOT r = f32[3,2] transpose(x), dimensions={1,0}",
    Opcode.CONVOLUTION: "x = f32[1,4,4,2] parameter(0)\nw = f32[3,3,2,3] parameter(1)\n"
    "ROOT r = f32[1,2,2,3] convolution(x, w), window={size=3x3}, dim_labels=b01f_01io->b01f",
    Opcode.DOT: "x = f32[2,3] parameter(0)\ny = f32[3,4] parameter(1)\n"
    "ROOT r = f32[2,4] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
    Opcode.REDUCE: "x = f32[2,3] parameter(0)\nz = f32[] constant(0)\n"
    "ROOT r = f32[2] reduce(x, z), dimensions={1}, to_apply=add",
    Opcode.REDUCE_WINDOW: "x = f32[2,3] parameter(0)\nz = f32[] constant(0)\n"
    "ROOT r = f32[1,2] reduce-window(x, z), window={size=2x2}, to_apply=add",
    Opcode.FUSION: "x = f32[2,3] parameter(0)\n"
    "ROOT r = f32[2,3] fusion(x), kind=kLoop, calls=fused",
    Opcode.GET_TUPLE_ELEMENT: "x = f32[2,3] parameter(0)\nt = (f32[2,3], f32[2,3]) tuple(x, x)\n"
    "ROOT r = f32[2,3] get-tuple-element(t), index=1",
    Opcode.TUPLE: "x = f32[2,3] parameter(0)\ny = s32[] parameter(1)\n"
    "ROOT r = (f32[2,3], s32[]) tuple(x, y)",
    Opcode.DYNAMIC_SLICE: "x = f32[5,3] parameter(0)\ni = s32[] parameter(1)\n"
    "ROOT r = f32[2,2] dynamic-slice(x, i, i), dynamic_slice_sizes={2,2}",
    Opcode.DYNAMIC_UPDATE_SLICE: "x = f32[5,3] parameter(0)\nu = f32[2,3] parameter(1)\n"
    "i = s32[] parameter(2)\nROOT r = f32[5,3] dynamic-update-slice(x, u, i, i)",
    Opcode.SORT: "x = f32[2,3] parameter(0)\n"
    "ROOT r = f32[2,3] sort(x), dimensions={1}, is_stable=true, to_apply=less",
    Opcode.TOPK: "x = f32[2,3] parameter(0)\n"
    "ROOT r = (f32[2,2], s32[2,2]) topk(x), k=2, largest=true",
    Opcode.RNG_BIT_GENERATOR: "s = u64[2] parameter(0)\n"
    "ROOT r = (u64[2], u32[2,3]) rng-bit-generator(s), algorithm=rng_philox",
    Opcode.SCATTER: "x = f32[5,3] parameter(0)\ni = s32[4,1] parameter(1)\n"
    "u = f32[4,3] parameter(2)\n"
    "ROOT r = f32[5,3] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, "
    "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add",
    Opcode.CALL: "x = f32[2,3] parameter(0)\nROOT r = f32[2,3] call(x), to_apply=fused",
    Opcode.CONDITIONAL: "p = pred[] parameter(0)\nx = f32[2,3] parameter(1)\n"
    "ROOT r = f32[2,3] conditional(p, x, x), true_computation=fused, false_computation=negated",
    Opcode.WHILE: "z = s32[] constant(0)\nx = f32[2,3] parameter(0)\n"
    "c = (s32[], f32[2,3]) tuple(z, x)\n"
    "ROOT r = (s32[], f32[2,3]) while(c), condition=below3, body=twice",
}

_SAMPLE_TYPE = {ElementTypes.NOT_FLOAT: "s32", ElementTypes.INTEGER: "s32"}


def _elementwise_sample(opcode: Opcode) -> str:
    """``r = op(x, ...)`` on operands of a type the row allows, result of the same type."""
    t = _SAMPLE_TYPE.get(opcode.info.operand_types, "f32")
    names = "xyz"[: opcode.info.arity]
    params = "".join(f"{n} = {t}[2,3] parameter({i})\n" for i, n in enumerate(names))
    return f"{params}ROOT r = {t}[2,3] {opcode.value}({', '.join(names)})"


SAMPLES: dict[Opcode, str] = {
    **{op: _elementwise_sample(op) for op in ELEMENTWISE if op.info.attrs is None},
    **_EXPLICIT,
}


def _module_text(opcode: Opcode) -> str:
    body = "\n  ".join(SAMPLES[opcode].splitlines())
    callees = "\n\n".join([_ADD, _LESS, _FUSED, _NEGATE, _BELOW_3, _TWICE])
    return f"HloModule m\n\n{callees}\n\nENTRY main {{\n  {body}\n}}\n"


# ---- the table -------------------------------------------------------------------------------


def test_every_opcode_has_exactly_one_row() -> None:
    # An Enum member with the spelling of an earlier one would silently become its alias.
    assert len(Opcode.__members__) == len(Opcode)
    assert all(isinstance(op.info, OpcodeInfo) for op in Opcode)


@pytest.mark.parametrize("opcode", list(Opcode), ids=lambda op: op.value)
def test_row_is_consistent(opcode: Opcode) -> None:
    info = opcode.info
    arity = {Category.UNARY: 1, Category.BINARY: 2, Category.TERNARY: 3, Category.LEAF: 0}
    if info.category in arity:
        assert (info.arity, info.variadic) == (arity[info.category], False)
    if info.attrs is not None:
        assert callable(info.attrs.to_text) and callable(info.attrs.from_text)
    assert info.commutative <= (info.category is Category.BINARY)
    assert info.operand_types is ElementTypes.ANY or opcode in ELEMENTWISE


def _spellings(opcodes: Iterable[Opcode]) -> list[str]:
    return sorted(op.value for op in opcodes)


def test_every_stage_covers_every_opcode() -> None:
    everything, calling = set(Opcode), {op for op in Opcode if op.info.called}
    assert _spellings(everything - set(si.SHAPE_RULES)) == [], "opcodes without a shape rule"
    evaluated = everything - {Opcode.PARAMETER}  # parameters are bound by the interpreter
    assert _spellings(evaluated ^ set(ev.EVALUATORS)) == [], "opcodes without an evaluator"
    assert _spellings(calling ^ set(verify.CALL_CHECKS)) == [], "no check of called computations"


def test_every_opcode_has_a_sample() -> None:
    assert _spellings(set(Opcode) - set(SAMPLES)) == []


# ---- each opcode through parser, printer, verifier and evaluator -----------------------------


@pytest.mark.parametrize("opcode", list(Opcode), ids=lambda op: op.value)
def test_sample_round_trips_verifies_and_evaluates(opcode: Opcode) -> None:
    module = parse_module(_module_text(opcode))
    root = module.entry.root
    assert root.opcode is opcode
    verify_module(module)
    text = print_module(module)
    again = parse_module(text)
    assert print_module(again) == text
    assert again.entry.root.attrs == root.attrs
    result = ev.evaluate(module, random_args(module))
    results = result if isinstance(result, list) else [result]
    shapes = root.shape.elements if root.is_tuple else (root.shape,)  # type: ignore[union-attr]
    assert [(r.dtype, r.shape) for r in results] == [(s.dtype.numpy, s.dims) for s in shapes]


# ---- typed attribute access ------------------------------------------------------------------


def test_attrs_as_returns_typed_attributes_or_raises() -> None:
    inst = Instruction(
        "b", Opcode.BROADCAST, Shape(PrimitiveType.F32, (2,)), attrs=Dimensions((0,))
    )
    assert inst.attrs_as(Dimensions).dimensions == (0,)
    with pytest.raises(TypeError, match=r"broadcast %b has attributes Dimensions.*not DotDims"):
        inst.attrs_as(DotDims)
