"""Run a compiled model from C: link its object with a generated program and call it.

``run_compiled(model, inputs)`` writes ``<name>.o`` / ``<name>.h`` and a C program to a temp
dir, compiles them with one ``cc -O1 -std=c99 -Wall -Werror`` call (adding ``-lm`` only when
the object needs libm), runs the program and returns the results of two calls:

1. ``<name>_run`` (typed pointers) with 64-byte aligned buffers;
2. ``<name>_run_buffers`` with every argument and result at an address that is *not* 16-byte
   aligned (offset by one element from a 64-byte boundary; C still needs natural alignment).

Both calls get a fresh 64-byte aligned temp buffer filled with garbage, and result buffers are
pre-filled with garbage too, so unwritten elements show up. The program also checks the
header's macros and tables against the model, so every test exercises the header.

Freestanding mode (``run_freestanding``): a program with no C library at all, for
``-nostdlib -ffreestanding`` links and bare-metal boards. The inputs are compiled into it, a
``Freestanding`` platform supplies the start-up code and a ``put`` for text output, and the
results come back as hex on its output.

Cross mode: a ``Toolchain`` names the C compiler (a cross gcc) and a run prefix (qemu-user), so
the same program runs a model compiled for another architecture (little-endian ones: the
tensors travel as raw bytes in this machine's order); ``HOST`` is ``cc`` and no prefix.
"""

from __future__ import annotations

import os
import string
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aotc.codegen import CompiledModel
from aotc.codegen.header import C_TYPES
from aotc.hlo.shape import Shape

CC = os.environ.get("CC", "cc")
CFLAGS = ["-O1", "-std=c99", "-Wall", "-Werror"]


@dataclass(frozen=True)
class Toolchain:
    """How to build and run the harness program: compiler command and run prefix."""

    cc: tuple[str, ...]  # e.g. ("aarch64-linux-gnu-gcc", "-static")
    run: tuple[str, ...] = ()  # e.g. ("qemu-aarch64",); empty: run natively


HOST = Toolchain((CC,))

LIBM_SYMBOLS = frozenset(
    (
        "exp",
        "expf",
        "log",
        "logf",
        "pow",
        "powf",
        "tanh",
        "tanhf",
        "erf",
        "erff",
        "erfc",
        "erfcf",
        "expm1",
        "expm1f",
        "log1p",
        "log1pf",
        "sin",
        "sinf",
        "cos",
        "cosf",
        "sincos",  # LLVM merges f64 sin and cos of one value into glibc's (and musl's) sincos
        "atan2",
        "atan2f",
        "fmod",
        "fmodf",
        "sqrt",
        "sqrtf",
        "floor",
        "floorf",
        "ceil",
        "ceilf",
        "round",
        "roundf",
        "roundeven",
        "roundevenf",
        "rint",
        "rintf",
        "nearbyint",
        "nearbyintf",
        "trunc",
        "truncf",
        "exp2",
        "exp2f",
        "log2",
        "log2f",
        "log10",
        "log10f",
    )
)


def entry_points(name: str) -> set[str]:
    """The symbols every model object exports, and no others."""
    return {
        f"{name}_run",
        f"{name}_run_buffers",
        f"{name}_cpu_level",
        *multicore_entry_points(name),
    }


def multicore_entry_points(name: str) -> set[str]:
    """The multi-core entry points an object has unless built without them."""
    return {f"{name}_run_buffers_mt", f"{name}_temp_bytes_mt"}


def exported_and_undefined_symbols(object_bytes: bytes) -> tuple[set[str], set[str]]:
    """(global symbols the object defines, symbols it leaves undefined), from ``nm``.

    The linker's own ``_GLOBAL_OFFSET_TABLE_`` (32-bit x86 position-independent code) is not
    a dependency and is left out.
    """
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "model.o")
        path.write_bytes(object_bytes)
        out = subprocess.run(["nm", "-g", str(path)], capture_output=True, text=True, check=True)
    defined, undefined = set(), set()
    for line in out.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[-2] in ("U", "w", "v"):
            if fields[-1] != "_GLOBAL_OFFSET_TABLE_":
                undefined.add(fields[-1])
        elif len(fields) == 3:
            defined.add(fields[2])
    return defined, undefined


