"""``aotc run``: compile a graph in-process, run it on ``.npy`` inputs, save and summarize outputs.

The model is compiled for the host and executed through ``aotc.jit`` (the same LLVM IR that
``aotc compile`` turns into an object file). With ``reference=True`` the numpy reference
evaluator runs the front end's HLO on the same inputs, which checks passes and codegen.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aotc import progress
from aotc.atomic import write_atomically
from aotc.driver import SourceOptions, TargetOverrides, compile_graph
from aotc.errors import ArgumentError, InputFileError
from aotc.frontend.signature import model_stem
from aotc.frontend.sources import load_source
from aotc.hlo.evaluate import evaluate
from aotc.jit import JitModel, TensorSpec

# `aotc run` executes here, so it always compiles for this machine whatever the config says.
HOST = TargetOverrides(triple="host", cpu="host", features="")


@dataclass(frozen=True)
class Output:
    """One result: its fetch name, value, where it was saved, and the reference's max error."""

    name: str
    value: np.ndarray
    path: Path | None = None
    max_abs_diff: float | None = None


def parse_input_options(options: Sequence[str]) -> dict[str, Path]:
    """``["x=x.npy", ...]`` -> {"x": Path("x.npy")}; ArgumentError on a bad or repeated one."""
    inputs: dict[str, Path] = {}
    for option in options:
        name, sep, path = option.rpartition("=")
        if not sep or not name or not path:
            raise ArgumentError(f"--input '{option}': expected NAME=FILE.npy, e.g. x=x.npy")
        if name in inputs:
            raise ArgumentError(f"--input '{name}' is given twice")
        inputs[name] = Path(path)
    return inputs


def load_npy(path: Path) -> np.ndarray:
    """Read one array from ``path``; InputFileError for a missing or malformed file."""
    try:
        array = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputFileError(f"{path}: is a directory, expected a .npy file") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        # numpy reports any non-.npy bytes as "pickled data"; never load pickles (code execution).
        reason = "not written by numpy.save" if "pickle" in str(err) else str(err)
        raise InputFileError(f"{path}: not a readable .npy file ({reason})") from None
    if not isinstance(array, np.ndarray):  # an .npz archive
        raise InputFileError(f"{path}: is an .npz archive; save each input as its own .npy")
    return array


def ordered_arguments(specs: Sequence[TensorSpec], files: dict[str, Path]) -> list[np.ndarray]:
    """The arrays for ``specs`` in argument order; ArgumentError names missing/extra inputs."""
    names = [s.name for s in specs]
    extra = [n for n in files if n not in names]
    if extra:
        raise ArgumentError(
            f"--input '{extra[0]}': the model has no input of that name "
            f"(inputs: {', '.join(names) or 'none'})"
        )
    missing = [s.describe() for s in specs if s.name not in files]
    if missing:
        raise ArgumentError(f"missing --input for {', '.join(missing)}")
    return [_fitting(spec, load_npy(files[spec.name]), files[spec.name]) for spec in specs]


def _fitting(spec: TensorSpec, array: np.ndarray, path: Path) -> np.ndarray:
    if array.dtype != spec.dtype or array.shape != spec.shape:
        got = f"{array.dtype}[{','.join(map(str, array.shape))}]"
        raise ArgumentError(f"{path}: input {spec.describe()} does not accept {got}")
    return array


@dataclass(frozen=True)
class RunResult:
    """The model's arguments (as compiled) and its outputs."""

    inputs: list[TensorSpec]
    outputs: list[Output]


