#!/usr/bin/env python
"""aotc benchmark (not a test): latency of aotc's compiled code vs TensorFlow & co, one thread.

Run in the bench environment (TensorFlow, onnxruntime, tf2onnx; ``make bench`` creates it)::

    build/bench-venv/bin/python bench/run.py [--quick] [--models gemm,lenet] [--no-tfcompile]

For each model (bundled fixtures, issue 5's Keras models, GEMM/conv kernels) it measures aotc
(``aotc compile`` + a C timing driver), numpy (GEMM only), tfcompile, TF's graph executor,
TF's XLA JIT, TF Lite (XNNPACK) and onnxruntime (tf2onnx), then writes ``bench/RESULTS.md``
and ``bench/RESULTS.json``. The process is pinned to one core and every library is asked for
one thread. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are dropped before numpy loads.
"""

from __future__ import annotations

import os

ORIGINAL_OPENBLAS_ENV = {v: os.environ.pop(v, None) for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}  # fmt: skip  # noqa: E501
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TF_NUM_INTRAOP_THREADS",
             "TF_NUM_INTEROP_THREADS"):  # fmt: skip
    os.environ[_var] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aotc_runner  # noqa: E402
import baselines  # noqa: E402
import models  # noqa: E402
import report  # noqa: E402
import roofline  # noqa: E402
from baselines import Runs, Timing, Unsupported  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
REPORT = "report.json"  # aotc's compile report, in each model's work folder
FULL_RUNS: Runs = (3, 10, 1.0)
QUICK_RUNS: Runs = (1, 3, 0.2)


CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def pin(count: int) -> str:
    """Restricts this process (and its children) to the first ``count`` CPUs it may use;
    returns a description."""
    if not CPUS:
        return "not pinned (no sched_setaffinity)"
    cpus = CPUS[:count]
    os.sched_setaffinity(0, set(cpus))
    listed = ",".join(map(str, cpus))
    return f"pinned to CPU {listed} (sched_setaffinity, like taskset -c {listed})"


def configure_tf() -> None:
    """One intra-op and one inter-op thread for eager/tf.function (XLA JIT); less noise."""
    import logging

    import tensorflow as tf

    warnings.filterwarnings("ignore", message=".*tf.lite.Interpreter is deprecated.*")
    logging.getLogger("tf2onnx").setLevel(logging.CRITICAL)
    tf.get_logger().setLevel(logging.ERROR)

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)


def rel_error(y: np.ndarray | None, ref: np.ndarray) -> float | None:
    """max |y - ref| / max |ref| (None without y)."""
    if y is None:
        return None
    y = np.asarray(y, np.float64).reshape(ref.shape)
    return float(np.max(np.abs(y - ref)) / max(1e-6, float(np.max(np.abs(ref)))))


def measure(fn: Callable[[], Timing], ref: np.ndarray | None) -> dict[str, Any]:
    """Runs one system; the JSON entry with its status, time, runs and error vs TF."""
    start = time.perf_counter()
    try:
        t = fn()
    except Unsupported as e:
        return {"status": "unsupported", "note": str(e)}
    except Exception as e:  # noqa: BLE001 - a failing system must not stop the benchmark
        traceback.print_exc(limit=2)
        return {"status": "failed", "note": f"{type(e).__name__}: {e}"[:300]}
    error = t.error if t.y is None or ref is None else rel_error(t.y, ref)
    entry = {"status": "ok", "ms": t.ms, "runs": t.runs, "error": error, "note": t.note}
    entry["total_s"] = round(time.perf_counter() - start, 2)
    if t.compile_s is not None:
        entry["compile_s"] = round(t.compile_s, 3)
    if t.compile_peak_mb is not None:
        entry["compile_peak_mb"] = round(t.compile_peak_mb, 1)
    return entry


