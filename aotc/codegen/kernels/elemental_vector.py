"""Vector element generators: ``lanes`` consecutive elements along the last dimension at once.

A *vector generator* ``g(b, index, lanes)`` returns the ``<lanes x T>`` vector of the elements
at ``index[:-1] + [index[-1] + l]`` for ``l < lanes`` (the caller guarantees they are in
bounds). It is the vector twin of an element generator (``base.py``), for code that already
holds a row of values in a register: the GEMM tile store evaluates a fused epilogue on whole
accumulator vectors with these instead of extracting every lane.

Only what epilogues are made of has a vector form: f32/pred elementwise ops whose scalar
semantics (``scalar_ops``) are plain IRBuilder ops or mathlib calls, both of which work on
vectors unchanged; broadcasts (along the lanes: a contiguous load; across them: a splat);
reshapes and transposes that keep the last dimension; dynamic slices of whole rows (an RNN
step's row of its hoisted input projection); scalar constants; buffer reads. Any other
instruction falls back to its element generator, called once per lane, so every fused
computation the elemental emitter knows still works.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from llvmlite import ir

from aotc.codegen.irtypes import F32, add_nuw, i64, linear_index
from aotc.codegen.kernels.base import ElementGenerator
from aotc.codegen.kernels.elemental import delinearize, dynamic_starts
from aotc.codegen.kernels.gemm_tile import splat
from aotc.codegen.kernels.scalar_ops import emit_scalar
from aotc.hlo.ir import Computation, Dimensions, Instruction, Opcode, parameter_number
from aotc.hlo.shape import PrimitiveType, Shape

VectorGenerator = Callable[[ir.IRBuilder, Sequence[ir.Value], int], ir.Value]
#: Called before the fallback computes lane ``l`` with element generators (sets lane cells).
LaneHook = Callable[[ir.IRBuilder, int], None]

# Elementwise opcodes whose f32 scalar semantics are vector-safe IRBuilder code (no libm call,
# no intrinsic overloaded on a second type).
VECTOR_OPS = frozenset({
    Opcode.ADD, Opcode.SUBTRACT, Opcode.MULTIPLY, Opcode.DIVIDE, Opcode.MAXIMUM,
    Opcode.MINIMUM, Opcode.CLAMP, Opcode.SELECT, Opcode.COMPARE, Opcode.CONVERT,
    Opcode.NEGATE, Opcode.ABS, Opcode.SQRT, Opcode.RSQRT, Opcode.COPY, Opcode.EXP,
    Opcode.EXPM1, Opcode.LOG, Opcode.LOG1P, Opcode.TANH, Opcode.LOGISTIC, Opcode.ERF,
})  # fmt: skip
_LANE_TYPES = frozenset({PrimitiveType.F32, PrimitiveType.PRED})


def f32_reader(base: ir.Value, shape: Shape) -> VectorGenerator:
    """Contiguous loads from a row-major f32 array at ``base`` (a splat for a rank-0 array)."""
    assert shape.dtype is PrimitiveType.F32, shape

    def load(b: ir.IRBuilder, index: Sequence[ir.Value], lanes: int) -> ir.Value:
        offset = linear_index(b, index, shape.dims) if shape.rank else i64(0)
        ptr = b.gep(base, [offset], inbounds=True, source_etype=F32)
        if shape.rank == 0:
            return splat(b, b.load(ptr, typ=F32, align=4), lanes)
        return b.load(ptr, typ=ir.VectorType(F32, lanes), align=4)

    return load


def splat_value(b: ir.IRBuilder, scalar: ir.Value, lanes: int) -> ir.Value:
    """``scalar`` in every lane of a ``lanes``-wide vector."""
    if scalar.type == F32:
        return splat(b, scalar, lanes)
    vec_ty = ir.VectorType(scalar.type, lanes)
    if isinstance(scalar, ir.Constant) and isinstance(scalar.constant, (int, float)):
        return ir.Constant(vec_ty, [scalar.constant] * lanes)
    one = b.insert_element(ir.Constant(vec_ty, None), scalar, i64(0))
    mask = ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes)
    return b.shuffle_vector(one, ir.Constant(vec_ty, None), mask)


def splat_generator(scalar: ElementGenerator) -> VectorGenerator:
    """Elements that do not change along the lanes: one element, broadcast."""
    return lambda b, index, lanes: splat_value(b, scalar(b, index), lanes)


def lanewise(scalar: ElementGenerator, before_lane: LaneHook) -> VectorGenerator:
    """The fallback: the element generator once per lane, lanes gathered into a vector."""

    def generate(b: ir.IRBuilder, index: Sequence[ir.Value], lanes: int) -> ir.Value:
        out: ir.Value | None = None
        for lane in range(lanes):
            before_lane(b, lane)
            shifted = [*index[:-1], add_nuw(b, index[-1], i64(lane))]
            value = scalar(b, shifted)
            if out is None:
                out = ir.Constant(ir.VectorType(value.type, lanes), None)
            out = b.insert_element(out, value, i64(lane))
        assert out is not None
        return out

    return generate


# ---- composing a computation -----------------------------------------------------------------

#: Vector values already emitted in this evaluation, by (instruction, index values, lanes):
#: an instruction read twice at the same index (gelu reads its input twice) is emitted once.
Memo = dict[tuple[int, tuple[int, ...], int], ir.Value]


def vector_generators(
    comp: Computation,
    params: Sequence[VectorGenerator],
    scalars: dict[int, ElementGenerator],
    special: dict[int, VectorGenerator],
    before_lane: LaneHook,
    memo: Memo,
) -> dict[int, VectorGenerator]:
    """Vector generators of ``comp``'s instructions that have element generators in ``scalars``.

    ``params`` read the parameters, ``special`` ones are given (the dot of an output fusion);
    ``before_lane`` prepares the element generators for lane ``l`` when one falls back.
    """
    gens: dict[int, VectorGenerator] = {}
    for inst in comp.post_order():
        if id(inst) in special:
            gens[id(inst)] = special[id(inst)]
        elif inst.opcode is Opcode.PARAMETER:
            gens[id(inst)] = params[parameter_number(inst)]
        elif id(inst) in scalars:
            operands = [gens.get(id(op)) for op in inst.operands]
            if inst.opcode is Opcode.DYNAMIC_SLICE:
                starts = [scalars.get(id(op)) for op in inst.operands[1:]]
                made = _dynamic_slice(inst, operands[0], starts, before_lane)
            else:
                made = None
            made = made or _make(inst, operands, scalars[id(inst)], before_lane)
            gens[id(inst)] = _memoized(inst, made, memo)
    return gens


def _memoized(inst: Instruction, generator: VectorGenerator, memo: Memo) -> VectorGenerator:
    def generate(b: ir.IRBuilder, index: Sequence[ir.Value], lanes: int) -> ir.Value:
        key = (id(inst), tuple(id(i) for i in index), lanes)
        if key not in memo:
            memo[key] = generator(b, index, lanes)
        return memo[key]

    return generate


def _make(
    inst: Instruction,
    operands: Sequence[VectorGenerator | None],
    scalar: ElementGenerator,
    before_lane: LaneHook,
) -> VectorGenerator:
    """The vector form of ``inst``, or its element generator lane by lane."""
    if inst.opcode is Opcode.CONSTANT or inst.array_shape.rank == 0:
        return splat_generator(_after_lane0(scalar, before_lane))
    if inst.opcode is Opcode.BROADCAST:
        made = _broadcast(inst, operands[0], scalar, before_lane)
    elif inst.opcode in (Opcode.RESHAPE, Opcode.BITCAST, Opcode.TRANSPOSE):
        same_type = inst.array_shape.dtype is inst.operands[0].array_shape.dtype
        made = _keeps_last(inst, operands[0]) if same_type else None  # reinterpreted lanewise
    else:
        made = _elementwise(inst, operands)
    return made if made is not None else lanewise(scalar, before_lane)


def _after_lane0(scalar: ElementGenerator, before_lane: LaneHook) -> ElementGenerator:
    """An element generator whose value is the same in every lane: evaluated at lane 0."""

    def generate(b: ir.IRBuilder, index: Sequence[ir.Value]) -> ir.Value:
        before_lane(b, 0)
        return scalar(b, index)

    return generate


def _elementwise(
    inst: Instruction, operands: Sequence[VectorGenerator | None]
) -> VectorGenerator | None:
    types = {inst.array_shape.dtype, *(op.array_shape.dtype for op in inst.operands)}
    if inst.opcode not in VECTOR_OPS or not types <= _LANE_TYPES or None in operands:
        return None
    gens = [g for g in operands if g is not None]
    return lambda b, index, lanes: emit_scalar(b, inst, [g(b, index, lanes) for g in gens])


def _broadcast(
    inst: Instruction,
    operand: VectorGenerator | None,
    scalar: ElementGenerator,
    before_lane: LaneHook,
) -> VectorGenerator | None:
    """Along the lanes: the operand's own vector (a bias row); across them: a splat."""
    dims = inst.attrs_as(Dimensions).dimensions
    last = inst.array_shape.rank - 1
    if last not in dims:
        return splat_generator(_after_lane0(scalar, before_lane))
    if dims[-1] != last or operand is None:
        return None  # the lanes would run along an inner operand dimension
    return lambda b, index, lanes: operand(b, [index[d] for d in dims], lanes)


