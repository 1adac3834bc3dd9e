"""Complex numbers and Fourier transforms: c64/c128, XLA's fft, complex-lowering.

The evaluator is checked against numpy.fft; the lowered module (complex values as (re, im)
float pairs, fft as DFT-matrix dots, long lengths split four-step) against the evaluator;
compiled code, linked from C, against both, through the C ABI's complex arguments.

Precision: a length-n DFT as a dot sums n products, so f32's error is ~sqrt(n) eps of the
largest magnitude for random inputs (at most n eps); each four-step level adds a twiddle
multiply. Errors are measured relative to the largest expected magnitude: 2e-6 for lengths
up to 300, 1e-5 up to 4096 (log2 n * eps * a few), as XLA's own fft tests allow.
"""

from __future__ import annotations

import numpy as np
import pytest
from c_harness import run_compiled
from fixtures import HOST_CPU, as_real_form, assert_close, load_hlo_fixture

from aotc.driver import compile_graph, optimize, pipeline_options
from aotc.errors import AotcError, UnsupportedError
from aotc.frontend.hlo_input import load_hlo
from aotc.hlo.evaluate import evaluate
from aotc.hlo.shape import real_form
from aotc.hlo.text import parse_module, print_module
from aotc.hlo.verify import verify_module
from aotc.jit import JitModel
from aotc.passes import ComplexLowering

RNG = np.random.default_rng(7)

# (fft_type, operand shape, fft_length, result shape)
CASES = [
    ("RFFT", "f32[3,16]", (16,), "c64[3,9]"),
    ("RFFT", "f32[2,7]", (7,), "c64[2,4]"),
    ("RFFT", "f32[2,4096]", (4096,), "c64[2,2049]"),  # as a complex transform, split
    ("IRFFT", "c64[3,9]", (16,), "f32[3,16]"),
    ("IRFFT", "c64[2,4]", (7,), "f32[2,7]"),
    ("IRFFT", "c64[2,1025]", (2048,), "f32[2,2048]"),  # the Hermitian spectrum completed
    ("FFT", "c64[4,8]", (8,), "c64[4,8]"),
    ("FFT", "c64[2,300]", (300,), "c64[2,300]"),  # 15 x 20
    ("FFT", "c64[2,257]", (257,), "c64[2,257]"),  # a prime: one matrix
    ("IFFT", "c64[2,1024]", (1024,), "c64[2,1024]"),  # 32 x 32
    ("FFT", "c64[2,3,4,5]", (3, 4, 5), "c64[2,3,4,5]"),
    ("IFFT", "c64[6,8]", (6, 8), "c64[6,8]"),
    ("RFFT", "f32[2,6,10]", (6, 10), "c64[2,6,6]"),
    ("IRFFT", "c64[2,6,6]", (6, 10), "f32[2,6,10]"),
    ("RFFT", "f64[2,12]", (12,), "c128[2,7]"),
    ("IFFT", "c128[3,16]", (16,), "c128[3,16]"),
]


def _fft_module(kind: str, operand: str, lengths: tuple[int, ...], result: str) -> str:
    length = ",".join(map(str, lengths))
    return f"""HloModule fft
ENTRY main {{
  x = {operand} parameter(0)
  ROOT r = {result} fft(x), fft_type={kind}, fft_length={{{length}}}
}}"""


def _random(module_text: str) -> np.ndarray:
    shape = parse_module(module_text).entry.parameters[0].array_shape
    x = RNG.standard_normal(shape.dims)
    if shape.dtype.is_complex:
        x = x + 1j * RNG.standard_normal(shape.dims)
    return x.astype(shape.dtype.numpy)


def _numpy_fft(kind: str, x: np.ndarray, lengths: tuple[int, ...]) -> np.ndarray:
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    fn = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn, "IRFFT": np.fft.irfftn}
    return fn[kind](x.astype(np.complex128 if x.dtype.kind == "c" else np.float64), lengths, axes)


def _tolerance(lengths: tuple[int, ...]) -> float:
    return 2e-6 if max(lengths) <= 300 else 1e-5


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_evaluator_matches_numpy_and_lowering_matches_evaluator(case: tuple) -> None:
    kind, _, lengths, _ = case
    text = _fft_module(*case)
    module = parse_module(text)
    verify_module(module)
    x = _random(text)
    want = evaluate(module, [x])
    reference = _numpy_fft(kind, x, lengths)
    assert want.dtype == parse_module(text).entry.root.array_shape.dtype.numpy
    eps = np.finfo(want.real.dtype).eps
    assert_close(want.astype(reference.dtype), reference, 2 * eps, what="evaluator")
    assert ComplexLowering().run(module)
    verify_module(module)
    assert "c64" not in print_module(module) and "fft(" not in print_module(module)
    lowered = evaluate(module, [as_real_form(x)])
    rtol = _tolerance(lengths) if eps > 1e-10 else 1e-13
    assert_close(lowered, as_real_form(want), rtol, what="lowered")


