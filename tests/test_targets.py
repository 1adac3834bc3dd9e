"""Target resolution: clang's defaults per triple, the float ABI, and targets aotc refuses.

The float ABI is checked where the linker reads it: RISC-V's ELF header flags and ARM's build
attributes (``readelf -A``). Running the objects is ``test_cross``'s job.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest
from codegen_testing import compile_hlo

from aotc.codegen import CompiledModel, TargetSpec, target
from aotc.codegen.target import (
    FloatAbi,
    clang_default,
    float_abi,
    normalize_triple,
    resolve_target,
)
from aotc.errors import CodegenError

_SMALL = """HloModule m
ENTRY main {
  x = f32[16] parameter(0)
  e = f32[16] exponential(x)
  ROOT t = (f32[16]) tuple(e)
}"""

ELF_MACHINES = {"x86_64": 62, "aarch64": 183, "riscv64": 243, "armv7": 40, "thumbv7em": 40}
RV_GC = "+m,+a,+f,+d,+c,+zicsr,+zifencei"
# RISC-V ELF header flags: compressed instructions, and the float ABI in bits 1-2.
EF_RISCV_RVC, EF_RISCV_FLOAT_ABI_DOUBLE = 0x1, 0x4


def _compile(spec: TargetSpec) -> CompiledModel:
    return compile_hlo(_SMALL, target=spec)[1]


def _elf_flags(data: bytes) -> int:
    offset = 48 if data[4] == 2 else 36  # e_flags in ELF64 / ELF32 headers
    return int.from_bytes(data[offset : offset + 4], "little")


def _arm_attributes(data: bytes) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "model.o")
        path.write_bytes(data)
        return subprocess.run(
            ["readelf", "-A", str(path)], capture_output=True, text=True, check=True
        ).stdout


@pytest.mark.parametrize(
    "triple, cpu, features",
    [
        ("aarch64-unknown-linux-gnu", "generic", "+neon"),
        ("x86_64-unknown-linux-gnu", "skylake-avx512", ""),
        ("riscv64-unknown-linux-gnu", "generic-rv64", RV_GC),
        ("armv7-unknown-linux-gnueabihf", "generic", "+neon"),
        ("thumbv7em-none-eabihf", "cortex-m4", "+vfp4d16sp"),
    ],
)
def test_cross_compiles_elf_objects(triple: str, cpu: str, features: str) -> None:
    model = _compile(TargetSpec(triple, cpu))
    data = model.object_bytes
    assert data[:4] == b"\x7fELF"
    assert int.from_bytes(data[18:20], "little") == ELF_MACHINES[triple.split("-")[0]]
    assert model.target == TargetSpec(normalize_triple(triple), cpu, features)
    assert f"triple {model.target.triple}, cpu {cpu}" in model.header


@pytest.mark.parametrize(
    "triple, line",
    [
        ("riscv64-unknown-linux-gnu", " * float ABI: lp64d\n"),
        ("armv7-unknown-linux-gnueabihf", " * float ABI: hard\n"),
        ("armv7-unknown-linux-gnueabi", " * float ABI: soft\n"),
        ("x86_64-unknown-linux-gnu", None),  # one float ABI: no line
    ],
)
def test_header_states_the_float_abi(triple: str, line: str | None) -> None:
    header = _compile(TargetSpec(triple, "generic" if "x86" in triple else "host")).header
    target_comment = header[: header.index("*/")]
    assert (line in target_comment) if line else "float ABI" not in target_comment


def test_host_target_resolves_to_real_names_and_vectorizes() -> None:
    _, model = compile_hlo(_SMALL)
    assert "host" not in (model.target.triple, model.target.cpu)
    assert model.target.triple in model.llvm_ir
    assert " x float>" in model.llvm_ir, "the exp kernel (inline mathlib) should vectorize"


@pytest.mark.parametrize(
    "triple, cpu, features, abi",
    [
        # clang: rv64gc (imafdc) with lp64d on any OS, rv64imac with lp64 on bare metal
        ("riscv64-unknown-linux-gnu", "generic-rv64", RV_GC, "lp64d"),
        ("riscv32-unknown-linux-gnu", "generic-rv32", RV_GC, "ilp32d"),
        ("riscv64-unknown-elf", "generic-rv64", "+m,+a,+c", "lp64"),
        # armv7-a's default FPU is NEON; the float ABI comes from the triple's environment
        ("armv7-unknown-linux-gnueabihf", "generic", "+neon", "hard"),
        ("armv7-unknown-linux-gnueabi", "generic", "+neon", "soft"),
        ("arm-linux-gnueabihf", "arm1176jzf-s", "", "hard"),
        ("thumbv7em-none-eabihf", "cortex-m4", "+vfp4d16sp", "hard"),
        ("thumbv7m-none-eabi", "cortex-m3", "", "soft"),
        ("aarch64-unknown-linux-gnu", "generic", "+neon", "hard"),
        ("i686-unknown-linux-gnu", "pentium4", "", None),
        ("wasm32-unknown-unknown", "generic", "", None),  # SIMD128 only when asked
    ],
)
def test_foreign_triples_get_clangs_defaults(
    triple: str, cpu: str, features: str, abi: str | None
) -> None:
    spec = resolve_target(TargetSpec(triple))
    assert spec == TargetSpec(normalize_triple(triple), cpu, features)
    assert (float_abi(spec) or FloatAbi("", "")).name == (abi or "")


@pytest.mark.parametrize(
    "triple, normalized",
    [
        ("thumbv7em-none-eabihf", "thumbv7em-none-unknown-eabihf"),  # vendor, environment
        ("arm-linux-gnueabihf", "arm-unknown-linux-gnueabihf"),  # OS, environment
        ("aarch64-linux-gnu", "aarch64-unknown-linux-gnu"),
        ("wasm32-wasi", "wasm32-unknown-wasi"),
        ("riscv64-unknown-elf", "riscv64-unknown-elf"),  # vendor, OS: as written
        ("x86_64-apple-macosx14.0", "x86_64-apple-macosx14.0"),
        ("armv7-unknown-linux-gnueabihf", "armv7-unknown-linux-gnueabihf"),
    ],
)
def test_short_triples_are_normalized_as_llvm_does(triple: str, normalized: str) -> None:
    assert normalize_triple(triple) == normalized


@pytest.mark.parametrize("triple", ["thumbv7em-none-eabihf", "arm-linux-gnueabihf"])
def test_short_hard_float_triples_pass_floats_in_vfp_registers(triple: str) -> None:
    # read by position, the environment of these spellings would be lost: soft-float calls
    attributes = _arm_attributes(_compile(TargetSpec(triple)).object_bytes)
    assert "Tag_ABI_VFP_args: VFP registers" in attributes


def test_host_cpu_on_a_foreign_triple_means_clangs_default() -> None:
    host = resolve_target(TargetSpec())
    foreign = "aarch64-unknown-linux-gnu" if "x86_64" in host.triple else "x86_64-linux-gnu"
    default = clang_default(foreign)
    assert resolve_target(TargetSpec(foreign)) == TargetSpec(foreign, default.cpu, default.features)
    assert resolve_target(TargetSpec(features="+sse2")).features.endswith(",+sse2")


@pytest.mark.parametrize(
    "spec, resolved",
    [
        # explicit features come last and replace the defaults they name
        (
            TargetSpec("riscv64-unknown-linux-gnu", features="-c,+v"),
            "+m,+a,+f,+d,+zicsr,+zifencei,-c,+v",
        ),
        (TargetSpec("armv7-unknown-linux-gnueabihf", features="-neon"), "-neon"),
        (TargetSpec("wasm32-unknown-unknown", features="+simd128"), "+simd128"),
        # a named cpu brings its own features; generic or the default cpu get the defaults
        (TargetSpec("riscv64-unknown-linux-gnu", "sifive-u74"), ""),
        (TargetSpec("riscv64-unknown-linux-gnu", "generic"), RV_GC),
        (TargetSpec("aarch64-unknown-linux-gnu", "cortex-a53", "+dotprod"), "+dotprod"),
    ],
)
def test_explicit_cpu_and_features_win(spec: TargetSpec, resolved: str) -> None:
    assert resolve_target(spec).features == resolved


def test_riscv_objects_carry_the_float_abi_of_the_triple() -> None:
    linux = _compile(TargetSpec("riscv64-unknown-linux-gnu")).object_bytes
    assert _elf_flags(linux) == EF_RISCV_RVC | EF_RISCV_FLOAT_ABI_DOUBLE
    without_c = _compile(TargetSpec("riscv64-unknown-linux-gnu", features="-c")).object_bytes
    assert _elf_flags(without_c) == EF_RISCV_FLOAT_ABI_DOUBLE
    bare = _compile(TargetSpec("riscv64-unknown-elf")).object_bytes
    assert _elf_flags(bare) == EF_RISCV_RVC  # lp64: floats in integer registers


def test_arm_objects_carry_the_float_abi_of_the_triple() -> None:
    hard = _arm_attributes(_compile(TargetSpec("armv7-unknown-linux-gnueabihf")).object_bytes)
    assert "Tag_ABI_VFP_args: VFP registers" in hard
    assert "Tag_Advanced_SIMD_arch: NEONv1" in hard
    soft = _arm_attributes(_compile(TargetSpec("armv7-unknown-linux-gnueabi")).object_bytes)
    assert "Tag_ABI_VFP_args" not in soft  # absent: the base (integer register) convention
    no_neon = TargetSpec("armv7-unknown-linux-gnueabihf", features="-neon")
    assert "Tag_Advanced_SIMD_arch" not in _arm_attributes(_compile(no_neon).object_bytes)


def test_wasm_simd_only_when_asked() -> None:
    # a wasm object lists its features in a "target_features" custom section
    assert b"simd128" not in _compile(TargetSpec("wasm32-unknown-unknown")).object_bytes
    simd = _compile(TargetSpec("wasm32-unknown-unknown", features="+simd128"))
    assert b"simd128" in simd.object_bytes


@pytest.mark.parametrize(
    "spec, message",
    [
        (TargetSpec("nonsense-unknown-none", "generic"), "unknown target triple 'nonsense"),
        (TargetSpec("x86_64-unknown-linux-gnu", "pentium9000"), "unknown cpu 'pentium9000'"),
        (TargetSpec("x86_64-unknown-linux-gnu", "generic", "+warp-drive"), "unknown feature"),
        # x87 float math: LLVM does not round each operation, so the math bounds cannot hold
        (TargetSpec("i686-unknown-linux-gnu", "generic"), "x87 unit"),
        (TargetSpec("i686-unknown-linux-gnu", "i386"), "x87 unit"),
        (TargetSpec("x86_64-unknown-linux-gnu", "generic", "-sse,-sse2"), "x87 unit"),
        # LLVM aborts the process on this one; the probe runs it in a child first
        (TargetSpec("x86_64-unknown-linux-gnu", "i386"), "64-bit code requested"),
        # a hard-float ABI without the float hardware it needs links badly or not at all
        (
            TargetSpec("armv7-unknown-linux-gnueabihf", features="+soft-float"),
            "no hardware f32 arithmetic, but the triple's hard float ABI",
        ),
        (TargetSpec("thumbv7m-none-eabihf"), "cpu 'cortex-m3' has no hardware f32"),
        (TargetSpec("arm-linux-gnueabihf", "arm7tdmi"), "no hardware f32"),
        (TargetSpec("riscv64-unknown-linux-gnu", features="-d"), "lp64d float ABI .*\\+d"),
        (TargetSpec("riscv32-unknown-linux-gnu", features="-f"), "ilp32d float ABI"),
        (TargetSpec("aarch64-unknown-linux-gnu", features="-fp-armv8"), "fp-armv8"),
    ],
)
def test_bad_targets_raise_codegen_errors(spec: TargetSpec, message: str) -> None:
    with pytest.raises(CodegenError, match=message):
        _compile(spec)


@pytest.mark.parametrize(
    "spec",
    [
        TargetSpec("riscv64-unknown-elf"),  # soft-float lp64: f32 math in library calls is fine
        TargetSpec("riscv64-unknown-elf", features="+f,+d"),  # bare metal: ABI from features
        TargetSpec("thumbv7m-none-eabi"),  # Cortex-M3, no FPU, soft-float ABI
        TargetSpec("armv7-unknown-linux-gnueabi", features="+soft-float"),
    ],
)
def test_soft_float_abis_accept_targets_without_float_hardware(spec: TargetSpec) -> None:
    assert _compile(spec).object_bytes[:4] == b"\x7fELF"


def test_32_bit_x86_defaults_to_sse2_as_clang_does() -> None:
    model = _compile(TargetSpec("i686-unknown-linux-gnu"))
    assert model.target.cpu == "pentium4"


def test_only_targets_aotc_did_not_choose_are_probed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host and the portable x86-64 object skip the forked probe (a third of a small
    graph's compile); a cpu the user names is still probed, in a process of its own."""
    probed: list[TargetSpec] = []

    def probe(spec: TargetSpec, tm: object) -> None:
        probed.append(spec)

    monkeypatch.setattr(target, "_target_problem", probe)
    monkeypatch.setattr(target, "_TARGET_PROBLEMS", {})
    _compile(TargetSpec())
    _compile(TargetSpec("x86_64-unknown-linux-gnu", "portable"))
    assert probed == []
    _compile(TargetSpec("x86_64-unknown-linux-gnu", "skylake"))
    assert [s.cpu for s in probed] == ["skylake"]
