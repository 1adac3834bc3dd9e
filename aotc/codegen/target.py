"""Targets: triple / cpu / features -> an llvmlite TargetMachine, and object emission.

``"host"`` resolves to the machine aotc runs on: the process triple, the host cpu name and
its feature string (user features are appended, so ``"+avx2"`` or ``"-prefer-256-bit"`` still
apply). ``cpu="host"`` with a triple for another architecture means clang's default cpu for
that triple, with the features clang implies for it (riscv64 Linux: ``rv64gc``; armv7: NEON;
see ``clang_default``); user features are appended to those too, so an explicit feature wins.
The float ABI follows the triple as in clang (``float_abi``), and a cpu/feature choice whose
float math cannot honour it is refused. Every LLVM target is built into llvmlite, so
cross-compiling needs no extra installs.

LLVM only *warns* about an unknown cpu or feature (and later aborts the process while
emitting), so we capture its stderr while creating the TargetMachine and turn those warnings
into ``CodegenError``.
"""

from __future__ import annotations

import ctypes
import difflib
import functools
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

import llvmlite.binding as llvm

from aotc.errors import CodegenError

T = TypeVar("T")


#: The cpu of an object meant to run on every cpu of its triple: on x86-64 it carries kernels
#: for several cpu levels and picks one at run time (``dispatch.py``), elsewhere it is clang's
#: default cpu for the triple. The config's (and so the command line's) default.
PORTABLE = "portable"


@dataclass(frozen=True)
class TargetSpec:
    """What to compile for; ``"host"`` means the machine aotc runs on, cpu ``"portable"``
    every cpu of the triple (``PORTABLE``)."""

    triple: str = "host"
    cpu: str = "host"
    features: str = ""


@functools.cache
def _initialize() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    # Inline assembly (the cpuid of a portable x86-64 object) needs the target's assembly
    # parser; llvmlite exposes only this machine's (``require_asm_parser``).
    llvm.initialize_native_asmparser()
    # The post-RA list scheduler is quadratic in a block's size: the vectorized A packing of a
    # large GEMM (~2000 instructions in one block) made it 2/3 of ResNet50's code generation
    # (4.5 of 6.8 s). Out-of-order cores gain nothing from it: ResNet50 and the C benches run
    # at the same speed without it on znver4. An LLVM option is process-wide (it applies to
    # every target, and to other users of llvmlite in this process).
    llvm.set_option("aotc", "-post-RA-scheduler=false")
    # The object calls nothing, not even memcpy/memset (freestanding and bare-metal programs
    # have no C library): loop-idiom recognition would turn copy and fill loops (broadcasts of
    # constants, say) into such calls. The loops stay and vectorize; run time is unchanged.
    llvm.set_option("aotc", "-disable-loop-idiom-all")


def _arch(triple: str) -> str:
    return triple.split("-", 1)[0]


class TargetArch(Enum):
    """The instruction-set families kernels tune for (``vector.py``); the rest are OTHER."""

    X86 = "x86"  # 32- and 64-bit
    AARCH64 = "aarch64"
    OTHER = "other"


def llvm_arch(triple: str) -> str:
    """The architecture of a triple as LLVM parses it: ``x86_64`` for ``amd64-...`` too."""
    return str(llvm.get_triple_parts(triple).Arch)


def target_arch(triple: str) -> TargetArch:
    """The family of a triple's architecture, as LLVM parses it (i686 and arm64 included)."""
    arch = llvm_arch(triple)
    if arch in ("i386", "x86_64"):
        return TargetArch.X86
    return TargetArch.AARCH64 if arch == "aarch64" else TargetArch.OTHER


def resolve_target(spec: TargetSpec) -> TargetSpec:
    """Replace ``"host"`` by the real triple, cpu and features.

    Cpu ``"portable"`` stays only for x86-64 without features (an object that dispatches);
    elsewhere, or with features, it is clang's default cpu for the triple.
    """
    host_triple = llvm.get_process_triple()
    triple = host_triple if spec.triple == "host" else normalize_triple(spec.triple)
    if spec.cpu == PORTABLE and llvm_arch(triple) == "x86_64" and not spec.features:
        return TargetSpec(triple, PORTABLE, "")
    if spec.cpu == "host" and _arch(triple) == _arch(host_triple):
        host_features = llvm.get_host_cpu_features().flatten()
        features = ",".join(f for f in (host_features, spec.features) if f)
        return TargetSpec(triple, llvm.get_host_cpu_name(), features)
    default = clang_default(triple)
    cpu = default.cpu if spec.cpu in ("host", PORTABLE) else spec.cpu
    implied = default.features if cpu in (default.cpu, "generic") else ""
    return TargetSpec(triple, cpu, merge_features(implied, spec.features))


