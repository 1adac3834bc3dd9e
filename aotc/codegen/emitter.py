"""Emit the LLVM module of an HLO module: kernels, constants and the entry points.

* ``int <name>_run_buffers(const void *const *args, void *const *results, void *temp)``
  runs every kernel in order, then the result copies, and returns 0.
* ``int <name>_run(const T0 *arg0, ..., T *result0, ..., void *temp)`` packs its pointers
  into arrays and calls ``<name>_run_buffers``.
* ``int <name>_cpu_level(void)``: the cpu level the program runs at (``dispatch.py``).
* Unless left out (``multicore=False``): ``int <name>_run_buffers_mt(args, results, temp,
  const aotc_threadpool *pool)``, the same program calling the same kernels, large ones
  split over the caller's pool, and ``size_t <name>_temp_bytes_mt(int num_threads)``
  (``parallel.py``).

Each kernel is an internal function taking its output and operand buffers as ``noalias``
pointers (the vectorizer needs no runtime alias checks); kernels stay calls (``noinline``).
Constants are private read-only ``i8`` arrays aligned to 64 bytes (weights that only GEMMs
read, packed at compile time, have no global of their own). The entry points are the only
symbols with external linkage.

An object with several cpu levels has one program per level (``<name>_run_buffers.<cpu>``,
its kernels' names prefixed with the cpu), which ``<name>_run_buffers`` dispatches among;
kernels touching at most ``_ONCE_BYTES`` are emitted once, at the lowest level, and called by
every program.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from llvmlite import ir

from aotc.codegen.buffers import (
    ALIGN,
    Buffer,
    BufferAssignment,
    BufferKind,
    Copy,
    ResultCopy,
    assign_buffers,
)
from aotc.codegen.control_flow import ControlFlow
from aotc.codegen.dispatch import CpuLevel, emit_cpu_level, emit_dispatch
from aotc.codegen.irtypes import (
    I8,
    I32,
    I64,
    PTR,
    VOID,
    alloca,
    freeze_functions,
    i64,
    load_element,
    readonly_global,
)
from aotc.codegen.kernels import (
    kernel_emitter,
    kernel_packed_operands,
    kernel_parts,
    kernel_scratch_bytes,
)
from aotc.codegen.kernels.base import ElementGenerator, KernelIO, KernelPart, buffer_reader
from aotc.codegen.kernels.dot_gemm import packed_weights
from aotc.codegen.kernels.elemental import emit_store_loop, make_generator
from aotc.codegen.loops import Split, function_builder, leave_vector_loops_rolled
from aotc.codegen.parallel import (
    CACHED_CONSTANT_BYTES,
    KernelFunction,
    Pool,
    ScratchLayout,
    emit_temp_bytes_mt,
    open_pool,
    scratch_layout,
    worth_tasks,
)
from aotc.codegen.program import (
    BranchEnd,
    BranchNext,
    BranchOut,
    BranchStart,
    CarryIn,
    CarryOut,
    Kernel,
    LoopEnd,
    LoopStart,
    LoopTest,
    Stage,
    Step,
)
from aotc.codegen.replay import Recording, recording, replay, twin_key
from aotc.codegen.shared import share_text
from aotc.codegen.vector import GENERIC, VectorInfo, mark_function
from aotc.errors import CodegenError
from aotc.hlo.flops import kernel_flops
from aotc.hlo.ir import Instruction, Module, Opcode
from aotc.hlo.memory import byte_size

KernelBody = Callable[[ir.IRBuilder, list[ir.Value], list[ir.Value], Split | None], None]


@dataclass
class _Entry:
    """The ``run_buffers`` function being built (one per cpu level) and the buffer pointers it
    has loaded."""

    module: ir.Module
    builder: ir.IRBuilder
    args: ir.Value
    results: ir.Value
    temp: ir.Value
    constants: list[ir.Value]  # read-only globals; null for constants no kernel reads
    vector: VectorInfo = GENERIC
    pointers: dict[Buffer, ir.Value] = field(default_factory=dict)
    flow: ControlFlow | None = None  # the loops and conditionals being emitted
    written_back: dict[int, int] = field(default_factory=dict)  # root element -> argument
    # Every kernel and copy function emitted (by name), shared by all programs of the module:
    # in an object with several levels those emitted once for all levels, and a level's
    # multi-core program calls its single-threaded program's functions.
    emitted: dict[str, KernelFunction] = field(default_factory=dict)
    # In an object with several levels: the lowest level's vector shape (that of kernels
    # emitted once) and the prefix of this level's function names.
    multilevel: bool = False
    baseline: VectorInfo = GENERIC
    prefix: str = ""
    layout: ScratchLayout | None = None  # per-thread scratch; None: no multi-core entry
    pool: Pool | None = None  # the caller's pool, in the multi-core entry
    split: set[str] = field(default_factory=set)  # the kernels split so far (by name)
    # The first kernel function of each ``replay.twin_key`` (shared by all programs); None:
    # every kernel is emitted.
    twins: dict[object, Recording] | None = None


def emit_module(module: Module, name: str, vector: VectorInfo = GENERIC) -> tuple[ir.Module, int]:
    """The LLVM module for ``module`` and the temp buffer size it needs, in bytes."""
    level = CpuLevel(0, vector, "")
    llvm_module, assignment = emit_module_assigned(module, name, (level,))
    return llvm_module, assignment.temp_bytes


def emit_module_assigned(
    module: Module,
    name: str,
    levels: Sequence[CpuLevel] = (CpuLevel(0, GENERIC, ""),),
    updated: Sequence[int] = (),
    on_kernel: Callable[[int, int], None] | None = None,
    multicore: bool = True,
    size_bits: int = 64,
    freeze: bool = False,
    twins: bool = True,
    on_level: Callable[[ir.Module, list[str]], None] | None = None,
) -> tuple[ir.Module, BufferAssignment]:
    """The LLVM module for ``module`` and the buffer assignment it was emitted with.

    Each of ``levels`` gets the whole program, its kernels tiled for the level's SIMD shape;
    with more than one, ``<name>_run_buffers`` dispatches among them (``dispatch.py``). All
    levels share one buffer assignment, its scratch the largest any level needs. The last
    ``len(updated)`` root elements are written back to those arguments, after every kernel has
    run (kernels may still read the old value). ``on_kernel(done, total)`` is called after
    each kernel is emitted (progress for large models). ``multicore`` adds the multi-core
    entry points (``size_bits``: the target's ``size_t``). ``freeze`` prints the functions
    of each kernel once it is emitted and frees their IR (``irtypes.freeze_functions``; all
    but the entry being built): the module's text is then made only by
    ``irtypes.module_bytes``, and (unless ``twins`` is False) a kernel that would emit
    another's text with other weights is made from that text (``replay``). With several
    levels and ``freeze``, ``on_level(module, names)`` hears each level's end with the names
    of its programs' functions (``_level_functions``: a kernel emitted once may call one of
    them too), all frozen, while the next level is yet to be emitted.
    """
    levels = tuple(levels)
    vectors = [level.vector for level in levels]
    num_results = len(module.entry.root.operands) - len(updated)
    written_back = {num_results + k: arg for k, arg in enumerate(updated)}

    def scratch_size(inst: Instruction) -> int:
        return max(kernel_scratch_bytes(inst, v) for v in vectors)

    assignment = assign_buffers(
        module.entry, scratch_size=scratch_size, late=frozenset(written_back)
    )
    llvm_module = ir.Module(name=name)
    constants = _constant_globals(llvm_module, assignment, vectors)
    emit_cpu_level(llvm_module, name, levels)
    scratch = max(map(scratch_size, assignment.kernels), default=0)
    layout = scratch_layout(assignment.temp_bytes, scratch) if multicore else None
    emitted: dict[str, KernelFunction] = {}
    models: dict[object, Recording] | None = {} if freeze and twins else None
    done, total = itertools.count(1), len(assignment.kernels) * len(levels)

    def kernel_done() -> None:
        if on_kernel is not None:
            on_kernel(next(done), total)

    bodies: dict[str, list[ir.Function]] = {"": [], "_mt": []}
    for level in levels:
        known = len(llvm_module.globals)
        for suffix in bodies if multicore else [""]:
            entry = _new_entry(llvm_module, name, level, constants, (len(levels) > 1, suffix))
            entry.written_back, entry.baseline = written_back, vectors[0]
            entry.emitted, entry.layout, entry.twins = emitted, layout, models
            if suffix:
                entry.pool = _open_pool(entry, assignment, layout)  # type: ignore[arg-type]

            def step_done(entry: _Entry = entry, suffix: str = suffix) -> None:
                if not suffix:
                    kernel_done()
                if freeze:
                    freeze_functions(llvm_module, entry.builder.function)

            _emit_program(entry, assignment, step_done)
            bodies[suffix].append(entry.builder.function)
        if freeze:
            freeze_functions(llvm_module)  # one level's IR at a time
            if on_level is not None and len(levels) > 1:
                own = [fns[-1] for fns in bodies.values() if fns]
                on_level(llvm_module, _level_functions(llvm_module, known, level, own))
    run_buffers = _dispatched(llvm_module, name, levels, bodies[""], "")
    params = module.entry.parameters
    _emit_typed_entry(llvm_module, name, run_buffers, len(params), num_results)
    if layout is not None:
        _dispatched(llvm_module, name, levels, bodies["_mt"], "_mt")
        emit_temp_bytes_mt(llvm_module, name, layout, ir.IntType(size_bits))
    return llvm_module, assignment


def _level_functions(
    llvm_module: ir.Module, known: int, level: CpuLevel, bodies: list[ir.Function]
) -> list[str]:
    """The functions of ``level``'s programs that no other level's program uses: its bodies,
    and those its programs added to the module (after the first ``known`` globals) named with
    its prefix. Every function a level's kernels emit is named after its kernel (``.gemm``,
    ``.task``, tiles), so with the level's prefix; those of kernels emitted once and helpers
    shared by every level (``aotc.divide``) have none. A kernel emitted once (at the lowest
    level, while its first program is emitted) may still call a lowest-level function of
    identical text (``shared.share``): ``split.Splitter`` sees that call."""
    prefix = f"{level.cpu}."
    added = list(llvm_module.globals.values())[known:]
    names = [fn.name for fn in bodies]
    return names + [
        value.name
        for value in added
        if isinstance(value, ir.Function) and value.name.startswith(prefix)
    ]


def _dispatched(
    llvm_module: ir.Module,
    name: str,
    levels: Sequence[CpuLevel],
    bodies: list[ir.Function],
    suffix: str,
) -> ir.Function:
    """The exported ``<name>_run_buffers<suffix>``: the one body, or a dispatch among them."""
    if len(levels) == 1:
        return bodies[0]
    return emit_dispatch(llvm_module, name, tuple(levels), bodies, suffix)


def _open_pool(entry: _Entry, assignment: BufferAssignment, layout: ScratchLayout) -> Pool:
    """Read the multi-core entry's pool argument in its entry block."""
    block = entry.builder.function.entry_basic_block
    b = ir.IRBuilder(block)
    b.position_before(block.terminator)
    pool = entry.builder.function.args[3]
    return open_pool(b, pool, entry.temp, _most_pointers(assignment), layout)


