"""The baseline columns, each a function ``(model, runs) -> Timing``.

All run in this (single-threaded, pinned) process except tfcompile, which runs the shared
``../shared/bench/tfcompile_baseline.py`` as a child process. ``runs`` is (warm-up calls,
minimum timed calls, time budget in seconds). A baseline that cannot handle a model raises
:class:`Unsupported`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from models import REPO, BenchModel

Runs = tuple[int, int, float]


@dataclass
class Timing:
    """A measurement: median ms over ``runs`` timed calls, the output or its error vs TF."""

    ms: float
    runs: int
    y: np.ndarray | None = None
    error: float | None = None  # max |y - ref| / max |ref|, when y is not returned
    note: str = ""
    compile_s: float | None = None  # the compiler's seconds, for systems compiled ahead of time
    compile_peak_mb: float | None = None


TFCOMPILE_SCRIPT = REPO.parent / "shared" / "bench" / "tfcompile_baseline.py"


class Unsupported(Exception):
    """The baseline cannot convert or run this model (reported as "unsupported")."""


def time_calls(fn: Callable[[], object], runs: Runs) -> tuple[float, int]:
    """(median ms, number of timed calls) of ``fn``, timed call by call."""
    warmup, min_runs, budget_s = runs
    for _ in range(warmup):
        fn()
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < min_runs or time.perf_counter() - start < budget_s:
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(samples)), len(samples)


def _tensor(name: str) -> str:
    return name if ":" in name else name + ":0"


def _graph_def(model: BenchModel):
    import tensorflow as tf

    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(model.graph.read_bytes())
    return graph_def


def graph_flops(model: BenchModel) -> float:
    """TensorFlow's count of the graph's floating-point operations (its profiler), with the
    input shape fixed to the benchmark's."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, model.x.shape, name="bench_input")
        tf.graph_util.import_graph_def(_graph_def(model), input_map={model.feed: x}, name="")
        options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
        options["output"] = "none"
        return float(tf.compat.v1.profiler.profile(graph, options=options).total_float_ops)