def normalize_triple(triple: str) -> str:
    """``triple`` as arch-vendor-os-env, like LLVM's ``Triple::normalize`` (clang and llc apply it).

    A TargetMachine reads the components by position, so short spellings lose their meaning:
    in ``thumbv7em-none-eabihf`` or ``arm-linux-gnueabihf`` the environment lands in the OS
    slot and the ARM backend silently uses the soft-float calling convention.
    """
    parts, components = llvm.get_triple_parts(triple), triple.split("-")
    if len(components) not in (2, 3):
        return triple
    arch, *rest = components
    env = rest[-1] if parts.Env != "unknown" and rest[-1].startswith(parts.Env) else None
    named_os = [c for c in rest if parts.OS != "unknown" and c.startswith(parts.OS)]
    if env is None and not named_os:
        return triple
    os_name = named_os[0] if named_os else "unknown"
    vendors = [c for c in rest if c not in (env, os_name)]
    normalized = [arch, vendors[0] if vendors else "unknown", os_name]
    return "-".join(normalized + ([env] if env else []))


def merge_features(defaults: str, explicit: str) -> str:
    """``defaults`` then ``explicit``, dropping the defaults that ``explicit`` names either way."""
    named = {f[1:] for f in explicit.split(",") if f}
    kept = [f for f in defaults.split(",") if f and f[1:] not in named]
    return ",".join(kept + [f for f in explicit.split(",") if f])


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
            cpu=machine_cpu(resolved),
            features=resolved.features,
            opt=3,
            reloc="pic",
            codemodel="default",
            abiname=_abi_name(resolved),
        )
    )
    _check_warnings(warnings, resolved)
    if resolved not in _TARGET_PROBLEMS:  # probed once per target and process
        known = resolved.cpu == PORTABLE or spec == TargetSpec()
        _TARGET_PROBLEMS[resolved] = None if known else _target_problem(resolved, tm)
    if _TARGET_PROBLEMS[resolved]:
        raise CodegenError(_TARGET_PROBLEMS[resolved])
    return tm, resolved


def require_asm_parser(spec: TargetSpec, why: str) -> None:
    """Refuse inline assembly for ``spec`` (resolved) where LLVM cannot parse it: llvmlite
    has only the assembly parser of the machine aotc runs on (LLVM would abort)."""
    if target_arch(spec.triple) is not target_arch(llvm.get_process_triple()):
        raise CodegenError(
            f"{why} needs LLVM's assembly parser for {spec.triple}, which llvmlite has only on "
            "such a machine; compile there, or name a cpu (--target-cpu x86-64 runs on every "
            "x86-64 cpu, without the faster kernels)"
        )


def machine_cpu(spec: TargetSpec) -> str:
    """The TargetMachine's cpu for a resolved spec: a portable x86-64 object's is the psABI
    baseline (the functions of its higher levels name their own cpu)."""
    return "x86-64" if spec.cpu == PORTABLE else spec.cpu


@dataclass(frozen=True)
class TargetDefault:
    """clang's default cpu for a triple, and the features clang enables with it."""

    cpu: str = "generic"
    features: str = ""


# rv{32,64}gc = imafd + zicsr + zifencei + c; bare metal (no OS in the triple) is imac.
_RISCV_GC = "+m,+a,+f,+d,+c,+zicsr,+zifencei"
_RISCV_BARE = "+m,+a,+c"
_ARM_MODES = ("arm", "thumb")
# (LLVM arch, sub-arch) -> clang's default. armv7-a's default FPU is NEON (which implies
# VFPv3); Cortex-M4's is FPv4-SP-D16 (single precision only).
_DEFAULTS: dict[tuple[str, str], TargetDefault] = {
    ("x86_64", ""): TargetDefault("x86-64"),
    ("i386", ""): TargetDefault("pentium4"),  # 32-bit x86 Linux: SSE2, not i386's x87
    ("aarch64", ""): TargetDefault("generic", "+neon"),
    ("aarch64_be", ""): TargetDefault("generic", "+neon"),
    **{(a, v): TargetDefault("generic", "+neon") for a in _ARM_MODES for v in ("v7", "v7a")},
    **{(a, "v7em"): TargetDefault("cortex-m4", "+vfp4d16sp") for a in _ARM_MODES},
    **{(a, "v7m"): TargetDefault("cortex-m3") for a in _ARM_MODES},
    **{(a, "v6m"): TargetDefault("cortex-m0") for a in _ARM_MODES},
}