def _most_pointers(assignment: BufferAssignment) -> int:
    """The most pointers any kernel function takes (outputs, operands, scratch)."""
    counts = [1]
    for step in assignment.program:
        if isinstance(step, Kernel):
            location = assignment.location(step.inst)
            outputs = len(location) if isinstance(location, tuple) else 1
            counts.append(outputs + len(step.inst.operands) + 1)
    return max(counts)


def _constant_globals(
    llvm_module: ir.Module, assignment: BufferAssignment, vectors: Sequence[VectorInfo]
) -> list[ir.Value]:
    """A global for each constant some level's program reads; null for the others."""
    needed = set().union(*(_constants_read(assignment, v) for v in vectors))
    return [
        _constant_global(llvm_module, c) if k in needed else ir.Constant(PTR, None)
        for k, c in enumerate(assignment.constants)
    ]


def _new_entry(
    llvm_module: ir.Module,
    name: str,
    level: CpuLevel,
    constants: list[ir.Value],
    kind: tuple[bool, str],
) -> _Entry:
    """The function running the program at ``level``: the entry point itself, or (``kind``:
    an object with several levels) the level's internal body, which the dispatching entry
    point calls; ``kind``'s suffix ``_mt``: the multi-core program, which takes the pool."""
    multilevel, mt = kind
    fn_name = f"{name}_run_buffers{mt}" + (f".{level.cpu}" if multilevel else "")
    params = [PTR, PTR, PTR, PTR] if mt else [PTR, PTR, PTR]
    fn = ir.Function(llvm_module, ir.FunctionType(I32, params), fn_name)
    fn.attributes.add("nounwind")
    if multilevel:
        fn.linkage = "internal"
    mark_function(fn, level.vector)
    builder = function_builder(fn)  # the entry block: pointers loops and branches use
    args, results, temp = fn.args[:3]
    entry = _Entry(llvm_module, builder, args, results, temp, constants, level.vector)
    entry.flow = ControlFlow(builder)
    entry.multilevel, entry.prefix = multilevel, f"{level.cpu}." if multilevel else ""
    return entry


