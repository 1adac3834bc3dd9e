"""XLA's rng-bit-generator and width-changing bitcast-convert, against XLA's own numbers.

JAX fixtures (``tests/data/make_jax_rng_fixtures.py``) hold what XLA's CPU backend computed
for every algorithm, output width and layout case, for ``jax.random`` under the ``rbg``
implementation (built on rng-bit-generator), and for JAX's default ThreeFry keys (built from
ordinary integer ops); each is evaluated (``hlo/rng_bits.py``, numpy) and compiled to C (the
expansion of ``passes/rng_bit_generator.py``), and both must give XLA's bits exactly. The
u64[3] Philox state, which JAX never emits, is checked expansion against reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from c_harness import run_compiled
from codegen_testing import run_and_compare
from fixtures import assert_close, load_hlo_fixture

from aotc.driver import compile_graph
from aotc.driver import optimize as optimize_module
from aotc.errors import HloError
from aotc.frontend.hlo_input import load_hlo
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import Module
from aotc.hlo.text import parse_module, print_module
from aotc.hlo.verify import verify_module
from aotc.passes.rng_bit_generator import RngBitGeneratorExpander

JAX_FIXTURES = ["jax_rng_bit_generator", "jax_rng_rbg", "jax_rng_threefry"]


def _check(got: list[np.ndarray], expected: list[np.ndarray], how: str) -> None:
    for k, want in enumerate(expected):
        if want.dtype.kind == "f":  # rbg's normals: log and erfinv in the last place
            assert_close(got[k], want, 1e-6, what=f"{how} result {k}")
        else:
            assert got[k].dtype == want.dtype, (how, k)
            np.testing.assert_array_equal(got[k], want, err_msg=f"{how} result {k}")


@pytest.mark.parametrize("name", JAX_FIXTURES)
def test_jax_random_fixture_matches_xla_evaluated(name: str) -> None:
    path, args, expected = load_hlo_fixture(name)
    _check(evaluate(load_hlo(path).module, args), expected, "evaluated")


@pytest.mark.parametrize("name", JAX_FIXTURES)
def test_jax_random_fixture_matches_xla_compiled(name: str) -> None:
    path, args, expected = load_hlo_fixture(name)
    typed, _ = run_compiled(compile_graph(path).model, args)
    _check(typed, expected, "C")


def _optimized(text: str) -> Module:
    """The module as the compiler's passes leave it for codegen (with no kernel for
    rng-bit-generator or a width-changing bitcast-convert: they are expanded)."""
    module = parse_module(text)
    optimize_module(module)
    return module


def _module(body: str, params: str = "s = u64[3] parameter(0)") -> str:
    return f"HloModule m\n\nENTRY main {{\n  {params}\n  {body}\n}}\n"


_THREE_WORD = _module(
    "r = (u64[3], u32[5,3]) rng-bit-generator(s), algorithm=rng_philox\n"
    "  q = (u64[3], u64[3]) rng-bit-generator(s), algorithm=rng_default\n"
    "  a = u64[3] get-tuple-element(r), index=0\n"
    "  b = u32[5,3] get-tuple-element(r), index=1\n"
    "  c = u64[3] get-tuple-element(q), index=1\n"
    "  ROOT t = (u64[3], u32[5,3], u64[3]) tuple(a, b, c)"
)


def test_three_word_philox_state_expansion_matches_the_reference() -> None:
    # the low counter word at its maximum: block 1 carries into the high word
    state = np.array([0x0123456789ABCDEF, 2**64 - 1, 41], np.uint64)
    module = parse_module(_THREE_WORD)
    want = evaluate(module, [state])
    assert want[0].tolist() == [0x0123456789ABCDEF, 3, 42]  # 4 blocks on; the carry taken
    RngBitGeneratorExpander().run(module)
    verify_module(module)
    assert "rng-bit-generator" not in print_module(module)
    for got, expected in zip(evaluate(module, [state]), want, strict=True):
        np.testing.assert_array_equal(got, expected)
    run_and_compare(_optimized(_THREE_WORD), [state], rtol=0)


def test_rng_bit_generator_round_trips_and_checks_its_state() -> None:
    module = parse_module(_THREE_WORD)
    assert parse_module(print_module(module)).entry.root.shape == module.entry.root.shape
    bad = _module("ROOT r = (u64[3], u32[4]) rng-bit-generator(s), algorithm=rng_three_fry")
    with pytest.raises(HloError, match="rng_three_fry needs a u64\\[2\\] state"):
        verify_module(parse_module(bad))
    signed = _module("ROOT r = (u64[3], s32[4]) rng-bit-generator(s), algorithm=rng_philox")
    with pytest.raises(HloError, match="bits must be unsigned"):
        verify_module(parse_module(signed))


_WIDTHS = _module(
    "a = u16[3,4] bitcast-convert(s)\n"
    "  b = u8[3,8] bitcast-convert(s)\n"
    "  f = f32[2] parameter(1)\n"
    "  g = u16[2,2] bitcast-convert(f)\n"
    "  h = u32[2] bitcast-convert(g)\n"
    "  i = f64[] bitcast-convert(h)\n"
    "  j = u32[4,2] parameter(2)\n"
    "  k = s64[4] bitcast-convert(j)\n"
    "  ROOT t = (u16[3,4], u8[3,8], u16[2,2], f64[], s64[4]) tuple(a, b, g, i, k)",
)


def test_width_changing_bitcast_convert_is_little_endian_in_evaluator_and_code() -> None:
    s = np.array([0x0123456789ABCDEF, 2**64 - 1, 5], np.uint64)
    f = np.array([1.5, -2.25], np.float32)
    j = np.arange(8, dtype=np.uint32).reshape(4, 2) * np.uint32(0x10000001)
    got = evaluate(parse_module(_WIDTHS), [s, f, j])
    np.testing.assert_array_equal(got[0], s.view(np.uint16).reshape(3, 4))
    assert got[0][0].tolist() == [0xCDEF, 0x89AB, 0x4567, 0x0123]
    np.testing.assert_array_equal(got[3], f.view(np.float64).reshape(()))
    np.testing.assert_array_equal(got[4], j.view(np.int64).reshape(4))
    run_and_compare(_optimized(_WIDTHS), [s, f, j], rtol=0)