@pytest.mark.parametrize("case", [CASES[i] for i in (0, 3, 7, 9, 12, 13, 15)], ids=lambda c: c[1])
def test_compiled_fft_matches_the_evaluator(tmp_path, case: tuple) -> None:
    """Through the whole compiler and the C ABI: complex arguments and results as C arrays."""
    text = _fft_module(*case)
    path = tmp_path / "fft.hlo"
    path.write_text(text)
    x = _random(text)
    want = evaluate(parse_module(text), [x])
    model = compile_graph(path, target=HOST_CPU).model
    typed, buffers = run_compiled(model, [x])
    np.testing.assert_array_equal(typed[0], buffers[0])
    assert_close(typed[0], want, _tolerance(case[2]), what="compiled")


def test_rfft_of_a_zero_padded_frame_drops_the_padding() -> None:
    """tf.signal.stft's frames of 400 samples padded to fft_length 512: a [400, 514] matrix."""
    text = """HloModule m
ENTRY main {
  x = f32[3,400] parameter(0)
  zero = f32[] constant(0)
  p = f32[3,512] pad(x, zero), padding=0_0x0_112
  ROOT r = c64[3,257] fft(p), fft_type=RFFT, fft_length={512}
}"""
    module = parse_module(text)
    x = RNG.standard_normal([3, 400]).astype(np.float32)
    want = evaluate(module, [x])
    ComplexLowering().run(module)
    (dot,) = [i for i in module.entry.instructions if i.opcode.value == "dot"]
    assert dot.operands[1].array_shape.dims == (400, 514)
    assert_close(evaluate(module, [x]), as_real_form(want), 2e-6, what="lowered")


_ARITHMETIC = """HloModule complex_arithmetic
ENTRY main {
  z = c64[4,6] parameter(0)
  w = c64[4,6] parameter(1)
  x = f32[4,6] parameter(2)
  k = c64[] constant((0.5, -2))
  kb = c64[4,6] broadcast(k), dimensions={}
  m = c64[4,6] multiply(z, w)
  d = c64[4,6] divide(m, kb)
  s = c64[4,6] subtract(d, z)
  n = c64[4,6] negate(s)
  c = c64[4,6] convert(x)
  zero = c64[] constant((0, 0))
  p = c64[4,8] pad(n, zero), padding=0_0x1_1
  t = c64[6,4] transpose(z), dimensions={1,0}
  r = c64[6,4] reverse(t), dimensions={0}
  sl = c64[2,6] slice(w), slice={[1:3], [0:6]}
  cat = c64[6,6] concatenate(sl, z), dimensions={0}
  q = pred[4,6] compare(x, x), direction=GT
  sel = c64[4,6] select(q, z, c)
  mk = c64[4,6] complex(x, x)
  ab = f32[4,6] abs(n)
  re = f32[4,6] real(w)
  im = f32[4,6] imag(w)
  rx = f32[4,6] real(x)
  ix = f32[4,6] imag(x)
  e = c64[4,6] exponential(z)
  dt = c64[4,4] dot(z, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  ROOT out = (c64[4,8], c64[6,4], c64[6,6], c64[4,6], c64[4,6], f32[4,6], f32[4,6],
    f32[4,6], f32[4,6], f32[4,6], c64[4,6], c64[4,4]) tuple(p, r, cat, sel, mk, ab, re, im, rx,
    ix, e, dt)
}"""


def test_complex_arithmetic_lowers_and_compiles(tmp_path) -> None:
    module = parse_module(_ARITHMETIC)
    args = [_random(_ARITHMETIC), _random(_ARITHMETIC), RNG.standard_normal([4, 6]).astype("f4")]
    want = evaluate(module, args)
    np.testing.assert_allclose(want[5], np.abs(-(args[0] * args[1] / (0.5 - 2j) - args[0])), 1e-6)
    assert ComplexLowering().run(module)
    lowered = evaluate(module, [as_real_form(a) for a in args])
    for k, (got, expected) in enumerate(zip(lowered, want, strict=True)):
        assert_close(got, as_real_form(expected), 1e-6, what=f"lowered {k}")
    path = tmp_path / "arith.hlo"
    path.write_text(_ARITHMETIC)
    model = compile_graph(path, target=HOST_CPU).model
    typed, _ = run_compiled(model, args)
    jitted = JitModel.from_compiled(model)(*args)
    for k, expected in enumerate(want):
        assert_close(typed[k], expected, 1e-6, what=f"C {k}")
        assert_close(jitted[k], expected, 1e-6, what=f"JIT {k}")