def _emit_program(
    entry: _Entry, assignment: BufferAssignment, kernel_done: Callable[[], None]
) -> None:
    """The kernels, loops and copies of ``assignment`` into ``entry``'s function."""
    for step in assignment.program:
        _STEPS[type(step)](entry, assignment, step)
        if isinstance(step, Kernel):
            kernel_done()
    for copy in _copy_order(assignment.copies, entry.written_back):
        _copy_result(entry, copy)
    entry.builder.ret(ir.Constant(I32, 0))


def _kernel_step(entry: _Entry, assignment: BufferAssignment, step: Step) -> None:
    assert isinstance(step, Kernel)
    _call_kernel(entry, step.inst, assignment)


def _copy_step(entry: _Entry, assignment: BufferAssignment, step: Step) -> None:
    assert isinstance(step, (CarryIn, Stage, CarryOut, BranchOut))
    inst = step.cond if isinstance(step, BranchOut) else step.loop
    where = f"{step.branch}." if isinstance(step, BranchOut) else ""
    name = f"{type(step).__name__.lower()}.{inst.name}.{where}{step.element}"
    _copy(entry, assignment.copy(step), name, isinstance(step, CarryIn))


def _loop_step(entry: _Entry, assignment: BufferAssignment, step: Step) -> None:
    assert entry.flow is not None and isinstance(step, (LoopStart, LoopTest, LoopEnd))
    if isinstance(step, LoopStart):
        entry.flow.start_loop(step.loop)
    elif isinstance(step, LoopTest):
        predicate = assignment.buffer(step.loop.called[0].root)
        entry.flow.test(step.loop, _load_scalar(entry, predicate, step.loop.called[0].root))
    else:
        entry.flow.end_loop(step.loop)


