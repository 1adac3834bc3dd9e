"""Objects that carry kernels for several x86-64 cpu levels and pick one at the first call.

Without a cpu (``cpu="portable"``, the default) an x86-64 object runs on every x86-64 cpu and
is fast on the newer ones: it carries its program for the psABI's microarchitecture levels

* 1, ``x86-64`` (SSE2: every x86-64 cpu),
* 3, ``x86-64-v3`` (AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE),
* 4, ``x86-64-v4`` (AVX-512 F/BW/CD/DQ/VL, 512-bit vectors in the kernels),

and ``<name>_run_buffers`` runs the level ``<name>_cpu_level()`` names. That function asks
the cpu itself (``cpuid``, and ``xgetbv`` for the register state the OS saves: AVX needs
XMM+YMM, AVX-512 also the opmask and ZMM state) once, and caches the answer in one internal
``int``: threads that race on the first call compute the same value and store it with a
relaxed atomic store, so the object stays free of locks and of any C library. Level 2 (SSE4.2)
is not carried: on aotc's fixtures it runs within 2-4 % of level 1 (see docs/architecture.md).

Each level's program is the whole kernel list with that level's ``VectorInfo`` (its ``cpu``
becomes every function's ``"target-cpu"``); kernels too small to gain from vectors are emitted
once and called from every level (``emitter.py``), and constant GEMM weights are packed once
in a layout the levels share where their tiles allow (``VectorInfo.peers``). Other triples,
and any explicit cpu or features, give one level (number 0).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from llvmlite import ir

from aotc.codegen.irtypes import I1, I32
from aotc.codegen.target import PORTABLE, TargetSpec, llvm_arch
from aotc.codegen.vector import AVX2, AVX512, SSE, VectorInfo, vector_info


@dataclass(frozen=True)
class CpuLevel:
    """One level an object carries: what ``<name>_cpu_level()`` returns for it, its vectors."""

    number: int
    vector: VectorInfo
    features: str  # what the cpu must have, for the header

    @property
    def cpu(self) -> str:
        return self.vector.cpu


_X86_64_VECTORS = (SSE, AVX2, AVX512)
X86_64_LEVELS = (
    CpuLevel(1, replace(SSE, cpu="x86-64", peers=_X86_64_VECTORS), "SSE2"),
    CpuLevel(3, replace(AVX2, cpu="x86-64-v3", peers=_X86_64_VECTORS), "AVX2, FMA"),
    CpuLevel(4, replace(AVX512, cpu="x86-64-v4", peers=_X86_64_VECTORS), "AVX-512"),
)


def cpu_levels(spec: TargetSpec) -> tuple[CpuLevel, ...]:
    """The levels an object for the resolved ``spec`` carries (one, number 0, unless it
    dispatches)."""
    if dispatches(spec):
        return X86_64_LEVELS
    return (CpuLevel(0, vector_info(spec), ""),)


def dispatches(spec: TargetSpec) -> bool:
    """Whether the resolved ``spec`` is a portable x86-64 target (``resolve_target`` keeps
    ``cpu="portable"`` only there)."""
    return spec.cpu == PORTABLE and llvm_arch(spec.triple) == "x86_64"


# cpuid bits (leaf, output register, bit) each level needs beyond the one below, and the
# XCR0 state bits its registers need saved by the OS.
_LEAF1_ECX, _LEAF7_EBX, _EXT1_ECX = (1, 2), (7, 1), (0x80000001, 2)
_V2 = [(_LEAF1_ECX, b) for b in (0, 9, 13, 19, 20, 23)] + [(_EXT1_ECX, 0)]
_V3 = [(_LEAF1_ECX, b) for b in (12, 22, 27, 28, 29)] + [(_LEAF7_EBX, b) for b in (3, 5, 8)]
_V3 += [(_EXT1_ECX, 5)]
_V4 = [(_LEAF7_EBX, b) for b in (16, 17, 28, 30, 31)]
_XCR0_V3, _XCR0_V4 = 0x6, 0xE6
_OSXSAVE = 27
_CPUID = ir.FunctionType(ir.LiteralStructType([I32] * 4), [I32, I32])


def emit_cpu_level(module: ir.Module, name: str, levels: tuple[CpuLevel, ...]) -> ir.Function:
    """``int <name>_cpu_level(void)``: the level this cpu runs (0 in a one-level object)."""
    fn = ir.Function(module, ir.FunctionType(I32, []), f"{name}_cpu_level")
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    if len(levels) == 1:
        b.ret(ir.Constant(I32, levels[0].number))
        return fn
    cache = ir.GlobalVariable(module, I32, f"{name}.cpu_level")
    cache.linkage = "internal"
    cache.initializer = ir.Constant(I32, 0)
    known = b.load_atomic(cache, "monotonic", 4)
    with b.if_then(b.icmp_unsigned("==", known, ir.Constant(I32, 0)), likely=False):
        b.store_atomic(b.call(_emit_detect(module, name), []), cache, "monotonic", 4)
    b.ret(b.load_atomic(cache, "monotonic", 4))
    return fn


def _emit_detect(module: ir.Module, name: str) -> ir.Function:
    """The level of the cpu running it, from cpuid and xgetbv: 4, 3 or 1."""
    fn = ir.Function(module, ir.FunctionType(I32, []), f"{name}.detect_cpu_level")
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")  # runs once: keep it out of the callers
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    max_leaf = _cpuid(b, 0, 0)
    max_ext = _cpuid(b, 0x80000000, 0)
    words = {
        _LEAF1_ECX: _cpuid(b, 1, 2),
        _LEAF7_EBX: _if_leaf(b, max_leaf, 7, _cpuid(b, 7, 1)),
        _EXT1_ECX: _if_leaf(b, max_ext, 0x80000001, _cpuid(b, 0x80000001, 2)),
    }
    xcr0 = _xcr0(b, words[_LEAF1_ECX])
    v3 = b.and_(_has_bits(b, words, _V2 + _V3), _has_mask(b, xcr0, _XCR0_V3))
    v4 = b.and_(v3, b.and_(_has_bits(b, words, _V4), _has_mask(b, xcr0, _XCR0_V4)))
    level = b.select(v3, ir.Constant(I32, 3), ir.Constant(I32, 1))
    b.ret(b.select(v4, ir.Constant(I32, 4), level))
    return fn


def _cpuid(b: ir.IRBuilder, leaf: int, register: int) -> ir.Value:
    """One output register (0 eax, 1 ebx, 2 ecx, 3 edx) of ``cpuid`` for ``leaf``, subleaf 0."""
    out = b.asm(
        _CPUID,
        "cpuid",
        "={ax},={bx},={cx},={dx},{ax},{cx}",
        [ir.Constant(I32, leaf), ir.Constant(I32, 0)],
        side_effect=False,
    )
    return b.extract_value(out, register)


def _if_leaf(b: ir.IRBuilder, max_leaf: ir.Value, leaf: int, word: ir.Value) -> ir.Value:
    """``word`` where the cpu has ``leaf``; else 0 (a cpu answers an unknown leaf with another
    leaf's bits)."""
    present = b.icmp_unsigned(">=", max_leaf, ir.Constant(I32, leaf))
    return b.select(present, word, ir.Constant(I32, 0))


def _xcr0(b: ir.IRBuilder, leaf1_ecx: ir.Value) -> ir.Value:
    """The low word of XCR0 (the register state the OS saves); 0 without OSXSAVE, where
    ``xgetbv`` itself would fault."""
    entry = b.block
    osxsave = _bit(b, leaf1_ecx, _OSXSAVE)
    with b.if_then(osxsave):
        inside = b.block
        pair = b.asm(
            ir.FunctionType(ir.LiteralStructType([I32, I32]), [I32]),
            "xgetbv",
            "={ax},={dx},{cx}",
            [ir.Constant(I32, 0)],
            side_effect=True,
        )
        low = b.extract_value(pair, 0)
    phi = b.phi(I32)
    phi.add_incoming(ir.Constant(I32, 0), entry)
    phi.add_incoming(low, inside)
    return phi


def _bit(b: ir.IRBuilder, word: ir.Value, bit: int) -> ir.Value:
    return b.icmp_unsigned("!=", b.and_(word, ir.Constant(I32, 1 << bit)), ir.Constant(I32, 0))


def _has_mask(b: ir.IRBuilder, word: ir.Value, mask: int) -> ir.Value:
    masked = b.and_(word, ir.Constant(I32, mask))
    return b.icmp_unsigned("==", masked, ir.Constant(I32, mask))


def _has_bits(
    b: ir.IRBuilder, words: dict[tuple[int, int], ir.Value], bits: list[tuple[tuple[int, int], int]]
) -> ir.Value:
    """Whether every (word, bit) in ``bits`` is set."""
    result: ir.Value = ir.Constant(I1, 1)
    for key in dict.fromkeys(k for k, _ in bits):
        mask = sum(1 << bit for k, bit in bits if k == key)
        result = b.and_(result, _has_mask(b, words[key], mask))
    return result


def emit_dispatch(
    module: ir.Module,
    name: str,
    levels: tuple[CpuLevel, ...],
    bodies: list[ir.Function],
    suffix: str = "",
) -> ir.Function:
    """``<name>_run_buffers<suffix>``: calls the body of the level ``<name>_cpu_level()``
    returns (the bodies all take the entry point's arguments)."""
    fn = ir.Function(module, bodies[0].function_type, f"{name}_run_buffers{suffix}")
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    level = b.call(module.globals[f"{name}_cpu_level"], [])
    blocks = [fn.append_basic_block(f"level{lv.number}") for lv in levels]
    switch = b.switch(level, blocks[0])
    for lv, block, body in zip(levels, blocks, bodies, strict=True):
        switch.add_case(ir.Constant(I32, lv.number), block)
        b.position_at_end(block)
        b.ret(b.call(body, list(fn.args)))
    return fn
