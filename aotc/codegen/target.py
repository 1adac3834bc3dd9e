"""Targets: triple / cpu / features -> an llvmlite TargetMachine, and object emission.

``"host"`` resolves to the machine aotc runs on: the process triple, the host cpu name and
its feature string (user features are appended, so ``"+avx2"`` or ``"-prefer-256-bit"`` still
apply). ``cpu="host"`` with a triple for another architecture means ``"generic"``. Every LLVM
target is built into llvmlite, so cross-compiling needs no extra installs.

LLVM only *warns* about an unknown cpu or feature (and later aborts the process while
emitting), so we capture its stderr while creating the TargetMachine and turn those warnings
into ``CodegenError``.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import llvmlite.binding as llvm

from aotc.errors import CodegenError

T = TypeVar("T")


@dataclass(frozen=True)
class TargetSpec:
    """What to compile for; ``"host"`` means the machine aotc runs on."""

    triple: str = "host"
    cpu: str = "host"
    features: str = ""


@functools.cache
def _initialize() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    # The post-RA list scheduler is quadratic in a block's size: the vectorized A packing of a
    # large GEMM (~2000 instructions in one block) made it 2/3 of ResNet50's code generation
    # (4.5 of 6.8 s). Out-of-order cores gain nothing from it: ResNet50 and the C benches run
    # at the same speed without it on znver4. An LLVM option is process-wide (it applies to
    # every target, and to other users of llvmlite in this process).
    llvm.set_option("aotc", "-post-RA-scheduler=false")


def _arch(triple: str) -> str:
    return triple.split("-", 1)[0]


def resolve_target(spec: TargetSpec) -> TargetSpec:
    """Replace ``"host"`` by the real triple, cpu and features."""
    host_triple = llvm.get_process_triple()
    triple = host_triple if spec.triple == "host" else spec.triple
    if spec.cpu != "host":
        return TargetSpec(triple, spec.cpu, spec.features)
    if _arch(triple) != _arch(host_triple):
        return TargetSpec(triple, _default_cpu(triple), spec.features)
    host_features = llvm.get_host_cpu_features().flatten()
    features = ",".join(f for f in (host_features, spec.features) if f)
    return TargetSpec(triple, llvm.get_host_cpu_name(), features)


def create_target_machine(spec: TargetSpec) -> tuple[llvm.TargetMachine, TargetSpec]:
    """The TargetMachine for ``spec`` (position-independent code, -O3) and the resolved spec."""
    _initialize()
    resolved = resolve_target(spec)
    try:
        target = llvm.Target.from_triple(resolved.triple)
    except RuntimeError as e:
        raise CodegenError(
            f"unknown target triple '{resolved.triple}': {e}; use e.g. "
            "x86_64-unknown-linux-gnu or aarch64-unknown-linux-gnu"
        ) from e
    tm, warnings = _capture_stderr(
        lambda: target.create_target_machine(
            cpu=resolved.cpu,
            features=resolved.features,
            opt=3,
            reloc="pic",
            codemodel="default",
            abiname=_abi_name(resolved),
        )
    )
    _check_warnings(warnings, resolved)
    if resolved not in _TARGET_PROBLEMS:  # probed once per target and process
        _TARGET_PROBLEMS[resolved] = _target_problem(resolved, tm)
    if _TARGET_PROBLEMS[resolved]:
        raise CodegenError(_TARGET_PROBLEMS[resolved])
    return tm, resolved


def _default_cpu(triple: str) -> str:
    """The cpu clang assumes for a triple: 32-bit x86 Linux means pentium4 (SSE2), not i386."""
    return "pentium4" if _arch(triple) in _X86_32 else "generic"


_X86_32 = ("i386", "i486", "i586", "i686")

# Floating point through memory, so the probe needs no float registers in its signature (an
# x86-64 function returning a float with SSE disabled is a fatal error in LLVM).
_FLOAT_PROBE = """
define void @probe(ptr %p, ptr %q) {
  %a = load float, ptr %p
  %b = fadd float %a, %a
  store float %b, ptr %p
  %c = load double, ptr %q
  %d = fadd double %c, %c
  store double %d, ptr %q
  ret void
}
"""


_TARGET_PROBLEMS: dict[TargetSpec, str | None] = {}


def _target_problem(spec: TargetSpec, tm: llvm.TargetMachine) -> str | None:
    """Why aotc cannot compile for ``spec`` (resolved; ``tm`` is its machine), or None.

    An impossible cpu/feature/triple combination (an i386 cpu for x86-64 code, say) ends in an
    LLVM fatal error that kills the process, so the probe is first emitted in a forked child.
    x86 targets doing float math on the x87 unit are refused: LLVM keeps x87 intermediates in
    80-bit registers without rounding each operation, so the math library's error bounds (and
    agreement with the reference evaluator) cannot hold. SSE2 is the x86-64 baseline and
    clang's default for 32-bit x86 Linux.
    """
    where = f"target '{spec.triple}' with cpu '{spec.cpu}'"
    where += f" and features '{spec.features}'" if spec.features else ""
    if hasattr(os, "fork"):
        status, message = _emit_probe_in_child(tm)
        if status != 0:
            return (
                f"LLVM cannot generate code for {where} ({message}); choose a cpu and "
                "features that triple supports"
            )
    asm = str(tm.emit_assembly(_probe_module(tm)))
    x86 = _arch(spec.triple) in (*_X86_32, "x86_64")
    if x86 and any(
        line.split()[0].startswith("fld") for line in asm.splitlines() if line[:1] == "\t"
    ):
        return (
            f"{where} does floating point on the x87 unit, whose excess precision breaks "
            "aotc's math accuracy; choose a cpu with SSE2 (e.g. --target-cpu pentium4) and do "
            "not disable sse2"
        )
    return None


def _probe_module(tm: llvm.TargetMachine) -> llvm.ModuleRef:
    module = llvm.parse_assembly(_FLOAT_PROBE)
    module.triple = tm.triple
    return module


def _emit_probe_in_child(tm: llvm.TargetMachine) -> tuple[int, str]:
    """Emit the probe in a forked child: its wait status and the first line it printed."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child never returns into the caller's code
        status = 1
        try:
            os.dup2(writer, 2)
            tm.emit_assembly(_probe_module(tm))
            status = 0
        finally:
            os._exit(status)
    os.close(writer)
    with os.fdopen(reader, "rb") as stream:
        text = stream.read().decode(errors="replace")
    status = os.waitpid(pid, 0)[1]
    lines = [line.removeprefix("LLVM ERROR: ") for line in text.splitlines() if line.strip()]
    return status, lines[0] if lines else "LLVM aborted"


