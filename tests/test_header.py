"""The generated C header: a golden file, and it compiles as C99 and C++ with warnings on.

Regenerate the golden file with ``AOTC_UPDATE_GOLDEN=1 pytest tests/test_header.py``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from aotc.codegen import TargetSpec, TensorInfo
from aotc.codegen.dispatch import X86_64_LEVELS, CpuLevel
from aotc.codegen.header import Built, parameter_names, render_header
from aotc.codegen.sizes import ObjectSizes
from aotc.codegen.vector import AVX512
from aotc.hlo.shape import PrimitiveType, Shape

GOLDEN = Path(__file__).parent / "golden" / "demo_model.h"
F32, PRED, F16 = PrimitiveType.F32, PrimitiveType.PRED, PrimitiveType.F16

ARGS = [
    TensorInfo("x", Shape(F32, (1, 784))),
    TensorInfo("mask", Shape(PRED, (4,))),
    TensorInfo("int", Shape(PrimitiveType.S64, ())),
]
RESULTS = [
    TensorInfo("y", Shape(F32, (1, 10))),
    TensorInfo("split:1", Shape(PrimitiveType.U8, (2, 0, 3))),
    TensorInfo('odd "name" */', Shape(F16, (3,))),
    TensorInfo("x", Shape(PrimitiveType.F64, (2,))),
]
TARGET = TargetSpec("x86_64-unknown-linux-gnu", "skylake-avx512", "+avx2,-prefer-256-bit")


PORTABLE = Built(
    TargetSpec("x86_64-unknown-linux-gnu", "portable"), X86_64_LEVELS, ObjectSizes(9, 7)
)


ONE_CPU = Built(TARGET, (CpuLevel(0, AVX512, ""),), ObjectSizes(1234, 56))


def header(built: Built = ONE_CPU) -> str:
    return render_header("demo_model", ARGS, RESULTS, 4096, built)


def test_header_matches_golden_file() -> None:
    text = header()
    if os.environ.get("AOTC_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), "header changed; rerun with AOTC_UPDATE_GOLDEN=1"


def test_header_is_reproducible_and_has_no_paths() -> None:
    text = header()
    assert text == header()
    assert "/work" not in text and "/tmp" not in text


def test_header_states_the_target_its_cpu_levels_and_sizes() -> None:
    words = " ".join(header(PORTABLE).replace("\n * ", " ").replace("\n   ", " ").split())
    assert "cpu portable" in words
    levels = "1 (x86-64: SSE2), 3 (x86-64-v3: AVX2, FMA) and 4 (x86-64-v4: AVX-512)"
    assert f"carries kernels for the cpu levels {levels}" in words
    assert "Size: .text 9 bytes (code), .rodata 7 bytes (constants)." in words
    assert "int demo_model_cpu_level(void);" in words
    assert "its one global is the cpu level" in words
    single = header()
    assert "Size: .text 1234 bytes (code), .rodata 56 bytes (constants)." in single
    assert "cpu level" not in single.split("int demo_model_cpu_level")[0].split("*/", 1)[0]


def test_parameter_names_are_distinct_c_identifiers() -> None:
    infos = [TensorInfo(n, Shape(F32)) for n in ["x", "x", "split:1", "1st", "int", "temp", ""]]
    assert parameter_names(infos) == ["x", "x_1", "split_1", "t_1st", "t_int", "t_temp", "tensor"]


@pytest.mark.parametrize(
    "compiler, flags",
    [
        ("cc", ["-x", "c", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror"]),
        ("c++", ["-x", "c++", "-std=c++11", "-Wall", "-Wextra", "-pedantic", "-Werror"]),
    ],
)
def test_header_compiles_in_two_files_of_c_and_cpp(
    tmp_path: Path, compiler: str, flags: list[str]
) -> None:
    (tmp_path / "demo_model.h").write_text(header())
    use = """#include "demo_model.h"
#include "demo_model.h"
int use_%s(void) {
  return DEMO_MODEL_NUM_ARGS + DEMO_MODEL_NUM_RESULTS + (int)DEMO_MODEL_TEMP_BYTES
      + (int)demo_model_arg_info[0].rank + DEMO_MODEL_ALIGN + (int)DEMO_MODEL_RESULT1_BYTES;
}
"""
    main = "int use_a(void);\nint use_b(void);\nint main(void) { return use_a() - use_b(); }\n"
    sources = []
    for stem, text in (("a", use % "a"), ("b", use % "b"), ("main", main)):
        path = tmp_path / f"{stem}.c"
        path.write_text(text)
        sources.append(str(path))
    out = tmp_path / "prog"
    built = subprocess.run(
        [compiler, *flags, "-I", str(tmp_path), *sources, "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    assert subprocess.run([str(out)]).returncode == 0