def _branch_step(entry: _Entry, assignment: BufferAssignment, step: Step) -> None:
    assert entry.flow is not None and isinstance(step, (BranchStart, BranchNext, BranchEnd))
    if isinstance(step, BranchStart):
        selector = step.cond.operands[0]
        value = _load_scalar(entry, assignment.buffer(selector), selector)
        entry.flow.start_branches(step.cond, value)
    elif isinstance(step, BranchNext):
        entry.flow.next_branch(step.cond, step.branch)
    else:
        entry.flow.end_branches(step.cond)


_STEPS: dict[type, Callable[[_Entry, BufferAssignment, Step], None]] = {
    Kernel: _kernel_step,
    CarryIn: _copy_step,
    Stage: _copy_step,
    CarryOut: _copy_step,
    BranchOut: _copy_step,
    LoopStart: _loop_step,
    LoopTest: _loop_step,
    LoopEnd: _loop_step,
    BranchStart: _branch_step,
    BranchNext: _branch_step,
    BranchEnd: _branch_step,
}


def _load_scalar(entry: _Entry, buffer: Buffer, value: Instruction) -> ir.Value:
    """A loop's predicate or a conditional's selector, read where the program runs."""
    return load_element(entry.builder, _pointer(entry, buffer), value.array_shape, [])


def _copy_result(entry: _Entry, copy: ResultCopy) -> None:
    target = Buffer(BufferKind.RESULT, copy.result)
    _copy(entry, Copy(copy.source, target, copy.shape), f"copy.result{copy.result}")


def _copy_order(copies: list[ResultCopy], written_back: dict[int, int]) -> list[ResultCopy]:
    """Result copies first, then the write-backs to arguments, each after every copy that
    reads the argument it overwrites; an unchanged argument needs no write-back."""
    plain = [c for c in copies if c.result not in written_back]
    pending = [
        c
        for c in copies
        if c.result in written_back and c.source != Buffer(BufferKind.ARG, written_back[c.result])
    ]
    ordered: list[ResultCopy] = []
    while pending:
        read = {c.source.index for c in pending if c.source.kind is BufferKind.ARG}
        ready = [c for c in pending if written_back[c.result] not in read]
        if not ready:
            args = sorted(written_back[c.result] for c in pending)
            raise CodegenError(
                f"arguments {args} are updated with each other's values (a cycle, such as a "
                "swap of two variables); aotc cannot write them back in place"
            )
        ordered += ready
        pending = [c for c in pending if c not in ready]
    return plain + ordered