def test_abs_neither_overflows_nor_underflows() -> None:
    """hypot's scaling: |3e30 + 4e30 i| = 5e30 and |3e-30 + 4e-30 i| = 5e-30 in f32."""
    text = "HloModule m\nENTRY main {\n  z = c64[5] parameter(0)\n  ROOT a = f32[5] abs(z)\n}"
    module = parse_module(text)
    z = np.array([3e30 + 4e30j, 3e-30 + 4e-30j, 0, np.inf - 1j, -2 + 0j], np.complex64)
    ComplexLowering().run(module)
    got = evaluate(module, [as_real_form(z)])
    np.testing.assert_allclose(got, [5e30, 5e-30, 0, np.inf, 2], rtol=1e-6)


def test_jax_fft_fixture_matches_jax() -> None:
    """jnp.fft's every fft_type (and a 2048-point rfft), complex arithmetic and c64 results:
    evaluated, compiled to C and JIT-run, as JAX computed."""
    path, args, expected = load_hlo_fixture("jax_fft")
    evaluated = evaluate(load_hlo(path).module, args)
    model = compile_graph(path, target=HOST_CPU).model
    typed, _ = run_compiled(model, args)
    jitted = JitModel.from_compiled(model)(*args)
    for k, want in enumerate(expected):
        for how, got in [("evaluated", evaluated), ("C", typed), ("JIT", jitted)]:
            assert_close(got[k], want, 1e-5, what=f"{how} result {k}")


def test_complex_constants_round_trip() -> None:
    text = """HloModule m
ENTRY main {
  a = c64[3]{0} constant({(0.5, -1.5), (1e+30, -0), (-nan, inf)})
  b = c128[] constant((0.1, 0.2))
  ROOT t = (c64[3]{0}, c128[]) tuple(a, b)
}"""
    module = parse_module(text)
    a, b = evaluate(module, [])
    assert a.dtype == np.complex64 and b.dtype == np.complex128
    assert a[0] == 0.5 - 1.5j and a[1] == 1e30 and np.signbit(a[1].imag) and b == 0.1 + 0.2j
    assert np.isnan(a[2].real) and a[2].imag == np.inf
    again = parse_module(print_module(module))
    assert print_module(again) == print_module(module)


def test_header_describes_complex_tensors(tmp_path) -> None:
    path = tmp_path / "spectrum.hlo"
    path.write_text(_fft_module(*CASES[0]))
    model = compile_graph(path, target=HOST_CPU).model
    assert "SPECTRUM_RESULT0_BYTES 216" in model.header  # 3 x 9 x 8 bytes
    assert "complex64[3,9] as (re, im) pairs" in model.header
    assert '"complex64"' in model.header
    assert model.results[0].shape.dtype.is_complex
    assert real_form(model.results[0].shape).dims == (3, 9, 2)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "z = c64[4] parameter(0)\n  ROOT e = c64[4] log(z)",
            "log needs a floating-point operand",
        ),
        (
            "z = c64[4] parameter(0)\n  ROOT e = pred[4] compare(z, z), direction=EQ",
            r"compare %e \(.*c64\[4\].*\): aotc does not compute this opcode on complex",
        ),
        (
            "z = c64[2,4099] parameter(0)\n"
            "  ROOT f = c64[2,4099] fft(z), fft_type=FFT, fft_length={4099}",
            "fft %f: length 4099 needs a transform of prime length 4099",
        ),
    ],
)
def test_unsupported_complex_work_is_an_error_naming_the_instruction(
    body: str, message: str
) -> None:
    module = parse_module(f"HloModule m\nENTRY main {{\n  {body}\n}}")
    with pytest.raises(AotcError, match=message):
        verify_module(module)
        optimize(module)


def test_complex_values_in_a_loop_body_are_refused() -> None:
    text = """HloModule m
cond {
  c = (s32[], c64[2]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(i, three), direction=LT
}
body {
  b = (s32[], c64[2]) parameter(0)
  i = s32[] get-tuple-element(b), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  z = c64[2] get-tuple-element(b), index=1
  zz = c64[2] multiply(z, z)
  ROOT out = (s32[], c64[2]) tuple(next, zz)
}
ENTRY main {
  z = c64[2] parameter(0)
  i = s32[] parameter(1)
  init = (s32[], c64[2]) tuple(i, z)
  ROOT w = (s32[], c64[2]) while(init), condition=cond, body=body
}"""
    with pytest.raises(UnsupportedError, match="outside loops, branches and called"):
        optimize(parse_module(text))


def test_codegen_refuses_complex_values_when_the_lowering_is_disabled(tmp_path) -> None:
    path = tmp_path / "fft.hlo"
    path.write_text(_fft_module(*CASES[0]))
    options = pipeline_options(disabled=["complex-lowering"])
    with pytest.raises(AotcError, match="made by the complex-lowering pass"):
        compile_graph(path, target=HOST_CPU, passes=options)
