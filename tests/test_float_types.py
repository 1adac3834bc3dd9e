"""bf16 (computed through f32, rounded after every op) and ``reduce-precision``.

The evaluator is checked against ml_dtypes' own bfloat16 rounding and numpy's float16;
compiled code (kernels and fused) against the evaluator, bit for bit where both round the same
correctly rounded f32 result; a JAX bf16 model (``jax_bf16``) against what JAX computed.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from c_harness import run_compiled
from codegen_testing import compile_entry
from fixtures import BF16, assert_close, load_hlo_fixture

from aotc.driver import compile_graph, optimize
from aotc.frontend.hlo_input import load_hlo
from aotc.hlo.evaluate import evaluate
from aotc.hlo.text import parse_module, print_module

RNG = np.random.default_rng(17)
F32_EDGES = np.array(
    [0.0, -0.0, 1.0, -1.5, 1 + 2**-8, 1 + 3 * 2**-8, 3.3895e38, -3.4e38, 65504.0, 65520.0,
     1e-40, -6e-8, np.inf, -np.inf, np.nan, 2.5e-39, 7.0, 1e5],
    np.float32,
)  # fmt: skip


def _values(n: int) -> np.ndarray:
    wide = (RNG.standard_normal(n) * 10.0 ** RNG.integers(-6, 6, n)).astype(np.float32)
    return np.concatenate([F32_EDGES, wide])


def _module(body: str) -> str:
    return f"HloModule m\n\nENTRY main {{\n  {body}\n}}\n"


def test_reduce_precision_matches_bf16_and_f16_rounding() -> None:
    x = _values(400)
    text = _module(
        f"x = f32[{x.size}] parameter(0)\n"
        f"  b = f32[{x.size}] reduce-precision(x), exponent_bits=8, mantissa_bits=7\n"
        f"  h = f32[{x.size}] reduce-precision(x), exponent_bits=5, mantissa_bits=10\n"
        f"  ROOT t = (f32[{x.size}], f32[{x.size}]) tuple(b, h)"
    )
    as_bf16, as_f16 = evaluate(parse_module(text), [x])
    np.testing.assert_array_equal(as_bf16, x.astype(BF16).astype(np.float32))
    # f16's normal range; reduce-precision flushes what f16 would keep as subnormals to zero
    normal = np.isnan(x) | (np.abs(x) >= 2**-14)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(as_f16[normal], x[normal].astype(np.float16))
    assert np.all(as_f16[~normal] == 0) and np.array_equal(np.signbit(as_f16), np.signbit(x))


def _compare(text: str, args: list[np.ndarray], exact: int) -> None:
    """Compile ``text`` as it is and optimized (fused), run in C; the first ``exact`` results
    must equal the evaluator's bit for bit, the rest within bf16's rounding."""
    for stage in ("kernels", "fused"):
        module = parse_module(text)
        if stage == "fused":
            optimize(module)
        want = evaluate(module, args)
        got, _ = run_compiled(compile_entry(module, "m"), args)
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert g.dtype == w.dtype, (stage, k)
            if k < exact:
                np.testing.assert_array_equal(g, w, err_msg=f"{stage} result {k}")
            else:
                assert_close(g, w, 2**-7, what=f"{stage} result {k}")


def test_compiled_reduce_precision_matches_the_evaluator() -> None:
    x = _values(200)
    n = x.size
    lines = [f"x = f32[{n}] parameter(0)", f"d = f64[{n}] convert(x)", f"h = f16[{n}] convert(x)"]
    lines.append(f"b = bf16[{n}] convert(x)")
    outs = []
    for k, (t, e, m) in enumerate(
        [("f32", 8, 7), ("f32", 5, 10), ("f32", 3, 2), ("f32", 8, 0), ("f64", 8, 23),
         ("f64", 11, 4), ("f16", 4, 3), ("bf16", 5, 3), ("bf16", 8, 7)]
    ):  # fmt: skip
        src = {"f32": "x", "f64": "d", "f16": "h", "bf16": "b"}[t]
        lines.append(
            f"r{k} = {t}[{n}] reduce-precision({src}), exponent_bits={e}, mantissa_bits={m}"
        )
        outs.append((f"r{k}", f"{t}[{n}]"))
    root = f"ROOT t = ({', '.join(s for _, s in outs)}) tuple({', '.join(r for r, _ in outs)})"
    _compare(_module("\n  ".join([*lines, root])), [x], exact=len(outs))


_TYPES = ["f64", "f32", "f16", "s8", "s32", "u8", "s64", "u64", "pred"]


def test_compiled_bf16_ops_and_conversions_match_the_evaluator() -> None:
    n = 120
    x = _values(n - F32_EDGES.size)
    y = RNG.standard_normal(n).astype(np.float32)
    big = np.concatenate([[2**24 + 2**16 + 1, -(2**31), 2**31 - 1, 255, -129, 3], RNG.integers(
        -(2**40), 2**40, n - 6)]).astype(np.int64)  # fmt: skip
    lines = [
        f"x = f32[{n}] parameter(0)", f"y = f32[{n}] parameter(1)", f"i = s64[{n}] parameter(2)",
        f"a = bf16[{n}] convert(x)", f"c = bf16[{n}] convert(y)",
    ]  # fmt: skip
    exact = []
    for k, op in enumerate(["add", "subtract", "multiply", "divide", "maximum"]):
        lines.append(f"e{k} = bf16[{n}] {op}(a, c)")
        exact.append((f"e{k}", "bf16"))
    lines.append(f"q = bf16[{n}] sqrt(c)")
    exact.append(("q", "bf16"))
    for t in _TYPES:
        lines.append(f"to_{t} = {t}[{n}] convert(a)")
        lines.append(f"from_{t} = bf16[{n}] convert(to_{t})")
        exact += [(f"to_{t}", t), (f"from_{t}", "bf16")]
    for t in ["f64", "s64", "s32", "u64"]:  # wide sources round once, to nearest, to bf16
        src = "i" if t != "f64" else "d64"
        if t == "f64":
            lines.append(f"d64 = f64[{n}] multiply(to_f64, to_f64)")
        elif t != "s64":
            lines.append(f"i_{t} = {t}[{n}] convert(i)")
            src = f"i_{t}"
        lines.append(f"wide_{t} = bf16[{n}] convert({src})")
        exact.append((f"wide_{t}", "bf16"))
    lines.append(f"bits = u16[{n}] bitcast-convert(a)")
    lines.append(f"back = bf16[{n}] bitcast-convert(bits)")
    exact += [("bits", "u16"), ("back", "bf16")]
    approx = []
    for k, op in enumerate(["exponential", "tanh", "sine", "logistic"]):
        lines.append(f"m{k} = bf16[{n}] {op}(c)")
        approx.append((f"m{k}", "bf16"))
    outs = exact + approx
    shapes = ", ".join(f"{t}[{n}]" for _, t in outs)
    root = f"ROOT t = ({shapes}) tuple({', '.join(r for r, _ in outs)})"
    _compare(_module("\n  ".join([*lines, root])), [x, y, big], exact=len(exact))


def test_bf16_dot_and_reduce_accumulate_like_the_evaluator() -> None:
    text = """HloModule m

