"""Memory safety of generated code, for every fixture in tests/data/tf and the loops of
tests/data/control_flow that index their buffers at run time.

1. The C harness built with ``-fsanitize=address,undefined`` runs each model clean (the harness
   and the header are instrumented; any report fails the run).
2. The model object itself is not instrumented, so ASan cannot see its loads and stores. A
   guard-page run catches those: every argument, result and the temp buffer is placed flush
   against an inaccessible page (after it, then before it), so reading or writing one byte
   outside a buffer crashes the program.
"""

from __future__ import annotations

import string
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from c_harness import CC, SANITIZE_CFLAGS, run_compiled
from fixtures import (
    CONTROL_FLOW_DATA,
    HOST_CPU,
    Fixture,
    assert_close,
    fixture_names,
    fixture_rtol,
    load_fixture,
)

from aotc.codegen.compile import CompiledModel
from aotc.driver import compile_graph

# Recurrent networks and TensorList/TensorArray graphs of tests/data/control_flow: loops that
# read and write their buffers at run-time indices (dynamic slices, in-place updates).
CONTROL_FLOW = [
    "keras_lstm_seq",
    "keras_bilstm_functional",
    "dynamic_rnn_v1",
    "tensor_array_loop_unknown",
    "tensor_list_ops",
    "tensor_array_v1",
    "list_push_loop_functional",  # a buffer written at a run-time length
    "list_push_pop_counted_functional",
]


def check(fixture: Fixture, results: list[np.ndarray]) -> None:
    for i, (got, want) in enumerate(zip(results, fixture.results, strict=True)):
        assert_close(got, want, fixture_rtol(fixture.name, 1e-4), what=f"{fixture.name} result {i}")


@pytest.mark.parametrize(
    "fixture",
    [
        *(load_fixture(name) for name in fixture_names()),
        *(load_fixture(name, CONTROL_FLOW_DATA) for name in CONTROL_FLOW),
    ],
    ids=lambda fixture: fixture.name,
)
def test_fixture_is_memory_safe(fixture: Fixture) -> None:
    # One test per fixture so that each model compiles once (compiling dominates the time).
    # one that stops compiling fails
    model = compile_graph(fixture.graph, fixture.config, HOST_CPU).model
    typed, buffers = run_compiled(model, fixture.args, extra_cflags=SANITIZE_CFLAGS)
    check(fixture, typed)
    check(fixture, buffers)
    check_guarded(fixture, model)


_GUARDED = string.Template(r"""
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "${name}.h"

#define NA ${upper}_NUM_ARGS
#define NR ${upper}_NUM_RESULTS
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "check failed: %s\n", #c); exit(3); } } while (0)

/* `bytes` flush against a PROT_NONE page: after the buffer (before == 0) or before it. */
static void *guarded(size_t bytes, size_t align, int before) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t span = (bytes + page - 1) / page * page;
  char *base = mmap(NULL, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(base != MAP_FAILED);
  memset(base, 0xA5, span + page);
  if (before) { CHECK(mprotect(base, page, PROT_NONE) == 0); return base + page; }
  CHECK(mprotect(base + span, page, PROT_NONE) == 0);
  return base + ((span - bytes) / align * align);  /* as close to the guard as alignment allows */
}

int main(int argc, char **argv) {
  CHECK(argc == 3);
  int before = atoi(argv[2]);
  const void *args[NA + 1];
  void *results[NR + 1];
  char path[4096];
  for (int i = 0; i < NA; ++i) {
    size_t n = ${name}_arg_info[i].bytes;
    void *p = guarded(n, 1, before);
    snprintf(path, sizeof path, "%s/arg%d.bin", argv[1], i);
    FILE *f = fopen(path, "rb");
    CHECK(f && fread(p, 1, n, f) == n);
    fclose(f);
    args[i] = p;
  }
  for (int j = 0; j < NR; ++j) results[j] = guarded(${name}_result_info[j].bytes, 1, before);
  void *temp = guarded(${upper}_TEMP_BYTES, ${upper}_ALIGN, before);
  CHECK(${name}_run_buffers(args, results, temp) == 0);
  for (int j = 0; j < NR; ++j) {
    snprintf(path, sizeof path, "%s/result%d.bin", argv[1], j);
    FILE *f = fopen(path, "wb");
    size_t n = ${name}_result_info[j].bytes;
    CHECK(f && fwrite(results[j], 1, n, f) == n);
    fclose(f);
  }
  return 0;
}
""")


def check_guarded(fixture: Fixture, model: CompiledModel) -> None:
    """Run ``model`` with guard pages after, then before, every buffer; check its results."""
    with tempfile.TemporaryDirectory(prefix="aotc_guard_") as tmp:
        work = Path(tmp)
        (work / f"{model.name}.o").write_bytes(model.object_bytes)
        (work / f"{model.name}.h").write_text(model.header)
        (work / "main.c").write_text(_GUARDED.substitute(name=model.name, upper=model.name.upper()))
        for i, (arg, info) in enumerate(zip(fixture.args, model.args, strict=True)):
            data = np.ascontiguousarray(arg, dtype=info.shape.dtype.numpy).tobytes()
            (work / f"arg{i}.bin").write_bytes(data)
        cmd = [CC, "-O1", "-std=c99", "-Wall", "-Werror", "-I", tmp, str(work / "main.c")]
        subprocess.run(
            [*cmd, str(work / f"{model.name}.o"), "-o", str(work / "main"), "-lm"],
            check=True,
            capture_output=True,
        )
        for before in ("0", "1"):
            ran = subprocess.run(
                [str(work / "main"), tmp, before], capture_output=True, text=True, timeout=120
            )
            assert ran.returncode == 0, f"guard {before}: exit {ran.returncode} {ran.stderr}"
            results = [
                np.frombuffer(
                    (work / f"result{j}.bin").read_bytes(), info.shape.dtype.numpy
                ).reshape(info.shape.dims)
                for j, info in enumerate(model.results)
            ]
            check(fixture, results)