def tf_graph(model: BenchModel, runs: Runs, threads: int = 1) -> Timing:
    """TensorFlow's graph executor (Session, ``threads`` intra-op threads, one inter-op)."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(_graph_def(model), name="")
    config = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=threads, inter_op_parallelism_threads=1
    )
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        fetch = graph.get_tensor_by_name(_tensor(model.fetch))
        feed = {graph.get_tensor_by_name(_tensor(model.feed)): model.x}
        y = sess.run(fetch, feed)
        ms, n = time_calls(lambda: sess.run(fetch, feed), runs)
    return Timing(ms, n, np.asarray(y))


def xla_jit(model: BenchModel, runs: Runs) -> Timing:
    """The graph, pruned to feed -> fetch, called from ``tf.function(jit_compile=True)``."""
    import tensorflow as tf

    graph_def = _graph_def(model)
    wrapped = tf.compat.v1.wrap_function(
        lambda: tf.graph_util.import_graph_def(graph_def, name=""), []
    )
    pruned = wrapped.prune(
        wrapped.graph.get_tensor_by_name(_tensor(model.feed)),
        wrapped.graph.get_tensor_by_name(_tensor(model.fetch)),
    )
    f = tf.function(lambda x: pruned(x), jit_compile=True)
    x = tf.constant(model.x)
    y = f(x).numpy()
    ms, n = time_calls(lambda: f(x).numpy(), runs)
    return Timing(ms, n, y)


def tflite(model: BenchModel, runs: Runs, threads: int = 1) -> Timing:
    """TF Lite (float32, default XNNPACK delegate, ``threads`` threads) on the frozen graph."""
    import tensorflow as tf

    try:
        converter = tf.compat.v1.lite.TFLiteConverter.from_frozen_graph(
            str(model.graph),
            input_arrays=[model.feed],
            output_arrays=[model.fetch],
            input_shapes={model.feed: list(model.x.shape)},
        )
        flat = converter.convert()
    except Exception as e:  # noqa: BLE001 - any converter failure means "unsupported"
        raise Unsupported(f"TFLite conversion failed: {_first_line(e)}") from e
    interp = tf.lite.Interpreter(model_content=flat, num_threads=threads)
    interp.allocate_tensors()
    inp = interp.get_input_details()[0]["index"]
    out = interp.get_output_details()[0]["index"]

    def call():
        interp.set_tensor(inp, model.x)
        interp.invoke()

    call()
    y = interp.get_tensor(out).copy()
    ms, n = time_calls(call, runs)
    return Timing(ms, n, y)


def onnxruntime(model: BenchModel, runs: Runs, threads: int = 1) -> Timing:
    """onnxruntime (CPU provider, ``threads`` intra-op threads) on the tf2onnx conversion
    (opset 17)."""
    import onnxruntime as ort
    import tf2onnx

    try:
        proto, _ = tf2onnx.convert.from_graph_def(
            _graph_def(model),
            input_names=[_tensor(model.feed)],
            output_names=[_tensor(model.fetch)],
            opset=17,
        )
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(
            proto.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
    except Exception as e:  # noqa: BLE001 - conversion or session creation failed
        raise Unsupported(f"tf2onnx/onnxruntime: {_first_line(e)}") from e
    feeds = {session.get_inputs()[0].name: model.x}
    y = session.run(None, feeds)[0]
    ms, n = time_calls(lambda: session.run(None, feeds), runs)
    return Timing(ms, n, np.asarray(y))


def numpy_gemm(model: BenchModel, runs: Runs, threads: int = 1) -> Timing:
    """``x @ b`` in numpy (OpenBLAS, ``threads`` threads), b being the graph's constant
    operand."""
    if not model.name.startswith("gemm_"):
        raise Unsupported("numpy column only for GEMM")
    from tensorflow.python.framework import tensor_util

    consts = [n for n in _graph_def(model).node if n.op == "Const"]
    b = max((tensor_util.MakeNdarray(n.attr["value"].tensor) for n in consts), key=np.size)
    b = np.ascontiguousarray(b, np.float32)
    x = model.x
    from threadpoolctl import threadpool_limits

    with threadpool_limits(threads):
        y = x @ b
        ms, n = time_calls(lambda: x @ b, runs)
    return Timing(ms, n, y)


def tfcompile(model: BenchModel, runs: Runs, reference: np.ndarray, cache: Path) -> Timing:
    """TensorFlow's AOT compiler via the shared ``tfcompile_baseline.py`` (child process)."""
    if not TFCOMPILE_SCRIPT.exists():
        raise Unsupported(f"{TFCOMPILE_SCRIPT} not found")
    with tempfile.TemporaryDirectory(prefix="bench-tfcompile-") as tmp:
        data = Path(tmp) / "data.npz"
        np.savez(data, in0=model.x, out0=reference)
        cmd = [sys.executable, str(TFCOMPILE_SCRIPT), "--graph", str(model.graph)]
        cmd += ["--config", str(model.config), "--data", str(data), "--work", tmp]
        cmd += ["--bench", str(runs[1]), "--runtime-cache", str(cache)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=_child_env())
    if done.returncode:
        raise RuntimeError(f"tfcompile_baseline.py failed: {done.stderr.strip()[-300:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result.get("run_ms") is None:
        raise RuntimeError("tfcompile_baseline.py printed no timing")
    error = result.get("max_rel_err")  # the script compares with `reference` itself
    note = f"tfcompile {result.get('compile_s')} s, {result.get('artifact_bytes')} bytes"
    compile_s = float(result["compile_s"]) if result.get("compile_s") is not None else None
    return Timing(float(result["run_ms"]), runs[1], None, error, note, compile_s)


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:200]