def run_aotc(model: models.BenchModel, args: argparse.Namespace, runs: Runs, shape) -> Timing:
    """Compile with aotc, link the C driver, time it."""
    work = args.work / model.name
    extra = ["--report", str(work / REPORT)]
    built = aotc_runner.compile_model(args.aotc, model.graph, model.config, model.name, work, extra)
    exe = aotc_runner.link_driver(model.name, work)
    ms, n, y = aotc_runner.run_driver(exe, model.x, shape, runs)
    note = f"aotc compile {built.seconds:.1f} s, {built.peak_bytes / 1e6:.0f} MB"
    return Timing(
        ms, n, y, note=note, compile_s=built.seconds, compile_peak_mb=built.peak_bytes / 1e6
    )


def run_aotc_threads(model: models.BenchModel, args: argparse.Namespace, runs: Runs, shape,
                     threads: int) -> Timing:  # fmt: skip
    """The object the single-thread run compiled, through ``<name>_run_buffers_mt`` with the
    shipped pthread pool of ``threads`` threads."""
    work = args.work / model.name
    if not (work / f"{model.name}.o").exists():
        raise RuntimeError("aotc did not compile this model")
    exe = aotc_runner.link_driver(model.name, work, threads=threads)
    ms, n, y = aotc_runner.run_driver(exe, model.x, shape, runs)
    return Timing(ms, n, y, note=f"{threads} threads, aotc_threadpool_create")


def bench_model(model: models.BenchModel, args: argparse.Namespace) -> dict[str, Any]:
    """Every system on one model; the reference output is the TF graph executor's."""
    runs = QUICK_RUNS if args.quick else FULL_RUNS
    systems: dict[str, Any] = {}
    ref_box: dict[str, np.ndarray] = {}

    def tf_graph() -> Timing:
        t = baselines.tf_graph(model, runs)
        ref_box["ref"] = np.asarray(t.y)
        return t

    systems["tf_graph"] = measure(tf_graph, None)
    ref = ref_box.get("ref")
    if ref is None:
        return {"name": model.name, "systems": systems, "error": "TF graph executor failed"}
    systems["tf_graph"]["error"] = 0.0
    print(f"  tf_graph {_short(systems['tf_graph'])}", flush=True)
    plan: dict[str, Callable[[], Timing]] = {
        "aotc": lambda: run_aotc(model, args, runs, ref.shape),
        "numpy": lambda: baselines.numpy_gemm(model, runs),
        "xla_jit": lambda: baselines.xla_jit(model, runs),
        "tflite": lambda: baselines.tflite(model, runs),
        "onnxruntime": lambda: baselines.onnxruntime(model, runs),
    }
    if not model.name.startswith("gemm_"):
        del plan["numpy"]
    if not args.no_tfcompile:
        plan["tfcompile"] = lambda: baselines.tfcompile(
            model, _tfcompile_runs(runs, systems), ref, args.tfcompile_cache
        )
    for name, fn in plan.items():
        systems[name] = measure(fn, ref)
        print(f"  {name} {_short(systems[name])}", flush=True)
    more = {str(t): bench_threads(model, args, runs, ref, t) for t in args.threads if t > 1}
    every_core = compile_on_every_core(model, args, systems, ref)
    one_level = compile_one_level(model, args, systems)
    return {
        "name": model.name,
        "kind": model.kind,
        "description": model.description,
        "input_shape": list(model.x.shape),
        "flops": model.flops,
        "systems": systems,
        **({"threads": more} if more else {}),
        **({"compile_every_core": every_core} if every_core else {}),
        **({"compile_one_level_call_s": one_level} if one_level else {}),
        **hardware_limit(model, args, ref),
    }


