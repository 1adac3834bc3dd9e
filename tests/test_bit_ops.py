"""Bit operations: shifts, popcnt, count-leading-zeros, bitcast-convert (XLA's semantics).

The evaluator is checked against a plain-Python model of XLA's rules on every integer type
(edge cases: shift amounts at and past the width, negative amounts read as unsigned, zero,
all ones); compiled code (one kernel per op, and fused) is checked against the evaluator.
"""

from __future__ import annotations

import numpy as np
import pytest
from c_harness import run_compiled
from codegen_testing import run_and_compare
from fixtures import load_hlo_fixture

from aotc.driver import compile_graph
from aotc.driver import optimize as optimize_module
from aotc.errors import HloError
from aotc.frontend.hlo_input import load_hlo
from aotc.hlo.evaluate import evaluate
from aotc.hlo.text import parse_module
from aotc.hlo.verify import verify_module
from aotc.jit import JitModel

INT_TYPES = ["s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64"]
BINARY = ["shift-left", "shift-right-logical", "shift-right-arithmetic"]
UNARY = ["popcnt", "count-leading-zeros"]


def _edge_values(dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Every pairing of interesting values with interesting shift amounts."""
    info, width = np.iinfo(dtype), dtype.itemsize * 8
    values = [0, 1, 5, info.max, info.min, info.max // 3, (1 << (width - 1)) - 7]
    values += [-1, -2, -(1 << (width - 2))] if info.min < 0 else [info.max - 1]
    amounts = [0, 1, 3, width - 1, width, width + 1, 2 * width]
    amounts += [-1, -width] if info.min < 0 else [info.max]
    x = np.array([v for v in values for _ in amounts], dtype)
    n = np.array([a for _ in values for a in amounts], dtype)
    return x, n


def _python_model(op: str, x: int, n: int, width: int) -> int:
    """XLA's rule on Python ints, as the unsigned bit pattern of the result."""
    mask = (1 << width) - 1
    bits, amount = x & mask, n & mask
    if op == "shift-left":
        return (bits << amount) & mask if amount < width else 0
    if op == "shift-right-logical":
        return bits >> amount if amount < width else 0
    if op == "shift-right-arithmetic":
        value = bits - (1 << width) if bits >> (width - 1) else bits
        return (value >> min(amount, width - 1)) & mask
    if op == "popcnt":
        return bin(bits).count("1")
    assert op == "count-leading-zeros"
    return width - bits.bit_length()


def _module(dtype: str, ops: list[str], size: int) -> str:
    lines = [f"x = {dtype}[{size}] parameter(0)", f"n = {dtype}[{size}] parameter(1)"]
    for k, op in enumerate(ops):
        operands = "x, n" if op in BINARY else "x"
        lines.append(f"r{k} = {dtype}[{size}] {op}({operands})")
    results = ", ".join(f"r{k}" for k in range(len(ops)))
    shapes = ", ".join([f"{dtype}[{size}]"] * len(ops))
    body = "\n  ".join([*lines, f"ROOT out = ({shapes}) tuple({results})"])
    return f"HloModule bits\n\nENTRY main {{\n  {body}\n}}\n"


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_evaluator_follows_xla_rules(dtype: str) -> None:
    np_dtype = np.dtype({"s": "i", "u": "u"}[dtype[0]] + str(int(dtype[1:]) // 8))
    x, n = _edge_values(np_dtype)
    ops = BINARY + UNARY
    got = evaluate(parse_module(_module(dtype, ops, x.size)), [x, n])
    width = np_dtype.itemsize * 8
    unsigned = np.dtype(f"u{np_dtype.itemsize}")
    for op, result in zip(ops, got, strict=True):
        want = [_python_model(op, int(a), int(b), width) for a, b in zip(x, n, strict=True)]
        assert result.dtype == np_dtype, op
        np.testing.assert_array_equal(result.view(unsigned), np.array(want, unsigned), op)


def test_bitcast_convert_reinterprets_bits() -> None:
    text = """HloModule m
ENTRY main {
  x = f32[4] parameter(0)
  i = s32[4] bitcast-convert(x)
  h = f16[4] parameter(1)
  u = u16[4] bitcast-convert(h)
  back = f32[4] bitcast-convert(i)
  ROOT out = (s32[4], u16[4], f32[4]) tuple(i, u, back)
}"""
    x = np.array([1.0, -0.0, np.inf, -2.5], np.float32)
    h = np.array([1.0, -2.0, np.nan, 65504], np.float16)
    i, u, back = evaluate(parse_module(text), [x, h])
    np.testing.assert_array_equal(i, [0x3F800000, -(1 << 31), 0x7F800000, -1071644672])
    np.testing.assert_array_equal(u, h.view(np.uint16))
    np.testing.assert_array_equal(back.view(np.int32), x.view(np.int32))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("f32[4] parameter(0)\n  ROOT r = u8[4] bitcast-convert(p)", "does not match u8\\[4,4\\]"),
        ("u8[3] parameter(0)\n  ROOT r = f32[] bitcast-convert(p)", "needs a last dimension of 4"),
        ("pred[4] parameter(0)\n  ROOT r = s8[4] bitcast-convert(p)", "not defined for pred"),
        ("f32[4] parameter(0)\n  ROOT r = f32[4] popcnt(p)", "needs an integer operand"),
        ("pred[4] parameter(0)\n  ROOT r = pred[4] shift-left(p, p)", "needs an integer"),
    ],
)
def test_verifier_refuses(text: str, message: str) -> None:
    module = parse_module(f"HloModule m\nENTRY main {{\n  p = {text}\n}}")
    with pytest.raises(HloError, match=message):
        verify_module(module)


def _all_types_module(size: int, optimize: bool) -> tuple[object, list[np.ndarray]]:
    """Every op on every integer type, plus float <-> int bitcast-converts, in one module."""
    lines, results, shapes, args = [], [], [], []
    for t, dtype in enumerate(INT_TYPES):
        np_dtype = np.dtype({"s": "i", "u": "u"}[dtype[0]] + str(int(dtype[1:]) // 8))
        x, n = _edge_values(np_dtype)
        x, n = np.resize(x, size), np.resize(n, size)
        lines += [f"x{t} = {dtype}[{size}] parameter({2 * t})"]
        lines += [f"n{t} = {dtype}[{size}] parameter({2 * t + 1})"]
        args += [x, n]
        for k, op in enumerate(BINARY + UNARY):
            operands = f"x{t}, n{t}" if op in BINARY else f"x{t}"
            lines.append(f"r{t}_{k} = {dtype}[{size}] {op}({operands})")
            results.append(f"r{t}_{k}")
            shapes.append(f"{dtype}[{size}]")
    for src, dst, t in [("s32", "f32", 4), ("u64", "f64", 7), ("s16", "f16", 2)]:
        lines.append(f"b{t} = {dst}[{size}] bitcast-convert(x{t})")
        lines.append(f"c{t} = {src}[{size}] bitcast-convert(b{t})")
        results.append(f"c{t}")
        shapes.append(f"{src}[{size}]")
    body = "\n  ".join([*lines, f"ROOT out = ({', '.join(shapes)}) tuple({', '.join(results)})"])
    module = parse_module(f"HloModule bits\n\nENTRY main {{\n  {body}\n}}\n")
    if optimize:
        optimize_module(module)
    return module, args


@pytest.mark.parametrize("optimize", [False, True], ids=["kernels", "fused"])
def test_compiled_bit_ops_match_the_evaluator(optimize: bool) -> None:
    module, args = _all_types_module(90, optimize)
    run_and_compare(module, args, rtol=0)


def test_jax_bits_fixture_matches_jax() -> None:
    """JAX's lowering of lax's bit ops: evaluated, compiled to C and JIT-run, as JAX computed."""
    path, args, expected = load_hlo_fixture("jax_bits")
    evaluated = evaluate(load_hlo(path).module, args)
    model = compile_graph(path).model
    typed, _ = run_compiled(model, args)
    jitted = JitModel.from_compiled(model)(*args)
    for k, want in enumerate(expected):
        for how, got in [("evaluated", evaluated), ("C", typed), ("JIT", jitted)]:
            assert got[k].dtype == want.dtype, (how, k)
            np.testing.assert_array_equal(got[k], want, err_msg=f"{how} result {k}")
