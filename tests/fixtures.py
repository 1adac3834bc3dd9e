"""Fixtures under tests/data: TF graphs with config, inputs and TF's outputs; HLO text + npz."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np

from aotc.driver import TargetOverrides

TF_DATA = Path(__file__).parent / "data" / "tf"
EXAMPLE = Path(__file__).parent.parent / "examples" / "mlp"
CONFIGS = Path(__file__).parent.parent / "configs"
CONTROL_FLOW_DATA = Path(__file__).parent / "data" / "control_flow"
HLO_DATA = Path(__file__).parent / "data" / "hlo"
#: The target of tests that check numbers, not portability: this machine's cpu, one level (the
#: default, portable x86-64 object compiles its kernels once per cpu level; test_cross runs
#: every level).
HOST_CPU = TargetOverrides(cpu="host")
BF16 = np.dtype(ml_dtypes.bfloat16)
BF16_RTOL = 2**-6  # a few units in the last place of 8 significant bits
#: float16 has 11 significant bits; TF's CPU kernels and aotc (f16 through f32, rounded after
#: every op) round intermediates at different points: a few units in the last place of the
#: largest result (measured: one).
F16_RTOL = 2**-9
#: Fixtures computed in bfloat16 or float16: every result, whatever its type, carries their
#: rounding.
LOW_PRECISION = {"bf16_model": BF16_RTOL, "f16_model": F16_RTOL, "f16_mixed_model": F16_RTOL}


def fixture_rtol(name: str, default: float = 1e-5) -> float:
    return LOW_PRECISION.get(name, default)


@dataclass(frozen=True)
class Fixture:
    name: str
    graph: Path
    config: Path
    args: list[np.ndarray]
    results: list[np.ndarray]


def load_fixture(name: str, folder: Path = TF_DATA) -> Fixture:
    args, results = _arrays(folder / f"{name}.npz")
    return Fixture(name, folder / f"{name}.pb", folder / f"{name}.yaml", args, results)


def fixture_names(folder: Path = TF_DATA) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.npz"))


def load_hlo_fixture(name: str) -> tuple[Path, list[np.ndarray], list[np.ndarray]]:
    """``tests/data/hlo/NAME.hlo``, its arguments and the framework's results."""
    return (HLO_DATA / f"{name}.hlo", *_arrays(HLO_DATA / f"{name}.npz"))


def _arrays(path: Path) -> tuple[list[np.ndarray], list[np.ndarray]]:
    data = np.load(path)
    args = [npz_array(data[f"arg{i}"]) for i in range(_count(data.files, "arg"))]
    results = [npz_array(data[f"result{i}"]) for i in range(_count(data.files, "result"))]
    return args, results


def npz_array(array: np.ndarray) -> np.ndarray:
    """An array read from a fixture's npz: numpy's format cannot name ml_dtypes' bfloat16 and
    stores it as raw 2-byte voids, the only void type fixtures hold."""
    return array.view(BF16) if array.dtype == np.dtype("V2") else array


def as_real_form(x: np.ndarray) -> np.ndarray:
    """A complex array as an optimized module takes and returns it (complex-lowering): its
    (re, im) pairs in a last dimension of 2; a real array as it is."""
    if x.dtype.kind != "c":
        return x
    return np.ascontiguousarray(x).view(x.real.dtype).reshape(*x.shape, 2)


def load_example() -> Fixture:
    """The bundled example (examples/mlp) as a fixture named ``mlp``."""
    data = np.load(EXAMPLE / "expected.npz")
    return Fixture("mlp", EXAMPLE / "mlp.pb", CONFIGS / "mlp.yaml", [data["x"]], [data["y"]])


def _count(files: list[str], prefix: str) -> int:
    return sum(1 for f in files if f.startswith(prefix) and f[len(prefix) :].isdigit())


def assert_close(
    actual: np.ndarray, expected: np.ndarray, rtol: float = 1e-5, what: str = ""
) -> None:
    """Max abs error within ``rtol`` times the largest |expected| (exact for ints and bools)."""
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    if expected.dtype == BF16:  # 8 significant bits, and rounded after every op
        actual, expected = actual.astype(np.float32), expected.astype(np.float32)
        rtol = max(rtol, BF16_RTOL)
    if expected.dtype.kind not in "fc":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    scale = max(float(np.max(np.abs(expected), initial=0.0)), 1e-30)
    wide = np.complex128 if expected.dtype.kind == "c" else np.float64  # |re and im error|
    error = float(np.max(np.abs(actual.astype(wide) - expected), initial=0.0))
    assert error <= rtol * scale, f"{what}: max abs error {error:.3g} > {rtol} * {scale:.3g}"