def bench_threads(model: models.BenchModel, args: argparse.Namespace, runs: Runs,
                  ref: np.ndarray, threads: int) -> dict[str, Any]:  # fmt: skip
    """aotc's parallel entry and the peers that take a thread count, each given ``threads``
    threads on as many CPUs. (TF's XLA JIT fixes its thread pools once per process, and
    tfcompile's driver runs single-threaded: they are not in this table.)"""
    plan: dict[str, Callable[[], Timing]] = {
        "aotc": lambda: run_aotc_threads(model, args, runs, ref.shape, threads),
        "numpy": lambda: baselines.numpy_gemm(model, runs, threads),
        "tf_graph": lambda: baselines.tf_graph(model, runs, threads),
        "tflite": lambda: baselines.tflite(model, runs, threads),
        "onnxruntime": lambda: baselines.onnxruntime(model, runs, threads),
    }
    if not model.name.startswith("gemm_"):
        del plan["numpy"]
    pin(threads)
    systems = {}
    try:
        for name, fn in plan.items():
            systems[name] = measure(fn, ref)
            print(f"  {name} x{threads} {_short(systems[name])}", flush=True)
    finally:
        pin(1)
    return systems


def compile_on_every_core(model: models.BenchModel, args: argparse.Namespace,
                          systems: dict[str, Any], ref: np.ndarray) -> dict[str, Any]:  # fmt: skip
    """Both compilers again, unpinned (every CPU this process may use): aotc splits its
    LLVM work over them (``codegen/workers.py``); whether tfcompile uses more than one is
    for the numbers to say. Seconds (and aotc's peak MB), for the compilers that compiled
    pinned; empty on a one-CPU machine."""
    if len(CPUS) < 2:
        return {}
    found: dict[str, Any] = {"cpus": len(CPUS)}
    pin(len(CPUS))
    try:
        if systems.get("aotc", {}).get("status") == "ok":
            work = args.work / model.name / "every-core"
            built = aotc_runner.compile_model(args.aotc, model.graph, model.config, model.name,
                                              work, ["--report", str(work / REPORT)])  # fmt: skip
            found["aotc"] = {"compile_s": round(built.seconds, 3),
                             "compile_call_s": call_seconds(work / REPORT),
                             "compile_peak_mb": round(built.peak_bytes / 1e6, 1)}  # fmt: skip
        if systems.get("tfcompile", {}).get("status") == "ok":
            t = baselines.tfcompile(model, (0, 1, 0.0), ref, args.tfcompile_cache)
            found["tfcompile"] = {"compile_s": t.compile_s}
    except Exception:  # noqa: BLE001 - the pinned numbers stand without these
        traceback.print_exc(limit=2)
    finally:
        pin(1)
    print(f"  compile on {len(CPUS)} cpus: {found}", flush=True)
    return found


def compile_one_level(model: models.BenchModel, args: argparse.Namespace,
                      systems: dict[str, Any]) -> float | None:  # fmt: skip
    """aotc's compile call for this machine's cpu alone (``--target-cpu host``: one level, as
    tfcompile compiles one), pinned to one core; None where aotc did not compile."""
    if systems.get("aotc", {}).get("status") != "ok":
        return None
    work = args.work / model.name / "one-level"
    flags = ["--target-cpu", "host", "--report", str(work / REPORT)]
    try:
        aotc_runner.compile_model(args.aotc, model.graph, model.config, model.name, work, flags)
    except RuntimeError:
        traceback.print_exc(limit=2)
        return None
    seconds = call_seconds(work / REPORT)
    print(f"  compile, one level: {seconds} s", flush=True)
    return seconds


def call_seconds(report: Path) -> float | None:
    """The compile call's seconds in aotc's ``--report`` (``stage_seconds``: front end, passes,
    codegen; the measure tfcompile's ``compile_s`` is), None if it has none."""
    stages = json.loads(report.read_text()).get("stage_seconds") or {}
    return round(sum(stages.values()), 3) or None


