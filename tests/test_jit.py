"""The in-process JIT runs the same LLVM IR as the object file and matches TF's results."""

from __future__ import annotations

import functools
import platform
import threading
from pathlib import Path

import numpy as np
import pytest
from fixtures import assert_close, fixture_names, load_fixture

from aotc.codegen.compile import CompiledModel
from aotc.codegen.target import TargetSpec, resolve_target
from aotc.driver import TargetOverrides, compile_graph
from aotc.errors import ArgumentError, CodegenError
from aotc.jit import ALIGN, JitModel, aligned_empty

SMALL = [
    "activations",
    "binary",
    "bitwise",
    "float64",
    "int64",
    "matmul",
    "mlp_b8",
    "plumbing",
    "unary",
]


@functools.cache
def compiled(name: str) -> CompiledModel:
    fixture = load_fixture(name)
    return compile_graph(fixture.graph, fixture.config).model


@functools.cache
def jitted(name: str) -> JitModel:
    return JitModel.from_compiled(compiled(name))


@pytest.mark.parametrize("name", [n for n in SMALL if n in fixture_names()])
def test_jit_matches_tensorflow(name: str) -> None:
    fixture = load_fixture(name)
    jit = JitModel.from_compiled(compiled(name))
    results = jit(*fixture.args)
    assert len(results) == len(fixture.results)
    for i, (got, want) in enumerate(zip(results, fixture.results, strict=True)):
        assert_close(got, want, rtol=1e-4, what=f"{name} result {i}")


def test_signature_is_exposed() -> None:
    jit = jitted("mlp_b8")
    assert [a.describe() for a in jit.args] == ["x: float32[8,784]"]
    assert jit.results[0].dtype == np.float32 and jit.results[0].shape == (8, 10)


def test_non_contiguous_input_is_accepted() -> None:
    fixture = load_fixture("mlp_b8")
    jit = jitted("mlp_b8")
    strided = np.asfortranarray(fixture.args[0])
    assert_close(jit(strided)[0], fixture.results[0], rtol=1e-4)


@pytest.mark.parametrize(
    "arrays, needle",
    [
        ([], "takes 1 argument(s)"),
        ([np.zeros((8, 784), np.float64)], "dtype float64"),
        ([np.zeros((1, 784), np.float32)], "shape [1, 784]"),
        ([[0.0] * 784], "expected a numpy array"),
    ],
)
def test_wrong_arguments_are_argument_errors(arrays: list[object], needle: str) -> None:
    jit = jitted("mlp_b8")
    with pytest.raises(ArgumentError) as err:
        jit(*arrays)  # type: ignore[arg-type]
    assert needle in str(err.value) and "x: float32[8,784]" in str(err.value)


def test_cross_compiled_model_is_refused() -> None:
    fixture = load_fixture("matmul")
    cross = TargetOverrides("aarch64-unknown-linux-gnu", "generic", "")
    model = compile_graph(fixture.graph, fixture.config, cross).model
    with pytest.raises(CodegenError, match="aarch64"):
        JitModel.from_compiled(model)


@pytest.mark.parametrize(
    ("triple", "cpu", "needle"),
    [
        ("x86_64-pc-windows-msvc", "host", "another architecture, OS or ABI"),  # it segfaulted
        ("x86_64-unknown-linux-musl", "host", "another architecture, OS or ABI"),
        ("host", "other", "may imply features"),
    ],
)
def test_jit_refuses_code_for_another_os_abi_or_cpu(triple: str, cpu: str, needle: str) -> None:
    host = resolve_target(TargetSpec())
    if cpu == "other":
        cpu = "haswell" if host.cpu != "haswell" else "skylake"
    fixture = load_fixture("matmul")
    model = compile_graph(fixture.graph, fixture.config, TargetOverrides(triple, cpu, None)).model
    with pytest.raises(CodegenError, match=needle):
        JitModel.from_compiled(model)


def test_jit_accepts_the_host_spelled_without_vendor() -> None:
    host = resolve_target(TargetSpec())
    arch, *_, os_name, env = host.triple.split("-")
    fixture = load_fixture("matmul")
    spelled = TargetOverrides(f"{arch}-{os_name}-{env}")
    JitModel.from_compiled(compile_graph(fixture.graph, fixture.config, spelled).model)  # no error


def test_aligned_empty() -> None:
    for n in (0, 1, 63, 4096):
        buf = aligned_empty(n)
        assert buf.ctypes.data % ALIGN == 0 and buf.nbytes == max(n, 1)


def test_concurrent_calls_agree() -> None:
    fixture = load_fixture("mlp_b8")
    jit = jitted("mlp_b8")
    expected = jit(*fixture.args)[0]
    failures: list[str] = []

    def work() -> None:
        for _ in range(50):
            if not np.array_equal(jit(*fixture.args)[0], expected):
                failures.append("mismatch")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


F16_EXP = """HloModule f16_exp

ENTRY main {
  x = f32[16] parameter(0)
  h = f16[16] convert(x)
  e = f16[16] exponential(h)
  ROOT r = f32[16] convert(e)
}
"""


def _portable_f16_model(tmp_path: Path) -> CompiledModel:
    # The portable x86-64 baseline has no F16C: f16 conversions call libgcc's helpers.
    source = tmp_path / "f16_exp.hlo"
    source.write_text(F16_EXP)
    return compile_graph(source).model


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 baseline")
def test_portable_f16_code_runs_in_process(tmp_path: Path) -> None:
    # It segfaulted: MCJIT called __truncsfhf2 through a null address.
    model = _portable_f16_model(tmp_path)
    assert b"__truncsfhf2\0" in model.object_bytes
    x = np.linspace(-3, 3, 16, dtype=np.float32)
    (got,) = JitModel.from_compiled(model)(x)
    np.testing.assert_array_equal(got, np.exp(x.astype(np.float16)).astype(np.float32))


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 baseline")
def test_unresolvable_runtime_helper_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _portable_f16_model(tmp_path)
    monkeypatch.setattr("aotc.jit.llvm.address_of_symbol", lambda name: None)
    with pytest.raises(CodegenError, match="__truncsfhf2.*cannot resolve"):
        JitModel.from_compiled(model)
