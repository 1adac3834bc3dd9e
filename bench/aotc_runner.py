"""aotc's column: ``aotc compile`` a model, link it with a generated C timing driver, run it.

The driver reads the input from a file, calls ``<name>_run_buffers`` once and writes the
result (for the accuracy check), then warms up and times calls one by one with
``clock_gettime(CLOCK_MONOTONIC)`` until both a minimum count and a time budget are reached,
and prints the median. Buffers are 64-byte aligned; ``temp`` is allocated once. Linked with
``threads`` > 0, it calls ``<name>_run_buffers_mt`` with a pool of that many threads from the
shipped ``aotc_threadpool.h`` (``aotc --include-dir``) instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CC = os.environ.get("CC", "cc")

DRIVER = r"""
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "@NAME@.h"
#if AOTC_THREADS > 0
#include "aotc_threadpool.h"
#define RUN() @name@_run_buffers_mt(args, results, temp, pool)
#define TEMP_BYTES @name@_temp_bytes_mt(AOTC_THREADS)
#else
#define RUN() @name@_run_buffers(args, results, temp)
#define TEMP_BYTES @UPPER@_TEMP_BYTES
#endif

#define MAX_RUNS 100000
static double samples[MAX_RUNS];

static void *aligned(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 64)) { fprintf(stderr, "oom\n"); exit(2); }
  memset(p, 0, bytes);
  return p;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 6) { fprintf(stderr, "usage: in out warmup min_runs budget_ms\n"); return 2; }
  int warmup = atoi(argv[3]), min_runs = atoi(argv[4]);
  double budget = atof(argv[5]);
  const void *args[@UPPER@_NUM_ARGS + 1];
  void *results[@UPPER@_NUM_RESULTS + 1];
  void *x = aligned(@UPPER@_ARG0_BYTES);
  FILE *f = fopen(argv[1], "rb");
  if (!f || fread(x, 1, @UPPER@_ARG0_BYTES, f) != @UPPER@_ARG0_BYTES) return 3;
  fclose(f);
  args[0] = x;
  for (int j = 0; j < @UPPER@_NUM_RESULTS; ++j) results[j] = aligned(@name@_result_info[j].bytes);
#if AOTC_THREADS > 0
  aotc_threadpool *pool = aotc_threadpool_create(AOTC_THREADS);
  if (!pool) return 6;
#endif
  void *temp = aligned(TEMP_BYTES);
  if (RUN() != 0) return 4;
  f = fopen(argv[2], "wb");
  if (!f || fwrite(results[0], 1, @UPPER@_RESULT0_BYTES, f) != @UPPER@_RESULT0_BYTES) return 5;
  fclose(f);
  for (int i = 0; i < warmup; ++i) RUN();
  int n = 0;
  double start = now_ms();
  while (n < MAX_RUNS && (n < min_runs || now_ms() - start < budget)) {
    double t0 = now_ms();
    RUN();
    samples[n++] = now_ms() - t0;
  }
  qsort(samples, n, sizeof(double), cmp);
  printf("runs %d median_ms %.6f min_ms %.6f\n", n, samples[n / 2], samples[0]);
  return 0;
}
"""


def _driver_source(name: str) -> str:
    return DRIVER.replace("@NAME@", name).replace("@name@", name).replace("@UPPER@", name.upper())


@dataclass(frozen=True)
class Compiled:
    """What one ``aotc compile`` cost: elapsed seconds and the process's peak resident bytes."""

    seconds: float
    peak_bytes: int


def compile_model(
    aotc: str, graph: Path, config: Path, name: str, work: Path, extra: list[str] | None = None
) -> Compiled:
    """Runs ``aotc compile`` (no cache) into ``work/name.{o,h}``."""
    work.mkdir(parents=True, exist_ok=True)
    # --name: the driver calls <name>_run_buffers whatever prefix the file name would give
    cmd = [aotc, "compile", "-q", str(graph), "-c", str(config), "-o", str(work / name)]
    cmd += ["--name", name]
    cmd += extra or []
    cost = work / "compile-cost.txt"
    launch = [sys.executable, "-c", _LAUNCHER, str(cost), *cmd, "--no-cache"]
    # bytecode cached as an installed aotc has it (pip compiles it), not compiled every run
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(launch, capture_output=True, text=True, timeout=1800, env=env)
    if done.returncode:
        raise RuntimeError(f"aotc compile failed: {(done.stderr or done.stdout).strip()[-300:]}")
    seconds, peak = cost.read_text().split()
    return Compiled(float(seconds), int(peak))


# Runs a command and writes its seconds and peak resident bytes to a file. A child forked from
# the benchmark itself would count the benchmark's resident pages (TensorFlow's, hundreds of
# MB) in its peak until it execs, so the compile is started from this small process instead.
_LAUNCHER = """
import os, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
seconds = time.perf_counter() - start
with open(sys.argv[1], "w") as out:
    out.write(f"{seconds} {usage.ru_maxrss * 1024}")  # ru_maxrss: KiB on Linux
sys.exit(os.waitstatus_to_exitcode(status))
"""


#: aotc_threadpool.h in this checkout (what ``aotc --include-dir`` prints once installed).
INCLUDE = Path(__file__).resolve().parents[1] / "aotc" / "include"


def link_driver(name: str, work: Path, threads: int = 0) -> Path:
    """The timing program for ``work/name.o``, built with ``cc -O2``; ``threads`` > 0: timing
    ``<name>_run_buffers_mt`` on a pool of that many threads (the shipped pthread pool)."""
    (work / "driver.c").write_text(_driver_source(name))
    exe = work / "driver"
    cmd = [CC, "-O2", "-std=c99", "-I", str(work), f"-DAOTC_THREADS={threads}"]
    if threads > 0:
        cmd += ["-pthread", "-I", str(INCLUDE)]
    cmd += [str(work / "driver.c"), str(work / f"{name}.o")]
    done = subprocess.run([*cmd, "-o", str(exe), "-lm"], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"cc failed: {done.stderr.strip()[-300:]}")
    return exe


def run_driver(
    exe: Path, x: np.ndarray, out_shape: tuple[int, ...], runs: tuple[int, int, float]
) -> tuple[float, int, np.ndarray]:
    """(median ms, number of timed runs, the output) of the driver; ``runs`` is
    (warm-up calls, minimum timed calls, time budget in seconds)."""
    work = exe.parent
    np.ascontiguousarray(x, np.float32).tofile(work / "x.bin")
    warmup, min_runs, budget_s = runs
    cmd = [str(exe), str(work / "x.bin"), str(work / "y.bin"), str(warmup), str(min_runs)]
    done = subprocess.run([*cmd, str(budget_s * 1e3)], capture_output=True, text=True, timeout=900)
    if done.returncode:
        raise RuntimeError(f"driver exited {done.returncode}: {done.stderr.strip()[-300:]}")
    match = re.search(r"runs (\d+) median_ms ([\d.]+)", done.stdout)
    if not match:
        raise RuntimeError(f"driver printed no timing: {done.stdout[-200:]}")
    y = np.fromfile(work / "y.bin", np.float32).reshape(out_shape)
    return float(match.group(2)), int(match.group(1)), y
