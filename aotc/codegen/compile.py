"""The codegen entry point: an HLO module in, an object file and its C header out.

``compile_module_assigned`` also returns the buffer assignment the code was emitted with (the
kernels in order, every buffer's place): the driver's compile report is built from it.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import llvmlite.binding as llvm
from llvmlite import ir

from aotc.codegen.buffers import BufferAssignment
from aotc.codegen.cpp_class import render_cpp_class
from aotc.codegen.dispatch import CpuLevel, cpu_levels
from aotc.codegen.elf_constants import lift_constants, lifts_constants, place_constants
from aotc.codegen.elf_join import joins_objects
from aotc.codegen.emitter import emit_module_assigned
from aotc.codegen.header import Built, render_header
from aotc.codegen.interface import TensorInfo
from aotc.codegen.irtypes import ModuleParts, module_parts
from aotc.codegen.sizes import ObjectSizes, object_sizes
from aotc.codegen.stream import ObjectCode
from aotc.codegen.target import TargetSpec, create_target_machine, require_asm_parser
from aotc.codegen.variants import read_only_arrays, share_constant_variants
from aotc.errors import CodegenError
from aotc.hlo.ir import Instruction, Module, Opcode, is_width_changing_bitcast, parameter_number
from aotc.hlo.shape import AnyShape, has_complex, real_form, storage_form

HOST = TargetSpec()


class _LazyText:
    """A ``str`` attribute that may be set to a function producing it, called on first read.

    Printing an optimized module costs seconds for large weights, and most compiles (the CLI
    without the cache) never read ``CompiledModel.llvm_ir``.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}"

    def __get__(self, obj: object, owner: type | None = None) -> str:
        if obj is None:
            return ""  # the dataclass default
        value = obj.__dict__[self.slot]
        if callable(value):
            value = obj.__dict__[self.slot] = value()
        return value  # type: ignore[no-any-return]

    def __set__(self, obj: object, value: str | Callable[[], str]) -> None:
        obj.__dict__[self.slot] = value


@dataclass(kw_only=True)
class CompiledModel:
    """A compiled model: the object file, its header, and what they were built from.

    ``cpp_header`` is the C++ class header (``--cpp-class``), empty when none was asked for;
    ``llvm_ir`` is the optimized LLVM IR that was turned into ``object_bytes`` (printed when
    first read); ``target`` holds the resolved triple, cpu and features (never ``"host"``).
    """

    name: str
    object_bytes: bytes
    header: str
    llvm_ir: _LazyText = _LazyText()
    temp_bytes: int
    args: list[TensorInfo]
    results: list[TensorInfo]
    target: TargetSpec
    cpp_header: str = ""

    @property
    def levels(self) -> tuple[CpuLevel, ...]:
        """The cpu levels the object carries (one, number 0, unless it dispatches)."""
        return cpu_levels(self.target)

    @property
    def sizes(self) -> ObjectSizes:
        """The object's code and read-only data bytes."""
        return object_sizes(self.object_bytes)


def compile_module(
    module: Module,
    name: str,
    args: Sequence[TensorInfo],
    results: Sequence[TensorInfo],
    target: TargetSpec = HOST,
) -> CompiledModel:
    """Compile ``module`` for ``target``; ``name`` prefixes every exported symbol and macro.

    The entry computation's parameters are the arguments in order, and its root is a tuple of
    the results, then the new value of each ``updated`` argument (written back through the
    argument's pointer); ``args`` and ``results`` give their user-facing names and must match
    shapes.
    """
    return compile_module_assigned(module, name, args, results, target)[0]


def compile_module_assigned(
    module: Module,
    name: str,
    args: Sequence[TensorInfo],
    results: Sequence[TensorInfo],
    target: TargetSpec = HOST,
    on_progress: Callable[[str], None] | None = None,
    cpp_class: str | None = None,
    multicore: bool = True,
) -> tuple[CompiledModel, BufferAssignment]:
    """``compile_module``, and the buffer assignment the code was emitted with.

    ``cpp_class`` (``ns::Name``) adds the C++ class header. ``on_progress`` hears how far
    codegen is ("kernels 12/53", "LLVM optimization", "object code"): the driver shows it on
    the progress line, codegen itself knows no terminal. ``multicore=False`` leaves the
    multi-core entry points out (microcontrollers).
    """
    say = on_progress or _silent
    updated = [i for i, a in enumerate(args) if a.updated]
    _check_signature(module, args, results, updated)
    tm, resolved = create_target_machine(target)
    levels = cpu_levels(resolved)
    if len(levels) > 1:
        require_asm_parser(resolved, "a portable x86-64 object (its cpuid)")
    triple = llvm.get_triple_parts(tm.triple)
    lifts = lifts_constants(triple.ObjectFormat, triple.Arch)
    with ObjectCode(tm, lifts and joins_objects(triple.Arch), say) as code:
        with _young_collections_only():
            llvm_module, assignment = emit_module_assigned(
                module,
                name,
                levels,
                updated,
                lambda k, n: say(f"kernels {k}/{n}"),
                multicore=multicore,
                size_bits=pointer_bits(str(tm.target_data)),
                freeze=True,
                on_level=lambda m, names: code.level(_targeted(m, tm), names),
            )
            _targeted(llvm_module, tm)
            lifted = code.lifted + (lift_constants(llvm_module) if lifts else [])
            text = _text_and_free(llvm_module, code)
        object_bytes, llvm_ir = code.finish(text)
    temp_bytes = assignment.temp_bytes
    object_bytes = place_constants(object_bytes, lifted)
    built = Built(resolved, levels, object_sizes(object_bytes), multicore)
    model = CompiledModel(
        name=name,
        object_bytes=object_bytes,
        header=render_header(name, args, results, temp_bytes, built),
        llvm_ir=llvm_ir,
        temp_bytes=temp_bytes,
        args=list(args),
        results=list(results),
        target=resolved,
        cpp_header=render_cpp_class(cpp_class, name, args, results, temp_bytes, multicore)
        if cpp_class
        else "",
    )
    return model, assignment


