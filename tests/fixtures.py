"""Fixtures under tests/data: TF graphs with config, inputs and TF's outputs; HLO text + npz."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
    args = [data[f"arg{i}"] for i in range(_count(data.files, "arg"))]
    results = [data[f"result{i}"] for i in range(_count(data.files, "result"))]
    return args, results


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
    if expected.dtype.kind not in "fc":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    scale = max(float(np.max(np.abs(expected), initial=0.0)), 1e-30)
    error = float(np.max(np.abs(actual.astype(np.float64) - expected), initial=0.0))
    assert error <= rtol * scale, f"{what}: max abs error {error:.3g} > {rtol} * {scale:.3g}"