def _copy(entry: _Entry, copy: Copy, name: str, per_call: bool = True) -> None:
    """Copy ``copy``'s array; ``per_call``: a copy run once per call (a loop's carry in, a
    result), not once per iteration of a loop."""
    if copy.source.same_bytes(copy.target):
        return
    # Run once per call, it is one loop over the elements (both buffers hold the array whole,
    # row-major), which LLVM vectorizes as it is: the nest over GRU b1's input [50, 1, 40]
    # had its inner loop unrolled and the outer one vectorized as strided gathers and
    # scatters, 14-23 ms of LLVM time per cpu level. Run per iteration it keeps the nest,
    # which LLVM makes straight-line code (flat, GRU b8's [8, 128] carry ran 1-2 % slower).
    shape = copy.shape.with_dims((copy.shape.size,)) if per_call else copy.shape

    def body(b: ir.IRBuilder, outs: list[ir.Value], ins: list[ir.Value], _: Split | None) -> None:
        emit_store_loop(b, buffer_reader(ins[0], shape), outs[0], shape, keep_inner=per_call)

    source, target = _pointer(entry, copy.source), _pointer(entry, copy.target)
    aligned = [_is_aligned(copy.target), _is_aligned(copy.source)]
    once = _COPY_ONCE_BYTES if per_call else _ONCE_BYTES
    level = _level(entry, shape.byte_size if per_call else 2 * shape.byte_size, once)
    _call_function(entry, name, [target], [source], body, level, aligned=aligned)


def _constants_read(assignment: BufferAssignment, vector: VectorInfo) -> set[int]:
    """Indices of the constants some kernel, copy, loop test or branch reads from their global.

    Weights that only GEMMs read, packed at compile time (``kernel_packed_operands``), are
    left out: their bytes would reach LLVM twice, as the constant and as the packed copy.
    """
    read: list[Buffer] = []
    for step in assignment.program:
        if isinstance(step, Kernel):
            packed = kernel_packed_operands(step.inst, vector)
            ops = step.inst.operands
            read += [assignment.buffer(op) for k, op in enumerate(ops) if k not in packed]
        elif isinstance(step, (CarryIn, Stage, CarryOut, BranchOut)):
            read.append(assignment.copy(step).source)
        elif isinstance(step, LoopTest):
            read.append(assignment.buffer(step.loop.called[0].root))
        elif isinstance(step, BranchStart):
            read.append(assignment.buffer(step.cond.operands[0]))
    read += [copy.source for copy in assignment.copies]
    return {b.index for b in read if b.kind is BufferKind.CONSTANT}


def _constant_global(llvm_module: ir.Module, inst: Instruction) -> ir.GlobalVariable:
    assert inst.literal is not None
    flat = np.ascontiguousarray(inst.literal, inst.array_shape.dtype.numpy).reshape(-1)
    return readonly_global(llvm_module, f"const.{inst.name}", flat.view(np.uint8).data)


def _pointer(entry: _Entry, buffer: Buffer) -> ir.Value:
    """The buffer's address, computed where it is used outside loops and branches.

    Straight-line code computes each pointer just before its kernel: hoisted, thousands of
    pointers (a model with 5,000 inputs) would all be live at once, and LLVM's instruction
    scheduler and register allocator take time quadratic in what is live. Inside a loop or
    branch the pointer is computed once in the entry block, which dominates every block.
    """
    key = Buffer(buffer.kind, buffer.index, buffer.offset)
    if key in entry.pointers:
        return entry.pointers[key]
    if entry.flow is None or not entry.flow.is_open():
        return _materialize(entry, buffer, entry.builder)
    block = entry.builder.function.entry_basic_block
    b = ir.IRBuilder(block)
    b.position_before(block.terminator)
    entry.pointers[key] = _materialize(entry, buffer, b)
    return entry.pointers[key]


def _materialize(entry: _Entry, buffer: Buffer, b: ir.IRBuilder) -> ir.Value:
    if buffer.kind is BufferKind.CONSTANT:
        return entry.constants[buffer.index]
    if buffer.kind is BufferKind.TEMP:
        return b.gep(entry.temp, [i64(buffer.offset)], inbounds=True, source_etype=I8)
    table, index = (
        (entry.args, buffer.index)
        if buffer.kind is BufferKind.ARG
        else (
            (entry.args, entry.written_back[buffer.index])
            if buffer.index in entry.written_back
            else (entry.results, buffer.index)
        )
    )
    slot = b.gep(table, [i64(index)], inbounds=True, source_etype=PTR)
    return b.load(slot, typ=PTR)


