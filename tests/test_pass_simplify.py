"""The algebraic simplifier: each rule on HLO text in and out, then differentially."""

from __future__ import annotations

import pytest
from pass_testing import assert_same_results, run_pass

from aotc.hlo.shape import PrimitiveType as T
from aotc.hlo.testing import assert_hlo_equal
from aotc.passes import AlgebraicSimplifier
from aotc.passes.simplify import is_exact_conversion

# (rule, entry body, expected text): one simplifier run each.
CASES = [
    (
        "add_zero",
        """p = f32[4] parameter(0)
           z = f32[] constant(0)
           zb = f32[4] broadcast(z), dimensions={}
           a = f32[4] add(zb, p)
           ROOT r = f32[4] negate(a)""",
        "... ROOT r = f32[4] negate(p) ...",
    ),
    (
        "subtract_zero",
        """p = s32[4] parameter(0)
           z = s32[4] constant({0, 0, 0, 0})
           a = s32[4] subtract(p, z)
           ROOT r = s32[4] negate(a)""",
        "... ROOT r = s32[4] negate(p) ...",
    ),
    (
        "multiply_one",
        """p = f32[2,2] parameter(0)
           one = f32[] constant(1)
           ob = f32[2,2] broadcast(one), dimensions={}
           a = f32[2,2] multiply(p, ob)
           ROOT r = f32[2,2] negate(a)""",
        "... ROOT r = f32[2,2] negate(p) ...",
    ),
    (
        "multiply_zero_int",
        """p = s32[3] parameter(0)
           z = s32[] constant(0)
           zb = s32[3] broadcast(z), dimensions={}
           a = s32[3] multiply(p, zb)
           ROOT r = s32[3] negate(a)""",
        "... ROOT r = s32[3] negate(zb) ...",
    ),
    (
        "divide_one",
        """p = f32[3] parameter(0)
           one = f32[3] constant({1, 1, 1})
           a = f32[3] divide(p, one)
           ROOT r = f32[3] negate(a)""",
        "... ROOT r = f32[3] negate(p) ...",
    ),
    (
        "same_shape_reshape",
        """p = f32[2,3] parameter(0)
           a = f32[2,3] reshape(p)
           ROOT r = f32[2,3] negate(a)""",
        "... ROOT r = f32[2,3] negate(p) ...",
    ),
    (
        "reshape_of_reshape",
        """p = f32[2,3] parameter(0)
           a = f32[6] reshape(p)
           b = f32[3,2] reshape(a)
           ROOT r = f32[3,2] negate(b)""",
        """...
           reshape = f32[3,2] reshape(p)
           ROOT r = f32[3,2] negate(reshape) ...""",
    ),
    (
        "identity_transpose",
        """p = f32[2,3] parameter(0)
           a = f32[2,3] transpose(p), dimensions={0,1}
           ROOT r = f32[2,3] negate(a)""",
        "... ROOT r = f32[2,3] negate(p) ...",
    ),
    (
        "transpose_as_reshape",  # a batch-1 RNN input made time-major: the elements keep order
        """p = f32[1,5,4] parameter(0)
           a = f32[5,1,4] transpose(p), dimensions={1,0,2}
           ROOT r = f32[5,1,4] negate(a)""",
        """... reshape = f32[5,1,4] reshape(p)
               ROOT r = f32[5,1,4] negate(reshape) ...""",
    ),
    (
        "transpose_of_transpose",
        """p = f32[2,3,4] parameter(0)
           a = f32[3,4,2] transpose(p), dimensions={1,2,0}
           b = f32[4,3,2] transpose(a), dimensions={1,0,2}
           ROOT r = f32[4,3,2] negate(b)""",
        "... transpose = f32[4,3,2] transpose(p), dimensions={2,1,0} ...",
    ),
    (
        "convert_same_type",
        """p = f32[3] parameter(0)
           a = f32[3] convert(p)
           ROOT r = f32[3] negate(a)""",
        "... ROOT r = f32[3] negate(p) ...",
    ),
    (
        "convert_widen_then_back",
        """p = s8[3] parameter(0)
           a = f32[3] convert(p)
           b = s8[3] convert(a)
           ROOT r = s8[3] negate(b)""",
        "... ROOT r = s8[3] negate(p) ...",
    ),
    (
        "convert_exact_chain",
        """p = s16[3] parameter(0)
           a = s32[3] convert(p)
           b = f32[3] convert(a)
           ROOT r = f32[3] negate(b)""",
        "... convert = f32[3] convert(p) ...",
    ),
    (
        "splat_constant",
        """p = f32[2,3] parameter(0)
           c = f32[2,3] constant({ { 7, 7, 7 }, { 7, 7, 7 } })
           ROOT r = f32[2,3] add(p, c)""",
        """...
           constant = f32[] constant(7)
           broadcast = f32[2,3] broadcast(constant), dimensions={}
           ROOT r = f32[2,3] add(p, broadcast) ...""",
    ),
    (
        "broadcast_of_broadcast",
        """p = f32[3] parameter(0)
           a = f32[2,3] broadcast(p), dimensions={1}
           b = f32[4,2,3] broadcast(a), dimensions={1,2}
           ROOT r = f32[4,2,3] negate(b)""",
        "... broadcast = f32[4,2,3] broadcast(p), dimensions={2} ...",
    ),
    (
        "identity_broadcast",
        """p = f32[3] parameter(0)
           a = f32[3] broadcast(p), dimensions={0}
           ROOT r = f32[3] negate(a)""",
        "... ROOT r = f32[3] negate(p) ...",
    ),
    (
        "full_slice",
        """p = f32[2,3] parameter(0)
           a = f32[2,3] slice(p), slice={[0:2], [0:3]}
           ROOT r = f32[2,3] negate(a)""",
        "... ROOT r = f32[2,3] negate(p) ...",
    ),
    (
        "slice_of_slice",
        """p = f32[20] parameter(0)
           a = f32[9] slice(p), slice={[2:19:2]}
           b = f32[3] slice(a), slice={[1:8:3]}
           ROOT r = f32[3] negate(b)""",
        "... slice = f32[3] slice(p), slice={[4:17:6]} ...",
    ),
    (
        "single_concatenate",
        """p = f32[3] parameter(0)
           a = f32[3] concatenate(p), dimensions={0}
           ROOT r = f32[3] negate(a)""",
        "... ROOT r = f32[3] negate(p) ...",
    ),
    (
        "dot_transposed_operands",
        """a = f32[4,2] parameter(0)
           b = f32[3,4] parameter(1)
           at = f32[2,4] transpose(a), dimensions={1,0}
           bt = f32[4,3] transpose(b), dimensions={1,0}
           ROOT d = f32[2,3] dot(at, bt), lhs_contracting_dims={1}, rhs_contracting_dims={0}""",
        """... ROOT dot = f32[2,3] dot(a, b), lhs_contracting_dims={0},
               rhs_contracting_dims={1} ...""",
    ),
    (
        "dot_transposed_batch_operand",
        """a = f32[5,2,4] parameter(0)
           b = f32[5,4,3] parameter(1)
           at = f32[2,5,4] transpose(a), dimensions={1,0,2}
           ROOT d = f32[5,2,3] dot(at, b), lhs_batch_dims={1}, lhs_contracting_dims={2},
             rhs_batch_dims={0}, rhs_contracting_dims={1}""",
        """... ROOT dot = f32[5,2,3] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2},
               rhs_batch_dims={0}, rhs_contracting_dims={1} ...""",
    ),
    (
        "dot_broadcast_rhs_unbatched",  # einsum abc,cd->abd: the weights shared by each batch
        """x = f32[2,3,4] parameter(0)
           w = f32[4,5] parameter(1)
           wb = f32[2,4,5] broadcast(w), dimensions={1,2}
           ROOT d = f32[2,3,5] dot(x, wb), lhs_batch_dims={0}, lhs_contracting_dims={2},
             rhs_batch_dims={0}, rhs_contracting_dims={1}""",
        """... ROOT dot = f32[2,3,5] dot(x, w), lhs_contracting_dims={2},
               rhs_contracting_dims={0} ...""",
    ),
    (
        "dot_broadcast_rhs_transposed_weights",
        """x = f32[2,3,4] parameter(0)
           w = f32[5,4] parameter(1)
           wb = f32[2,5,4] broadcast(w), dimensions={1,2}
           ROOT d = f32[2,3,5] dot(x, wb), lhs_batch_dims={0}, lhs_contracting_dims={2},
             rhs_batch_dims={0}, rhs_contracting_dims={2}""",
        """... ROOT dot = f32[2,3,5] dot(x, w), lhs_contracting_dims={2},
               rhs_contracting_dims={1} ...""",
    ),
    (
        "dot_reshaped_lhs_rows",  # Keras Dense on a rank-3 input
        """x = f32[2,3,4] parameter(0)
           w = f32[4,5] parameter(1)
           xr = f32[6,4] reshape(x)
           d = f32[6,5] dot(xr, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
           ROOT r = f32[2,3,5] reshape(d)""",
        """... dot = f32[2,3,5] dot(x, w), lhs_contracting_dims={2}, rhs_contracting_dims={0}
           ROOT reshape.1 = f32[2,3,5] reshape(dot) ...""",  # the next run drops the reshape
    ),
    (
        "conv_input_pad_strided_depthwise",
        """x = f32[1,5,6,3] parameter(0)
           k = f32[3,3,1,3] parameter(1)
           z = f32[] constant(0)
           p = f32[1,6,8,3] pad(x, z), padding=0_0x0_1x1_1x0_0
           ROOT c = f32[1,2,4,3] convolution(p, k), window={size=3x3 stride=2x2 pad=0_0x0_1},
             dim_labels=b01f_01io->b01f, feature_group_count=3""",
        """... ROOT convolution = f32[1,2,4,3] convolution(x, k),
               window={size=3x3 stride=2x2 pad=0_1x1_2}, dim_labels=b01f_01io->b01f,
               feature_group_count=3 ...""",
    ),
    (
        "conv_input_pad_nchw",
        """x = f32[2,2,5,4] parameter(0)
           k = f32[4,2,2,2] parameter(1)
           z = f32[] constant(0)
           zb = f32[] broadcast(z), dimensions={}
           p = f32[2,2,7,4] pad(x, zb), padding=0_0x0_0x2_0x0_0
           ROOT c = f32[2,4,6,3] convolution(p, k), window={size=2x2},
             dim_labels=bf01_oi01->bf01""",
        """... ROOT convolution = f32[2,4,6,3] convolution(x, k), window={size=2x2 pad=2_0x0_0},
               dim_labels=bf01_oi01->bf01 ...""",
    ),
    (
        "scale_into_dot_weights",
        """x = f32[2,3] parameter(0)
           w = f32[3,2] constant({ { 1, 2 }, { 3, 4 }, { 5, 6 } })
           d = f32[2,2] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
           s = f32[2] constant({10, 100})
           sb = f32[2,2] broadcast(s), dimensions={1}
           ROOT m = f32[2,2] multiply(d, sb)""",
        """...
           constant = f32[3,2] constant({ { 10, 200 }, { 30, 400 }, { 50, 600 } })
           ROOT dot = f32[2,2] dot(x, constant), lhs_contracting_dims={1},
               rhs_contracting_dims={0} ...""",
    ),
    (
        "scale_into_conv_kernel",
        """x = f32[1,4,4,2] parameter(0)
           k = f32[1,1,2,3] constant({ { { { 1, 2, 3 }, { 4, 5, 6 } } } })
           c = f32[1,4,4,3] convolution(x, k), window={size=1x1}, dim_labels=b01f_01io->b01f
           s = f32[3] constant({2, 3, 4})
           sb = f32[1,4,4,3] broadcast(s), dimensions={3}
           ROOT m = f32[1,4,4,3] multiply(sb, c)""",
        """...
           constant = f32[1,1,2,3] constant({ { { { 2, 6, 12 }, { 8, 15, 24 } } } })
           ROOT convolution = f32[1,4,4,3] convolution(x, constant), window={size=1x1},
               dim_labels=b01f_01io->b01f ...""",
    ),
    (
        "scale_over_bias",
        """x = f32[2,3] parameter(0)
           w = f32[3,2] constant({ { 1, 2 }, { 3, 4 }, { 5, 6 } })
           d = f32[2,2] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
           b = f32[2] constant({1, 2})
           bb = f32[2,2] broadcast(b), dimensions={1}
           a = f32[2,2] add(d, bb)
           s = f32[2] constant({10, 100})
           sb = f32[2,2] broadcast(s), dimensions={1}
           ROOT m = f32[2,2] multiply(a, sb)""",
        """... multiply = f32[2,2] multiply(d, sb)
           constant = f32[2] constant({10, 200})
           broadcast = f32[2,2] broadcast(constant), dimensions={1}
           ROOT add = f32[2,2] add(multiply, broadcast) ...""",
    ),
    (
        "merge_biases",
        """x = s32[2,3] parameter(0)
           b1 = s32[3] constant({1, 2, 3})
           bb1 = s32[2,3] broadcast(b1), dimensions={1}
           a = s32[2,3] add(x, bb1)
           b2 = s32[2,3] constant({ { 10, 20, 30 }, { 10, 20, 30 } })
           ROOT r = s32[2,3] add(b2, a)""",
        """... constant = s32[3] constant({11, 22, 33})
           broadcast = s32[2,3] broadcast(constant), dimensions={1}
           ROOT add = s32[2,3] add(x, broadcast) ...""",
    ),
    (
        "merge_float_biases_after_dot",
        """x = f32[2,3] parameter(0)
           w = f32[3,2] constant({ { 1, 2 }, { 3, 4 }, { 5, 6 } })
           d = f32[2,2] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
           b1 = f32[2] constant({1, 2})
           bb1 = f32[2,2] broadcast(b1), dimensions={1}
           a = f32[2,2] add(d, bb1)
           b2 = f32[2] constant({10, 20})
           bb2 = f32[2,2] broadcast(b2), dimensions={1}
           ROOT r = f32[2,2] add(a, bb2)""",
        """... constant = f32[2] constant({11, 22})
           broadcast = f32[2,2] broadcast(constant), dimensions={1}
           ROOT add = f32[2,2] add(d, broadcast) ...""",
    ),
    (
        "reshape_of_elementwise",  # keepdims: rsqrt(var + eps) stays on the rows
        """v = f32[2,3] parameter(0)
           r = f32[2,3,1] reshape(v)
           e = f32[] constant(1e-06)
           eb = f32[2,3,1] broadcast(e), dimensions={}
           a = f32[2,3,1] add(r, eb)
           ROOT back = f32[2,3] reshape(a)""",
        """... broadcast = f32[2,3] broadcast(e), dimensions={}
           ROOT add = f32[2,3] add(v, broadcast) ...""",
    ),
    (
        "reshape_of_elementwise_chain",  # one level per run: the rsqrt moves first
        """v = f32[2,3] parameter(0)
           r = f32[2,3,1] reshape(v)
           n = f32[2,3,1] abs(r)
           s = f32[2,3,1] rsqrt(n)
           ROOT back = f32[2,3] reshape(s)""",
        """... reshape = f32[2,3] reshape(n)
           ROOT rsqrt = f32[2,3] rsqrt(reshape) ...""",
    ),
    (
        "subtract_constant",
        """x = f32[2,3] parameter(0)
           c = f32[3] constant({1, 2, 3})
           cb = f32[2,3] broadcast(c), dimensions={1}
           ROOT r = f32[2,3] subtract(x, cb)""",
        """... constant = f32[3] constant({-1, -2, -3})
           broadcast = f32[2,3] broadcast(constant), dimensions={1}
           ROOT add = f32[2,3] add(x, broadcast) ...""",
    ),
]