def hardware_limit(model: models.BenchModel, args: argparse.Namespace, ref: np.ndarray) -> dict:
    """The model's constant bytes and work (from aotc's compile report) and its time limit on
    this machine."""
    path = args.work / model.name / REPORT
    if not path.exists():
        return {}
    report = json.loads(path.read_text())
    facts: dict[str, Any] = {"constant_bytes": int(report["constant_bytes"])}
    call = call_seconds(path)  # the compile call alone, as tfcompile's compile_s is
    if call:
        facts["compile_call_s"] = call
    work = roofline.model_work(report, baselines.graph_flops(model), model.x.nbytes + ref.size * 4)
    if work is None:
        return facts
    limit, bound = work.limit_ms(args.peaks)
    return {**facts, "work_flops": work.flops, "work_bytes": work.nbytes, "limit_ms": limit,
            "bound": bound}  # fmt: skip


def _tfcompile_runs(runs: Runs, systems: dict[str, Any]) -> Runs:
    """tfcompile's driver takes a fixed run count: enough to fill the time budget, judged
    by the XLA JIT's (same compiler) or else the TF graph executor's time."""
    estimate = next(
        (
            systems[s]["ms"]
            for s in ("xla_jit", "tf_graph")
            if systems.get(s, {}).get("status") == "ok"
        ),
        None,
    )
    count = runs[1] if not estimate else int(runs[2] * 1e3 / estimate)
    return runs[0], min(max(count, runs[1]), 2000), runs[2]


def _short(entry: dict[str, Any]) -> str:
    if entry["status"] != "ok":
        return f"{entry['status']}: {entry.get('note', '')[:120]}"
    err = entry.get("error")
    return (
        f"{entry['ms']:.3f} ms ({entry['runs']} runs, err {err if err is None else f'{err:.1e}'})"
    )


def _version(module: str) -> str:
    try:
        return __import__(module).__version__
    except Exception:  # noqa: BLE001
        return "not installed"


