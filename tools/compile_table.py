"""Compile time and peak memory of real models, aotc beside tfcompile (``bench_compile``).

Each compile runs in a child process of its own, so its peak resident memory is that child's
(``os.wait4``): aotc's is ``python -m tools.bench_compile --child GRAPH CONFIG`` (the compile
``aotc compile --no-cache`` runs, for the default portable target), tfcompile's the shared
``tfcompile_baseline.py`` (its ``compile_s`` times tfcompile's own call; its peak includes
importing TensorFlow and running the model once). The targets are issue 15's.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
MODEL_DIR = REPO / "build" / "bench-models"
TFCOMPILE_SCRIPT = REPO.parent / "shared" / "bench" / "tfcompile_baseline.py"
TFCOMPILE_RUNTIME = Path.home() / ".cache" / "aotc-tfcompile-runtime"
TIME_TARGET, MEMORY_FACTOR, MEMORY_EXTRA = 1.5, 3, 300e6


@dataclass
class Row:
    """One model's measurements (None: not measured, with the reason in ``note``)."""

    model: str
    constants: float = 0.0  # bytes
    aotc: dict[str, float] | None = None  # stage CPU seconds, "wall", "peak" (bytes)
    tfcompile_s: float | None = None
    tfcompile_peak: float | None = None
    note: str = ""


def measure(name: str, model_dir: Path, tf_python: Path | None) -> Row:
    """Compile ``name`` (``model_dir/name.pb`` + ``.yaml``) with aotc, and with tfcompile."""
    graph, config = model_dir / f"{name}.pb", model_dir / f"{name}.yaml"
    if not graph.exists() and tf_python is not None:
        cmd = [str(tf_python), str(REPO / "tools" / "compile_models.py"), str(model_dir), name]
        subprocess.run(cmd, check=False, capture_output=True)
    if not graph.exists():
        return Row(name, note=f"{graph} not built (give --tf-python)")
    out, peak = _child([sys.executable, "-m", "tools.bench_compile", "--child", graph, config])
    timed = json.loads(out.splitlines()[-1])
    aotc = {k: float(timed[k]) for k in ("frontend", "passes", "codegen", "total", "wall")}
    row = Row(name, float(timed["constants"]), {**aotc, "peak": peak})
    _tfcompile(row, graph, config, tf_python)
    return row


def _tfcompile(row: Row, graph: Path, config: Path, tf_python: Path | None) -> None:
    if tf_python is None or not TFCOMPILE_SCRIPT.exists():
        row.note = "tfcompile: no --tf-python or no tfcompile_baseline.py"
        return
    if not (TFCOMPILE_RUNTIME / "libtf_xla_runtime.a").exists():
        row.note = f"tfcompile: its runtime is not built in {TFCOMPILE_RUNTIME}"
        return
    with tempfile.TemporaryDirectory(prefix="bench-compile-tf-") as tmp:
        data = Path(tmp) / "data.npz"
        np.savez(data, in0=np.load(graph.with_suffix(".npz"))["arg0"])
        cmd = [str(tf_python), str(TFCOMPILE_SCRIPT), "--graph", str(graph), "--config"]
        cmd += [str(config), "--data", str(data), "--work", tmp, "--bench", "1"]
        cmd += ["--runtime-cache", str(TFCOMPILE_RUNTIME)]
        try:
            out, peak = _child(cmd, {"TF_CPP_MIN_LOG_LEVEL": "2"})
        except RuntimeError as err:
            row.note = f"tfcompile failed: {err}"
            return
    row.tfcompile_s = float(json.loads(out.splitlines()[-1])["compile_s"])
    row.tfcompile_peak = peak


def _child(cmd: list[object], env: dict[str, str] | None = None) -> tuple[str, float]:
    """Run ``cmd`` from the repository root: its stdout, and its peak resident bytes."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [str(c) for c in cmd],
            cwd=REPO,
            stdout=out,
            stderr=err,
            env={**os.environ, **(env or {})},
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        if proc.returncode:
            raise RuntimeError(err.read().decode(errors="replace").strip()[-300:])
        scale = 1 if platform.system() == "Darwin" else 1024  # ru_maxrss: bytes there, KiB here
        return out.read().decode(), float(usage.ru_maxrss * scale)


def render(rows: list[Row]) -> str:
    """The markdown table (seconds, MB) with the targets and what could not be measured."""
    lines = [
        "| model | constants MB | aotc s (wall) | aotc CPU s: front end / passes / codegen | "
        "tfcompile s | aotc / tfcompile (target <= 1.5) | aotc peak MB | target MB | "
        "tfcompile peak MB |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(_line(r))
    notes = [f"- {r.model}: {r.note}" for r in rows if r.note]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines += ["", f"Load average at the end: {load:.1f} (wall times stretch with it).", *notes]
    return "\n".join(lines) + "\n"


def _line(r: Row) -> str:
    mb = 1e6
    if r.aotc is None:
        return f"| {r.model} | - | - | - | - | - | - | - | - |"
    a = r.aotc
    stages = f"{a['frontend']:.2f} / {a['passes']:.2f} / {a['codegen']:.2f}"
    target = (MEMORY_FACTOR * r.constants + MEMORY_EXTRA) / mb
    tf_s = f"{r.tfcompile_s:.2f}" if r.tfcompile_s else "-"
    ratio = f"{a['wall'] / r.tfcompile_s:.2f}" if r.tfcompile_s else "-"
    tf_peak = f"{r.tfcompile_peak / mb:.0f}" if r.tfcompile_peak else "-"
    return (
        f"| {r.model} | {r.constants / mb:.1f} | {a['wall']:.2f} | {stages} | {tf_s} | {ratio} "
        f"| {a['peak'] / mb:.0f} | {target:.0f} | {tf_peak} |"
    )
