"""Big constants placed into the ELF object by aotc (``codegen/elf_constants.py``).

A module with a raw constant some kernel reads, constant GEMM weights (packed at compile
time) and a small table that stays in LLVM's module is compiled for each cross target
(x86-64 portable, aarch64, armv7 with ELF32 and REL relocations, riscv64): the big bytes sit
in ``.rodata.aotc`` as local symbols (no exported or undefined symbol added), compiling again
gives the same bytes, and the program's results match the evaluator natively or under qemu.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from c_harness import entry_points, exported_and_undefined_symbols, run_compiled_level
from codegen_testing import compile_entry
from cross_testing import CROSS_TARGETS, require_toolchains
from hlo_programs import build

from aotc.codegen import TargetSpec
from aotc.codegen.elf_constants import LIFT_BYTES, SECTION_NAME, Lifted, place_constants
from aotc.codegen.target import PORTABLE
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import DotDims, Instruction, Module, Opcode
from aotc.hlo.shape import PrimitiveType, Shape

RNG = np.random.default_rng(5)
RAW = RNG.standard_normal((64, 96)).astype(np.float32)  # 24 KiB, read as it is
WEIGHTS = RNG.standard_normal((96, 40)).astype(np.float32)  # 15 KiB, packed
TABLE = RNG.standard_normal(16).astype(np.float32)  # 64 bytes: stays in LLVM's module


def _module() -> Module:
    shapes = [Shape(PrimitiveType.F32, (64, 96)), Shape(PrimitiveType.F32, (16,))]

    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list[Instruction]:
        added = b.binary(Opcode.ADD, ps[0], b.constant(RAW.copy()))
        dot = b.dot(added, b.constant(WEIGHTS.copy()), DotDims((1,), (0,)))
        return [dot, b.binary(Opcode.MULTIPLY, ps[1], b.constant(TABLE.copy()))]

    return build(shapes, body)


def _spec(target_name: str) -> TargetSpec:
    triple = CROSS_TARGETS[target_name].target.triple
    assert triple is not None
    return TargetSpec(triple, PORTABLE if target_name == "x86-64" else "host")


def _section_sizes(object_bytes: bytes) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "m.o")
        path.write_bytes(object_bytes)
        out = subprocess.run(["readelf", "-SW", str(path)], capture_output=True, text=True)
    found = re.findall(r"\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)", out.stdout)
    return {name: int(size, 16) for name, size in found}


@pytest.mark.parametrize("target_name", sorted(CROSS_TARGETS))
def test_big_constants_are_placed_by_aotc_and_read_right(target_name: str) -> None:
    cross = CROSS_TARGETS[target_name]
    require_toolchains(cross)
    module = _module()
    model = compile_entry(module, "m", _spec(target_name))
    assert compile_entry(_module(), "m", _spec(target_name)).object_bytes == model.object_bytes
    sections = _section_sizes(model.object_bytes)
    assert sections[SECTION_NAME.decode()] >= RAW.nbytes + WEIGHTS.nbytes, sections
    declared = re.findall(r"^@\S+ = external hidden .*\[(\d+) x i8\]", model.llvm_ir, re.M)
    assert len(declared) >= 2 and min(map(int, declared)) >= LIFT_BYTES, declared
    defined, undefined = exported_and_undefined_symbols(model.object_bytes)
    assert defined == entry_points("m")
    assert not {s for s in undefined if "const" in s or "packed" in s}, undefined
    inputs = [RNG.standard_normal((64, 96)).astype(np.float32), np.ones(16, np.float32)]
    expected = evaluate(module, inputs)
    for runner, toolchain in cross.toolchains.items():
        typed, _, _ = run_compiled_level(model, inputs, toolchain=toolchain)
        for j, (got, want) in enumerate(zip(typed, expected, strict=True)):
            scale = float(np.max(np.abs(want)))
            np.testing.assert_allclose(got, want, atol=2e-5 * scale, err_msg=f"{runner} {j}")


def test_an_object_naming_none_of_the_constants_is_left_as_it_is() -> None:
    model = compile_entry(_module(), "m", TargetSpec())
    lifted = [Lifted("not.in.the.object", b"\1" * 8192, 64)]
    assert place_constants(model.object_bytes, lifted) == model.object_bytes
    assert not lifted  # emptied: its bytes are not held past the call