def _call_kernel(entry: _Entry, inst: Instruction, assignment: BufferAssignment) -> None:
    parts = kernel_parts(inst)
    if parts is None:
        _call_kernel_part(entry, inst, assignment, None, f"kernel.{inst.name}")
    for k, part in enumerate(parts or []):
        _call_kernel_part(entry, inst, assignment, part, f"kernel.{inst.name}.part{k}")


def _call_kernel_part(
    entry: _Entry,
    inst: Instruction,
    assignment: BufferAssignment,
    part: KernelPart | None,
    name: str,
) -> None:
    """Emit and call the function computing ``inst`` (its ``part``, or all of it)."""
    location = assignment.location(inst)
    outputs = list(location) if isinstance(location, tuple) else [location]
    numbers = part.operands if part is not None else range(len(inst.operands))
    operands = inst.operands[numbers.start : numbers.stop]
    operand_buffers = [assignment.buffer(op) for op in operands]
    emitter = kernel_emitter(inst)
    first = outputs[0]
    aliased = frozenset(
        n
        for n, buf in enumerate(operand_buffers)
        if isinstance(first, Buffer) and buf.same_bytes(first)
    )
    touched = byte_size(inst) + sum(byte_size(op) for op in operands)
    level = _level(entry, touched)
    # the scratch pointer travels as one more input, after the operands
    scratch = assignment.scratch if kernel_scratch_bytes(inst, level.vector) > 0 else None
    extra = [scratch] if scratch is not None else []
    splits = entry.layout is not None and part is None
    streamed = _streamed_bytes(operands, assignment)
    most_tasks = worth_tasks(kernel_flops(inst), touched, _input_split(entry, operands), streamed)
    aligned = [_is_aligned(buf) for buf in [*outputs, *operand_buffers, *extra]]
    same_as = _written_in_place([*outputs, *operand_buffers, *extra], len(outputs))  # type: ignore[arg-type]
    split = most_tasks if splits else 0
    call: tuple[object, ...] = (level.prefix, repr(level.vector), len(outputs), tuple(aligned))
    call += (tuple(same_as), split, bool(extra), tuple(sorted(aliased)), repr(part))

    def body(
        b: ir.IRBuilder, outs: list[ir.Value], ins: list[ir.Value], split: Split | None
    ) -> None:
        operand_ptrs = ins[: len(operands)]
        readers = [_operand_reader(op, ptr) for op, ptr in zip(operands, operand_ptrs, strict=True)]
        scratch_ptr = ins[len(operands)] if extra else None
        io = KernelIO(
            inst, outs, readers, list(operand_ptrs), scratch_ptr, level.vector, aliased,
            part=part, split=split,
        )  # fmt: skip
        emitter(b, io)

    out_ptrs = [_pointer(entry, buf) for buf in outputs]  # type: ignore[arg-type]
    in_ptrs = [_pointer(entry, buf) for buf in [*operand_buffers, *extra]]
    _call_function(
        entry,
        name,
        out_ptrs,
        in_ptrs,
        body,
        level,
        aligned=aligned,
        same_as=same_as,
        split=split,
        scratch=bool(extra),
        twin=lambda: twin_key(inst, call),
    )
    if entry.emitted[level.prefix + name].tasks > 1:
        entry.split.add(inst.name)


def _input_split(entry: _Entry, operands: Sequence[Instruction]) -> bool:
    """Whether the kernel's largest operand came from a split kernel: spread over the cores'
    caches, where a split of this kernel finds it and a whole run would gather it."""
    largest = max(operands, key=byte_size, default=None)
    return largest is not None and largest.name in entry.split


def _streamed_bytes(operands: Sequence[Instruction], assignment: BufferAssignment) -> int:
    """The bytes of the kernel's constant operands where the program's constants are too many
    to stay in a core's caches between runs (``parallel.CACHED_CONSTANT_BYTES``), else 0."""
    total = sum(byte_size(c) for c in assignment.constants)
    if total <= CACHED_CONSTANT_BYTES:
        return 0
    return sum(byte_size(op) for op in operands if op.opcode is Opcode.CONSTANT)