def _dynamic_slice(
    inst: Instruction,
    source: VectorGenerator | None,
    starts: Sequence[ElementGenerator | None],
    before_lane: LaneHook,
) -> VectorGenerator | None:
    """A slice of whole rows (an RNN step's row of its inputs) reads contiguous rows of the
    source: the clamped starts are the same in every lane, and the last one is 0."""
    sizes = inst.array_shape.dims
    if source is None or not sizes or sizes[-1] != inst.operands[0].array_shape.dims[-1]:
        return None
    if any(g is None for g in starts):
        return None
    clamped = dynamic_starts(inst, [g for g in starts if g is not None], sizes)

    def generate(b: ir.IRBuilder, index: Sequence[ir.Value], lanes: int) -> ir.Value:
        before_lane(b, 0)
        offsets = clamped(b)
        return source(b, [add_nuw(b, i, s) for i, s in zip(index, offsets, strict=True)], lanes)

    return generate


def _keeps_last(inst: Instruction, operand: VectorGenerator | None) -> VectorGenerator | None:
    """Reshapes and transposes that leave the last dimension in place keep rows contiguous."""
    out_dims, in_dims = inst.array_shape.dims, inst.operands[0].array_shape.dims
    if operand is None or not in_dims or out_dims[-1] != in_dims[-1]:
        return None
    if inst.opcode is Opcode.TRANSPOSE:
        perm = inst.attrs_as(Dimensions).dimensions
        if perm[-1] != len(perm) - 1:
            return None
        inverse = [perm.index(d) for d in range(len(perm))]
        return lambda b, index, lanes: operand(b, [index[i] for i in inverse], lanes)
    if out_dims == in_dims:
        return operand

    def generate(b: ir.IRBuilder, index: Sequence[ir.Value], lanes: int) -> ir.Value:
        return operand(b, delinearize(b, linear_index(b, index, out_dims), in_dims), lanes)

    return generate