def run_graph(
    graph: str | Path,
    config: str | Path | None,
    inputs: dict[str, Path],
    options: SourceOptions | None = None,
    reference: bool = False,
) -> RunResult:
    """Compile ``graph`` for the host, run it on ``inputs`` and return every output: the
    results, then the new value of each variable the model updates. ``options`` are those of
    ``aotc compile`` (a SavedModel's signature and tags, shapes)."""
    jit = JitModel.from_compiled(compile_graph(graph, config, HOST, options).model)
    arrays = ordered_arguments(jit.args, inputs)
    before = [a.copy() for a in arrays]  # the call updates variables in place
    with progress.stage("run"):
        values = jit(*arrays)
    outputs = [Output(spec.name, v) for spec, v in zip(jit.results, values, strict=True)]
    outputs += [Output(s.name, a) for s, a in zip(jit.args, arrays, strict=True) if s.updated]
    if reference:
        outputs = _compare_with_reference(outputs, graph, config, options, before)
    return RunResult(jit.args, outputs)


def _compare_with_reference(
    outputs: list[Output],
    graph: str | Path,
    config: str | Path | None,
    options: SourceOptions | None,
    arrays: list[np.ndarray],
) -> list[Output]:
    # A fresh front end: the HLO before any pass, so the comparison checks passes and codegen.
    with progress.stage("reference"):
        expected = evaluate(load_source(graph, config, options).module, arrays)
    expected_list = expected if isinstance(expected, list) else [expected]
    return [
        Output(out.name, out.value, max_abs_diff=max_abs_diff(out.value, e))
        for out, e in zip(outputs, expected_list, strict=True)
    ]


def max_abs_diff(actual: np.ndarray, expected: np.ndarray) -> float:
    """Largest |actual - expected| in float64; NaN in the same place counts as equal."""
    if actual.size == 0:
        return 0.0
    a, e = actual.astype(np.float64), np.asarray(expected).astype(np.float64)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - e)
    same = (a == e) | (np.isnan(a) & np.isnan(e))
    return float(np.max(np.where(same, 0.0, diff)))


def default_output_dir(graph: str | Path) -> Path:
    """``mlp_outputs`` for ``mlp.pb``: a folder of the outputs' own, so that an output named
    like a file in the current folder (an input, say) never overwrites it."""
    return Path(f"{model_stem(graph)}_outputs")


def save_outputs(outputs: list[Output], folder: str | Path) -> list[Output]:
    """Save each output as ``<folder>/<safe fetch name>.npy`` (atomically); returns them with
    their paths. Names that collide after sanitizing get ``_1``, ``_2``, ... suffixes."""
    taken: set[str] = set()
    saved = []
    for out in outputs:
        stem = _unique(safe_filename(out.name), taken)
        path = Path(folder) / f"{stem}.npy"
        write_atomically(path, _npy_bytes(out.value))
        saved.append(Output(out.name, out.value, path, out.max_abs_diff))
    return saved


def safe_filename(name: str) -> str:
    """``dense/BiasAdd:1`` -> ``dense_BiasAdd_1``: letters, digits, ``_``, ``-``, ``.`` only."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".")
    return safe or "output"


def _unique(stem: str, taken: set[str]) -> str:
    candidate, n = stem, 0
    while candidate.lower() in taken:  # lower(): case-insensitive file systems
        n += 1
        candidate = f"{stem}_{n}"
    taken.add(candidate.lower())
    return candidate


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def format_output(out: Output) -> str:
    """``y: float32[1,10] min -1.2 max 3.4 mean 0.5`` (+ the reference's difference)."""
    shape = ",".join(map(str, out.value.shape))
    text = f"{out.name}: {out.value.dtype}[{shape}] {_statistics(out.value)}"
    if out.max_abs_diff is not None:
        text += f"; max |diff| vs reference {out.max_abs_diff:.3g}"
    if out.path is not None:
        text += f" -> {out.path}"
    return text


def _statistics(value: np.ndarray) -> str:
    if value.size == 0:
        return "(empty)"
    wide = value.astype(np.float64)
    with np.errstate(all="ignore"):
        low, high, mean = np.min(wide), np.max(wide), np.mean(wide)
    return f"min {low:.6g} max {high:.6g} mean {mean:.6g}"
