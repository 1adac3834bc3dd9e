"""The Python API: aotc.compile, calling conventions, artifacts and the in-memory cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import aotc
from aotc.api import CompiledFunction, clear_memory_cache
from aotc.errors import ArgumentError

TWO = """HloModule two
ENTRY main {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  s = f32[3] add(a, b)
  p = f32[3] multiply(a, b)
  ROOT t = (f32[3], f32[3]) tuple(s, p)
}
"""
ONE = TWO.replace("ROOT t = (f32[3], f32[3]) tuple(s, p)", "ROOT t = f32[3] subtract(s, p)")


@pytest.fixture
def two(tmp_path: Path) -> CompiledFunction:
    path = tmp_path / "two.hlo"
    path.write_text(TWO)
    return aotc.compile(path)


A = np.array([1, 2, 3], np.float32)
B = np.array([4, 5, 6], np.float32)


def test_positional_keyword_and_dict_calls_agree(two: CompiledFunction) -> None:
    for out in (two(A, B), two(a=A, b=B), two({"a": A, "b": B})):
        assert isinstance(out, list)
        np.testing.assert_array_equal(out[0], A + B)
        np.testing.assert_array_equal(out[1], A * B)


def test_one_result_is_returned_as_an_array(tmp_path: Path) -> None:
    path = tmp_path / "one.hlo"
    path.write_text(ONE)
    out = aotc.compile(path)(A, B)
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, A + B - A * B)


def test_lists_take_the_argument_dtype(two: CompiledFunction) -> None:
    np.testing.assert_array_equal(two([1, 2, 3], B)[0], A + B)


def test_argument_errors_name_the_problem(two: CompiledFunction) -> None:
    with pytest.raises(ArgumentError, match="unknown: c; missing: b"):
        two(a=A, c=B)
    with pytest.raises(ArgumentError, match="not both"):
        two(A, b=B)
    with pytest.raises(ArgumentError, match="takes 2 argument"):
        two(A)
    with pytest.raises(ArgumentError, match="dtype float64"):
        two(A.astype(np.float64), B)


def test_artifacts_and_names(two: CompiledFunction) -> None:
    assert two.object_bytes[:4] == b"\x7fELF" or len(two.object_bytes) > 0
    assert "int two_run(" in two.header
    assert two.arg_names == ["a", "b"] and two.result_names == ["result0", "result1"]
    assert two.report.kernels and two.report.passes  # kernels and pass timings
    assert "two(a: float32[3], b: float32[3])" in repr(two)


def test_second_compile_is_served_from_memory(tmp_path: Path) -> None:
    path = tmp_path / "two.hlo"
    path.write_text(TWO)
    first = aotc.compile(path)
    assert aotc.compile(path) is first
    assert aotc.compile(path, cache=False) is not first
    path.write_text(TWO.replace("multiply", "subtract"))  # new contents: a new compile
    changed = aotc.compile(path)
    assert changed is not first
    np.testing.assert_array_equal(changed(A, B)[1], A - B)
    clear_memory_cache()
    assert aotc.compile(path) is not changed


def test_disk_cache_is_used_across_memory_clears(tmp_path: Path) -> None:
    path = tmp_path / "two.hlo"
    path.write_text(TWO)
    first = aotc.compile(path, cache_dir=tmp_path / "cache")
    assert not first.cache_hit
    clear_memory_cache()
    second = aotc.compile(path, cache_dir=tmp_path / "cache")
    assert second.cache_hit
    np.testing.assert_array_equal(second(A, B)[0], A + B)


def test_mlp_example_through_the_api() -> None:
    root = Path(__file__).resolve().parent.parent / "examples" / "mlp"
    fn = aotc.compile(root / "mlp.pb", config=root.parent.parent / "configs" / "mlp.yaml")
    y = fn(x=np.zeros((1, 784), np.float32))
    assert isinstance(y, np.ndarray) and y.shape == (1, 10)
    np.testing.assert_allclose(y.sum(), 1.0, rtol=1e-5)  # a softmax