@contextmanager
def _young_collections_only() -> Iterator[None]:
    """Python's full (oldest-generation) collections off while the IR is built and printed.

    The emitter allocates about a million small objects (llvmlite's values), which all live
    until the module is printed, so every full collection walks a heap that only grows: a third
    of the Python time of MobileNetV2's codegen (1.3 of 4 s) went there. Young garbage is still
    collected; the IR's cycles once, in ``_parse_and_free``, as before.
    """
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], 2**30)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def _targeted(llvm_module: ir.Module, tm: llvm.TargetMachine) -> ir.Module:
    """``llvm_module`` with the triple and data layout of ``tm`` (before any of its text)."""
    llvm_module.triple = tm.triple
    llvm_module.data_layout = str(tm.target_data)
    return llvm_module


def _text_and_free(llvm_module: ir.Module, code: ObjectCode) -> ModuleParts:
    """The text of ``llvm_module`` for LLVM (with what the parts ``code`` dealt held for the
    last one), the Python IR freed; the kernels that differ only in the constants they read
    are one function there (``variants``).

    ``module_parts`` frees each function's body once printed; what is left of the IR goes
    before LLVM parses (``collect``: it is a graph of cycles, every value pointing back at its
    parent). Big constants are not in the text on ELF targets (``elf_constants``); elsewhere
    they are held in it and in LLVM's module meanwhile.
    """
    constants = read_only_arrays(llvm_module)
    merge = lambda fns, keep: share_constant_variants(fns, constants, keep)  # noqa: E731
    parts = module_parts(llvm_module, lambda fns: code.rest(fns, merge))
    llvm_module.globals.clear()
    del llvm_module
    gc.collect()
    return parts


def _silent(_: str) -> None:
    pass


def pointer_bits(data_layout: str) -> int:
    """The width of pointers (and ``size_t``) in an LLVM data layout string (default 64)."""
    match = re.search(r"(?:^|-)p:(\d+)", data_layout)
    return int(match.group(1)) if match else 64


def _check_signature(
    module: Module, args: Sequence[TensorInfo], results: Sequence[TensorInfo], updated: list[int]
) -> None:
    entry = module.entry
    params = entry.parameters
    if [parameter_number(p) for p in params] != list(range(len(params))):
        raise CodegenError(f"entry {entry.name} parameters must be numbered 0..{len(params) - 1}")
    if entry.root.opcode is not Opcode.TUPLE:
        raise CodegenError(f"entry {entry.name} root %{entry.root.name} must be a tuple")
    _check_list("argument", [p.shape for p in params], args)
    written = [*results, *(args[i] for i in updated)]
    _check_list("result", [r.shape for r in entry.root.operands], written)
    _check_lowered(module)


#: What codegen leaves to a pass of the default pipeline: the instructions no kernel computes,
#: the form codegen computes them in, and the pass that makes that form (``--disable-pass``
#: can leave them in place).
_LOWERED_BY_PASSES: tuple[tuple[Callable[[Instruction], bool], str, str], ...] = (
    (
        lambda inst: has_complex(inst.shape),
        "complex numbers in their real form",
        "complex-lowering",
    ),
    (
        is_width_changing_bitcast,
        "width-changing bitcast-converts as shifts",
        "bitcast-width-lowering",
    ),
    (
        lambda inst: inst.opcode is Opcode.RNG_BIT_GENERATOR,
        "rng-bit-generator as the integer ops of its algorithm",
        "rng-bit-generator-expander",
    ),
)


def _check_lowered(module: Module) -> None:
    """No instruction a lowering pass should have rewritten reaches the kernels."""
    for comp in module.computations:
        for inst in comp.instructions:
            for unlowered, form, pass_name in _LOWERED_BY_PASSES:
                if unlowered(inst):
                    raise CodegenError(
                        f"{inst.opcode.value} %{inst.name} is {inst.shape}: codegen computes "
                        f"{form}, made by the {pass_name} pass; do not disable it"
                    )


def _check_list(kind: str, shapes: Sequence[AnyShape], infos: Sequence[TensorInfo]) -> None:
    if len(shapes) != len(infos):
        raise CodegenError(f"the module has {len(shapes)} {kind}s but {len(infos)} were named")
    for i, (shape, info) in enumerate(zip(shapes, infos, strict=True)):
        if storage_form(shape) != real_form(info.shape):  # complex: passed as (re, im) pairs
            raise CodegenError(
                f"{kind} {i} '{info.name}' is {info.shape} but the module computes {shape}"
            )
