"""The object's side of multi-core execution: the caller's thread pool, and kernels run by it.

``<name>_run_buffers_mt(args, results, temp, pool)`` runs the same program as
``<name>_run_buffers``, calling the same kernel functions, except that a kernel the emitter
offered a split (``loops.Split``) and that claimed one runs as ``pool->parallel_for(ctx, n,
task, slots)``: task ``i`` of ``n`` calls the kernel on units ``[i*U/n, (i+1)*U/n)`` of the
``U`` its outer loop has. The object holds no threads, locks or library calls: the pool is the
caller's (``aotc_threadpool`` in the model header)::

    typedef struct aotc_threadpool {
      void *ctx;
      int num_threads;
      void (*parallel_for)(void *ctx, int n, void (*fn)(void *arg, int i), void *arg);
    } aotc_threadpool;

Each output element is computed by one task in the serial order, so results are bit-identical
to the single-threaded entry. Task ``i > 0`` of a kernel that uses scratch (GEMM packing
buffers) gets region ``i`` of the per-thread scratch past the program's own temp bytes:
``<name>_temp_bytes_mt(num_threads)`` counts them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from llvmlite import ir

from aotc.abi import ALIGN
from aotc.codegen.irtypes import I8, I32, I64, PTR, VOID, alloca, i64
from aotc.codegen.loops import entry_alloca, for_range, function_builder
from aotc.codegen.vector import VectorInfo, mark_function

#: ``aotc_threadpool``: ctx, num_threads, parallel_for.
POOL = ir.LiteralStructType([PTR, I32, PTR])
#: ``void fn(void *arg, int i)``: one task.
TASK = ir.FunctionType(VOID, [PTR, I32])
#: ``void parallel_for(void *ctx, int n, fn, void *arg)``.
PARALLEL_FOR = ir.FunctionType(VOID, [PTR, I32, PTR, PTR])
#: Slots of the task argument array before the kernel's pointers: the task count and the
#: first per-thread scratch region.
HEADER_SLOTS = 2


#: What the cost model takes one core to do per nanosecond: arithmetic operations (the GEMM
#: engine's convolutions run at 100-250 GFLOP/s, depthwise ones and epilogues slower) and
#: bytes of operands and results read and written (mostly in the caches).
FLOPS_PER_NS = 150
BYTES_PER_NS = 100
#: The least estimated work (ns) worth a task of its own. A ``parallel_for`` of the shipped
#: pool costs about half a microsecond to hand out and join (cache lines change cores both
#: ways), and what one task writes and a later kernel reads on another core moves between
#: the cores' caches: measured, kernels of a few microseconds (the small fixtures', an LSTM
#: step's GEMV) get slower split in two, kernels of over 10 us faster.
TASK_NS = 6000.0
#: The same for a kernel whose largest operand a split kernel wrote: that operand is already
#: spread over the cores (a whole run would gather it), so only the dispatch is to be won
#: back (a ResNet block's kernels of 5-8 us, an EfficientNet squeeze-excite scaling).
LOCAL_TASK_NS = 2500.0


#: Bytes per nanosecond at which a kernel reads constants the run streams from the shared
#: cache or memory: those of a model whose constants exceed ``CACHED_CONSTANT_BYTES`` leave a
#: core's caches between runs. Measured: EfficientNetB0's squeeze-excite dense layers (230 KB
#: of weights, a few KFLOP) take about 8 us each. Split, each core streams its share, and no
#: core's cache holds what another one wrote (``LOCAL_TASK_NS`` buys a task).
STREAMED_BYTES_PER_NS = 25
CACHED_CONSTANT_BYTES = 4 << 20


def worth_tasks(
    flops: int, touched_bytes: int, input_split: bool = False, streamed_bytes: int = 0
) -> int:
    """The most tasks a kernel of ``flops`` touching ``touched_bytes`` is worth splitting
    into, one per ``TASK_NS`` (``LOCAL_TASK_NS`` with ``input_split``: its largest operand
    came from a split kernel, or where most of its bytes are ``streamed_bytes``, constants
    read from memory) of estimated single-core work; 0: under two, it runs whole."""
    local = input_split or 2 * streamed_bytes > touched_bytes
    task_ns = LOCAL_TASK_NS if local else TASK_NS
    cached = touched_bytes - streamed_bytes
    work = flops / FLOPS_PER_NS + cached / BYTES_PER_NS + streamed_bytes / STREAMED_BYTES_PER_NS
    tasks = int(work // task_ns)
    return tasks if tasks >= 2 else 0


@dataclass(frozen=True)
class ScratchLayout:
    """Where per-thread scratch lives in ``temp``: region ``i >= 1`` at ``offset + (i-1) *
    stride`` (region 0 is the program's own); no regions when ``stride`` is 0."""

    temp_bytes: int
    stride: int

    @property
    def offset(self) -> int:
        return -(-self.temp_bytes // ALIGN) * ALIGN

    def bytes_for(self, threads: int) -> int:
        """``<name>_temp_bytes_mt(threads)``."""
        if threads <= 1 or self.stride == 0:
            return self.temp_bytes
        return self.offset + (threads - 1) * self.stride


def scratch_layout(temp_bytes: int, scratch_bytes: int) -> ScratchLayout:
    """The layout for a program of ``temp_bytes`` whose kernels need ``scratch_bytes``."""
    return ScratchLayout(temp_bytes, -(-scratch_bytes // ALIGN) * ALIGN)


@dataclass(frozen=True)
class Pool:
    """The caller's pool as the multi-core entry point sees it (loaded once, at its start)."""

    ctx: ir.Value
    threads: ir.Value  # i64, at least 1 (1 for a NULL pool)
    parallel_for: ir.Value
    slots: ir.Value  # the task argument array, ``HEADER_SLOTS`` + most kernel pointers
    scratch: ir.Value  # region 1 of the per-thread scratch


def open_pool(
    b: ir.IRBuilder, pool: ir.Value, temp: ir.Value, slots: int, layout: ScratchLayout
) -> Pool:
    """Read ``pool`` (NULL: one thread) where ``b`` is, and make the argument array."""
    null = ir.Constant(PTR, None)
    single = alloca(b, POOL)
    b.store(ir.Constant(POOL, [null, ir.Constant(I32, 1), null]), single)
    safe = b.select(b.icmp_unsigned("==", pool, null), single, pool)
    ctx = b.load(_field(b, safe, 0), typ=PTR)
    count = b.sext(b.load(_field(b, safe, 1), typ=I32), I64)
    run = b.load(_field(b, safe, 2), typ=PARALLEL_FOR.as_pointer())
    threads = b.select(b.icmp_signed("<", count, i64(1)), i64(1), count)
    array = alloca(b, ir.ArrayType(PTR, HEADER_SLOTS + slots))
    scratch = b.gep(temp, [i64(layout.offset)], source_etype=I8)
    return Pool(ctx, threads, run, array, scratch)


def _field(b: ir.IRBuilder, pool: ir.Value, k: int) -> ir.Value:
    return b.gep(pool, [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=POOL)


@dataclass(frozen=True)
class KernelFunction:
    """An emitted kernel (or copy) function, called by every program of its level.

    With ``units`` it takes ``(ptr..., i64 lo, i64 hi)`` and its outer loop has ``units``
    iterations (1: it claimed no split and ignores the range), worth at most ``tasks`` tasks
    (its size); ``scratch`` is the index of its scratch pointer among the pointers, if any.
    """

    fn: ir.Function
    units: int | None = None
    scratch: int | None = None
    vector: VectorInfo | None = None
    tasks: int = 1

    def call(
        self, b: ir.IRBuilder, args: Sequence[ir.Value], pool: Pool | None, layout: ScratchLayout
    ) -> None:
        """Call it on ``args``: on the pool's threads where it is split, else whole."""
        if self.units is None:
            b.call(self.fn, args)
        elif pool is not None and self.tasks > 1:
            call_split(b, pool, self, args, layout)
        else:
            b.call(self.fn, [*args, i64(0), i64(self.units)])


def call_split(
    b: ir.IRBuilder,
    pool: Pool,
    kernel: KernelFunction,
    args: Sequence[ir.Value],
    layout: ScratchLayout,
) -> None:
    """Run ``kernel`` on ``min(threads, kernel.tasks)`` tasks of the pool, or whole when that
    is 1."""
    assert kernel.units is not None
    units, most = i64(kernel.units), i64(kernel.tasks)
    tasks = b.select(b.icmp_unsigned("<", pool.threads, most), pool.threads, most)
    with b.if_else(b.icmp_unsigned(">", tasks, i64(1))) as (many, one):
        with many:
            values = [b.inttoptr(tasks, PTR), pool.scratch, *args]
            for k, value in enumerate(values):
                b.store(
                    value,
                    b.gep(pool.slots, [i64(0), i64(k)], source_etype=pool.slots.allocated_type),
                )
            task = _task_function(b.module, kernel, len(args), layout)
            b.call(pool.parallel_for, [pool.ctx, b.trunc(tasks, I32), task, pool.slots])
        with one:
            b.call(kernel.fn, [*args, i64(0), units])


def _task_function(
    module: ir.Module, kernel: KernelFunction, count: int, layout: ScratchLayout
) -> ir.Function:
    """``void <kernel>.task(ptr slots, i32 i)``: the kernel on task ``i``'s units."""
    assert kernel.units is not None and kernel.vector is not None
    name = f"{kernel.fn.name}.task"
    if name in module.globals:
        return module.globals[name]
    fn = ir.Function(module, TASK, name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    mark_function(fn, kernel.vector)
    b = function_builder(fn)
    slots, number = fn.args
    loaded = [
        b.load(b.gep(slots, [i64(k)], source_etype=PTR), typ=PTR)
        for k in range(HEADER_SLOTS + count)
    ]
    tasks, scratch, *args = loaded
    tasks, i = b.ptrtoint(tasks, I64), b.zext(number, I64)
    divide, bits = _divide_function(module), i64(kernel.units.bit_length())
    lo = b.call(divide, [b.mul(i, i64(kernel.units)), tasks, bits])
    hi = b.call(divide, [b.mul(b.add(i, i64(1)), i64(kernel.units)), tasks, bits])
    if kernel.scratch is not None:
        own = b.gep(scratch, [b.mul(b.sub(i, i64(1)), i64(layout.stride))], source_etype=I8)
        first = b.icmp_unsigned("==", i, i64(0))
        args[kernel.scratch] = b.select(first, args[kernel.scratch], own)
    b.call(kernel.fn, [*args, lo, hi])
    b.ret_void()
    return fn


def _divide_function(module: ir.Module) -> ir.Function:
    """``i64 aotc.divide(i64 n, i64 d, i64 bits)``: ``n / d`` for a quotient below ``2**bits``
    (a task's bound is at most the units), by one shift and subtraction per quotient bit,
    since a division by a runtime value is a library call on 32-bit targets (``__udivdi3``,
    ``__aeabi_uldivmod``; ``__aeabi_uidiv`` even for 32 bits on ARM without a divider), and
    the object calls no library. A quotient below ``2**bits`` leaves ``n >> bits`` below
    ``d``: the remainder starts there."""
    name = "aotc.divide"
    if name in module.globals:
        return module.globals[name]
    fn = ir.Function(module, ir.FunctionType(I64, [I64, I64, I64]), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    b = function_builder(fn)
    n, d, bits = fn.args
    quotient, rest = entry_alloca(b, I64, "q"), entry_alloca(b, I64, "r")
    b.store(i64(0), quotient)
    b.store(b.lshr(n, bits), rest)
    with for_range(b, bits, "bit") as k:
        bit = b.sub(b.sub(bits, i64(1)), k)
        r = b.or_(b.shl(b.load(rest, typ=I64), i64(1)), b.and_(b.lshr(n, bit), i64(1)))
        take = b.icmp_unsigned(">=", r, d)
        b.store(b.select(take, b.sub(r, d), r), rest)
        b.store(b.or_(b.load(quotient, typ=I64), b.shl(b.zext(take, I64), bit)), quotient)
    b.ret(b.load(quotient, typ=I64))
    return fn


def emit_temp_bytes_mt(
    module: ir.Module, name: str, layout: ScratchLayout, size: ir.IntType
) -> None:
    """``size_t <name>_temp_bytes_mt(int num_threads)``."""
    fn = ir.Function(module, ir.FunctionType(size, [I32]), f"{name}_temp_bytes_mt")
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    threads = b.sext(fn.args[0], size)
    extra = b.mul(b.sub(threads, ir.Constant(size, 1)), ir.Constant(size, layout.stride))
    many = b.add(ir.Constant(size, layout.offset), extra)
    single = ir.Constant(size, layout.temp_bytes)
    one = b.icmp_signed("<=", threads, ir.Constant(size, 1))
    b.ret(b.select(one, single, many) if layout.stride else single)
