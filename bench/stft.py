#!/usr/bin/env python
"""The audio front end (tests/data/tf/stft_mel): 1 s of 16 kHz audio -> stft (frame 400, hop
160, fft_length 512) -> |.| -> 40 mel bins -> log, timed three ways.

    .venv/bin/python bench/stft.py          # aotc (compiled, JIT-linked) and numpy
    python bench/stft.py --tf               # TensorFlow's frozen graph (needs tensorflow)

Each prints the best of 7 rounds of the mean over 50 calls, in ms, single-threaded. numpy
computes the same thing (strided frames, Hann window, ``np.fft.rfft``, abs, a [257, 40]
matmul, log); compare numbers measured back to back on an idle machine, with the load.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # single-threaded, as aotc's object and TF here

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "data" / "tf" / "stft_mel"


def best_ms(fn: Callable[[], object], calls: int = 50, rounds: int = 7) -> float:
    fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls)
    return 1e3 * min(times)


def audio() -> np.ndarray:
    return np.load(f"{FIXTURE}.npz")["arg0"]


def numpy_front_end(x: np.ndarray, mel: np.ndarray) -> np.ndarray:
    frames = np.lib.stride_tricks.sliding_window_view(x[0], 400)[::160]
    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)).astype(np.float32)
    spectrum = np.abs(np.fft.rfft(frames * window, 512)).astype(np.float32)
    return np.log(spectrum @ mel + 1e-6)


def run_aotc() -> None:
    from aotc.driver import TargetOverrides, compile_graph
    from aotc.jit import JitModel

    model = compile_graph(f"{FIXTURE}.pb", f"{FIXTURE}.yaml", TargetOverrides(cpu="host")).model
    jit = JitModel.from_compiled(model)
    x = audio()
    mel = np.random.default_rng(0).random((257, 40), dtype=np.float32)
    print(f"aotc  {best_ms(lambda: jit(x)):.3f} ms")
    print(f"numpy {best_ms(lambda: numpy_front_end(x, mel)):.3f} ms")


def run_tf() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(Path(f"{FIXTURE}.pb").read_bytes())
    fn = tf.compat.v1.wrap_function(lambda: tf.graph_util.import_graph_def(graph_def, name=""), [])
    feed, fetch = fn.graph.get_tensor_by_name("audio:0"), fn.graph.get_operations()[-1].outputs[0]
    pruned = fn.prune(feed, fetch)
    x = tf.constant(audio())
    print(f"tf    {best_ms(lambda: pruned(x)):.3f} ms")


if __name__ == "__main__":
    run_tf() if "--tf" in sys.argv else run_aotc()
    print(f"load average {os.getloadavg()[0]:.1f}")
