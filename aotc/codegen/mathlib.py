"""Inline approximations of transcendental functions, written with IRBuilder ops only.

Every ``f32`` function here is branch-free straight-line code (selects, no calls), so it works
unchanged on ``<N x float>`` vectors and lets the loop vectorizer vectorize kernels that use it.
The object file therefore needs no libm for ``f32`` models.

Accuracy for ``f32``, measured by ``tests/test_codegen_mathlib.py`` on 2^18-point sweeps per
function (dense ranges, random bit patterns over all finite floats, specials) against float64
numpy (erf's figures: on every float of [0.25, 4), see below); ULP = units in the last place
of the float32 result:

==========  ==============================================  =========  =======================
function    method                                          measured   bound the tests assert
==========  ==============================================  =========  =======================
exp         Cephes ``expf``: x = n ln2 + r, polynomial;    0.96 ULP   2 ULP (incl. subnormal
            2^n applied in two exact steps (which                      results)
            overflow / underflow: no special-value
            selects)
log         Cephes ``logf``: frexp, polynomial             0.77 ULP   2 ULP
expm1       Kahan: (u - 1) x / log u, u = exp x (|x| < 1)   2.35 ULP   4 ULP
log1p       Goldberg: log(u) x / (u - 1), u = 1 + x         2.25 ULP   4 ULP
tanh        Cephes ``tanhf``: odd poly below 0.625, else    1.22 ULP,  1e-6 abs, 2 ULP
            1 - 2 / (exp(2|x|) + 1)                         7.3e-8
logistic    1 / (1 + e^-x); e^x / (1 + e^x) for x < 0      2.23 ULP,  1e-6 abs, 3 ULP
            (e^-|x| by an exp without overflow cases)       8.9e-8
erf         x P(x^2) / Q(x^2) (degrees 6 / 4) for |x| up    5.92 ULP,  1e-6 abs, 7 ULP
            to 3.95, +-1 beyond; the form and error of      3.5e-7     (TensorFlow's own:
            TensorFlow's own float erf (one division, no               7.44 ULP Eigen, 6.71
            exp, no branch)                                            XLA)
sin, cos    in f64: |x| = n pi/2 + r (Cody-Waite below      0.50 ULP   1 ULP, all finite x
            2^27, Payne-Hanek above), fdlibm
            ``__kernel_sindf/cosdf`` polynomials
==========  ==============================================  =========  =======================

``softmax_exp(b, x, top)`` (the attention kernel's ``exp(x - max)``) is exp of ``x - top``
for ``top`` a maximum over ``x``, so of an argument <= 0 only (a positive one above 88.7 would
give -0 or inf), with results below the smallest normal float (``x - top <= -87.3365479``, the
float just below ln 2^-126) flushed to 0 (TensorFlow runs its kernels with denormals flushed;
TF Lite's softmax cuts off at the same point): exp's 2 ULP bound, tested on the SSE2, AVX2 and
host levels.

Polynomials are evaluated by Horner's rule with ``llvm.fmuladd``: one FMA per term where the
target has FMA (x86 with FMA3, AArch64), a multiply and an add elsewhere, never a libm call.
With FMA the figures above are those measured on x86-64 (AVX-512); with separate multiply
and add (SSE2, i686) erf measures 6.13 ULP (3.7e-7) and exp 0.94 ULP, both inside their bounds.
erf's figures are its worst over every float of [0.25, 4), where its error peaks (below, every
97th float: 3.76 ULP), from an exact emulation of the emitted float32 operations
(``tools/fit_erf.py --measure``); the test checks the compiled code on every float near those
worst inputs and on every 64th float of the range. TensorFlow's are measured on the same
floats (``tf.math.erf``, Eigen; XLA's through ``jit_compile``, TF 2.21 on AVX-512).

sin/cos compute both reductions and select (branch-free); the Payne-Hanek path reads a small
constant table of the bits of 2/pi (scalar loads, gathers once vectorized).

``erfc`` has no kernel of its own: the front end lowers it to ``1 - erf(x)``. Its absolute
error is about 4e-7 (erf's plus one rounding), but its relative error grows for x > ~1 and the
result is 0 from x ~ 3.92 on, where the true erfc(x) ~ 1e-8 is still representable; models that
need erfc's tail (e.g. tail log-probabilities) should compute in f64.

Special values follow C99: exp(-inf) = 0, exp(inf) = inf, log(0) = -inf, log(x < 0) = nan,
tanh/erf(+-inf) = +-1, nan in -> nan out, sin/cos(+-inf) = nan.

``f64`` uses LLVM intrinsics (``llvm.exp.f64``, ``llvm.log.f64``, ...) or declares the C
function (``tanh``, ``erf``, ``expm1``, ``log1p``); those become libm calls, so ``f64`` models
that use transcendental functions must be linked with ``-lm`` (LLVM merges ``sin`` and ``cos``
of one value into one call of ``sincos``, which glibc's and musl's libm have). ``f16``
computes in ``f32``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from llvmlite import ir

from aotc.codegen.irtypes import F16, F32, F64, call_intrinsic, declare, scalar_constant

MathFn = Callable[[ir.IRBuilder, ir.Value], ir.Value]


class _Ops:
    """Arithmetic on one scalar-or-vector float type, so formulas read like the C they mirror."""

    def __init__(self, builder: ir.IRBuilder, ty: ir.Type):
        self.b = builder
        self.ty = ty
        self.element = ty.element if isinstance(ty, ir.VectorType) else ty
        width = {"half": 16, "float": 32, "double": 64}[str(self.element)]
        int_element = ir.IntType(width)
        self.ity = (
            ir.VectorType(int_element, ty.count) if isinstance(ty, ir.VectorType) else int_element
        )

    def c(self, value: float) -> ir.Constant:
        return _splat(self.ty, scalar_constant(self.element, value))

    def ci(self, value: int) -> ir.Constant:
        element = self.ity.element if isinstance(self.ity, ir.VectorType) else self.ity
        return _splat(self.ity, scalar_constant(element, value))

    def add(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fadd(a, b)

    def sub(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fsub(a, b)

    def mul(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fmul(a, b)

    def div(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fdiv(a, b)

    def fmuladd(self, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        """``a * b + c``, fused where the target has FMA; never a libm ``fma`` call."""
        return call_intrinsic(self.b, "fmuladd", [a, b, c])

    def poly(self, x: ir.Value, coefficients: Sequence[float]) -> ir.Value:
        """Horner's rule with ``llvm.fmuladd``; coefficients from the highest power down."""
        result: ir.Value = self.c(coefficients[0])
        for coefficient in coefficients[1:]:
            result = self.fmuladd(result, x, self.c(coefficient))
        return result

    def lt(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fcmp_ordered("<", a, b)

    def le(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fcmp_ordered("<=", a, b)

    def gt(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fcmp_ordered(">", a, b)

    def eq(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fcmp_ordered("==", a, b)

    def isnan(self, a: ir.Value) -> ir.Value:
        return self.b.fcmp_unordered("uno", a, a)

    def select(self, cond: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.select(cond, a, b)

    def abs(self, a: ir.Value) -> ir.Value:
        return call_intrinsic(self.b, "fabs", [a])

    def copysign(self, magnitude: ir.Value, sign: ir.Value) -> ir.Value:
        return call_intrinsic(self.b, "copysign", [magnitude, sign])

    def round_small(self, x: ir.Value) -> ir.Value:
        """Round to nearest even for |x| < 2^22 (f32) / 2^51 (f64), with no libm call."""
        magic = self.c(12582912.0 if self.element == F32 else 6755399441055744.0)
        return self.sub(self.add(x, magic), magic)

    def bits(self, a: ir.Value) -> ir.Value:
        return self.b.bitcast(a, self.ity)

    def from_bits(self, a: ir.Value) -> ir.Value:
        return self.b.bitcast(a, self.ty)


def _splat(ty: ir.Type, element: ir.Constant) -> ir.Constant:
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [element] * ty.count)
    return element


def _element(ty: ir.Type) -> ir.Type:
    return ty.element if isinstance(ty, ir.VectorType) else ty


# ---- exp, log and friends --------------------------------------------------------------------

# exp(x) is inf above 88.7228 and rounds to 0 below -103.972. Clamped to [_EXP_LO, _EXP_HI]
# (nan passes the clamp), the scaling by 2^n overflows to inf and underflows to 0 by itself:
# n stays in [-159, 128], where both of its halves are normal exponents.
_EXP_HI = 89.0
_EXP_LO = -110.0
_EXP_POLY = (
    1.9875691500e-4,
    1.3981999507e-3,
    8.3334519073e-3,
    4.1665795894e-2,
    1.6666665459e-1,
    5.0000001201e-1,
)
_LN2_HI = 0.693359375
_LN2_LO = -2.12194440e-4
_LOG2E = 1.44269504088896341
_ROUND_MAGIC = 12582912.0  # 1.5 * 2^23: adding it rounds |x| < 2^22 to an integer


def _exp_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Cephes ``expf`` with no selects for special values: nan flows through the arithmetic,
    +-inf are clamped and the final scaling overflows or underflows as exp does."""
    m = _Ops(b, x.type)
    xc = m.select(m.gt(x, m.c(_EXP_HI)), m.c(_EXP_HI), x)
    return _exp_clamped(m, m.select(m.lt(xc, m.c(_EXP_LO)), m.c(_EXP_LO), xc))


def _exp_clamped(m: _Ops, x: ir.Value) -> ir.Value:
    """exp(x) for x (or nan) clamped to [_EXP_LO, _EXP_HI]."""
    shifted, p = _exp_reduced(m, x)
    # n as an integer from the low bits of ``shifted`` (no fptosi: nan would make it poison)
    exponent = m.b.sub(m.bits(shifted), m.bits(m.c(_ROUND_MAGIC)))
    return _scale_by_power_of_two(m, p, exponent)


def _exp_reduced(m: _Ops, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """Cephes' reduction x = n ln 2 + r: (n + _ROUND_MAGIC, whose low bits hold n, and exp(r));
    exp(x) = exp(r) 2^n."""
    shifted = m.fmuladd(x, m.c(_LOG2E), m.c(_ROUND_MAGIC))  # round(x log2 e) + magic
    n = m.sub(shifted, m.c(_ROUND_MAGIC))
    r = m.fmuladd(n, m.c(-_LN2_LO), m.fmuladd(n, m.c(-_LN2_HI), x))
    return shifted, m.add(m.fmuladd(m.poly(r, _EXP_POLY), m.mul(r, r), r), m.c(1.0))


# f32(ln 2^-126) = -87.3365479, just below ln 2^-126 = -87.3365448: exp(x) is below the smallest
# normal float for every x <= this float and a normal float from the next one up (-87.3365402)
_EXP_NORMAL_LO = -87.33654475


def softmax_exp(b: ir.IRBuilder, x: ir.Value, top: ir.Value) -> ir.Value:
    """f32 ``exp(x - top)`` where ``top`` is the maximum of a set holding ``x`` (softmax's row
    max), so ``x - top`` is <= 0, -inf or nan. Only then is it right: for ``x - top`` above
    88.7 the result would be -0 or inf, silently, as 2^n's exponent field overflows into the
    sign bit. Results below the smallest normal float (``x - top <= -87.3365479``) are 0, as
    TensorFlow's kernels (which run with denormals flushed) and TF Lite's softmax (XNNPACK's
    cutoff at -87.3365) give them. With no upper clamp and 2^n, n in [-126, 0], one exponent
    field: 18 vector operations instead of ``exp``'s 23, on every score of an attention
    kernel."""
    assert _element(x.type) == F32, f"softmax_exp on {x.type}"
    m = _Ops(b, x.type)
    d = m.sub(x, top)
    below = m.le(d, m.c(_EXP_NORMAL_LO))  # ordered: nan computes, and stays nan
    shifted, p = _exp_reduced(m, m.select(below, m.c(_EXP_NORMAL_LO), d))
    # the low bits of ``shifted`` hold n (plus 2^22, shifted out): 2^n's bits (n + 127) << 23
    scale = m.b.add(m.b.shl(m.bits(shifted), m.ci(23)), m.ci(127 << 23))
    return m.select(below, m.c(0.0), m.mul(p, m.from_bits(scale)))


def _scale_by_power_of_two(m: _Ops, p: ir.Value, n: ir.Value) -> ir.Value:
    """p * 2^n for n in [-252, 254], in two exact steps so subnormals round once."""
    half = m.b.ashr(n, m.ci(1))
    rest = m.b.sub(n, half)
    return m.mul(m.mul(p, _power_of_two(m, half)), _power_of_two(m, rest))


def _power_of_two(m: _Ops, n: ir.Value) -> ir.Value:
    """2^n for a normal exponent n (f32 only)."""
    return m.from_bits(m.b.shl(m.b.add(n, m.ci(127)), m.ci(23)))


_LOG_POLY = (
    7.0376836292e-2,
    -1.1514610310e-1,
    1.1676998740e-1,
    -1.2420140846e-1,
    1.4249322787e-1,
    -1.6668057665e-1,
    2.0000714765e-1,
    -2.4999993993e-1,
    3.3333331174e-1,
)
_SQRT_HALF = 0.70710678118654752440
_MIN_NORMAL = 1.17549435e-38


def _log_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    m = _Ops(b, x.type)
    mantissa, exponent = _frexp_f32(m, x)
    small = m.lt(mantissa, m.c(_SQRT_HALF))
    exponent = m.select(small, m.sub(exponent, m.c(1.0)), exponent)
    f = m.sub(m.select(small, m.add(mantissa, mantissa), mantissa), m.c(1.0))
    z = m.mul(f, f)
    y = m.mul(m.mul(m.poly(f, _LOG_POLY), f), z)
    y = m.add(y, m.mul(exponent, m.c(_LN2_LO)))
    y = m.sub(y, m.mul(z, m.c(0.5)))
    result = m.add(m.add(f, y), m.mul(exponent, m.c(_LN2_HI)))
    return _log_special_values(m, x, result)


def _frexp_f32(m: _Ops, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """x = mantissa * 2^exponent, mantissa in [0.5, 1), for finite positive x (exponent: f32)."""
    subnormal = m.lt(x, m.c(_MIN_NORMAL))
    scaled = m.select(subnormal, m.mul(x, m.c(2.0**25)), x)
    bits = m.bits(scaled)
    biased = m.b.lshr(bits, m.ci(23))
    mantissa = m.from_bits(m.b.or_(m.b.and_(bits, m.ci(0x007FFFFF)), m.ci(0x3F000000)))
    exponent = m.b.sitofp(m.b.sub(biased, m.ci(126)), m.ty)
    return mantissa, m.select(subnormal, m.sub(exponent, m.c(25.0)), exponent)


def _log_special_values(m: _Ops, x: ir.Value, result: ir.Value) -> ir.Value:
    result = m.select(m.eq(x, m.c(float("inf"))), x, result)
    result = m.select(m.eq(x, m.c(0.0)), m.c(float("-inf")), result)
    result = m.select(m.lt(x, m.c(0.0)), m.c(float("nan")), result)
    return m.select(m.isnan(x), x, result)


def _expm1_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Kahan's trick near 0: exp(x) - 1 = (u - 1) x / log(u), exact where u rounds to 1;
    plain u - 1 for |x| >= 1, where it is accurate (and the product could overflow)."""
    m = _Ops(b, x.type)
    u = _exp_f32(b, x)
    um1 = m.sub(u, m.c(1.0))
    kahan = m.div(m.mul(um1, x), _log_f32(b, u))
    kahan = m.select(m.eq(u, m.c(1.0)), x, kahan)
    return m.select(m.lt(m.abs(x), m.c(1.0)), kahan, m.select(m.isnan(x), x, um1))


def _log1p_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Goldberg's trick: log(1 + x) = log(u) * x / (u - 1) with u = 1 + x rounded."""
    m = _Ops(b, x.type)
    u = m.add(x, m.c(1.0))
    log_u = _log_f32(b, u)
    result = m.mul(log_u, m.div(x, m.sub(u, m.c(1.0))))
    result = m.select(m.eq(u, m.c(float("inf"))), u, result)
    return m.select(m.eq(u, m.c(1.0)), x, result)


# ---- tanh, logistic, erf ---------------------------------------------------------------------

_TANH_POLY = (
    -5.70498872745e-3,
    2.06390887954e-2,
    -5.37397155531e-2,
    1.33314422036e-1,
    -3.33332819422e-1,
)


def _tanh_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    m = _Ops(b, x.type)
    z = m.abs(x)
    x2 = m.mul(x, x)
    small = m.add(m.mul(m.mul(m.poly(x2, _TANH_POLY), x2), x), x)
    e = _exp_f32(b, m.add(z, z))
    large = m.sub(m.c(1.0), m.div(m.c(2.0), m.add(e, m.c(1.0))))
    return m.select(m.gt(z, m.c(0.625)), m.copysign(large, x), small)


def _logistic_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """``_logistic`` with exp specialised to ``e^-|x|`` in (0, 1], which swish evaluates on
    every activation of EfficientNet: only the lower clamp (nan kept by it)."""
    m = _Ops(b, x.type)
    z = b.fneg(m.abs(x))
    e = _exp_clamped(m, m.select(m.lt(z, m.c(_EXP_LO)), m.c(_EXP_LO), z))
    numerator = m.select(m.lt(x, m.c(0.0)), e, m.c(1.0))
    return m.div(numerator, m.add(m.c(1.0), e))


def _logistic(b: ir.IRBuilder, x: ir.Value, exp: MathFn) -> ir.Value:
    """1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below: exp never overflows, so tiny
    results keep their relative accuracy."""
    m = _Ops(b, x.type)
    e = exp(b, b.fneg(m.abs(x)))
    denominator = m.add(m.c(1.0), e)
    positive = m.div(m.c(1.0), denominator)
    return m.select(m.lt(x, m.c(0.0)), m.div(e, denominator), positive)


# erf(x) = x P(x^2) / Q(x^2), the form of the float erf TensorFlow itself computes (Eigen's and
# XLA's: 7.44 and 6.71 ULP on every float of [0.25, 4)): x clamped to +-3.95 (erf rounds to
# 1.0f from 3.9192 on), the result to [-1, 1] (the rational exceeds 1 by up to 4e-7 near the
# clamp, so 1 - erf never goes negative). P, Q fitted for relative error, then nudged by
# float32 ulps against the exact float32 evaluation with and without FMA on every float of
# [0.25, 4) (tools/fit_erf.py; scored on a sample, an earlier nudge overfit it: 5.06 ULP there,
# 6.39 on every float); rounding in the two Horner chains, not the fit (5e-8), sets the error.
# One division replaces erfc's degree-14 polynomial and the second branch: 18 vector
# operations, not 30, on every activation of a GELU GEMM epilogue. Highest coefficient first.
_ERF_NUMERATOR = (
    1.9603694667580385e-08,
    -1.9508602235873695e-06,
    0.00014380266657099128,
    0.003807599889114499,
    0.05092252045869827,
    0.20257748663425446,
    1.128379225730896,
)
_ERF_DENOMINATOR = (
    0.0009797849925234914,
    0.01457526907324791,
    0.1160922572016716,
    0.5128611922264099,
    1.0,
)
_ERF_CLAMP = 3.95


def _erf_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    m = _Ops(b, x.type)
    # ordered compares: nan passes both clamps, and the arithmetic keeps it
    xc = m.select(m.gt(x, m.c(_ERF_CLAMP)), m.c(_ERF_CLAMP), x)
    xc = m.select(m.lt(xc, m.c(-_ERF_CLAMP)), m.c(-_ERF_CLAMP), xc)
    s = m.mul(xc, xc)
    r = m.div(m.mul(xc, m.poly(s, _ERF_NUMERATOR)), m.poly(s, _ERF_DENOMINATOR))
    r = m.select(m.gt(r, m.c(1.0)), m.c(1.0), r)
    return m.select(m.lt(r, m.c(-1.0)), m.c(-1.0), r)


# ---- sin, cos (f32 through an f64 kernel) ----------------------------------------------------

_TWO_OVER_PI = 0.6366197723675814
_PIO2_HI = 1.5707963109016418  # pi/2 to 25 bits: n * _PIO2_HI is exact for |n| < 2^28
_PIO2_LO = 1.5893254773528196e-08  # pi/2 - _PIO2_HI
_SIN_POLY = (
    2.718311493989822e-06,
    -0.00019839334836096632,
    0.008333329385889463,
    -0.16666666641626524,
)  # fdlibm __kernel_sindf
_COS_POLY = (
    2.439044879627741e-05,
    -0.001388676377460993,
    0.04166662332373906,
    -0.499999997251031,
)  # fdlibm __kernel_cosdf
_MEDIUM_LIMIT = 2.0**27  # Cody-Waite below this; Payne-Hanek (integer) reduction above
# Sliding 32-bit windows of the bits of 2/pi: entry k = floor(2/pi * 2^(8k+6)) mod 2^32.
_TWO_OVER_PI_BITS = (
    0x00000028,
    0x000028BE,
    0x0028BE60,
    0x28BE60DB,
    0xBE60DB93,
    0x60DB9391,
    0xDB939105,
    0x9391054A,
    0x91054A7F,
    0x054A7F09,
    0x4A7F09D5,
    0x7F09D5F4,
    0x09D5F47D,
    0xD5F47D4D,
    0xF47D4D37,
    0x7D4D3770,
    0x4D377036,
    0x377036D8,
    0x7036D8A5,
    0x36D8A566,
    0xD8A5664F,
    0xA5664F10,
    0x664F10E4,
    0x4F10E410,
    0x10E4107F,
)
_PIO2_SCALED = 3.4061215800865545e-19  # pi/2 * 2^-62


def _reduce_medium(b: ir.IRBuilder, a: ir.Value) -> tuple[ir.Value, ir.Value]:
    """|x| (f32) -> (r: f64, quadrant: i64) with |x| = n pi/2 + r, for |x| < 2^27."""
    wide = _widen(b, a, F64)
    d = _Ops(b, wide.type)
    n = d.round_small(d.mul(wide, d.c(_TWO_OVER_PI)))
    r = d.sub(d.sub(wide, d.mul(n, d.c(_PIO2_HI))), d.mul(n, d.c(_PIO2_LO)))
    return r, b.fptosi(n, d.ity)


def _reduce_huge(b: ir.IRBuilder, a: ir.Value) -> tuple[ir.Value, ir.Value]:
    """Payne-Hanek for finite |x| >= 2^27 (the idea of Eigen's ``trig_reduce_huge``).

    With x = M 2^s (M the 24-bit mantissa), x 2/pi mod 4 only depends on the bits of 2/pi
    from 2^-(s-1) on: we multiply M (shifted so the table is 8-bit aligned) by the 96-bit
    window of them, keep the product in 2.62 fixed point, round to the quadrant and convert
    the remaining fraction to f64 radians.
    """
    m = _Ops(b, a.type)
    i64 = _int_like(a.type, 64)
    bits = m.bits(a)
    e = b.sub(b.lshr(bits, m.ci(23)), m.ci(118))
    mantissa = b.or_(b.and_(bits, m.ci(0x007FFFFF)), m.ci(0x00800000))
    xi = b.zext(b.shl(mantissa, b.and_(e, m.ci(7))), i64)
    word = b.lshr(e, m.ci(3))
    hi, mid, lo = (_table_word(b, word, k, i64) for k in (-1, 3, 7))
    p = b.mul(xi, lo)
    p = b.add(b.mul(xi, mid), b.lshr(p, _splat(i64, ir.Constant(ir.IntType(64), 32))))
    p = b.add(b.shl(b.mul(xi, hi), _splat(i64, ir.Constant(ir.IntType(64), 32))), p)
    half = _splat(i64, ir.Constant(ir.IntType(64), 1 << 61))
    quadrant = b.lshr(b.add(p, half), _splat(i64, ir.Constant(ir.IntType(64), 62)))
    fraction = b.sub(p, b.shl(quadrant, _splat(i64, ir.Constant(ir.IntType(64), 62))))
    wide_ty = ir.VectorType(F64, a.type.count) if isinstance(a.type, ir.VectorType) else F64
    d = _Ops(b, wide_ty)
    return d.mul(b.sitofp(fraction, wide_ty), d.c(_PIO2_SCALED)), quadrant


def _table_word(b: ir.IRBuilder, word: ir.Value, k: int, i64: ir.Type) -> ir.Value:
    """Entry ``word + k`` of the 2/pi table, zero-extended to i64 (gathers on vectors)."""
    table = _two_over_pi_table(b.module)
    index = b.zext(
        b.add(word, _splat(word.type, scalar_constant(_element(word.type), k))),
        _int_like(word.type, 64),
    )
    if not isinstance(word.type, ir.VectorType):
        return b.zext(_load_word(b, table, index), i64)
    lanes: ir.Value = ir.Constant(_int_like(word.type, 32), None)
    for lane in range(word.type.count):
        element = _load_word(b, table, b.extract_element(index, ir.Constant(ir.IntType(32), lane)))
        lanes = b.insert_element(lanes, element, ir.Constant(ir.IntType(32), lane))
    return b.zext(lanes, i64)


def _load_word(b: ir.IRBuilder, table: ir.GlobalVariable, index: ir.Value) -> ir.Value:
    ptr = b.gep(table, [index], inbounds=True, source_etype=ir.IntType(32))
    return b.load(ptr, typ=ir.IntType(32), align=4)


def _two_over_pi_table(module: ir.Module) -> ir.GlobalVariable:
    name = "aotc.two_over_pi"
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    ty = ir.ArrayType(ir.IntType(32), len(_TWO_OVER_PI_BITS))
    table = ir.GlobalVariable(module, ty, name)
    table.initializer = ir.Constant(ty, [ir.Constant(ir.IntType(32), w) for w in _TWO_OVER_PI_BITS])
    table.global_constant = True
    table.linkage = "private"
    table.unnamed_addr = True
    return table


def _int_like(ty: ir.Type, width: int) -> ir.Type:
    element = ir.IntType(width)
    return ir.VectorType(element, ty.count) if isinstance(ty, ir.VectorType) else element


def _sin_cos_kernels(d: _Ops, r: ir.Value) -> tuple[ir.Value, ir.Value]:
    z = d.mul(r, r)
    sin = d.add(r, d.mul(d.mul(r, z), d.poly(z, _SIN_POLY)))
    cos = d.add(d.c(1.0), d.mul(z, d.poly(z, _COS_POLY)))
    return sin, cos


def _trig_f32(b: ir.IRBuilder, x: ir.Value, shift: int) -> ir.Value:
    """sin (shift 0) or cos (shift 1) of x; the quadrant, moved by ``shift``, picks a kernel.

    Reduces |x| (medium or huge path, chosen by select) and evaluates in f64; for sin the
    sign of x is put back at the end (sin is odd, cos even).
    """
    m = _Ops(b, x.type)
    a = m.abs(x)
    medium = m.lt(a, m.c(_MEDIUM_LIMIT))
    r_medium, q_medium = _reduce_medium(b, m.select(medium, a, m.c(0.0)))
    huge_input = m.select(medium, m.c(_MEDIUM_LIMIT), m.select(m.isnan(a), m.c(1.0), a))
    huge_input = m.select(m.eq(a, m.c(float("inf"))), m.c(_MEDIUM_LIMIT), huge_input)
    r_huge, q_huge = _reduce_huge(b, huge_input)
    r = b.select(medium, r_medium, r_huge)
    d = _Ops(b, r.type)
    q = b.add(b.select(medium, q_medium, q_huge), d.ci(shift))
    sin, cos = _sin_cos_kernels(d, r)
    value = d.select(b.trunc(q, _int_like(q.type, 1)), cos, sin)
    negative = b.icmp_unsigned("!=", b.and_(q, d.ci(2)), d.ci(0))
    value = b.fptrunc(d.select(negative, b.fneg(value), value), x.type)
    if shift == 0:
        sign = b.and_(m.bits(x), m.ci(-0x80000000))
        value = m.from_bits(b.xor(m.bits(value), sign))
    infinite = m.eq(a, m.c(float("inf")))
    return m.select(infinite, m.c(float("nan")), m.select(m.isnan(x), x, value))


# ---- dispatch --------------------------------------------------------------------------------


def _widen(b: ir.IRBuilder, x: ir.Value, element: ir.Type) -> ir.Value:
    ty = ir.VectorType(element, x.type.count) if isinstance(x.type, ir.VectorType) else element
    return b.fpext(x, ty)


def _f64_intrinsic(name: str) -> MathFn:
    return lambda b, x: call_intrinsic(b, name, [x])


def _f64_libm(name: str) -> MathFn:
    def call(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
        return b.call(declare(b.module, name, F64, [F64]), [x])

    return call


def _logistic_f64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _logistic(b, x, _f64_intrinsic("exp"))


_F32: dict[str, MathFn] = {
    "exp": _exp_f32, "log": _log_f32, "expm1": _expm1_f32, "log1p": _log1p_f32,
    "tanh": _tanh_f32, "logistic": _logistic_f32, "erf": _erf_f32,
    "sin": lambda b, x: _trig_f32(b, x, 0), "cos": lambda b, x: _trig_f32(b, x, 1),
}  # fmt: skip
_F64: dict[str, MathFn] = {
    "exp": _f64_intrinsic("exp"), "log": _f64_intrinsic("log"), "sin": _f64_intrinsic("sin"),
    "cos": _f64_intrinsic("cos"), "tanh": _f64_libm("tanh"), "erf": _f64_libm("erf"),
    "expm1": _f64_libm("expm1"), "log1p": _f64_libm("log1p"), "logistic": _logistic_f64,
}  # fmt: skip

FUNCTIONS = frozenset(_F32)


def call(name: str, builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Apply mathlib function ``name`` to a float (or float vector) value."""
    element = _element(x.type)
    if element == F32:
        return _F32[name](builder, x)
    if element == F64:
        return _F64[name](builder, x)
    assert element == F16, f"mathlib {name} on {x.type}"
    wide = _F32[name](builder, _widen(builder, x, F32))
    return builder.fptrunc(wide, x.type)