def clang_default(triple: str) -> TargetDefault:
    """The cpu and features clang assumes for ``triple`` when given no ``-mcpu``/``-march``."""
    parts = llvm.get_triple_parts(triple)
    if parts.Arch in ("riscv32", "riscv64"):
        features = _RISCV_BARE if _bare_metal(parts) else _RISCV_GC
        return TargetDefault(f"generic-rv{parts.Arch[5:]}", features)
    if (parts.Arch, parts.SubArch) == ("arm", ""):  # plain arm-linux-gnueabi(hf): ARMv6 / v4T
        return TargetDefault("arm1176jzf-s" if parts.Env.endswith("hf") else "arm7tdmi")
    return _DEFAULTS.get((parts.Arch, parts.SubArch), TargetDefault())


def _bare_metal(parts: llvm.Triple) -> bool:
    return bool(parts.OS == "unknown")


@dataclass(frozen=True)
class FloatAbi:
    """How a target passes floats between functions, and the float hardware that needs.

    ``needs`` is what must be done in hardware for the calling convention to make sense:
    ``"f32"`` (float registers), ``"f64"`` (double registers too) or ``""`` (integer registers
    only, any FPU optional).
    """

    name: str
    needs: str
    fix: str = ""  # what to do when the target cannot honour it


def float_abi(spec: TargetSpec) -> FloatAbi | None:
    """The float ABI of a resolved target, taken from its triple as clang does.

    ARM: hard-float for ``*eabihf`` (float registers), else the soft-float calling convention
    (clang's softfp: VFP/NEON instructions may still be used). RISC-V with an OS: lp64d /
    ilp32d, as Linux distributions use; bare metal: from the features (``+d`` -> lp64d, ``+f``
    -> lp64f, else lp64). AArch64 always passes floats in vector registers. None for targets
    with one float ABI (x86, whose x87 problem ``_target_problem`` checks separately).
    """
    parts = llvm.get_triple_parts(spec.triple)
    if parts.Arch in _ARM_MODES:
        if parts.Env.endswith("hf"):
            return FloatAbi("hard", "f32", _ARM_FIX)
        return FloatAbi("soft", "")
    if parts.Arch.startswith("aarch64"):
        return FloatAbi("hard", "f32", "do not disable fp-armv8 or neon")
    if parts.Arch not in ("riscv32", "riscv64"):
        return None
    base = "lp64" if parts.Arch == "riscv64" else "ilp32"
    if not _bare_metal(parts) or _enabled(spec.features, "d"):
        return FloatAbi(base + "d", "f64", _RISCV_FIX)
    if _enabled(spec.features, "f"):
        return FloatAbi(base + "f", "f32", _RISCV_FIX)
    return FloatAbi(base, "")


_ARM_FIX = (
    "choose a cpu with an FPU, drop the soft-float features, or use a soft-float triple "
    "(...-gnueabi or ...-eabi instead of ...hf)"
)
_RISCV_FIX = (
    "keep the F and D extensions (+f,+d) or use a bare-metal triple such as "
    "riscv64-unknown-elf, whose ABI follows the features"
)


def _enabled(features: str, name: str) -> bool:
    """Whether the last mention of ``name`` in a feature string enables it."""
    signs = [f[0] for f in features.split(",") if f[1:] == name]
    return bool(signs) and signs[-1] == "+"


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
    Its assembly then shows how the target does float math: on the x87 unit (``_x87_problem``),
    or in library calls where the float ABI needs hardware (``_float_abi_problem``).
    The targets aotc chooses itself, the machine it runs on and the portable x86-64 object
    (SSE2 is its baseline), are not probed: the fork was a third of a small graph's compile.
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
    # LLVM warns on stderr (and carries on) where a RISC-V ABI needs absent extensions.
    asm = str(_capture_stderr(lambda: tm.emit_assembly(_probe_module(tm)))[0])
    return _x87_problem(spec, asm, where) or _float_abi_problem(spec, asm, where)


def _x87_problem(spec: TargetSpec, asm: str, where: str) -> str | None:
    """Refuse x86 float math on the x87 unit.

    LLVM keeps x87 intermediates in 80-bit registers without rounding each operation, so the
    math library's error bounds (and agreement with the reference evaluator) cannot hold. SSE2
    is the x86-64 baseline and clang's default for 32-bit x86 Linux.
    """
    if target_arch(spec.triple) is not TargetArch.X86:
        return None
    instructions = (line.split()[0] for line in asm.splitlines() if line[:1] == "\t")
    if not any(name.startswith("fld") for name in instructions):
        return None
    return (
        f"{where} does floating point on the x87 unit, whose excess precision breaks "
        "aotc's math accuracy; choose a cpu with SSE2 (e.g. --target-cpu pentium4) and do "
        "not disable sse2"
    )


# The library calls LLVM emits for the probe's f32 / f64 additions without float hardware.
_SOFT_ADD = {"f32": ("__aeabi_fadd", "__addsf3"), "f64": ("__aeabi_dadd", "__adddf3")}


