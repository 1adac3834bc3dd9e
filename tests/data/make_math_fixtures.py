#!/usr/bin/env python
"""Regenerate the math, reduction, contraction and dtype fixtures (TensorFlow needed).

    python tests/data/make_math_fixtures.py

Writes ``NAME.pb``, ``NAME.yaml`` and ``NAME.npz`` under ``tests/data/tf/`` for the fixtures
below, with the same contract and helpers as ``make_fixtures.py`` (which writes the others).
Seeded; reruns give byte-identical files with the same TF.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from make_fixtures import (  # noqa: E402
    F32,
    I32,
    I64,
    OUT_DIR,
    Fixture,
    away_from_zero,
    build,
    normal,
    op_types,
    positive,
    rng,
    spec,
    verify_written,
    write_fixture,
)

R = tf.raw_ops
MAX_PB_BYTES = 50 * 1024
F64, U8, I8, BOOL = tf.float64, tf.uint8, tf.int8, tf.bool


def small_ints(r, shape, low=-9, high=10, dtype=np.int32) -> np.ndarray:
    return r.integers(low, high, shape).astype(dtype)


def nonzero_ints(r, shape, low=-5, high=6) -> np.ndarray:
    x = small_ints(r, shape, low, high)
    return np.where(x == 0, 3, x).astype(np.int32)


# --------------------------------------------------------------------------
# math_binary2: binary arithmetic, comparisons, logic, selects
# --------------------------------------------------------------------------


def math_binary2_fixture() -> Fixture:
    r = rng(31)
    a = np.round(normal(r, [2, 3, 4], 3.0), 1)  # one decimal: some comparisons tie
    b = np.round(away_from_zero(r, [4], 1.0) * 2, 1)
    c = np.round(normal(r, [3, 1], 3.0), 1)
    i = small_ints(r, [2, 3, 4], -20, 21)
    j = nonzero_ints(r, [4])
    p = positive(r, [2, 3, 4])
    e = small_ints(r, [2, 3, 4], 0, 4)
    flags = r.integers(0, 2, [2, 3, 4]).astype(bool)
    rows = np.array([True, False], dtype=bool)
    one = np.array([False], dtype=bool)

    @tf.function(
        input_signature=[
            spec([2, 3, 4], name="a"),
            spec([4], name="b"),
            spec([3, 1], name="c"),
            spec([2, 3, 4], I32, name="i"),
            spec([4], I32, name="j"),
            spec([2, 3, 4], name="p"),
            spec([2, 3, 4], I32, name="e"),
            spec([2, 3, 4], BOOL, name="flags"),
            spec([2], BOOL, name="rows"),
            spec([1], BOOL, name="one"),
        ]
    )
    def f(a, b, c, i, j, p, e, flags, rows, one):
        less = R.Less(x=a, y=c)
        return [
            R.SquaredDifference(x=a, y=c),
            R.SquaredDifference(x=i, y=j),
            R.Pow(x=p, y=a),
            R.Pow(x=i, y=e),
            R.FloorDiv(x=a, y=b),
            R.FloorMod(x=a, y=b),
            R.FloorMod(x=b, y=c),  # [4] % [3,1]: both signs of both
            R.FloorDiv(x=i, y=j),
            R.FloorMod(x=i, y=j),
            R.FloorDiv(x=i, y=tf.constant(-4, I32)),
            R.AddN(inputs=[a, p, R.Neg(x=a), p]),
            R.AddN(inputs=[i, i, e]),
            R.Equal(x=a, y=c),
            R.NotEqual(x=i, y=j),
            less,
            R.LessEqual(x=i, y=j),
            R.Greater(x=b, y=c),
            R.GreaterEqual(x=a, y=tf.constant(0.5, F32)),
            R.Equal(x=flags, y=less),
            R.LogicalAnd(x=flags, y=less),
            R.LogicalOr(x=flags, y=R.Greater(x=i, y=j)),
            R.LogicalNot(x=flags),
            R.Select(condition=flags, x=a, y=p),
            R.Select(condition=rows, x=a, y=p),  # TF1: rank-1 condition picks rows
            R.Select(condition=rows, x=i, y=e),
            R.SelectV2(condition=less, t=a, e=tf.constant(-1.0, F32)),
            R.SelectV2(condition=one, t=b, e=c),  # [1] vs [4] vs [3,1]
        ]

    return Fixture(
        "math_binary2",
        f,
        [a, b, c, i, j, p, e, flags, rows, one],
        {
            "SquaredDifference", "Pow", "FloorDiv", "FloorMod", "AddN", "Equal", "NotEqual",
            "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd", "LogicalOr",
            "LogicalNot", "Select", "SelectV2",
        },
    )  # fmt: skip


# --------------------------------------------------------------------------
# math_unary2: rounding, trigonometry, activations, classification
# --------------------------------------------------------------------------


def math_unary2_fixture() -> Fixture:
    r = rng(32)
    x = normal(r, [4, 8], 2.0)
    x[0, :6] = [0.0, -0.0, 1.0, -1.0, 3.0, -3.0]
    halves = (np.arange(-8, 8, dtype=np.float32) + 0.5).reshape(2, 8)
    wide = np.array(
        [[-100, -30, -20, -15, -14, -13.5, -13, -5], [0, 1e-3, 5, 13, 14, 15, 20, 100]],
        dtype=np.float32,
    )
    special = np.array([[np.nan, np.inf, -np.inf, 0, -1, 3.4e38, 1e-40, -np.nan]], np.float32)

    @tf.function(
        input_signature=[
            spec([4, 8], name="x"),
            spec([2, 8], name="halves"),
            spec([2, 8], name="wide"),
            spec([1, 8], name="special"),
        ]
    )
    def f(x, halves, wide, special):
        # low > high where |x| < 0.25: TF's min-then-max order decides
        high = R.AddV2(x=R.Abs(x=x), y=tf.constant(-0.5))
        return [
            R.Sign(x=x),
            R.Floor(x=x),
            R.Ceil(x=x),
            R.Round(x=x),
            R.Round(x=halves),  # ties to even
            R.Floor(x=halves),
            R.Ceil(x=halves),
            R.Reciprocal(x=halves),
            R.Inv(x=halves),
            R.Log1p(x=R.Abs(x=x)),
            R.Log1p(x=tf.constant([-0.5, -1e-6, 1e-7, 0.25], F32)),
            R.Expm1(x=x),
            R.Expm1(x=tf.constant([-1e-6, 1e-7, 0.1, -2.0], F32)),
            R.Sin(x=x),
            R.Cos(x=x),
            R.Sin(x=wide),
            R.Cos(x=wide),
            R.LeakyRelu(features=x),
            R.LeakyRelu(features=x, alpha=0.3),
            R.LeakyRelu(features=x, alpha=-1.5),  # alpha outside [0, 1]: not a max
            R.Elu(features=x),
            R.Selu(features=x),
            R.Softplus(features=x),
            R.Softplus(features=wide),  # both TF thresholds
            R.Softsign(features=x),
            R.LogSoftmax(logits=x),
            R.LogSoftmax(logits=wide),
            R.ClipByValue(t=x, clip_value_min=tf.constant(-1.0), clip_value_max=tf.constant(1.5)),
            R.ClipByValue(t=x, clip_value_min=R.Neg(x=R.Abs(x=x)), clip_value_max=high),
            R.IsNan(x=special),
            R.IsFinite(x=special),
            R.IsInf(x=special),
        ]

    ops = {
        "Sign", "Floor", "Ceil", "Round", "Reciprocal", "Inv", "Log1p", "Expm1", "Sin", "Cos",
        "LeakyRelu", "Elu", "Selu", "Softplus", "Softsign", "LogSoftmax", "ClipByValue",
        "IsNan", "IsFinite", "IsInf",
    }  # fmt: skip
    return Fixture("math_unary2", f, [x, halves, wide, special], ops)


# --------------------------------------------------------------------------
# reductions
# --------------------------------------------------------------------------


def reductions_fixture() -> Fixture:
    r = rng(33)
    x = small_ints(r, [3, 4, 5], -4, 5).astype(np.float32)  # integral values: ties
    x[1, 2, :] = [-4, -4, -4, -4, -4]  # a row of ties only
    i = small_ints(r, [3, 4, 5], -20, 21)
    flags = r.integers(0, 2, [3, 4, 5]).astype(bool)
    flags[0, 0, :] = True
    flags[2, 1, :] = False
    near_one = (1 + normal(r, [3, 4, 5], 0.2)).astype(np.float32)

    @tf.function(
        input_signature=[
            spec([3, 4, 5], name="x"),
            spec([3, 4, 5], I32, name="i"),
            spec([3, 4, 5], BOOL, name="flags"),
            spec([3, 4, 5], name="near_one"),
        ]
    )
    def f(x, i, flags, near_one):
        def axes(*values, dtype=I32):
            return tf.constant(list(values), dtype)

        computed = R.AddV2(x=axes(-3), y=axes(1))  # a constant subgraph: [-2]
        return [
            R.Sum(input=x, axis=axes(1)),
            R.Sum(input=x, axis=axes(1), keep_dims=True),
            R.Sum(input=x, axis=axes(-1, 0)),
            R.Sum(input=x, axis=tf.constant([], I32)),  # no axes: the input
            R.Sum(input=i, axis=axes(0, 1, 2), keep_dims=True),
            R.Sum(input=x, axis=computed),
            R.Mean(input=x, axis=axes(2)),
            R.Mean(input=i, axis=axes(2)),  # truncates
            R.Mean(input=i, axis=axes(0, 2, dtype=I64), keep_dims=True),
            R.Max(input=x, axis=axes(-1)),
            R.Max(input=i, axis=axes(0, 1)),
            R.Min(input=x, axis=tf.constant(1, I32), keep_dims=True),  # scalar axis
            R.Min(input=i, axis=axes(2)),
            R.Prod(input=near_one, axis=axes(2, 1)),
            R.Prod(input=small_int_prod(i), axis=axes(2)),
            R.All(input=flags, axis=axes(2)),
            R.Any(input=flags, axis=axes(2), keep_dims=True),
            R.All(input=flags, axis=axes(0, 1, 2)),
            R.ArgMax(input=x, dimension=tf.constant(2, I32)),
            R.ArgMax(input=x, dimension=tf.constant(-2, I32), output_type=I32),
            R.ArgMin(input=x, dimension=tf.constant(2, I64), output_type=I32),
            R.ArgMin(input=x, dimension=tf.constant(0, I32)),
            R.ArgMax(input=i, dimension=tf.constant(1, I32)),
            R.ArgMin(input=i, dimension=R.Reshape(tensor=computed, shape=axes()), output_type=I32),
            R.ArgMax(input=flags, dimension=tf.constant(2, I32)),
        ]

    ops = {"Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ArgMax", "ArgMin"}
    return Fixture("reductions", f, [x, i, flags, near_one], ops)


def small_int_prod(i):
    """Values -2..2, so a product of five stays small."""
    return R.FloorMod(x=i, y=tf.constant(5, I32)) - tf.constant(2, I32)


# --------------------------------------------------------------------------
# batch_matmul: BatchMatMul*, Einsum
# --------------------------------------------------------------------------


def batch_matmul_fixture() -> Fixture:
    r = rng(34)
    shapes = {
        "x": [2, 1, 3, 4], "y": [3, 4, 5], "xt": [2, 4, 3], "yt": [5, 4], "y2": [2, 5, 4],
        "z": [1, 3, 4], "sq": [3, 3], "v": [5], "u": [4],
        "q": [2, 3, 6],  # [batch, seq, dim]
        "w": [6, 2, 4],  # [dim, heads, head_dim]
        "wo": [2, 4, 6],  # [heads, head_dim, dim]
        "k": [2, 5, 2, 4],  # [batch, seq_k, heads, head_dim]
    }  # fmt: skip
    args = [normal(r, dims) for dims in shapes.values()]

    @tf.function(input_signature=[spec(dims, name=name) for name, dims in shapes.items()])
    def f(x, y, xt, yt, y2, z, sq, v, u, q, w, wo, k):
        def einsum(equation, *operands):
            return R.Einsum(inputs=list(operands), equation=equation)

        query = einsum("abc,cde->abde", q, w)  # [2,3,2,4]
        scores = einsum("aecd,abcd->acbe", k, query)  # [2,2,3,5]
        attended = einsum("acbe,aecd->abcd", scores, k)  # [2,3,2,4]
        return [
            R.BatchMatMulV2(x=x, y=y),  # [2,1,3,4] x [3,4,5] -> [2,3,3,5]
            R.BatchMatMulV2(x=xt, y=yt, adj_x=True, adj_y=True),  # [2,3,4] x [4,5]
            R.BatchMatMulV2(x=y, y=z, adj_x=True, adj_y=True),  # [3,5,4] x [1,4,3]
            R.BatchMatMul(x=xt, y=y2, adj_x=True, adj_y=True),  # [2,3,4] x [2,4,5]
            R.BatchMatMulV3(x=x, y=y, Tout=F32),
            query,
            scores,
            attended,
            einsum("abcd,cde->abe", attended, wo),
            einsum("BTNH,BSNH->BNTS", query, k),
            einsum("ij,jk->ik", yt, R.Reshape(tensor=z, shape=[4, 3])),
            einsum("bij,bkj->bik", xt, xt),
            einsum("ij->ji", yt),
            einsum("ij->i", yt),
            einsum("ij->", yt),
            einsum("ii->i", sq),
            einsum("ii->", sq),  # the trace
            einsum("i,j->ij", v, u),
            einsum("bij,ij->b", xt, R.Reshape(tensor=z, shape=[4, 3])),
            einsum("...ij,...jk->...ik", x, y),  # ellipsis with broadcasting
            einsum("ab...,b->a...", k, v),
            einsum("ij,kj->ik", yt, yt),
        ]

    ops = {"BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum"}
    return Fixture("batch_matmul", f, args, ops)


# --------------------------------------------------------------------------
# types: uint8, int8, int64, float64, bool
# --------------------------------------------------------------------------


def types_fixture() -> Fixture:
    r = rng(35)
    u = r.integers(0, 256, [2, 5]).astype(np.uint8)
    s = r.integers(-128, 128, [2, 5]).astype(np.int8)
    n = r.integers(-(10**12), 10**12, [2, 5]).astype(np.int64)
    m = np.where(n % 7 == 0, 5, n % 7 - 3).astype(np.int64)
    m[m == 0] = -2
    d = r.standard_normal([2, 5]) * 3
    flags = r.integers(0, 2, [2, 5]).astype(bool)
    x = (r.standard_normal([2, 5]) * 50).astype(np.float32)

    @tf.function(
        input_signature=[
            spec([2, 5], U8, name="u"),
            spec([2, 5], I8, name="s"),
            spec([2, 5], I64, name="n"),
            spec([2, 5], I64, name="m"),
            spec([2, 5], F64, name="d"),
            spec([2, 5], BOOL, name="flags"),
            spec([2, 5], name="x"),
        ]
    )
    def f(u, s, n, m, d, flags, x):
        def cast(v, dtype):
            return R.Cast(x=v, DstT=dtype)

        outputs = [cast(v, t) for v in (u, s, flags) for t in (F32, F64, I32, I64, U8, I8, BOOL)]
        outputs += [cast(v, t) for v in (n, d) for t in (F32, I32, BOOL)]
        outputs += [
            cast(R.Abs(x=x), U8),  # in range: 0..~150
            cast(R.Maximum(x=R.Minimum(x=x, y=tf.constant(127.0)), y=tf.constant(-128.0)), I8),
            cast(x, F64),
            R.AddV2(x=u, y=u),  # wraps
            R.Mul(x=s, y=s),  # wraps
            R.Sub(x=u, y=tf.constant(100, U8)),
            R.FloorDiv(x=n, y=m),
            R.FloorMod(x=n, y=m),
            R.FloorDiv(x=u, y=tf.constant(7, U8)),
            R.FloorMod(x=s, y=tf.constant(-7, I8)),
            R.Sin(x=d),
            R.Exp(x=d),
            R.Log1p(x=R.Abs(x=d)),
            R.Softplus(features=d),
            R.Round(x=R.Mul(x=d, y=tf.constant(2.0, F64))),
            R.Sum(input=d, axis=tf.constant([1])),
            R.Mean(input=n, axis=tf.constant([1])),
            R.Mean(input=u, axis=tf.constant([1])),
            R.Max(input=u, axis=tf.constant([0])),
            R.Min(input=s, axis=tf.constant([1])),
            R.ArgMax(input=d, dimension=tf.constant(1)),
            R.ArgMin(input=u, dimension=tf.constant(1), output_type=I32),
            R.Less(x=u, y=tf.constant(128, U8)),
            R.Greater(x=s, y=tf.constant(0, I8)),
            R.SelectV2(condition=flags, t=d, e=R.Neg(x=d)),
            R.LogicalAnd(x=flags, y=R.Less(x=n, y=m)),
            R.Sign(x=s),
            R.Abs(x=s),
            R.BatchMatMulV2(
                x=R.Reshape(tensor=d, shape=[1, 2, 5]), y=R.Reshape(tensor=d, shape=[1, 5, 2])
            ),
        ]
        return outputs

    return Fixture("types", f, [u, s, n, m, d, flags, x], {"Cast", "FloorDiv", "FloorMod", "Sum"})


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------


def main() -> int:
    np.random.seed(0)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    fixtures = [
        math_binary2_fixture(),
        math_unary2_fixture(),
        reductions_fixture(),
        batch_matmul_fixture(),
        types_fixture(),
    ]
    for fx in fixtures:
        build(fx)
        write_fixture(fx)
        verify_written(fx)
        size = (OUT_DIR / f"{fx.name}.pb").stat().st_size
        assert size < MAX_PB_BYTES, (fx.name, size)
        ops = " ".join(op_types(fx.graph_def))
        print(f"{fx.name}: {size} bytes, {len(fx.results)} results; {ops}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
