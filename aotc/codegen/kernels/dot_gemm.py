"""f32 dots on the packed GEMM engine (``gemm.py``): shape matching, weights, batches, epilogues.

A dot takes this path when, after reading its dimension numbers, it is ``batch x A[M,K] @
B[K,N]`` on row-major buffers: batch dimensions leading and in the same order on both sides,
the lhs contracting on its last dimension (any number of free dimensions before it flatten
into M), the rhs ``[K,N]`` or ``[N,K]`` (TF's ``transpose_b``: packed from rows). A constant
unbatched B (the weights) is packed at compile time into a read-only global in the layout the
micro-kernel reads; a runtime B is packed per block into the shared scratch. Each batch calls
the GEMM function once with offset pointers. Everything else keeps the loop kernel.

A fused elementwise epilogue (kOutput fusions) runs in the tile store: ``GemmOptions.epilogue``
gets one vector of ``w`` columns of a row and evaluates the fused computation on it with vector
generators (``elemental_vector.py``): a bias is one vector load, relu one compare and select,
gelu one vectorized erf, instead of ``w`` extract/compute/insert chains per op that LLVM's SLP
vectorizer had to re-form (slowly, and not always). Instructions without a vector form fall
back to their element generators lane by lane. The generators read the fusion's operands
through the GEMM function's extra pointer arguments, since the tile store runs in its own
function.

Dots with a short K stay on the loop kernel (``SMALL_GEMM_K``): there the GEMM's packing, calls
and per-tile-kind micro-kernels cost more (run time, compile time, scratch) than they win.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from llvmlite import ir

from aotc.codegen.irtypes import I32, I64, PTR, LazyBytes, add_nuw, i64, readonly_global
from aotc.codegen.kernels.base import ElementGenerator, buffer_reader
from aotc.codegen.kernels.elemental import delinearize, make_generator
from aotc.codegen.kernels.elemental_vector import (
    VectorGenerator,
    f32_reader,
    lanewise,
    splat_generator,
)
from aotc.codegen.kernels.gemm import GemmOptions, emit_gemm, extra_args, gemm_split
from aotc.codegen.kernels.gemm_plan import (
    KC,
    GemmPlan,
    gemm_scratch_bytes,
    pack_b,
    packed_b_bytes,
    plan_gemm,
)
from aotc.codegen.kernels.gemm_tile import Epilogue, gep
from aotc.codegen.loops import Split, for_range
from aotc.codegen.replay import note_pack
from aotc.codegen.vector import VectorInfo
from aotc.hlo.ir import DotDims, Instruction, Opcode
from aotc.hlo.shape import PrimitiveType

#: Dots (M > 1) contracting over at most this many elements keep the loop kernel. LLVM unrolls
#: the loop kernel's short K loop completely and vectorizes it along N, with no packing, no
#: scratch and no per-tile-kind functions; from K = 32 on its serial K reduction loses badly.
#: Measured on znver4 (AVX-512), constant B, median ns per dot, loop / GEMM:
#: M=4 N=16: K=8 32/37, K=16 45/51, K=32 120/68; M=16 N=16: K=16 109/300, K=32 236/408;
#: M=16 N=64: K=16 401/568, K=32 958/831; M=64 N=8: K=16 429/725; K=4 is a tie (+-20%).
#: GEMV (M = 1) ties or wins at every K, and K >= 64 is 5-40x faster on the GEMM engine.
SMALL_GEMM_K = 16

#: GEMMs of at most this many column panels read A in place instead of packing it: packing
#: (a transpose into ``[kc][mr]`` panels) costs about ``nr / N`` of the tiles' work, and an
#: unpacked A only changes which addresses the micro-kernel's broadcast loads read. Measured
#: on AVX-512 (nr = 32), packed / direct: 8 x [64,64]@[64,32] 25/11.5 us, [128,512]@[512,128]
#: 101/89 us, [1024,1024]@[1024,128] 1.60/1.31 ms, but [1024,1024]@[1024,512] 8.7/9.4 ms.
A_DIRECT_PANELS = 4

#: The longest K an in-place output fusion computes in one K block (``single_pass_form``):
#: Keras' FFN projection back from 512 (or 4x the model width) features writes over its
#: residual input.
SINGLE_PASS_K = 1024


@dataclass(frozen=True)
class GemmDot:
    """A dot as ``batch`` GEMMs ``[M,K] @ [K,N]``; the lhs free dims flatten into M."""

    batch_dims: tuple[int, ...]
    m: int
    n: int
    k: int
    lhs_free: tuple[int, ...]
    b_transposed: bool
    b_constant: np.ndarray | None  # the rhs literal when it is an unbatched constant
    kc: int = KC  # the K block: partial sums pass through C when K is longer

    @property
    def batch(self) -> int:
        return math.prod(self.batch_dims)

    def plan(self, info: VectorInfo) -> GemmPlan:
        b_constant = self.b_constant is not None
        return plan_gemm(self.m, self.n, self.k, info, kc=self.kc, b_constant=b_constant)

    def scratch_bytes(self, info: VectorInfo) -> int:
        return gemm_scratch_bytes(self.plan(info), self.b_constant is not None)


def gemm_dot(dot: Instruction, rhs_source: Instruction | None = None) -> GemmDot | None:
    """The GEMM form of ``dot``, or None when it needs the loop kernel.

    ``rhs_source`` is the instruction whose buffer holds the rhs (a fusion's operand when the
    dot is fused; default: the dot's own operand); a constant there is packed at compile time.
    """
    dims = dot.attrs_as(DotDims)
    lhs, rhs = (op.array_shape for op in dot.operands)
    if any(s.dtype is not PrimitiveType.F32 for s in (lhs, rhs, dot.array_shape)):
        return None
    nb = len(dims.lhs_batch)
    leading = tuple(range(nb))
    if len(dims.lhs_contracting) != 1 or not dims.lhs_batch == dims.rhs_batch == leading:
        return None
    if dims.lhs_contracting[0] != lhs.rank - 1:
        return None
    if rhs.rank != nb + 2 or dims.rhs_contracting[0] not in (nb, nb + 1):
        return None
    transposed = dims.rhs_contracting[0] == nb + 1
    n, k = rhs.dims[nb + (0 if transposed else 1)], lhs.dims[-1]
    lhs_free = tuple(lhs.dims[nb:-1])
    source = rhs_source if rhs_source is not None else dot.operands[1]
    constant = source.literal if source.opcode is Opcode.CONSTANT and nb == 0 else None
    spec = GemmDot(tuple(lhs.dims[:nb]), math.prod(lhs_free), n, k, lhs_free, transposed, None)
    if constant is not None:
        weights = np.asarray(constant, np.float32).reshape(rhs.dims)
        return _with_constant(spec, weights.T if transposed else weights)
    if _too_small(spec) or (spec.m == 1 and transposed):
        return None  # GEMV streams row-major B only
    return spec


def _with_constant(spec: GemmDot, weights: np.ndarray) -> GemmDot | None:
    if _too_small(spec):
        return None
    return GemmDot(spec.batch_dims, spec.m, spec.n, spec.k, spec.lhs_free, False, weights)


def _too_small(spec: GemmDot) -> bool:
    """Empty, or so short in K that the loop kernel wins (``SMALL_GEMM_K``)."""
    return min(spec.m, spec.n, spec.k) == 0 or (spec.m > 1 and spec.k <= SMALL_GEMM_K)


def single_pass(spec: GemmDot, info: VectorInfo) -> bool:
    """Whether the GEMM writes each element of C exactly once (no partial sums in C)."""
    plan = spec.plan(info)
    return spec.b_constant is not None if plan.gemv else plan.k <= plan.kc


def single_pass_form(spec: GemmDot, info: VectorInfo) -> GemmDot | None:
    """``spec``, or the same GEMM with all of K in one block when that makes it single-pass
    and K is at most ``SINGLE_PASS_K`` (its A and B panels then outgrow L1, which costs far
    less than the loop kernel); None when neither writes each element of C once."""
    if single_pass(spec, info):
        return spec
    if spec.k > SINGLE_PASS_K or spec.plan(info).gemv:
        return None
    return replace(spec, kc=spec.k)


# ---- emission --------------------------------------------------------------------------------

#: The epilogue's view of one output element: (builder, dot value, dot output index) -> value.
ElementEpilogue = Callable[[ir.IRBuilder, ir.Value, Sequence[ir.Value]], ir.Value]
#: Builds the element epilogue inside the tile function from the extra pointer arguments.
EpilogueFactory = Callable[[ir.IRBuilder, list[ir.Value]], ElementEpilogue]
#: The epilogue's view of a piece of a row: (builder, ``<w x float>`` dot values, dot output
#: index of lane 0) -> ``<w x float>``; the lanes run along the last (N) dimension.
VectorEpilogue = Callable[[ir.IRBuilder, ir.Value, Sequence[ir.Value]], ir.Value]
#: Builds the vector epilogue inside the tile function from the extra pointer arguments.
VectorEpilogueFactory = Callable[[ir.IRBuilder, list[ir.Value]], VectorEpilogue]


@dataclass(frozen=True)
class GemmCall:
    """The pointers one GEMM dot reads and writes, in the calling kernel's function."""

    out: ir.Value
    lhs: ir.Value
    rhs: ir.Value
    scratch: ir.Value | None
    extras: Sequence[ir.Value] = ()  # pointers the epilogue factory reads
    split: Split | None = None  # the kernel's offered split (``loops.Split``), if any


def emit_gemm_dot(
    b: ir.IRBuilder,
    spec: GemmDot,
    info: VectorInfo,
    call: GemmCall,
    epilogue: EpilogueFactory | None = None,
    vector_epilogue: VectorEpilogueFactory | None = None,
    rolled: bool = False,
) -> None:
    """Compute the dot into ``call.out`` with one GEMM call per batch (its units in the
    range of ``call.split``, claimed here: batches times ``gemm_split`` units).

    The fused epilogue, if any, is given per vector (``vector_epilogue``, preferred) or per
    element (``epilogue``, applied lane by lane); a ``rolled`` one (long: transcendental
    functions) runs in a loop over each tile's rows (``gemm_tile.store_tile``).
    """
    plan = spec.plan(info)
    n_extra = 1 + len(call.extras)  # the batch index travels as a pointer-sized integer
    if epilogue is not None:
        assert vector_epilogue is None, "one epilogue at most"
        vector_epilogue = lanewise_epilogue(epilogue)
    options = GemmOptions(
        b_packed=spec.b_constant is not None,
        epilogue=_tile_epilogue(spec, vector_epilogue, n_extra) if vector_epilogue else None,
        extra_args=n_extra,
        b_transposed=spec.b_transposed,
        a_direct=not plan.gemv and plan.n <= A_DIRECT_PANELS * plan.nr,
        rolled_epilogue=rolled,
    )
    name = f"{b.function.name}.gemm"
    gemm = emit_gemm(b.module, name, plan, info, options)
    rhs = packed_weights(b.module, name, plan, spec.b_constant) if options.b_packed else call.rhs
    scratch = call.scratch if call.scratch is not None else ir.Constant(PTR, None)
    strides = (spec.m * spec.n, spec.m * spec.k, 0 if options.b_packed else spec.k * spec.n)
    units = gemm_split(plan, options.b_packed)[1]
    (first, stop), within = batch_range(b, spec.batch, units, call.split)
    with for_range(b, stop, "batch", first) as batch:
        bases = (call.out, call.lhs, rhs)
        ptrs = [gep(b, p, b.mul(batch, i64(s))) for p, s in zip(bases, strides, strict=True)]
        bounds = within(b, batch)
        b.call(gemm, [*ptrs, scratch, *bounds, b.inttoptr(batch, PTR), *call.extras])


#: Per batch index, the range of that batch's GEMM units a call computes.
UnitRange = Callable[[ir.IRBuilder, ir.Value], tuple[ir.Value, ir.Value]]


def batch_range(
    b: ir.IRBuilder, batch: int, units: int, split: Split | None
) -> tuple[tuple[int | ir.Value, int | ir.Value], UnitRange]:
    """The batches ``[first, stop)`` a call of ``batch`` GEMMs of ``units`` each runs, and
    which units of each: all of them, or those in ``split``'s range (claimed here)."""
    if split is None:
        return (0, batch), lambda b, n: (i64(0), i64(units))
    lo, hi = split.claim(batch * units)
    # 32-bit divisions by a constant: multiplies, never a library call on 32-bit targets
    assert batch * units < 1 << 31

    def per_batch(value: ir.Value) -> ir.Value:
        return b.zext(b.udiv(b.trunc(value, I32), ir.Constant(I32, units)), I64)

    first, stop = per_batch(lo), per_batch(b.add(hi, i64(units - 1)))

    def within(b: ir.IRBuilder, n: ir.Value) -> tuple[ir.Value, ir.Value]:
        done = b.mul(n, i64(units))
        return b.sub(lo, done), b.sub(hi, done)

    return (first, stop), within


# module -> (weights' memory, packed layout) -> (the weights, kept alive so their memory is
# not reused, and the global holding them packed)
_PACKED: weakref.WeakKeyDictionary[
    ir.Module, dict[tuple[object, ...], tuple[np.ndarray, ir.GlobalVariable]]
] = weakref.WeakKeyDictionary()


def packed_weights(
    module: ir.Module, name: str, plan: GemmPlan, weights: np.ndarray | None
) -> ir.GlobalVariable:
    """Constant weights packed for ``plan`` at compile time, as a read-only global.

    The cpu levels of a portable object pack the same weights in one layout where their tiles
    allow (``gemm_plan.plan_gemm``): the first level to ask emits the global, the others
    read it (``weights`` is a view of the constant's literal, the same memory every time).
    The packed bytes are made only when the object is written (``irtypes.LazyBytes``).
    """
    assert weights is not None
    layout = (plan.k, plan.n, plan.kc, plan.nc, plan.panel)
    memory = (
        weights.__array_interface__["data"][0],
        weights.dtype.str,
        weights.shape,
        weights.strides,
    )
    key = (*memory, *layout)
    packed = _PACKED.setdefault(module, {})
    if key not in packed:
        data = LazyBytes(packed_b_bytes(plan), functools.partial(_pack_into, plan, weights))
        gv = readonly_global(module, f"{name}.packed_b", data)
        packed[key] = (weights, gv)
    note_pack(name, plan, weights, packed[key][1].name)
    return packed[key][1]


def _pack_into(plan: GemmPlan, weights: np.ndarray, into: np.ndarray) -> None:
    pack_b(plan, weights, into)


def _tile_epilogue(spec: GemmDot, factory: VectorEpilogueFactory, n_extra: int) -> Epilogue:
    """The tile-store epilogue: the vector epilogue at the piece's dot output index."""

    def epilogue(b: ir.IRBuilder, values: ir.Value, row: ir.Value, col: ir.Value) -> ir.Value:
        batch_ptr, *extras = extra_args(b, n_extra)
        linear = b.ptrtoint(batch_ptr, I64)
        batch = delinearize(b, linear, spec.batch_dims) if spec.batch_dims else []
        rows = delinearize(b, row, spec.lhs_free) if spec.lhs_free else []
        return factory(b, extras)(b, values, [*batch, *rows, col])

    return epilogue


def lanewise_epilogue(factory: EpilogueFactory) -> VectorEpilogueFactory:
    """An element epilogue applied to each lane of a vector (the general fallback)."""

    def make(b: ir.IRBuilder, extras: list[ir.Value]) -> VectorEpilogue:
        element = factory(b, extras)

        def apply(b: ir.IRBuilder, values: ir.Value, index: Sequence[ir.Value]) -> ir.Value:
            out = values
            for lane in range(values.type.count):
                shifted = [*index[:-1], add_nuw(b, index[-1], i64(lane))]
                value = element(b, b.extract_element(values, i64(lane)), shifted)
                out = b.insert_element(out, value, i64(lane))
            return out

        return apply

    return make


def operand_reader(operand: Instruction, ptr: ir.Value) -> ElementGenerator:
    """Scalar constants as immediates, else loads from the buffer (as the entry emitter does)."""
    if operand.opcode is Opcode.CONSTANT and operand.array_shape.size == 1:
        return make_generator(operand, [])
    return buffer_reader(ptr, operand.array_shape)


def operand_vector_reader(operand: Instruction, ptr: ir.Value) -> VectorGenerator:
    """``operand_reader``'s vector twin: splat immediates, vector loads of f32 rows."""
    if operand.opcode is Opcode.CONSTANT and operand.array_shape.size == 1:
        return splat_generator(make_generator(operand, []))
    if operand.array_shape.dtype is PrimitiveType.F32:
        return f32_reader(ptr, operand.array_shape)
    return lanewise(buffer_reader(ptr, operand.array_shape), lambda b, lane: None)
