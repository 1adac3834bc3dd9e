"""Compile cost (not a test): ``make bench-compile``.

    .venv/bin/python -m tools.bench_compile [--cases chain,addn,concat,library] [--scale 1.0]
        [--profile N] [--limit SECONDS] [--models bench_mobilenet_v2,...] [--model-dir DIR]
        [--tf-python PATH] [--write FILE]

Big synthetic graphs: each case (``tools/scale_graphs.py``) is written to a temporary folder
and compiled in this process, as ``aotc compile --no-cache`` does; the table gives the seconds
of the front end, the pass pipeline (its slowest pass named), code generation and the whole
compile, and fails (exit 1) when a case takes more than ``--limit`` seconds. ``--profile N``
prints the N functions with the most cumulative time of each case (cProfile).

Real models (``--models``; ``--cases ''`` leaves the synthetic ones out): each is compiled
for the default target (portable) in a child process, whose peak resident memory the table
gives beside the seconds and issue 15's targets (compile time at most 1.5x tfcompile's, peak
memory at most 3x the model's constant bytes + 300 MB). tfcompile compiles the same graph
through ``../shared/bench/tfcompile_baseline.py`` (with ``--tf-python``, a Python with
TensorFlow, and only where its runtime is already built: building it takes minutes), which
also builds the models missing from ``--model-dir`` (``tools/compile_models.py``). The
markdown table goes to ``--write`` too.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aotc.codegen.compile import HOST, TargetSpec, compile_module_assigned
from aotc.codegen.target import PORTABLE
from aotc.driver import interface, optimize
from aotc.errors import AotcError
from aotc.frontend.sources import load_source

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools import compile_table, scale_graphs  # noqa: E402


@dataclass(frozen=True)
class Case:
    """One synthetic model: how to write it of size ``n`` and its size at scale 1."""

    name: str
    size: int
    write: Callable[[int, Path], Path]


def _graphdef(build: Callable[[int], object]) -> Callable[[int, Path], Path]:
    def write(n: int, folder: Path) -> Path:
        path = folder / "model.pb"
        path.write_bytes(build(n).SerializeToString())  # type: ignore[attr-defined]
        return path

    return write


def _library(levels: int, folder: Path) -> Path:
    graph = scale_graphs.doubling_library(levels)
    return scale_graphs.write_savedmodel(graph, folder / "saved", ["x"], "out")


CASES = {
    c.name: c
    for c in (
        Case("chain", 20_000, _graphdef(scale_graphs.chain)),
        Case("addn", 5_000, _graphdef(scale_graphs.addn)),
        Case("concat", 5_000, _graphdef(scale_graphs.concat)),
        Case("library", 16, _library),
    )
}


def compile_timed(
    path: Path, config: Path | None = None, target: TargetSpec = HOST
) -> dict[str, float | str]:
    """CPU seconds per stage of one in-process compile (front end, passes, codegen, total),
    the elapsed seconds and the bytes of the model's constants."""
    wall, start = time.perf_counter(), time.process_time()
    source = load_source(path, config, None)
    source.graph = None  # as driver.compile_graph
    loaded = time.process_time()
    constants = sum(
        i.literal.nbytes
        for c in source.module.computations
        for i in c.instructions
        if i.literal is not None
    )
    report = optimize(source.module)
    optimized = time.process_time()
    args, results = interface(source.signature, source.module)
    compile_module_assigned(source.module, source.signature.name, args, results, target)
    done = time.process_time()
    per_pass: dict[str, float] = {}
    for t in report.timings:
        per_pass[t.name] = per_pass.get(t.name, 0.0) + t.seconds
    slowest = max(per_pass.items(), key=lambda item: item[1], default=("-", 0.0))
    return {
        "frontend": loaded - start,
        "passes": optimized - loaded,
        "slowest pass": f"{slowest[0]} {slowest[1]:.2f}",
        "codegen": done - optimized,
        "total": done - start,
        "wall": time.perf_counter() - wall,
        "constants": constants,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies each case's size")
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    parser.add_argument("--limit", type=float, default=120.0, metavar="SECONDS")
    parser.add_argument("--models", default="", help="comma-separated bench model names")
    parser.add_argument("--model-dir", type=Path, default=compile_table.MODEL_DIR)
    parser.add_argument("--tf-python", type=Path, default=None, metavar="PATH")
    parser.add_argument("--write", type=Path, default=None, metavar="FILE")
    parser.add_argument("--child", nargs=2, type=Path, help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.child:  # one model, for compile_table (which reads this process's peak memory)
        print(json.dumps(compile_timed(*opts.child, TargetSpec(cpu=PORTABLE))))
        return 0
    failed = _synthetic(opts) if opts.cases else False
    if opts.models:
        rows = [
            compile_table.measure(m, opts.model_dir, opts.tf_python) for m in opts.models.split(",")
        ]
        table = compile_table.render(rows)
        print(table)
        if opts.write:
            opts.write.write_text(table)
    return 1 if failed else 0


def _synthetic(opts: argparse.Namespace) -> bool:
    """The synthetic cases' table; whether one took longer than ``opts.limit``."""
    failed = False
    print("CPU seconds (wall: elapsed, which other processes on the machine stretch)")
    print(f"{'case':<8} {'n':>7} {'frontend':>9} {'passes':>8} {'codegen':>8} {'total':>8} "
          f"{'wall':>8}  slowest pass")  # fmt: skip
    for name in opts.cases.split(","):
        case = CASES[name]
        n = max(1, round(case.size * opts.scale)) if name != "library" else case.size
        with tempfile.TemporaryDirectory() as tmp:
            path = case.write(n, Path(tmp))
            profiler = cProfile.Profile() if opts.profile else None
            try:
                if profiler:
                    profiler.enable()
                row = compile_timed(path)
            except AotcError as err:
                print(f"{name:<8} {n:>7} refused: {err}")
                continue
            finally:
                if profiler:
                    profiler.disable()
        times = " ".join(f"{row[k]:>8.2f}" for k in ("passes", "codegen", "total", "wall"))
        print(f"{name:<8} {n:>7} {row['frontend']:>9.2f} {times}  {row['slowest pass']}")
        failed |= float(row["wall"]) > opts.limit
        if profiler:
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(opts.profile)
    return failed


if __name__ == "__main__":
    sys.exit(main())