def _float_abi_problem(spec: TargetSpec, asm: str, where: str) -> str | None:
    """Refuse a hard-float ABI whose float types the target computes in software.

    Soft-float features or a cpu without the FPU make LLVM silently do that math in library
    calls and pass those values in integer registers: an object whose calls do not match the
    triple's libraries (the linker refuses it, or worse, it links and computes garbage).
    """
    abi = float_abi(spec)
    if abi is None or not abi.needs:
        return None
    needed = ("f32", "f64") if abi.needs == "f64" else ("f32",)
    soft = [t for t in needed if any(call in asm for call in _SOFT_ADD[t])]
    if not soft:
        return None
    return (
        f"{where} has no hardware {soft[0]} arithmetic, but the triple's {abi.name} float ABI "
        f"passes {abi.needs} values in float registers; {abi.fix}"
    )


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
    """LLVM's RISC-V ABI name (other targets take theirs from the triple)."""
    abi = float_abi(spec)
    return abi.name if abi and spec.triple.startswith("riscv") else ""


def _check_warnings(warnings: str, spec: TargetSpec) -> None:
    """LLVM's warnings about the cpu or features as one error naming only what is wrong (a
    resolved host feature string runs to 1,500 characters), with the closest names LLVM has."""
    lines = warnings.splitlines()
    if any("is not a recognized processor" in line for line in lines):
        hint = _closest(spec.cpu, _llvm_names(spec.triple).cpus) or "try cpu 'generic'"
        raise CodegenError(f"unknown cpu '{spec.cpu}' for target triple '{spec.triple}' ({hint})")
    bad = [line.split("'")[1] for line in lines if "is not a recognized feature" in line]
    if bad:
        known = _llvm_names(spec.triple).features
        hints = [h for h in (_closest(f.lstrip("+-"), known, f[:1]) for f in bad) if h]
        plural = "s" if len(bad) > 1 else ""
        raise CodegenError(
            f"unknown feature{plural} {', '.join(repr(f) for f in bad)} for target triple "
            f"'{spec.triple}'" + (f" ({'; '.join(hints)})" if hints else "")
        )


@dataclass(frozen=True)
class _LlvmNames:
    cpus: tuple[str, ...]
    features: tuple[str, ...]


@functools.cache
def _llvm_names(triple: str) -> _LlvmNames:
    """The cpu and feature names LLVM knows for ``triple``: what ``-mattr=help`` prints."""
    target = llvm.Target.from_triple(triple)
    _, text = _capture_stderr(lambda: target.create_target_machine(features="+help"))
    sections: dict[str, list[str]] = {"CPUs": [], "features": []}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("Available "):
            current = sections.get(line.split()[1])
        elif current is not None and line.startswith("  ") and not line.lstrip().startswith("-"):
            current.append(line.split()[0])
    return _LlvmNames(tuple(sections["CPUs"]), tuple(sections["features"]))


def _closest(name: str, known: tuple[str, ...], sign: str = "") -> str:
    """``did you mean '+avx512f'?`` for a close known name, else ""."""
    close = difflib.get_close_matches(name, known, n=2)
    if not close:
        return ""
    return f"{sign}{name}: did you mean {' or '.join(repr(sign + c) for c in close)}?"


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
    return optimize_parsed(parse_ir(module_ir), tm)


def parse_ir(module_ir: str | bytearray) -> llvm.ModuleRef:
    """LLVM IR text (or ``irtypes.module_bytes``' NUL-terminated bytes) as a verified module.

    The text is aotc's: ASCII but for the bytes of constants, which ``irtypes`` spells as the
    characters of their values (latin-1) instead of three-character escapes. It goes to LLVM
    as those bytes: ``llvm.parse_assembly`` would encode it as UTF-8 (two bytes for each
    byte above 127), so its parser is called directly, on the bytes in place.
    """
    _initialize()
    if isinstance(module_ir, str):
        data = bytearray(module_ir, "latin-1")
        data += b"\0"
    else:
        data = module_ir
    assert data.endswith(b"\0"), "module_bytes ends its bytes with NUL"
    text = ctypes.cast((ctypes.c_char * len(data)).from_buffer(data), ctypes.c_char_p)
    context = llvm.get_global_context()
    with llvm.ffi.OutputString() as error:
        module = llvm.ModuleRef(llvm.ffi.lib.LLVMPY_ParseAssembly(context, text, error), context)
        if error:
            module.close()
            raise CodegenError(f"aotc generated invalid LLVM IR (a bug in aotc): {error}")
    try:
        module.verify()
    except RuntimeError as e:
        raise CodegenError(f"aotc generated invalid LLVM IR (a bug in aotc): {e}") from e
    return module


def optimize_parsed(module: llvm.ModuleRef, tm: llvm.TargetMachine) -> llvm.ModuleRef:
    """``optimize`` on a module ``parse_ir`` made."""
    _initialize()
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
