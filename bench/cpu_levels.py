#!/usr/bin/env python
"""Portable (dispatching) objects vs single-cpu ones (not a test): run time, size, compile time.

For each model, ``aotc compile`` once per cpu choice (the default, which dispatches among the
x86-64 levels at run time, and ``--target-cpu host`` or any named cpu), then the timing driver
of ``aotc_runner`` runs each object; the cpu choices' runs are interleaved round by round so
that load on a shared machine hits them alike. Prints one Markdown table::

    .venv/bin/python bench/cpu_levels.py [--cpus default,host] [--rounds 3] [MODEL.pb ...]

Without models it takes the bundled example and the single-input fixtures of tests/data/tf.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aotc_runner import compile_model, link_driver, run_driver  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ["mlp_b8", "model_lenet", "model_mobilenet", "model_resnet", "model_transformer"]


def _models(paths: list[str]) -> list[tuple[Path, Path]]:
    if paths:
        return [(Path(p), Path(p).with_suffix(".yaml")) for p in paths]
    data = ROOT / "tests" / "data" / "tf"
    found = [(ROOT / "examples" / "mlp" / "mlp.pb", ROOT / "configs" / "mlp.yaml")]
    return found + [(data / f"{n}.pb", data / f"{n}.yaml") for n in FIXTURES]


def _sections(obj: Path) -> tuple[int, int]:
    """(.text, .rodata) bytes: every executable section, every read-only data section."""
    out = subprocess.run(["size", "-A", str(obj)], capture_output=True, text=True).stdout
    text = rodata = 0
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1].isdigit():
            if parts[0].startswith(".text"):
                text += int(parts[1])
            elif parts[0].startswith((".rodata", ".lrodata")):
                rodata += int(parts[1])
    return text, rodata


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*")
    parser.add_argument("--cpus", default="default,host")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget", type=float, default=1.0, help="seconds per timed run")
    opts = parser.parse_args()
    aotc = str(ROOT / ".venv" / "bin" / "aotc")
    cpus = opts.cpus.split(",")
    print("| model | cpu | compile s | .text | .rodata | median ms (best round) | vs first |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for graph, config in _models(opts.models):
        with tempfile.TemporaryDirectory() as tmp:
            _measure(aotc, graph, config, cpus, opts, Path(tmp))


def _measure(aotc: str, graph: Path, config: Path, cpus: list[str], opts, work: Path) -> None:  # type: ignore[no-untyped-def]
    name = graph.stem
    rows = []
    for cpu in cpus:
        where = work / cpu
        extra = [] if cpu == "default" else ["--target-cpu", cpu]
        seconds = compile_model(aotc, graph, config, name, where, extra).seconds
        rows.append((cpu, seconds, _sections(where / f"{name}.o"), link_driver(name, where)))
    header = (rows[0][3].parent / f"{name}.h").read_text()
    shape = _arg0_shape(header, name)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    out = _result0_count(header, name)
    times: dict[str, list[float]] = {cpu: [] for cpu in cpus}
    outputs: dict[str, np.ndarray] = {}
    for _ in range(opts.rounds):
        for cpu, _, _, exe in rows:
            ms, _, y = run_driver(exe, x, (out,), (3, 5, opts.budget))
            times[cpu].append(ms)
            outputs[cpu] = y
    first = min(times[cpus[0]])
    for cpu, seconds, (text, rodata), _ in rows:
        best = min(times[cpu])
        diff = np.max(np.abs(outputs[cpu] - outputs[cpus[0]]))
        print(
            f"| {name} | {cpu} | {seconds:.1f} | {text} | {rodata} | {best:.4f} | "
            f"{best / first:.3f} (max diff {diff:.1e}) |",
            flush=True,
        )


def _arg0_shape(header: str, name: str) -> list[int]:
    line = next(t for t in header.splitlines() if f"{name.upper()}_ARG0_BYTES" in t)
    dims = line.split("[")[-1].split("]")[0]
    return [int(d) for d in dims.split(",")]


def _result0_count(header: str, name: str) -> int:
    line = next(t for t in header.splitlines() if f"{name.upper()}_RESULT0_BYTES" in t)
    dims = line.split("[")[-1].split("]")[0]
    return int(np.prod([int(d) for d in dims.split(",")])) if dims else 1


if __name__ == "__main__":
    main()