add {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT sum = bf16[] add(a, b)
}

ENTRY main {
  x = bf16[6,40] parameter(0)
  w = bf16[40,5] parameter(1)
  d = bf16[6,5] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = bf16[] constant(0)
  r = bf16[6] reduce(x, z), dimensions={1}, to_apply=add
  e = bf16[6,40] exponential(x)
  s = bf16[6] reduce(e, z), dimensions={1}, to_apply=add
  ROOT t = (bf16[6,5], bf16[6], bf16[6]) tuple(d, r, s)
}"""
    x = RNG.standard_normal((6, 40)).astype(BF16)
    w = RNG.standard_normal((40, 5)).astype(BF16)
    _compare(text, [x, w], exact=0)


def test_bf16_literals_round_trip() -> None:
    values = np.array([1.0, -3.140625, 1e-38, 3.3895e38, np.inf, 0.1], np.float32).astype(BF16)
    text = _module(f"ROOT c = bf16[6] constant({{{', '.join(str(float(v)) for v in values)}}})")
    module = parse_module(text)
    again = parse_module(print_module(module))
    got = again.entry.root.literal
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.view(np.uint16), values.view(np.uint16))


@pytest.mark.parametrize("stage", ["evaluated", "compiled"])
def test_jax_bf16_fixture_matches_jax(stage: str) -> None:
    path, args, expected = load_hlo_fixture("jax_bf16")
    if stage == "evaluated":
        got = evaluate(load_hlo(path).module, args)
    else:  # in C: the portable object's f16 conversions call libgcc's __truncsfhf2
        got, _ = run_compiled(compile_graph(path).model, args)
    for k, want in enumerate(expected):
        assert_close(got[k], want, 2**-6, what=f"{stage} result {k}")