def _operand_reader(operand: Instruction, ptr: ir.Value) -> ElementGenerator:
    """Scalar constants become immediates; everything else is loaded from its buffer."""
    if operand.opcode is Opcode.CONSTANT and operand.array_shape.size == 1:
        return make_generator(operand, [])
    return buffer_reader(ptr, operand.array_shape)


def _written_in_place(buffers: Sequence[Buffer], num_outputs: int) -> list[int | None]:
    """Per pointer, the (first) output it names the bytes of when the kernel computes that
    output in place over it (else None): the kernel gets one pointer for both, so LLVM sees a
    read and a write of the same element as such (and vectorizes the loop without alias
    checks that the overlap would fail), and every pointer can stay ``noalias``.
    """
    keys = [(b.kind, b.index, b.offset) for b in buffers]
    first = {key: k for k, key in reversed(list(enumerate(keys[:num_outputs])))}
    return [first[key] if first.get(key, k) != k else None for k, key in enumerate(keys)]


def _is_aligned(buffer: object) -> bool:
    return isinstance(buffer, Buffer) and buffer.kind in (BufferKind.TEMP, BufferKind.CONSTANT)


@dataclass(frozen=True)
class _Level:
    """How one kernel is emitted: its vector shape, and the prefix of its function's name
    ("" for a kernel emitted once for every level)."""

    vector: VectorInfo
    prefix: str


# A kernel touching at most this many bytes (operands and results) gains nothing from wider
# vectors: it fits the vector registers of one AVX-512 core (32 x 64 bytes) many times over
# in time, and its call costs more than the difference. Emitted once, at the lowest level.
_ONCE_BYTES = 2048
# A copy's loop is the same at every level but for its vector width: up to this many bytes
# copied, 16-byte moves take a few hundred cycles more than 64-byte ones (under 0.2 us), and
# each level's copy of the loop costs LLVM 4-6 ms. Copies that small, run once per call, are
# emitted once.
_COPY_ONCE_BYTES = 8192


def _level(entry: _Entry, touched_bytes: int, once: int = _ONCE_BYTES) -> _Level:
    """The level a kernel touching ``touched_bytes`` is emitted at in ``entry``'s program (the
    lowest, for every program, at ``once`` bytes or fewer)."""
    if entry.multilevel and touched_bytes <= once:
        return _Level(entry.baseline, "")
    return _Level(entry.vector, entry.prefix)


def _call_function(
    entry: _Entry,
    name: str,
    outputs: Sequence[ir.Value],
    inputs: Sequence[ir.Value],
    body: KernelBody,
    level: _Level,
    aligned: Sequence[bool] = (),
    same_as: Sequence[int | None] = (),
    split: int = 0,
    scratch: bool = False,
    twin: Callable[[], tuple[object, list[Instruction]]] | None = None,
) -> None:
    """Emit ``void name(ptr noalias out..., ptr noalias in...)`` at ``level`` and call it.

    A pointer whose ``same_as`` names an output (an output computed in place over it) is no
    argument of its own: the body reads it through that output's. With ``split`` (the most
    tasks the kernel is worth) the body is offered a split (two more ``i64`` arguments,
    ``loops.Split``); ``scratch``: the last input
    is the kernel's scratch. A function emitted before (by another level's program, for a
    kernel emitted once, or by this level's single-threaded program) is called again;
    ``twin``: makes the function's ``replay.twin_key`` and constants.
    """
    pointers = [*outputs, *inputs]
    own = [k for k in range(len(pointers)) if k >= len(same_as) or same_as[k] is None]
    known = entry.emitted.get(level.prefix + name)
    if known is None:
        shape = (len(pointers), len(outputs))

        def emit() -> KernelFunction:
            made = _emit_function(entry, name, own, shape, body, level, aligned, same_as, split)
            return replace(made, scratch=len(own) - 1) if scratch else made

        known = entry.emitted[level.prefix + name] = _made(entry, level.prefix + name, twin, emit)
    known.call(entry.builder, [pointers[k] for k in own], entry.pool, entry.layout)  # type: ignore[arg-type]