def _command_line(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except Exception as e:  # noqa: BLE001
        return f"unavailable ({e})"


def openblas_info() -> str:
    """OpenBLAS build and core type numpy uses (threadpoolctl), after one matmul."""
    np.ones((64, 64), np.float32) @ np.ones((64, 64), np.float32)
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl not installed"
    infos = [i for i in threadpool_info() if i.get("internal_api") == "openblas"]
    parts = [f"{i.get('version')} core {i.get('architecture')}, {i.get('num_threads')} thread(s)"
             for i in infos]  # fmt: skip
    return "; ".join(parts) or "no OpenBLAS loaded"


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def environment(args: argparse.Namespace, pinned: str) -> dict[str, Any]:
    """Machine, versions and settings for the report."""
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    isa = [f for f in ("avx512f", "avx2", "fma") if f" {f} " in flags]
    original = ", ".join(f"{k}={v}" for k, v in ORIGINAL_OPENBLAS_ENV.items() if v) or "none set"
    return {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "cpu": f"{cpu_name()}, {os.cpu_count()} logical CPUs, {' '.join(isa)}",
        "os": platform.platform(),
        "threads": f"{pinned}; OMP/MKL/OPENBLAS/TF_NUM_*_THREADS=1",
        "python": platform.python_version(),
        "aotc": _command_line([str(args.aotc), "--version"]),
        "cc": _command_line([aotc_runner.CC, "--version"]),
        "tensorflow": _version("tensorflow"),
        "keras": _version("keras"),
        "numpy": _version("numpy"),
        "OpenBLAS (numpy)": openblas_info(),
        "OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE": f"unset for this run (were: {original})",
        "onnxruntime": _version("onnxruntime"),
        "tf2onnx": _version("tf2onnx"),
        "onnx": _version("onnx"),
        "tfcompile": "skipped (--no-tfcompile)" if args.no_tfcompile else
                     "shared/bench/tfcompile_baseline.py, runtime cache "
                     + _home_relative(args.tfcompile_cache),
        "timing": "quick: warm-up 1, >= 3 runs and >= 0.2 s" if args.quick else
                  "warm-up 3, >= 10 runs and >= 1 s per system (tfcompile: its own driver)",
        "argv": " ".join(["bench/run.py", *sys.argv[1:]]),
    }  # fmt: skip


def _load() -> str:
    """The system load averages (other processes on the machine skew every column)."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"


def select(names: list[str], filters: str | None) -> list[str]:
    """Models whose name contains any of the comma-separated filters (all without filters)."""
    if not filters:
        return names
    wanted = [f.strip() for f in filters.split(",") if f.strip()]
    return [n for n in names if any(w in n for w in wanted)]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    repo = models.REPO
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--aotc", default=str(repo / ".venv" / "bin" / "aotc"), help="aotc CLI")
    p.add_argument("--models", help="comma-separated name filters, e.g. gemm,lenet")
    p.add_argument("--list", action="store_true", help="list the model names and exit")
    p.add_argument("--quick", action="store_true", help="fewer runs, for iteration")
    p.add_argument("--no-tfcompile", action="store_true", help="skip the tfcompile column")
    p.add_argument("--threads", type=_counts, default=[1, 2],
                   help="thread counts, e.g. 1,2 (default): the 1-thread run is always made; "
                        "each other count gets a table of the systems that take one")  # fmt: skip
    p.add_argument("--tfcompile-cache", type=Path,
                   default=Path.home() / ".cache" / "aotc-tfcompile-runtime")  # fmt: skip
    p.add_argument("--models-dir", type=Path, default=repo / "build" / "bench-models")
    p.add_argument("--work", type=Path, default=repo / "build" / "bench-work")
    p.add_argument("--out", type=Path, default=BENCH_DIR / "RESULTS.md")
    p.add_argument("--render-only", action="store_true",
                   help="rewrite RESULTS.md from RESULTS.json without measuring")  # fmt: skip
    return p.parse_args(argv)


def _counts(text: str) -> list[int]:
    return sorted({1, *(int(t) for t in text.split(",") if t.strip())})


def write(results: list[dict[str, Any]], env: dict[str, Any], out: Path) -> None:
    """RESULTS.md and RESULTS.json (rewritten after every model)."""
    out.with_suffix(".json").write_text(json.dumps({"env": env, "results": results}, indent=1))
    out.write_text(report.render(results, env))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.aotc = str(Path(args.aotc).resolve()) if Path(args.aotc).exists() else args.aotc
    names = select(models.all_names(), args.models)
    if args.list:
        print("\n".join(models.all_names()))
        return 0
    if args.render_only:
        saved = json.loads(args.out.with_suffix(".json").read_text())
        args.out.write_text(report.render(saved["results"], saved["env"]))
        return 0
    pinned = pin(1)
    configure_tf()
    env = environment(args, pinned)
    args.peaks = roofline.measure_peaks(aotc_runner.CC)
    env["hardware limit"] = peaks_line(args.peaks)
    print(f"{env['cpu']}; {pinned}; OpenBLAS {env['OpenBLAS (numpy)']}", flush=True)
    results = []
    load_at_start = _load()
    for name in names:
        print(f"{name}:", flush=True)
        results.append(bench_model(models.load(name, args.models_dir), args))
        env["load average (1, 5, 15 min)"] = f"{load_at_start} at start, {_load()} at end"
        write(results, env, args.out)
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    return 0


def peaks_line(peaks: roofline.Peaks) -> str:
    """The measured peaks, for the environment section."""
    shown = (1 << 14, 1 << 20, 1 << 28)
    copy = ", ".join(f"{_size(n)} {gbs:.0f}" for n, gbs in peaks.copy_gbs.items() if n in shown)
    return (
        f"sgemm {roofline.GEMM_SIZE}³ (numpy/OpenBLAS, one thread, best of "
        f"{roofline.GEMM_REPEATS}) {peaks.gflops:.0f} GFLOP/s; "
        f"copy (read + write) GB/s by working set: {copy}"
    )


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def _home_relative(path: Path) -> str:
    """``~/.cache/...`` rather than this machine's home folder, for the committed results."""
    try:
        return "~/" + Path(path).resolve().relative_to(Path.home().resolve()).as_posix()
    except ValueError:
        return Path(path).name


if __name__ == "__main__":
    sys.exit(main())
