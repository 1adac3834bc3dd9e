"""Run a compiled model's multi-core entry point from C with the shipped pthread pool.

``run_multicore(model, inputs, pools)`` links the object with a generated C program that calls
``<name>_run_buffers`` once (the reference), then ``<name>_run_buffers_mt`` once per entry of
``pools``: 0 passes a NULL pool, ``n`` a pool of ``aotc_threadpool_create(n)``. Each call gets
a fresh temp buffer of ``<name>_temp_bytes_mt(n)`` bytes and result buffers filled with
garbage, so unwritten elements show up.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from c_harness import (
    HOST,
    LIBM_SYMBOLS,
    Toolchain,
    _as_argument,
    _compile_and_run,
    _read_results,
    exported_and_undefined_symbols,
)

from aotc.codegen import CompiledModel, parallel

INCLUDE = Path(__file__).resolve().parents[1] / "aotc" / "include"
TSAN_CFLAGS = ["-fsanitize=thread", "-g"]


def run_multicore(
    model: CompiledModel,
    inputs: Sequence[np.ndarray],
    pools: Sequence[int] = (0, 1, 2, 3),
    extra_cflags: Sequence[str] = (),
    toolchain: Toolchain = HOST,
) -> tuple[list[np.ndarray], dict[int, list[np.ndarray]]]:
    """(``run_buffers`` results, per pool size the ``run_buffers_mt`` results)."""
    arrays = [_as_argument(x, info.shape) for x, info in zip(inputs, model.args, strict=True)]
    _, undefined = exported_and_undefined_symbols(model.object_bytes)
    libs = ["-lm"] if undefined & LIBM_SYMBOLS else []
    with tempfile.TemporaryDirectory(prefix="aotc_mt_") as tmp:
        work = Path(tmp)
        (work / f"{model.name}.o").write_bytes(model.object_bytes)
        (work / f"{model.name}.h").write_text(model.header)
        (work / "main.c").write_text(_program(model, pools))
        for i, array in enumerate(arrays):
            (work / f"arg{i}.bin").write_bytes(array.tobytes())
        flags = ["-I", str(INCLUDE), "-pthread", *extra_cflags, *libs]
        _compile_and_run(work, model.name, flags, toolchain)
        reference = _read_results(work, model, "ref")
        return reference, {n: _read_results(work, model, f"pool{n}") for n in pools}


def _program(model: CompiledModel, pools: Sequence[int]) -> str:
    name, upper = model.name, model.name.upper()
    result_bytes = ", ".join(str(r.shape.byte_size) for r in model.results)
    return f"""#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "{name}.h"
#include "aotc_threadpool.h"

static const char *dir;
static const size_t result_bytes[] = {{{result_bytes}}};

static void *fresh(size_t bytes, int fill) {{
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 64)) exit(90);
  memset(p, fill, bytes);
  return p;
}}

static void *load(int i, size_t bytes) {{
  char path[4096];
  snprintf(path, sizeof path, "%s/arg%d.bin", dir, i);
  void *p = fresh(bytes, 0);
  FILE *f = fopen(path, "rb");
  if (!f || fread(p, 1, bytes, f) != bytes) exit(91);
  fclose(f);
  return p;
}}

static void save(void *const *results, const char *call) {{
  for (int j = 0; j < {upper}_NUM_RESULTS; ++j) {{
    char path[4096];
    snprintf(path, sizeof path, "%s/result%d.%s.bin", dir, j, call);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(results[j], 1, result_bytes[j], f) != result_bytes[j]) exit(92);
    fclose(f);
  }}
}}

static int call(const void *const *args, int threads) {{
  void *results[{upper}_NUM_RESULTS + 1];
  for (int j = 0; j < {upper}_NUM_RESULTS; ++j) results[j] = fresh(result_bytes[j], 0x5a);
  aotc_threadpool *pool = threads ? aotc_threadpool_create(threads) : NULL;
  if (threads && !pool) return 93;
  void *temp = fresh({name}_temp_bytes_mt(threads ? threads : 1), 0xa5);
  int rc = threads < 0 ? {name}_run_buffers(args, results, temp)
                       : {name}_run_buffers_mt(args, results, temp, pool);
  char label[32];
  snprintf(label, sizeof label, threads < 0 ? "ref" : "pool%d", threads);
  save(results, label);
  aotc_threadpool_destroy(pool);
  free(temp);
  for (int j = 0; j < {upper}_NUM_RESULTS; ++j) free(results[j]);
  return rc;
}}

int main(int argc, char **argv) {{
  (void)argc;
  dir = argv[1];
  const void *args[{upper}_NUM_ARGS + 1];
  for (int i = 0; i < {upper}_NUM_ARGS; ++i) args[i] = load(i, {name}_arg_info[i].bytes);
  const int pools[] = {{-1, {", ".join(map(str, pools))}}};
  for (size_t k = 0; k < sizeof pools / sizeof pools[0]; ++k) {{
    int rc = call(args, pools[k]);
    if (rc) {{ fprintf(stderr, "call with %d threads returned %d\\n", pools[k], rc); return 1; }}
  }}
  return 0;
}}
"""


def split_every_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Offer every kernel a split: test models' kernels are below the work that pays."""
    monkeypatch.setattr(parallel, "TASK_NS", 1e-9)
    monkeypatch.setattr(parallel, "LOCAL_TASK_NS", 1e-9)