def _made(
    entry: _Entry,
    name: str,
    twin: Callable[[], tuple[object, list[Instruction]]] | None,
    emit: Callable[[], KernelFunction],
) -> KernelFunction:
    """The kernel function ``name``: made from the text of the first function of its
    ``twin`` key where one was emitted (``replay``), else emitted by ``emit`` (and recorded,
    the first of its key, for its twins)."""
    if twin is None or entry.twins is None:
        return emit()
    key, constants = twin()
    model = entry.twins.get(key)
    if model is not None:
        tools = (packed_weights, share_text)
        made = replay(entry.module, model, name, constants, tools)
        if made is not None:
            return made
    with recording(entry.module, name, constants) as rec:
        rec.made = emit()
    if model is None and rec.valid:
        entry.twins[key] = rec
    return rec.made


def _emit_function(
    entry: _Entry,
    name: str,
    own: list[int],
    counts: tuple[int, int],
    body: KernelBody,
    level: _Level,
    aligned: Sequence[bool],
    same_as: Sequence[int | None],
    split: int,
) -> KernelFunction:
    """The function ``_call_function`` calls (see there), emitted; ``counts``: of pointers,
    of outputs."""
    num_pointers, num_outputs = counts
    ranges = [I64, I64] if split else []
    fn_type = ir.FunctionType(VOID, [PTR] * len(own) + ranges)
    fn = ir.Function(entry.module, fn_type, level.prefix + name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")  # keeps -O3 time linear in the number of kernels
    mark_function(fn, level.vector)
    args = dict(zip(own, fn.args[: len(own)], strict=True))
    for k, arg in args.items():
        arg.add_attribute("noalias")
        arg.add_attribute("captures(none)")
        if k < len(aligned) and aligned[k]:
            arg.attributes.align = ALIGN
    params = [args[k] if k in args else args[same_as[k]] for k in range(num_pointers)]  # type: ignore[index]
    builder = function_builder(fn)
    offered = Split(fn.args[-2], fn.args[-1]) if split else None
    body(builder, params[:num_outputs], params[num_outputs:], offered)
    builder.ret_void()
    leave_vector_loops_rolled(fn)
    if offered is None:
        return KernelFunction(fn, None, None, level.vector)
    units = offered.units or 1
    return KernelFunction(fn, units, None, level.vector, min(units, split))


def _emit_typed_entry(
    llvm_module: ir.Module, name: str, run_buffers: ir.Function, num_args: int, num_results: int
) -> None:
    fn = ir.Function(
        llvm_module, ir.FunctionType(I32, [PTR] * (num_args + num_results + 1)), f"{name}_run"
    )
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    args = _pointer_array(b, fn.args[:num_args])
    results = _pointer_array(b, fn.args[num_args : num_args + num_results])
    b.ret(b.call(run_buffers, [args, results, fn.args[-1]]))


#: Pointers ``<name>_run`` stores into its tables per helper call: thousands of stores in one
#: function cost LLVM's store optimizations time quadratic in them.
POINTERS_PER_STORE = 32


def _pointer_array(b: ir.IRBuilder, pointers: Sequence[ir.Value]) -> ir.Value:
    """An array holding ``pointers``: stored in place, or by helpers when there are many."""
    count = len(pointers)
    if count <= POINTERS_PER_STORE:
        array = alloca(b, ir.ArrayType(PTR, max(count, 1)))
        _store_pointers(b, array, pointers)
        return array
    step = POINTERS_PER_STORE
    array = alloca(b, ir.ArrayType(PTR, -(-count // step) * step))  # whole helper calls
    store = _pointer_store_helper(b.module)
    padding = [ir.Constant(PTR, None)] * (-count % step)
    padded = [*pointers, *padding]
    for k in range(0, count, step):
        slot = b.gep(array, [i64(0), i64(k)], inbounds=True, source_etype=array.allocated_type)
        b.call(store, [slot, *padded[k : k + step]])
    return array


def _store_pointers(b: ir.IRBuilder, array: ir.Value, pointers: Sequence[ir.Value]) -> None:
    for k, ptr in enumerate(pointers):
        b.store(ptr, b.gep(array, [i64(k)], inbounds=True, source_etype=PTR))


def _pointer_store_helper(module: ir.Module) -> ir.Function:
    """``void store(ptr to, ptr p0, ..., p31)``: to[i] = p_i (one per module)."""
    name = "aotc.store_pointers"
    if name in module.globals:
        return module.globals[name]
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR] * (1 + POINTERS_PER_STORE)), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")  # inlined, the stores would be one block again
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    _store_pointers(b, fn.args[0], fn.args[1:])
    b.ret_void()
    return fn
