"""No hidden global state: two threads call one compiled model at once, with their own temp and
result buffers, many times, and every call gives bit-identical results to a serial call."""

from __future__ import annotations

import string
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from c_harness import CC
from fixtures import load_fixture

from aotc.driver import compile_graph

ITERATIONS = 200

_PROGRAM = string.Template(r"""
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "${name}.h"

#define NA ${upper}_NUM_ARGS
#define NR ${upper}_NUM_RESULTS
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "check failed: %s\n", #c); exit(3); } } while (0)

typedef struct { void *results[NR + 1]; void *temp; int mismatches; } Job;
static const void *args[NA + 1];
static Job reference;

static void *alloc(size_t bytes) {
  void *p = NULL;
  CHECK(posix_memalign(&p, ${upper}_ALIGN, bytes + ${upper}_ALIGN) == 0);
  memset(p, 0xA5, bytes + ${upper}_ALIGN);  /* garbage: unwritten results would differ */
  return p;
}

static void init(Job *job) {
  for (int j = 0; j < NR; ++j) job->results[j] = alloc(${name}_result_info[j].bytes);
  job->temp = alloc(${upper}_TEMP_BYTES);
  job->mismatches = 0;
}

static void *work(void *arg) {
  Job *job = arg;
  for (int it = 0; it < ${iterations}; ++it) {
    CHECK(${name}_run_buffers(args, job->results, job->temp) == 0);
    for (int j = 0; j < NR; ++j)
      if (memcmp(job->results[j], reference.results[j], ${name}_result_info[j].bytes))
        ++job->mismatches;
    size_t temp_bytes = ${upper}_TEMP_BYTES;  /* a variable: 0 is fine, no memset warning */
    memset(job->temp, it & 0xFF, temp_bytes);  /* stale temp contents must not matter */
  }
  return NULL;
}

int main(int argc, char **argv) {
  CHECK(argc == 2);
  for (int i = 0; i < NA; ++i) {
    char path[4096];
    snprintf(path, sizeof path, "%s/arg%d.bin", argv[1], i);
    void *p = alloc(${name}_arg_info[i].bytes);
    FILE *f = fopen(path, "rb");
    CHECK(f && fread(p, 1, ${name}_arg_info[i].bytes, f) == ${name}_arg_info[i].bytes);
    fclose(f);
    args[i] = p;
  }
  init(&reference);
  CHECK(${name}_run_buffers(args, reference.results, reference.temp) == 0);
  Job jobs[2];
  pthread_t threads[2];
  for (int t = 0; t < 2; ++t) {
    init(&jobs[t]);
    CHECK(pthread_create(&threads[t], NULL, work, &jobs[t]) == 0);
  }
  for (int t = 0; t < 2; ++t) CHECK(pthread_join(threads[t], NULL) == 0);
  printf("%d %d\n", jobs[0].mismatches, jobs[1].mismatches);
  return 0;
}
""")


@pytest.mark.parametrize("name", ["mlp_b8", "binary", "reshape_cast"])
def test_two_threads_get_identical_results(name: str) -> None:
    fixture = load_fixture(name)
    model = compile_graph(fixture.graph, fixture.config).model
    with tempfile.TemporaryDirectory(prefix="aotc_threads_") as tmp:
        work = Path(tmp)
        (work / f"{model.name}.o").write_bytes(model.object_bytes)
        (work / f"{model.name}.h").write_text(model.header)
        source = _PROGRAM.substitute(
            name=model.name, upper=model.name.upper(), iterations=ITERATIONS
        )
        (work / "main.c").write_text(source)
        for i, (arg, info) in enumerate(zip(fixture.args, model.args, strict=True)):
            data = np.ascontiguousarray(arg, dtype=info.shape.dtype.numpy).tobytes()
            (work / f"arg{i}.bin").write_bytes(data)
        cmd = [CC, "-O1", "-std=c99", "-Wall", "-Werror", "-pthread", "-I", tmp]
        cmd += [str(work / "main.c"), str(work / f"{model.name}.o"), "-o", str(work / "main")]
        built = subprocess.run(cmd + ["-lm"], capture_output=True, text=True)
        assert built.returncode == 0, built.stderr
        ran = subprocess.run([str(work / "main"), tmp], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["0", "0"], ran.stdout