SANITIZE_CFLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g"]


def run_compiled(
    model: CompiledModel,
    inputs: Sequence[np.ndarray],
    extra_cflags: Sequence[str] = (),
    toolchain: Toolchain = HOST,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Results of the typed call and of the ``run_buffers`` call, as numpy arrays.

    ``extra_cflags`` go to the one ``cc`` call, e.g. ``SANITIZE_CFLAGS`` to run the model under
    AddressSanitizer and UBSan (any report makes the program exit non-zero: an AssertionError).
    ``toolchain`` builds and runs the program for the model's target (default: this machine).
    """
    typed, buffers, _ = run_compiled_level(model, inputs, extra_cflags, toolchain)
    return typed, buffers


def run_compiled_level(
    model: CompiledModel,
    inputs: Sequence[np.ndarray],
    extra_cflags: Sequence[str] = (),
    toolchain: Toolchain = HOST,
) -> tuple[list[np.ndarray], list[np.ndarray], int]:
    """``run_compiled``, and what ``<name>_cpu_level()`` returned after the calls."""
    assert len(inputs) == len(model.args), f"{model.name} takes {len(model.args)} arguments"
    arrays = [_as_argument(x, info.shape) for x, info in zip(inputs, model.args, strict=True)]
    _, undefined = exported_and_undefined_symbols(model.object_bytes)
    libs = ["-lm"] if undefined & LIBM_SYMBOLS else []
    with tempfile.TemporaryDirectory(prefix="aotc_harness_") as tmp:
        work = Path(tmp)
        (work / f"{model.name}.o").write_bytes(model.object_bytes)
        (work / f"{model.name}.h").write_text(model.header)
        (work / "main.c").write_text(_program(model))
        for i, array in enumerate(arrays):
            (work / f"arg{i}.bin").write_bytes(array.tobytes())
        _compile_and_run(work, model.name, [*libs, *extra_cflags], toolchain)
        level = int((work / "cpu_level.txt").read_text())
        return _read_results(work, model, "typed"), _read_results(work, model, "buffers"), level


def run_calls(
    model: CompiledModel, inputs: Sequence[np.ndarray], calls: int
) -> list[tuple[list[np.ndarray], list[np.ndarray]]]:
    """Call the model ``calls`` times on the same buffers, alternating the typed and the
    ``run_buffers`` entry: per call, the results and the updated arguments (variables)."""
    arrays = [_as_argument(x, info.shape) for x, info in zip(inputs, model.args, strict=True)]
    updated = [i for i, a in enumerate(model.args) if a.updated]
    with tempfile.TemporaryDirectory(prefix="aotc_calls_") as tmp:
        work = Path(tmp)
        (work / f"{model.name}.o").write_bytes(model.object_bytes)
        (work / f"{model.name}.h").write_text(model.header)
        (work / "main.c").write_text(_calls_program(model, calls))
        for i, array in enumerate(arrays):
            (work / f"arg{i}.bin").write_bytes(array.tobytes())
        _, undefined = exported_and_undefined_symbols(model.object_bytes)
        _compile_and_run(work, model.name, ["-lm"] if undefined & LIBM_SYMBOLS else [], HOST)
        return [
            (
                _read_results(work, model, f"call{c}"),
                [_read(work / f"arg{i}.call{c}.bin", model.args[i].shape) for i in updated],
            )
            for c in range(calls)
        ]


def _read(path: Path, shape: Shape) -> np.ndarray:
    return np.frombuffer(path.read_bytes(), dtype=shape.dtype.numpy).reshape(shape.dims).copy()


def _calls_program(model: CompiledModel, calls: int) -> str:
    program = _program(model)
    start = program.index("/* Calls the model once")
    loop = _CALLS.substitute(
        name=model.name, upper=model.name.upper(), calls=calls, typed_call=_typed_call(model)
    )
    return program[:start] + loop


def _as_argument(x: np.ndarray, shape: Shape) -> np.ndarray:
    array = np.asarray(x, dtype=shape.dtype.numpy, order="C")  # ascontiguousarray makes 0-d 1-d
    assert array.shape == shape.dims, f"input shape {array.shape} != {shape}"
    return array


def _compile_and_run(work: Path, name: str, libs: list[str], toolchain: Toolchain) -> None:
    main = work / "main"
    sources = [str(work / "main.c"), str(work / f"{name}.o")]
    cmd = [*toolchain.cc, *CFLAGS, "-I", str(work), *sources, "-o", str(main), *libs]
    built = subprocess.run(cmd, capture_output=True, text=True)
    if built.returncode:
        raise AssertionError(f"{toolchain.cc[0]} failed:\n{built.stderr}")
    command = [*toolchain.run, str(main), str(work)]
    ran = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if ran.returncode:
        raise AssertionError(f"harness exited {ran.returncode}:\n{ran.stdout}{ran.stderr}")


@dataclass(frozen=True)
class Freestanding:
    """A platform without a C library: its C glue, and how to build and run a program on it.

    ``glue`` defines ``static void put(const char *)`` (declared before the program) and the
    entry point, which calls ``int run_model(void)`` and ends the program with its result.
    ``cc`` runs in the work folder, where ``files`` (a linker script, say) are written.
    """

    glue: str
    cc: tuple[str, ...]
    run: tuple[str, ...] = ()  # command prefix; the program's path is appended
    files: tuple[tuple[str, str], ...] = ()  # (file name, text)


def run_freestanding(
    model: CompiledModel, inputs: Sequence[np.ndarray], platform: Freestanding
) -> list[np.ndarray]:
    """The results of one ``<name>_run_buffers`` call in a program with no C library."""
    arrays = [_as_argument(x, info.shape) for x, info in zip(inputs, model.args, strict=True)]
    with tempfile.TemporaryDirectory(prefix="aotc_bare_") as tmp:
        work = Path(tmp)
        (work / f"{model.name}.o").write_bytes(model.object_bytes)
        (work / f"{model.name}.h").write_text(model.header)
        (work / "main.c").write_text(_freestanding_program(model, arrays) + platform.glue)
        for name, text in platform.files:
            (work / name).write_text(text)
        cmd = [*platform.cc, "-I", ".", "main.c", f"{model.name}.o", "-o", "main"]
        built = subprocess.run(cmd, capture_output=True, text=True, cwd=work)
        if built.returncode:
            raise AssertionError(f"{platform.cc[0]} failed:\n{built.stderr}")
        ran = subprocess.run(
            [*platform.run, str(work / "main")], capture_output=True, text=True, timeout=120
        )
    if ran.returncode:
        raise AssertionError(f"program exited {ran.returncode}:\n{ran.stdout}{ran.stderr}")
    return _parse_hex_results(model, f"{ran.stdout}\n{ran.stderr}")  # QEMU semihosting: stderr


def _freestanding_program(model: CompiledModel, arrays: Sequence[np.ndarray]) -> str:
    """The program's C text up to the platform glue: inputs as data, one call, hex output."""
    upper, n_results = model.name.upper(), len(model.results)
    lines = [
        f"static const unsigned char arg{i}[] ALIGNED = {{{','.join(map(str, a.tobytes())) or 0}}};"
        for i, a in enumerate(arrays)
    ]
    lines += [
        f"static unsigned char result{j}[{upper}_RESULT{j}_BYTES + 1] ALIGNED;"
        for j in range(n_results)
    ]
    prints = [
        f'  put("result {j}\\n");\n  put_hex(result{j}, {upper}_RESULT{j}_BYTES);\n'
        for j in range(n_results)
    ]
    return _FREESTANDING.substitute(
        name=model.name,
        upper=upper,
        data="\n".join(lines),
        args=", ".join([f"arg{i}" for i in range(len(arrays))] + ["0"]),
        results=", ".join([f"result{j}" for j in range(n_results)] + ["0"]),
        prints="".join(prints),
    )


_FREESTANDING = string.Template(r"""
#include "${name}.h"

static void put(const char *text);

#define ALIGNED __attribute__((aligned(64)))
${data}
static unsigned char temp[${upper}_TEMP_BYTES + 1] __attribute__((aligned(${upper}_ALIGN)));

static void put_hex(const unsigned char *p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  char line[2 * 32 + 2];
  while (n > 0) {
    size_t k = n < 32 ? n : 32;
    for (size_t i = 0; i < k; ++i) {
      line[2 * i] = digits[p[i] >> 4];
      line[2 * i + 1] = digits[p[i] & 15];
    }
    line[2 * k] = '\n';
    line[2 * k + 1] = 0;
    put(line);
    p += k;
    n -= k;
  }
}

int run_model(void) {
  const void *const args[] = {${args}};
  void *const results[] = {${results}};
  if (${name}_run_buffers(args, results, temp) != 0) return 1;
${prints}  put("end\n");
  return 0;
}
""")


def _parse_hex_results(model: CompiledModel, text: str) -> list[np.ndarray]:
    """The arrays from the program's ``result <j>`` / hex lines / ``end`` output."""
    lines = text.splitlines()
    assert "end" in lines, f"the program did not finish its output:\n{text}"
    chunks: dict[int, list[str]] = {}
    current = None
    for line in lines[: lines.index("end")]:
        if line.startswith("result "):
            current = chunks.setdefault(int(line.split()[1]), [])
        elif current is not None:
            current.append(line)
    arrays = []
    for j, info in enumerate(model.results):
        data = bytes.fromhex("".join(chunks[j]))
        arrays.append(np.frombuffer(data, dtype=info.shape.dtype.numpy).reshape(info.shape.dims))
    return arrays


def _read_results(work: Path, model: CompiledModel, call: str) -> list[np.ndarray]:
    results = []
    for j, info in enumerate(model.results):
        data = (work / f"result{j}.{call}.bin").read_bytes()
        array = np.frombuffer(data, dtype=info.shape.dtype.numpy).reshape(info.shape.dims)
        results.append(array.copy())
    return results


def _program(model: CompiledModel) -> str:
    name, upper = model.name, model.name.upper()
    n_args, n_results = len(model.args), len(model.results)
    typed_call = _typed_call(model)
    arg_sizes = ", ".join([f"{upper}_ARG{i}_BYTES" for i in range(n_args)] + ["0"])
    result_sizes = ", ".join([f"{upper}_RESULT{j}_BYTES" for j in range(n_results)] + ["0"])
    arg_items = ", ".join([str(a.shape.dtype.byte_size) for a in model.args] + ["1"])
    result_items = ", ".join([str(r.shape.dtype.byte_size) for r in model.results] + ["1"])
    return _TEMPLATE.substitute(
        name=name,
        upper=upper,
        n_args=n_args,
        n_results=n_results,
        typed_call=typed_call,
        arg_sizes=arg_sizes,
        result_sizes=result_sizes,
        arg_items=arg_items,
        result_items=result_items,
        checks=_table_checks(model),
    )


def _typed_call(model: CompiledModel) -> str:
    """The arguments of ``<name>_run`` from the ``args``/``results`` arrays and ``temp``."""
    typed_args = [
        f"({'' if a.updated else 'const '}{C_TYPES[a.shape.dtype]} *)args[{i}]"
        for i, a in enumerate(model.args)
    ]
    typed_results = [
        f"({C_TYPES[r.shape.dtype]} *)results[{j}]" for j, r in enumerate(model.results)
    ]
    return ", ".join([*typed_args, *typed_results, "temp"])


def _table_checks(model: CompiledModel) -> str:
    """C statements checking the header's tables against the model's signature."""
    lines = []
    for kind, infos in (("arg", model.args), ("result", model.results)):
        for i, info in enumerate(infos):
            table = f"{model.name}_{kind}_info[{i}]"
            lines.append(f"  CHECK({table}.rank == {info.shape.rank});")
            lines.append(f"  CHECK({table}.bytes == {info.shape.byte_size}u);")
            for d, size in enumerate(info.shape.dims):
                lines.append(f"  CHECK({table}.dims[{d}] == {size});")
        lines.append(f"  CHECK({model.name}_{kind}_info[{len(infos)}].name == NULL);")
    return "\n".join(lines)


_TEMPLATE = string.Template(r"""
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "${name}.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "check failed: %s\n", #c); exit(3); } } while (0)
#define N_ARGS (${n_args} + 1)
#define N_RESULTS (${n_results} + 1)

static const size_t arg_bytes[N_ARGS] = {${arg_sizes}};
static const size_t result_bytes[N_RESULTS] = {${result_sizes}};
static const size_t arg_item[N_ARGS] = {${arg_items}};
static const size_t result_item[N_RESULTS] = {${result_items}};

static void *aligned(size_t bytes) {
  void *p = NULL;
  CHECK(posix_memalign(&p, ${upper}_ALIGN, bytes + 2 * ${upper}_ALIGN) == 0);
  memset(p, 0xA5, bytes + 2 * ${upper}_ALIGN);
  return p;
}

static void read_file(const char *dir, const char *file, void *dst, size_t bytes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL);
  CHECK(fread(dst, 1, bytes, f) == bytes);
  fclose(f);
}

static void write_file(const char *dir, const char *file, const void *src, size_t bytes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  CHECK(fwrite(src, 1, bytes, f) == bytes);
  fclose(f);
}

/* Calls the model once; misalign shifts every argument and result by one element. */
static void call(const char *dir, int typed, size_t misalign_args) {
  const void *args[N_ARGS];
  void *results[N_RESULTS];
  void *arg_blocks[N_ARGS], *result_blocks[N_RESULTS];
  char file[64];
  for (int i = 0; i < ${n_args}; ++i) {
    arg_blocks[i] = aligned(arg_bytes[i]);
    char *p = (char *)arg_blocks[i] + (misalign_args ? arg_item[i] : 0);
    snprintf(file, sizeof file, "arg%d.bin", i);
    read_file(dir, file, p, arg_bytes[i]);
    args[i] = p;
  }
  for (int j = 0; j < ${n_results}; ++j) {
    result_blocks[j] = aligned(result_bytes[j]);
    results[j] = (char *)result_blocks[j] + (misalign_args ? result_item[j] : 0);
  }
  void *temp = aligned(${upper}_TEMP_BYTES);
  CHECK(((size_t)temp % ${upper}_ALIGN) == 0);
  int rc = typed ? ${name}_run(${typed_call}) : ${name}_run_buffers(args, results, temp);
  CHECK(rc == 0);
  for (int j = 0; j < ${n_results}; ++j) {
    snprintf(file, sizeof file, "result%d.%s.bin", j, typed ? "typed" : "buffers");
    write_file(dir, file, results[j], result_bytes[j]);
    free(result_blocks[j]);
  }
  for (int i = 0; i < ${n_args}; ++i) free(arg_blocks[i]);
  free(temp);
}

int main(int argc, char **argv) {
  CHECK(argc == 2);
  CHECK(${upper}_NUM_ARGS == ${n_args} && ${upper}_NUM_RESULTS == ${n_results});
  CHECK(${upper}_ALIGN == 64);
${checks}
  call(argv[1], 1, 0);
  call(argv[1], 0, 1);
  char level[16];
  snprintf(level, sizeof level, "%d", ${name}_cpu_level());
  write_file(argv[1], "cpu_level.txt", level, strlen(level));
  return 0;
}
""")

# main() of run_calls: the same argument, result and temp buffers for every call.
_CALLS = string.Template(r"""
int main(int argc, char **argv) {
  const void *args[N_ARGS];
  void *results[N_RESULTS];
  char file[64];
  CHECK(argc == 2);
  for (int i = 0; i < N_ARGS - 1; ++i) {
    void *p = aligned(arg_bytes[i]);
    snprintf(file, sizeof file, "arg%d.bin", i);
    read_file(argv[1], file, p, arg_bytes[i]);
    args[i] = p;
  }
  for (int j = 0; j < N_RESULTS - 1; ++j) results[j] = aligned(result_bytes[j]);
  void *temp = aligned(${upper}_TEMP_BYTES);
  (void)arg_item;
  (void)result_item;
  for (int c = 0; c < ${calls}; ++c) {
    int rc = c % 2 ? ${name}_run_buffers(args, results, temp) : ${name}_run(${typed_call});
    CHECK(rc == 0);
    for (int j = 0; j < N_RESULTS - 1; ++j) {
      snprintf(file, sizeof file, "result%d.call%d.bin", j, c);
      write_file(argv[1], file, results[j], result_bytes[j]);
    }
    for (int i = 0; i < N_ARGS - 1; ++i) {
      snprintf(file, sizeof file, "arg%d.call%d.bin", i, c);
      write_file(argv[1], file, args[i], arg_bytes[i]);
    }
  }
  return 0;
}
""")