def _abi_name(spec: TargetSpec) -> str:
    """RISC-V needs the float ABI spelled out to match hard-float features."""
    arch = _arch(spec.triple)
    if not arch.startswith("riscv"):
        return ""
    base = "lp64" if arch.startswith("riscv64") else "ilp32"
    flags = set(spec.features.split(","))
    return base + ("d" if "+d" in flags else "f" if "+f" in flags else "")


def _check_warnings(warnings: str, spec: TargetSpec) -> None:
    for line in warnings.splitlines():
        if "is not a recognized processor" in line:
            raise CodegenError(
                f"unknown cpu '{spec.cpu}' for target triple '{spec.triple}' (try cpu 'generic')"
            )
        if "is not a recognized feature" in line:
            feature = line.split("'")[1] if "'" in line else line
            raise CodegenError(
                f"unknown feature '{feature}' for target triple "
                f"'{spec.triple}' (features: '{spec.features}')"
            )


def _capture_stderr(fn: Callable[[], T]) -> tuple[T, str]:
    """Run ``fn`` with file descriptor 2 redirected; LLVM writes its warnings there."""
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(2)
        try:
            os.dup2(sink.fileno(), 2)
            result = fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        return result, sink.read().decode(errors="replace")


def optimize(module_ir: str, tm: llvm.TargetMachine) -> llvm.ModuleRef:
    """Parse and verify LLVM IR, then run the -O3 pipeline with loop and SLP vectorization."""
    _initialize()
    try:
        module = llvm.parse_assembly(module_ir)
        module.verify()
    except RuntimeError as e:
        raise CodegenError(f"aotc generated invalid LLVM IR (a bug in aotc): {e}") from e
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    options.loop_vectorization = True
    options.slp_vectorization = True
    options.loop_unrolling = True
    builder = llvm.create_pass_builder(tm, options)
    builder.getModulePassManager().run(module, builder)
    return module


def emit_object(module_ir: str | llvm.ModuleRef, tm: llvm.TargetMachine) -> bytes:
    """The relocatable object file for LLVM IR text (optimized first) or an optimized module."""
    module = optimize(module_ir, tm) if isinstance(module_ir, str) else module_ir
    return bytes(tm.emit_object(module))
