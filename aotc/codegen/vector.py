"""The target's SIMD shape: f32 lanes per vector register and how many registers there are.

Kernels that tile for registers (GEMM, convolution) read this instead of guessing. It is
derived from a resolved ``TargetSpec`` (``target.resolve_target``): the feature string when it
names the ISA extensions (``"host"`` always does), else a small table of well-known cpu names,
since LLVM's TargetMachine does not tell Python which features a cpu name implies.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from aotc.codegen.target import TargetArch, TargetSpec, target_arch


@dataclass(frozen=True)
class VectorInfo:
    """``width`` f32 lanes per register, ``registers`` architectural vector registers.

    In an object carrying kernels for several cpu levels (``dispatch.py``), ``cpu`` is the LLVM
    cpu of this level's functions ("": the target machine's) and ``peers`` the vector shapes
    of all its levels: constant GEMM weights are packed in a layout they share where one fits
    (``gemm_plan.plan_gemm``).
    """

    width: int
    registers: int
    # x86 folds a broadcast from memory into the FMA (AVX-512 ``{1to16}``, AVX2 needs a
    # separate vbroadcastss), NEON multiplies by a lane of a register: both make A cheap.
    arch: TargetArch = TargetArch.X86
    cpu: str = ""
    peers: tuple[VectorInfo, ...] = ()

    @property
    def bits(self) -> int:
        return self.width * 32


SSE = VectorInfo(4, 16)
AVX2 = VectorInfo(8, 16)
AVX512 = VectorInfo(16, 32)
NEON = VectorInfo(4, 32, TargetArch.AARCH64)
GENERIC = VectorInfo(4, 16, TargetArch.OTHER)

# cpu names whose implied features we cannot read back from LLVM (only used when the feature
# string does not say).
_AVX512_CPUS: tuple[str, ...] = (
    "skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake", "tigerlake",
    "rocketlake", "sapphirerapids", "graniterapids", "znver4", "znver5", "x86-64-v4",
)  # fmt: skip
_AVX2_CPUS: tuple[str, ...] = (
    "haswell", "broadwell", "skylake", "alderlake", "raptorlake", "meteorlake",
    "znver1", "znver2", "znver3", "x86-64-v3",
)  # fmt: skip


def vector_info(spec: TargetSpec) -> VectorInfo:
    """The vector shape kernels should tile for on the resolved target ``spec``."""
    arch = target_arch(spec.triple)
    if arch is not TargetArch.X86:
        return NEON if arch is TargetArch.AARCH64 else GENERIC
    features = set(spec.features.split(","))
    if "-avx512f" not in features and ("+avx512f" in features or _cpu_in(spec, _AVX512_CPUS)):
        return AVX512
    if "-avx2" not in features and (
        "+avx2" in features or _cpu_in(spec, _AVX2_CPUS + _AVX512_CPUS)
    ):
        return AVX2
    return SSE


def _cpu_in(spec: TargetSpec, names: tuple[str, ...]) -> bool:
    return spec.cpu.startswith(names)


def mark_function(fn: ir.Function, info: VectorInfo) -> None:
    """Give ``fn`` the attributes of its vector shape: its level's cpu, and wide vectors.

    ``"target-cpu"`` makes LLVM compile ``fn`` for that cpu whatever the target machine's is
    (clang's ``__attribute__((target))``). Set when ``fn`` is created: ``shared.share`` tells
    functions apart by their text, attributes included, so two levels' copies never merge.

    Wide vectors: on AVX-512 cpus that prefer 256-bit vectors (most of them), LLVM's x86
    backend splits 512-bit IR vectors into halves unless the function says it needs them, as
    clang marks functions using ``__m512``. llvmlite only accepts a fixed list of attribute
    names, hence the direct ``set.add``; it prints the string verbatim.
    """
    if info.cpu:
        set.add(fn.attributes, f'"target-cpu"="{info.cpu}"')
    if info.bits > 256:
        set.add(fn.attributes, f'"min-legal-vector-width"="{info.bits}"')
        set.add(fn.attributes, f'"prefer-vector-width"="{info.bits}"')