def _module(body: str) -> str:
    return f"HloModule m\nENTRY main {{\n{body}\n}}\n"


@pytest.mark.parametrize(("rule", "body", "expected"), CASES, ids=[c[0] for c in CASES])
def test_rule(rule: str, body: str, expected: str) -> None:
    module, changed = run_pass(AlgebraicSimplifier(), _module(body))
    assert changed
    assert_hlo_equal(module, expected)


@pytest.mark.parametrize(("rule", "body", "expected"), CASES, ids=[c[0] for c in CASES])
def test_rule_differential(rule: str, body: str, expected: str) -> None:
    assert_same_results(AlgebraicSimplifier(), _module(body))


# ---- what must not change ----------------------------------------------------------------


UNCHANGED = [
    (
        "transpose_moving_a_dimension_of_more_than_one",  # a real transpose, size-1 dims aside
        """p = f32[2,1,3] parameter(0)
           a = f32[3,1,2] transpose(p), dimensions={2,1,0}
           ROOT r = f32[3,1,2] negate(a)""",
    ),
    (
        "float_biases_not_after_a_dot",  # regrouping would cancel (x + 2^23 + 2^22) - ...
        """x = f32[4] parameter(0)
           b1 = f32[] constant(12582912)
           bb1 = f32[4] broadcast(b1), dimensions={}
           a = f32[4] add(x, bb1)
           b2 = f32[] constant(-12582912)
           bb2 = f32[4] broadcast(b2), dimensions={}
           ROOT r = f32[4] add(a, bb2)""",
    ),
    (
        "float_times_zero",  # NaN * 0 is NaN
        """p = f32[3] parameter(0)
           z = f32[] constant(0)
           zb = f32[3] broadcast(z), dimensions={}
           ROOT a = f32[3] multiply(p, zb)""",
    ),
    (
        "lossy_convert_chain",
        """p = f32[3] parameter(0)
           a = s32[3] convert(p)
           ROOT b = f32[3] convert(a)""",
    ),
    (
        "dot_transpose_reordering_free_dims",
        """a = f32[2,3,4] parameter(0)
           b = f32[4,5] parameter(1)
           at = f32[3,2,4] transpose(a), dimensions={1,0,2}
           ROOT d = f32[3,2,5] dot(at, b), lhs_contracting_dims={2}, rhs_contracting_dims={0}""",
    ),
    (
        "dot_broadcast_rhs_batch_not_leading",  # the result would list x's free dims first
        """x = f32[3,2,4] parameter(0)
           w = f32[4,5] parameter(1)
           wb = f32[2,4,5] broadcast(w), dimensions={1,2}
           ROOT d = f32[2,3,5] dot(x, wb), lhs_batch_dims={1}, lhs_contracting_dims={2},
             rhs_batch_dims={0}, rhs_contracting_dims={1}""",
    ),
    (
        "dot_rhs_broadcast_along_a_free_dim",  # not a batch broadcast
        """x = f32[2,3,4] parameter(0)
           w = f32[2,4] parameter(1)
           wb = f32[2,4,5] broadcast(w), dimensions={0,1}
           ROOT d = f32[2,3,5] dot(x, wb), lhs_batch_dims={0}, lhs_contracting_dims={2},
             rhs_batch_dims={0}, rhs_contracting_dims={1}""",
    ),
    (
        "dot_reshape_mixing_the_contracted_dim",
        """x = f32[2,3,4] parameter(0)
           w = f32[12,5] parameter(1)
           xr = f32[2,12] reshape(x)
           ROOT d = f32[2,5] dot(xr, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}""",
    ),
    (
        "scale_along_batch_dim",  # s varies along x's rows, not the weights
        """x = f32[2,3] parameter(0)
           w = f32[3,2] constant({ { 1, 2 }, { 3, 4 }, { 5, 6 } })
           d = f32[2,2] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
           s = f32[2] constant({10, 100})
           sb = f32[2,2] broadcast(s), dimensions={0}
           ROOT m = f32[2,2] multiply(d, sb)""",
    ),
    (
        "conv_input_pad_not_zero",
        """x = f32[1,4,4,2] parameter(0)
           k = f32[3,3,2,2] parameter(1)
           one = f32[] constant(1)
           p = f32[1,6,6,2] pad(x, one), padding=0_0x1_1x1_1x0_0
           ROOT c = f32[1,4,4,2] convolution(p, k), window={size=3x3},
             dim_labels=b01f_01io->b01f""",
    ),
    (
        "conv_input_pad_of_features",
        """x = f32[1,4,4,2] parameter(0)
           k = f32[3,3,3,2] parameter(1)
           z = f32[] constant(0)
           p = f32[1,4,4,3] pad(x, z), padding=0_0x0_0x0_0x0_1
           ROOT c = f32[1,2,2,2] convolution(p, k), window={size=3x3},
             dim_labels=b01f_01io->b01f""",
    ),
    (
        "conv_input_pad_interior",
        """x = f32[1,4,4,2] parameter(0)
           k = f32[3,3,2,2] parameter(1)
           z = f32[] constant(0)
           p = f32[1,7,4,2] pad(x, z), padding=0_0x0_0_1x0_0x0_0
           ROOT c = f32[1,5,2,2] convolution(p, k), window={size=3x3},
             dim_labels=b01f_01io->b01f""",
    ),
    (
        "conv_input_pad_base_dilated",
        """x = f32[1,4,4,2] parameter(0)
           k = f32[3,3,2,2] parameter(1)
           z = f32[] constant(0)
           p = f32[1,5,5,2] pad(x, z), padding=0_0x0_1x0_1x0_0
           ROOT c = f32[1,7,7,2] convolution(p, k), window={size=3x3 lhs_dilate=2x2},
             dim_labels=b01f_01io->b01f""",
    ),
    (
        "reshape_of_elementwise_with_other_users",  # the rsqrt would be computed twice
        """v = f32[2,3] parameter(0)
           r = f32[2,3,1] reshape(v)
           s = f32[2,3,1] rsqrt(r)
           back = f32[2,3] reshape(s)
           ROOT t = (f32[2,3], f32[2,3,1]) tuple(back, s)""",
    ),
    (
        "reshape_of_clamp_with_scalar_bounds",  # a scalar operand has no rows to reshape
        """v = f32[2,3] parameter(0)
           lo = f32[] constant(0)
           r = f32[2,3,1] reshape(v)
           hi = f32[] constant(6)
           s = f32[2,3,1] clamp(lo, r, hi)
           ROOT back = f32[2,3] reshape(s)""",
    ),
    (
        "reshape_of_elementwise_not_cancelling",  # tanh on the new shape would stay a twin
        """v = f32[2,3] parameter(0)
           s = f32[2,3] tanh(v)
           ROOT back = f32[1,2,3] reshape(s)""",
    ),
    (
        "reshape_of_elementwise_regrouping",  # not only unit dimensions
        """v = f32[6] parameter(0)
           r = f32[2,3] reshape(v)
           s = f32[2,3] negate(r)
           ROOT back = f32[3,2] reshape(s)""",
    ),
    (
        "scaled_dot_with_other_users",
        """x = f32[2,3] parameter(0)
           w = f32[3,2] constant({ { 1, 2 }, { 3, 4 }, { 5, 6 } })
           d = f32[2,2] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
           s = f32[2] constant({10, 100})
           sb = f32[2,2] broadcast(s), dimensions={1}
           m = f32[2,2] multiply(d, sb)
           ROOT r = (f32[2,2], f32[2,2]) tuple(m, d)""",
    ),
]


@pytest.mark.parametrize(("case", "body"), UNCHANGED, ids=[c[0] for c in UNCHANGED])
def test_no_rewrite(case: str, body: str) -> None:
    _, changed = run_pass(AlgebraicSimplifier(), _module(body))
    assert not changed


def test_exact_conversions() -> None:
    assert is_exact_conversion(T.S16, T.F32) and is_exact_conversion(T.U8, T.F16)
    assert is_exact_conversion(T.PRED, T.S8) and is_exact_conversion(T.F16, T.F64)
    assert not is_exact_conversion(T.S32, T.F32) and not is_exact_conversion(T.F32, T.S64)
    assert not is_exact_conversion(T.S8, T.U16) and not is_exact_conversion(T.S8, T.PRED)
