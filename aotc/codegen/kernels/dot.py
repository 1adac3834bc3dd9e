"""The dot kernel: f32 matmul-shaped dots on the GEMM engine, others as a plain loop nest.

``dot_gemm.py`` decides which dots are GEMMs (and runs them); the rest get the loop nest with
a register accumulator below. Output index = (batch..., lhs free..., rhs free...), as XLA
orders dot results; the innermost loops run over the contracting dimensions. ``f16``
accumulates in ``f32``; integers wrap; ``pred`` computes ``or`` of ``and``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from llvmlite import ir

from aotc.codegen.irtypes import accumulator_dtype, register_type, scalar_constant, store_element
from aotc.codegen.kernels.base import ElementGenerator, KernelIO
from aotc.codegen.kernels.dot_gemm import GemmCall, emit_gemm_dot, gemm_dot
from aotc.codegen.kernels.scalar_ops import convert
from aotc.codegen.loops import entry_alloca, loop_nest
from aotc.codegen.vector import VectorInfo
from aotc.hlo.ir import DotDims, Instruction
from aotc.hlo.shape import PrimitiveType, Shape


def dot_scratch_bytes(inst: Instruction, info: VectorInfo) -> int:
    """The GEMM's packing scratch; the loop kernel needs none."""
    spec = gemm_dot(inst)
    return spec.scratch_bytes(info) if spec is not None else 0


def dot_packed_operands(inst: Instruction, info: VectorInfo) -> frozenset[int]:
    """The rhs when it is constant weights the GEMM packs at compile time."""
    spec = gemm_dot(inst)
    return frozenset({1}) if spec is not None and spec.b_constant is not None else frozenset()


def emit_dot_kernel(b: ir.IRBuilder, io: KernelIO) -> None:
    spec = gemm_dot(io.inst)
    lhs, rhs = io.pointer(0), io.pointer(1)
    if spec is not None and lhs is not None and rhs is not None:
        call = GemmCall(io.outputs[0], lhs, rhs, io.scratch, split=io.split)
        emit_gemm_dot(b, spec, io.vector, call)
        return
    out = io.inst.array_shape

    def store(b: ir.IRBuilder, value: ir.Value, index: Sequence[ir.Value]) -> None:
        store_element(b, value, io.outputs[0], out, index)

    emit_dot_loops(b, io.inst, io.operands[0], io.operands[1], store)


#: What to do with one finished output element: (builder, value, output index).
DotFinish = Callable[[ir.IRBuilder, ir.Value, Sequence[ir.Value]], None]


def emit_dot_loops(
    b: ir.IRBuilder,
    inst: Instruction,
    lhs_gen: ElementGenerator,
    rhs_gen: ElementGenerator,
    finish: DotFinish,
) -> None:
    """The dot's loops; ``finish`` gets each output element (a fused epilogue applies here)."""
    dims = inst.attrs_as(DotDims)
    lhs_shape, rhs_shape = (op.array_shape for op in inst.operands)
    out = inst.array_shape
    acc_dtype = accumulator_dtype(out.dtype)
    acc = entry_alloca(b, register_type(acc_dtype), "acc")
    contracting = [lhs_shape.dims[d] for d in dims.lhs_contracting]
    with loop_nest(b, out.dims, "o") as out_index:
        b.store(scalar_constant(register_type(acc_dtype), 0), acc)
        lhs_at, rhs_at = _operand_index_builders(dims, lhs_shape, rhs_shape, out_index)
        with loop_nest(b, contracting, "k") as k_index:
            lhs = convert(b, lhs_gen(b, lhs_at(k_index)), out.dtype, acc_dtype)
            rhs = convert(b, rhs_gen(b, rhs_at(k_index)), out.dtype, acc_dtype)
            total = b.load(acc, typ=acc.allocated_type)
            b.store(multiply_add(b, acc_dtype, total, lhs, rhs), acc)
        result = convert(b, b.load(acc, typ=acc.allocated_type), acc_dtype, out.dtype)
        finish(b, result, out_index)


IndexMap = Callable[[Sequence[ir.Value]], list[ir.Value]]


def _operand_index_builders(
    dims: DotDims, lhs: Shape, rhs: Shape, out_index: Sequence[ir.Value]
) -> tuple[IndexMap, IndexMap]:
    """Two functions k_index -> operand index, closing over the output index."""
    batch = list(out_index[: len(dims.lhs_batch)])
    lhs_free_count = lhs.rank - len(dims.lhs_batch) - len(dims.lhs_contracting)
    lhs_free = list(out_index[len(batch) : len(batch) + lhs_free_count])
    rhs_free = list(out_index[len(batch) + lhs_free_count :])

    def lhs_at(k_index: Sequence[ir.Value]) -> list[ir.Value]:
        return _assemble(lhs.rank, dims.lhs_batch, batch, dims.lhs_contracting, k_index, lhs_free)

    def rhs_at(k_index: Sequence[ir.Value]) -> list[ir.Value]:
        return _assemble(rhs.rank, dims.rhs_batch, batch, dims.rhs_contracting, k_index, rhs_free)

    return lhs_at, rhs_at


def _assemble(
    rank: int,
    batch_dims: Sequence[int],
    batch: Sequence[ir.Value],
    contracting_dims: Sequence[int],
    k_index: Sequence[ir.Value],
    free: Sequence[ir.Value],
) -> list[ir.Value]:
    """An operand's index from the batch, contracting and (in order) free index values."""
    placed = dict(zip(batch_dims, batch, strict=True))
    placed.update(zip(contracting_dims, k_index, strict=True))
    free_iter = iter(free)
    return [placed[d] if d in placed else next(free_iter) for d in range(rank)]


def multiply_add(
    b: ir.IRBuilder, dtype: PrimitiveType, total: ir.Value, x: ir.Value, y: ir.Value
) -> ir.Value:
    """``total + x * y`` in ``dtype`` (or/and for pred): the accumulation of dot and conv."""
    if dtype.is_float:
        return b.fadd(total, b.fmul(x, y))
    if dtype is PrimitiveType.PRED:
        return b.or_(total, b.and_(x, y))
    return b.add(total, b.mul(x, y))
