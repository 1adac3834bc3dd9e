"""The hardware limit of a model on this machine, measured in the same run as the models.

A model cannot run faster than its arithmetic at the machine's peak GEMM throughput, nor than
the bytes it must move at the machine's copy bandwidth for a working set of that size. The
limit is the larger of the two times; a system's *fraction of the limit* is limit / its time
(1.0 would be perfect). Both peaks are measured here with numpy (single-precision GEMM, copy),
so they are this machine's, under this run's load.
"""

from __future__ import annotations

import math
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# sgemm n x n x n for the peak throughput: small enough that the best of GEMM_REPEATS calls
# ran without being preempted on a loaded machine, big enough to reach the peak
GEMM_SIZE, GEMM_REPEATS = 512, 30

# memcpy bandwidth by working-set size (half source, half destination), best of 7 timings;
# in C because numpy's per-call overhead would hide the bandwidth of cache-sized sets.
COPY_PROGRAM = r"""
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(void) {
  size_t most = (size_t)1 << 28;
  char *src = malloc(most / 2), *dst = malloc(most / 2);
  if (!src || !dst) return 1;
  memset(src, 1, most / 2);
  memset(dst, 0, most / 2);
  for (int log2 = 12; log2 <= 28; log2 += 2) {
    size_t n = (size_t)1 << log2;
    long inner = (1L << 26) / (long)n > 0 ? (1L << 26) / (long)n : 1;
    double best = 1e30;
    for (int r = 0; r < 7; ++r) {
      double t0 = now();
      for (long i = 0; i < inner; ++i) {
        memcpy(dst, src, n / 2);
        __asm__ volatile("" ::: "memory");
      }
      double t = now() - t0;
      if (t < best) best = t;
    }
    printf("%zu %.3f\n", n, (double)n * inner / best / 1e9);
  }
  return 0;
}
"""


@dataclass(frozen=True)
class Peaks:
    """The machine's measured peaks: GEMM throughput and copy bandwidth by working-set size."""

    gflops: float  # single-precision GEMM, GFLOP/s
    copy_gbs: dict[int, float]  # working-set bytes (power of two) -> read+write GB/s

    def bandwidth(self, nbytes: int) -> float:
        """Copy GB/s for a working set of ``nbytes`` (the nearest measured size above it)."""
        sizes = sorted(self.copy_gbs)
        return self.copy_gbs[next((s for s in sizes if s >= nbytes), sizes[-1])]


def _best_seconds(fn: Any, repeats: int) -> float:
    """The fastest of ``repeats`` calls after one warm-up: the peak, not the median."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def measure_peaks(cc: str) -> Peaks:
    """GEMM throughput (numpy/OpenBLAS sgemm) and memcpy bandwidth from 4 KiB to 256 MiB
    (a C program built with ``cc``)."""
    a = np.random.default_rng(0).standard_normal((GEMM_SIZE, GEMM_SIZE)).astype(np.float32)
    gemm_s = _best_seconds(lambda: a @ a, GEMM_REPEATS)
    return Peaks(2 * GEMM_SIZE**3 / gemm_s / 1e9, _copy_bandwidths(cc))


def _copy_bandwidths(cc: str) -> dict[int, float]:
    with tempfile.TemporaryDirectory(prefix="bench-copy-") as tmp:
        source, exe = Path(tmp) / "copy.c", Path(tmp) / "copy"
        source.write_text(COPY_PROGRAM)
        subprocess.run([cc, "-O2", str(source), "-o", str(exe)], check=True, capture_output=True)
        out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return {int(n): float(gbs) for n, gbs in (line.split() for line in out.splitlines())}


@dataclass(frozen=True)
class Work:
    """What one call of a model must do: arithmetic and the bytes it must move at least once."""

    flops: float
    nbytes: int  # constants read + inputs read + outputs written

    def limit_ms(self, peaks: Peaks) -> tuple[float, str]:
        """(the time limit in ms, which bound sets it: "compute" or "memory")."""
        compute = self.flops / (peaks.gflops * 1e9) * 1e3
        memory = self.nbytes / (peaks.bandwidth(self.nbytes) * 1e9) * 1e3
        return (compute, "compute") if compute >= memory else (memory, "memory")


def model_work(report: dict[str, Any], flops: float, io_bytes: int) -> Work | None:
    """The work of one call: ``flops`` (TensorFlow's count for the graph), the constant bytes
    of aotc's ``--report`` JSON plus the inputs' and outputs' bytes. None for a graph with
    loops, whose body TensorFlow's count includes once, not once per iteration."""
    if report.get("loops"):
        return None
    return Work(flops, int(report["constant_bytes"]) + io_bytes)


def fraction(limit_ms: float | None, ms: float | None) -> float | None:
    """limit / time: the achieved fraction of the hardware limit (None when unknown)."""
    if not limit_ms or not ms or math.isnan(ms):
        return None
    return limit_ms / ms
