"""The elemental emitter: element generators for elementwise and data-movement instructions.

``make_generator(inst, operand_generators)`` returns the generator of ``inst``'s elements.
Elementwise ops apply their scalar semantics (``scalar_ops``) to the operands' elements at the
same index; data movement (broadcast, transpose, slice, reshape, pad, concatenate, reverse)
only remaps the index before asking an operand. ``emit_elemental_kernel`` wraps one unfused
instruction's generator in a loop nest over its output and stores every element; the fused
emitter (``fusion.py``) composes the generators of a whole fused computation in one loop.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext

from llvmlite import ir

from aotc.codegen.irtypes import (
    I32,
    I64,
    add_nuw,
    i64,
    linear_index,
    literal_element,
    memory_type,
    row_major_strides,
    store_element,
)
from aotc.codegen.kernels.base import ElementGenerator, KernelIO, KernelPart
from aotc.codegen.kernels.scalar_ops import convert, emit_scalar
from aotc.codegen.loops import KEEP_LOOP, Split, loop_hint, loop_nest, mark_back_edges
from aotc.errors import CodegenError
from aotc.hlo.fusion_plan import MAX_FUSED_OPERANDS
from aotc.hlo.ir import (
    ELEMENTWISE,
    Computation,
    Dimensions,
    GatherAttrs,
    Instruction,
    IotaAttrs,
    Opcode,
    PadAttrs,
    PadDim,
    SliceAttrs,
    TupleIndex,
    parameter_number,
)
from aotc.hlo.shape import PrimitiveType, Shape

GeneratorMaker = Callable[[Instruction, Sequence[ElementGenerator]], ElementGenerator]
Index = Sequence[ir.Value]

_MAKERS: dict[Opcode, GeneratorMaker] = {}


def _makes(*opcodes: Opcode) -> Callable[[GeneratorMaker], GeneratorMaker]:
    def register(maker: GeneratorMaker) -> GeneratorMaker:
        for opcode in opcodes:
            assert opcode not in _MAKERS, f"two generator makers for {opcode}"
            _MAKERS[opcode] = maker
        return maker

    return register


def has_generator(opcode: Opcode) -> bool:
    return opcode in _MAKERS


def make_generator(inst: Instruction, operands: Sequence[ElementGenerator]) -> ElementGenerator:
    """The element generator of ``inst``, given the generators of its operands."""
    maker = _MAKERS.get(inst.opcode)
    if maker is None:
        raise CodegenError(f"{inst.opcode.value} %{inst.name} has no elemental emitter")
    return maker(inst, operands)


@_makes(*ELEMENTWISE)
def _elementwise(inst: Instruction, operands: Sequence[ElementGenerator]) -> ElementGenerator:
    return lambda b, index: emit_scalar(b, inst, [g(b, index) for g in operands])


@_makes(Opcode.CONSTANT)
def _constant(inst: Instruction, operands: Sequence[ElementGenerator]) -> ElementGenerator:
    """Only one-element constants are immediates; larger ones are read from their global."""
    if inst.array_shape.size != 1:
        raise CodegenError(f"constant %{inst.name} {inst.shape} needs a buffer, not a generator")
    assert inst.literal is not None
    value = literal_element(inst.array_shape.dtype, inst.literal.reshape(-1)[0])
    return lambda b, index: value


@_makes(Opcode.IOTA)
def _iota(inst: Instruction, operands: Sequence[ElementGenerator]) -> ElementGenerator:
    dim = inst.attrs_as(IotaAttrs).iota_dimension
    dtype = inst.array_shape.dtype
    return lambda b, index: convert(b, index[dim], PrimitiveType.S64, dtype)


def _remap(
    operand: ElementGenerator, mapping: Callable[[ir.IRBuilder, Index], Index]
) -> ElementGenerator:
    return lambda b, index: operand(b, mapping(b, index))


@_makes(Opcode.BROADCAST)
def _broadcast(inst: Instruction, operands: Sequence[ElementGenerator]) -> ElementGenerator:
    dims = inst.attrs_as(Dimensions).dimensions
    return _remap(operands[0], lambda b, index: [index[d] for d in dims])


@_makes(Opcode.TRANSPOSE)
def _transpose(inst: Instruction, operands: Sequence[ElementGenerator]) -> ElementGenerator:
    permutation = inst.attrs_as(Dimensions).dimensions
    inverse = [permutation.index(d) for d in range(len(permutation))]
    return _remap(operands[0], lambda b, index: [index[i] for i in inverse])


@_makes(Opcode.BITCAST)
def _bitcast(inst: Instruction, operands: Sequence[ElementGenerator]) -> ElementGenerator:
    """A reshape that may also reinterpret each element's bits as another type of its width
    (XLA's CPU pipeline prints bitcast-convert so once layouts are assigned)."""
    moved = _reshape(inst, operands)
    source, target = inst.operands[0].array_shape.dtype, inst.array_shape.dtype
    if source is target:
        return moved

    def reinterpret(b: ir.IRBuilder, index: Index) -> ir.Value:
        value = moved(b, index)
        if source is PrimitiveType.PRED:
            value = b.zext(value, memory_type(source))
        bits = b.bitcast(value, memory_type(target))
        if target is PrimitiveType.PRED:
            return b.icmp_unsigned("!=", bits, ir.Constant(bits.type, 0))
        return bits

    return reinterpret


@_makes(Opcode.RESHAPE)
def _reshape(inst: Instruction, operands: Sequence[ElementGenerator]) -> ElementGenerator:
    out_dims = inst.array_shape.dims
    in_dims = inst.operands[0].array_shape.dims
    if out_dims == in_dims:
        return operands[0]
    head, tail = _common_ends(out_dims, in_dims)
    out_mid, in_mid = out_dims[head : len(out_dims) - tail], in_dims[head : len(in_dims) - tail]

    # Dimensions both shapes share at either end pass through: the index stays affine in the
    # innermost loop's variable (no div/mod by the row length), so that loop vectorizes.
    def remap(b: ir.IRBuilder, index: Index) -> Index:
        mid = index[head : len(index) - tail]
        inner = delinearize(b, linear_index(b, mid, out_mid), in_mid) if in_mid else []
        return [*index[:head], *inner, *index[len(index) - tail :]]

    return _remap(operands[0], remap)


def _common_ends(a: Sequence[int], c: Sequence[int]) -> tuple[int, int]:
    """How many leading and trailing dimensions ``a`` and ``c`` have in common (not overlapping)."""
    head = 0
    while head < min(len(a), len(c)) and a[head] == c[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(c)) - head and a[-1 - tail] == c[-1 - tail]:
        tail += 1
    return head, tail


def delinearize(b: ir.IRBuilder, linear: ir.Value, dims: Sequence[int]) -> list[ir.Value]:
    """The row-major multi-index of element number ``linear`` of an array of ``dims``.

    Below 2**32 elements the divisions are 32-bit: 64-bit ones are library calls on 32-bit
    targets (``__udivdi3``, ``__aeabi_uldivmod``: libgcc, absent from freestanding links),
    and a 32-bit division by a constant is a cheaper multiply on 64-bit ones too.
    """
    narrow = math.prod(dims) <= 1 << 32
    word = I32 if narrow else I64
    index = b.trunc(linear, I32) if narrow else linear
    result: list[ir.Value] = []
    for size, stride in zip(dims, row_major_strides(dims), strict=True):
        if size == 1:
            result.append(i64(0))
            continue
        quotient = index if stride == 1 else b.udiv(index, ir.Constant(word, stride))
        is_outermost = stride * size >= math.prod(dims)
        digit = quotient if is_outermost else b.urem(quotient, ir.Constant(word, size))
        result.append(b.zext(digit, I64) if narrow else digit)
    return result


@_makes(Opcode.SLICE)
def _slice(inst: Instruction, operands: Sequence[ElementGenerator]) -> ElementGenerator:
    attrs = inst.attrs_as(SliceAttrs)

    def mapping(b: ir.IRBuilder, index: Index) -> Index:
        return [
            _affine(b, i, stride, start)
            for i, start, stride in zip(index, attrs.starts, attrs.strides, strict=True)
        ]

    return _remap(operands[0], mapping)


def _affine(b: ir.IRBuilder, value: ir.Value, scale: int, offset: int) -> ir.Value:
    """value * scale + offset, folding the trivial cases."""
    if scale != 1:
        value = b.mul(value, i64(scale))
    return value if offset == 0 else b.add(value, i64(offset))


@_makes(Opcode.REVERSE)
def _reverse(inst: Instruction, operands: Sequence[ElementGenerator]) -> ElementGenerator:
    reversed_dims = set(inst.attrs_as(Dimensions).dimensions)
    dims = inst.array_shape.dims

    def mapping(b: ir.IRBuilder, index: Index) -> Index:
        return [
            b.sub(i64(dims[d] - 1), i) if d in reversed_dims else i for d, i in enumerate(index)
        ]

    return _remap(operands[0], mapping)


@_makes(Opcode.PAD)
def _pad(inst: Instruction, operands: Sequence[ElementGenerator]) -> ElementGenerator:
    """Read the operand where the output index hits it, else the padding value.

    Out-of-range indices are clamped to 0 before the (unused) operand read, so the kernel
    stays branch-free and never reads outside the operand.
    """
    attrs = inst.attrs_as(PadAttrs)
    source, padding = operands
    in_dims = inst.operands[0].array_shape.dims
    if 0 in in_dims:
        return padding

    def generate(b: ir.IRBuilder, index: Index) -> ir.Value:
        inside: ir.Value = ir.Constant(ir.IntType(1), 1)
        source_index = []
        for i, pad, size in zip(index, attrs.dims, in_dims, strict=True):
            hit, position = _pad_source(b, i, pad, size)
            inside = b.and_(inside, hit) if hit is not None else inside
            source_index.append(position if hit is None else b.select(hit, position, i64(0)))
        return b.select(inside, source(b, source_index), padding(b, []))

    return generate


def _pad_source(
    b: ir.IRBuilder, i: ir.Value, pad: PadDim, size: int
) -> tuple[ir.Value | None, ir.Value]:
    """(does output index i hit the operand?, its operand index); None means always."""
    if pad.low == 0 and pad.high == 0 and pad.interior == 0:
        return None, i
    shifted = b.sub(i, i64(pad.low)) if pad.low else i  # negative (huge unsigned) before start
    step = pad.interior + 1
    span = (size - 1) * step + 1
    hit = b.icmp_unsigned("<", shifted, i64(span))
    if step == 1:
        return hit, shifted
    on_grid = b.icmp_unsigned("==", b.urem(shifted, i64(step)), i64(0))
    return b.and_(hit, on_grid), b.udiv(shifted, i64(step))


@_makes(Opcode.CONCATENATE)
def _concatenate(inst: Instruction, operands: Sequence[ElementGenerator]) -> ElementGenerator:
    dim = inst.attrs_as(Dimensions).dimensions[0]
    sizes = [op.array_shape.dims[dim] for op in inst.operands]
    pieces = [
        (g, start, size)
        for g, start, size in zip(operands, _prefix_sums(sizes), sizes, strict=True)
        if size > 0
    ]

    def generate(b: ir.IRBuilder, index: Index) -> ir.Value:
        return _concat_element(b, index, dim, pieces)

    return generate


def _prefix_sums(sizes: Sequence[int]) -> list[int]:
    starts, total = [], 0
    for size in sizes:
        starts.append(total)
        total += size
    return starts


def _concat_element(
    b: ir.IRBuilder, index: Index, dim: int, pieces: Sequence[tuple[ElementGenerator, int, int]]
) -> ir.Value:
    """Branch to the one operand that holds ``index`` and merge the values with a phi.

    The branches are a binary search over the operands' starts: a chain of one test per
    operand would cost LLVM time quadratic in the number of operands (thousands, from a
    ``ConcatV2`` of that many tensors) and each element as many tests.
    """
    if len(pieces) == 1:
        return _concat_piece(b, index, dim, pieces[0])
    done = b.append_basic_block("concat.done")
    incoming: list[tuple[ir.Value, ir.Block]] = []
    pending: list[tuple[ir.Block, int, int]] = [(b.block, 0, len(pieces))]  # block, pieces lo:hi
    while pending:
        block, lo, hi = pending.pop()
        b.position_at_end(block)
        if hi - lo == 1:
            incoming.append((_concat_piece(b, index, dim, pieces[lo]), b.block))
            b.branch(done)
            continue
        mid = (lo + hi) // 2
        low, high = b.append_basic_block("concat.low"), b.append_basic_block("concat.high")
        b.cbranch(b.icmp_unsigned("<", index[dim], i64(pieces[mid][1])), low, high)
        pending += [(high, mid, hi), (low, lo, mid)]
    b.position_at_end(done)
    phi = b.phi(incoming[0][0].type)
    for value, block in incoming:
        phi.add_incoming(value, block)
    return phi


def _concat_piece(
    b: ir.IRBuilder, index: Index, dim: int, piece: tuple[ElementGenerator, int, int]
) -> ir.Value:
    generator, start, _ = piece
    shifted = list(index)
    shifted[dim] = b.sub(index[dim], i64(start)) if start else index[dim]
    return generator(b, shifted)


@_makes(Opcode.GATHER)
def _gather(inst: Instruction, operands: Sequence[ElementGenerator]) -> ElementGenerator:
    """Load the index vector of the output's batch position, clamp it, add the offsets.

    Clamping each start to ``[0, operand_dim - slice_size]`` (as XLA does) means no index
    value, however wrong, makes the kernel read outside the operand.
    """
    g = inst.attrs_as(GatherAttrs)
    source, indices = operands
    batch_dims = [d for d in range(inst.array_shape.rank) if d not in g.offset_dims]
    kept = [
        d
        for d in range(len(g.slice_sizes))
        if d not in g.collapsed_slice_dims and d not in g.operand_batching_dims
    ]

    def generate(b: ir.IRBuilder, index: Index) -> ir.Value:
        batch = [index[d] for d in batch_dims]
        position = _gather_starts(b, inst, indices, batch)
        for j, d in enumerate(kept):
            position[d] = b.add(position[d], index[g.offset_dims[j]])
        return source(b, position)

    return generate


def _gather_starts(
    b: ir.IRBuilder, inst: Instruction, indices: ElementGenerator, batch: Index
) -> list[ir.Value]:
    """The clamped start of the slice for one batch position, per operand dimension."""
    g = inst.attrs_as(GatherAttrs)
    operand_dims = inst.operands[0].array_shape.dims
    index_shape = inst.operands[1].array_shape
    starts: list[ir.Value] = [i64(0)] * len(operand_dims)
    for k, d in enumerate(g.start_index_map):
        where = list(batch)
        if g.index_vector_dim < index_shape.rank:
            where.insert(g.index_vector_dim, i64(k))
        start = convert(b, indices(b, where), index_shape.dtype, PrimitiveType.S64)
        starts[d] = _clamp_index(b, start, operand_dims[d] - g.slice_sizes[d])
    for o, i in zip(g.operand_batching_dims, g.start_indices_batching_dims, strict=True):
        starts[o] = batch[i if i < g.index_vector_dim else i - 1]
    return starts


@_makes(Opcode.DYNAMIC_SLICE)
def _dynamic_slice(inst: Instruction, operands: Sequence[ElementGenerator]) -> ElementGenerator:
    """Read the operand at the clamped start plus the output index (loop-invariant starts,
    which LLVM hoists out of the loops)."""
    source, *indices = operands
    starts = dynamic_starts(inst, indices, inst.array_shape.dims)

    def generate(b: ir.IRBuilder, index: Index) -> ir.Value:
        return source(b, [add_nuw(b, i, s) for i, s in zip(index, starts(b), strict=True)])

    return generate


def dynamic_starts(
    inst: Instruction, indices: Sequence[ElementGenerator], sizes: Sequence[int]
) -> Callable[[ir.IRBuilder], list[ir.Value]]:
    """The start indices of a dynamic slice or update of ``sizes`` into ``inst``'s first
    operand, clamped as XLA clamps them so the slice lies inside (an unsigned index, however
    large, clamps to the end)."""
    dims = inst.operands[0].array_shape.dims
    dtype = inst.operands[-1].array_shape.dtype

    def starts(b: ir.IRBuilder) -> list[ir.Value]:
        values = [g(b, []) for g in indices]
        wide = PrimitiveType.U64 if dtype.is_unsigned_int else PrimitiveType.S64
        as_i64 = [convert(b, v, dtype, wide) for v in values]
        limits = [n - size for n, size in zip(dims, sizes, strict=True)]
        if dtype.is_unsigned_int:
            return [_clamp_unsigned(b, v, high) for v, high in zip(as_i64, limits, strict=True)]
        return [_clamp_index(b, v, high) for v, high in zip(as_i64, limits, strict=True)]

    return starts


def _clamp_unsigned(b: ir.IRBuilder, value: ir.Value, high: int) -> ir.Value:
    return b.select(b.icmp_unsigned(">", value, i64(high)), i64(high), value)


def _clamp_index(b: ir.IRBuilder, value: ir.Value, high: int) -> ir.Value:
    """``min(max(value, 0), high)`` on signed i64."""
    low = b.select(b.icmp_signed("<", value, i64(0)), i64(0), value)
    return b.select(b.icmp_signed(">", low, i64(high)), i64(high), low)


# ---- kernels and scalar computations ---------------------------------------------------------


def emit_elemental_kernel(b: ir.IRBuilder, io: KernelIO) -> None:
    """One loop nest over the output; each element comes from the instruction's generator
    (a concatenation: one loop nest per operand)."""
    if io.inst.opcode is Opcode.CONCATENATE:
        emit_concat_store_loops(b, io.inst, io.operands, io.outputs[0], io.part, io.split)
        return
    generator = make_generator(io.inst, io.operands)
    emit_store_loop(b, generator, io.outputs[0], io.inst.array_shape, io.split)


def emit_store_loop(
    b: ir.IRBuilder,
    generator: ElementGenerator,
    out: ir.Value,
    shape: Shape,
    split: Split | None = None,
    keep_inner: bool = False,
) -> None:
    """Store every element of ``shape`` (those of ``split``'s outer range) from ``generator``;
    with ``keep_inner`` (the values read are contiguous along the last dimension: see
    ``reads_along_last``) the innermost loop is kept for the loop vectorizer."""
    keep = keep_inner and bool(shape.dims) and shape.dims[-1] in KEEP_LOOP
    with not_unrolled(b) if keep else nullcontext(), loop_nest(b, shape.dims, split=split) as index:
        store_element(b, generator(b, index), out, shape, index)


def reads_along_last(root: Instruction) -> bool:
    """Whether each array that computing ``root`` reads is read along its own last dimension
    (or at one element) as ``root``'s last index steps: the bias add and head split of
    attention (a transpose keeping the last dimension) are, a transpose moving it is not."""
    pending: list[tuple[Instruction, int | None]] = [(root, root.array_shape.rank - 1)]
    seen: set[tuple[int, int | None]] = set()
    while pending:
        inst, d = pending.pop()
        if d is None or (id(inst), d) in seen:
            continue  # read at one element of that dimension
        seen.add((id(inst), d))
        moved = _last_dimension_source(inst, d)
        if moved is None:
            return False
        pending.extend(moved)
    return True


def _last_dimension_source(
    inst: Instruction, d: int
) -> list[tuple[Instruction, int | None]] | None:
    """The operand dimensions ``inst``'s dimension ``d`` reads, or None when it is not the
    last one of an array read directly, or cannot be followed."""
    rank, op = inst.array_shape.rank, inst.operands[0] if inst.operands else None
    if inst.opcode in (Opcode.PARAMETER, Opcode.CONSTANT, Opcode.IOTA):
        return [] if d == rank - 1 else None
    if inst.opcode in ELEMENTWISE:  # a scalar operand (select's predicate) is one element
        same = [o for o in inst.operands if o.array_shape.dims == inst.array_shape.dims]
        scalars = [o for o in inst.operands if o.array_shape.rank == 0]
        if len(same) + len(scalars) != len(inst.operands):
            return None
        return [(o, d) for o in same]
    if inst.opcode is Opcode.BROADCAST and op is not None:
        dims = inst.attrs_as(Dimensions).dimensions
        return [(op, dims.index(d) if d in dims else None)]
    if inst.opcode is Opcode.TRANSPOSE and op is not None:
        return [(op, inst.attrs_as(Dimensions).dimensions[d])]
    if inst.opcode in (Opcode.RESHAPE, Opcode.BITCAST) and op is not None:
        # a reshape keeps the row-major order: a last dimension that splits the operand's last
        # dimension steps along it
        last, size = op.array_shape.rank - 1, inst.array_shape.dims[d]
        split = d == rank - 1 and last >= 0 and size > 0 and op.array_shape.dims[last] % size == 0
        return [(op, last)] if split else None
    if inst.opcode is Opcode.SLICE and op is not None:
        return [(op, d)] if inst.attrs_as(SliceAttrs).strides[d] == 1 else None
    return None


def concat_parts(concat: Instruction) -> list[KernelPart] | None:
    """An unfused ``concatenate`` of many operands is emitted in parts: as many operands as
    the fused emitter takes (``MAX_FUSED_OPERANDS``) per function."""
    if len(concat.operands) <= MAX_FUSED_OPERANDS:
        return None
    dim = concat.attrs_as(Dimensions).dimensions[0]
    starts = _prefix_sums([op.array_shape.dims[dim] for op in concat.operands])
    step, n = MAX_FUSED_OPERANDS, len(concat.operands)
    return [KernelPart(range(k, min(k + step, n)), starts[k]) for k in range(0, n, step)]


def emit_concat_store_loops(
    b: ir.IRBuilder,
    concat: Instruction,
    operands: Sequence[ElementGenerator],
    out: ir.Value,
    part: KernelPart | None = None,
    split: Split | None = None,
) -> None:
    """A root ``concatenate``: one loop nest per operand over its part of the output.

    ``operands`` generate all of ``concat``'s operands, or those of one kernel ``part``. The
    generic loop would branch to the operand inside the innermost loop, which stops LLVM from
    vectorizing a concatenation along the last (channel) dimension. ``split`` is claimed by
    every nest's outermost loop where that is a dimension before the concatenated one.
    """
    dim, shape = concat.attrs_as(Dimensions).dimensions[0], concat.array_shape
    split = split if any(size > 1 for size in shape.dims[:dim]) else None
    numbers = part.operands if part is not None else range(len(concat.operands))
    start = part.offset if part is not None else 0
    for generator, number in zip(operands, numbers, strict=True):
        size = concat.operands[number].array_shape.dims[dim]
        dims = [*shape.dims[:dim], size, *shape.dims[dim + 1 :]]
        if size > 0:
            with not_unrolled(b), loop_nest(b, dims, split=split) as index:
                at = [*index[:dim], add_nuw(b, index[dim], i64(start)), *index[dim + 1 :]]
                store_element(b, generator(b, index), out, shape, at)
        start += size


@contextmanager
def not_unrolled(b: ir.IRBuilder) -> Iterator[None]:
    """Mark the loops emitted inside with ``llvm.loop.unroll.disable``.

    LLVM fully unrolls a short constant innermost loop (a row of 16 or 32 channels) before the
    loop vectorizer runs, which then vectorizes the next loop out with gathers and scatters;
    kept as a loop, the channel loop vectorizes with contiguous loads and stores.
    """
    known = {id(block) for block in b.function.blocks}
    yield
    new = [block for block in b.function.blocks if id(block) not in known]
    mark_back_edges(new, loop_hint(b.module, "llvm.loop.unroll.disable"))


def emit_scalar_computation(
    b: ir.IRBuilder, comp: Computation, args: Sequence[ir.Value]
) -> list[ir.Value]:
    """Inline a computation over scalars (a reducer's ``to_apply``) on register values.

    Returns the root's value, or the values of its elements if the root is a tuple.
    """
    values: dict[int, ir.Value | tuple[ir.Value, ...]] = {}
    for inst in comp.post_order():
        values[id(inst)] = _scalar_value(b, inst, values, args, comp)
    root = values[id(comp.root)]
    return list(root) if isinstance(root, tuple) else [root]


def _scalar_value(
    b: ir.IRBuilder,
    inst: Instruction,
    values: dict[int, ir.Value | tuple[ir.Value, ...]],
    args: Sequence[ir.Value],
    comp: Computation,
) -> ir.Value | tuple[ir.Value, ...]:
    operand_values = [values[id(op)] for op in inst.operands]
    if inst.opcode is Opcode.PARAMETER:
        return args[parameter_number(inst)]
    if inst.opcode is Opcode.TUPLE:
        return tuple(operand_values)  # type: ignore[arg-type]
    if inst.opcode is Opcode.GET_TUPLE_ELEMENT:
        assert isinstance(operand_values[0], tuple)
        return operand_values[0][inst.attrs_as(TupleIndex).index]
    if inst.is_tuple or inst.array_shape.size != 1 or not has_generator(inst.opcode):
        raise CodegenError(
            f"{inst.opcode.value} %{inst.name} {inst.shape} in computation "
            f"{comp.name} is not supported by codegen yet (only scalar ops)"
        )
    generators = [_constant_generator(v) for v in operand_values]
    return make_generator(inst, generators)(b, [i64(0)] * inst.array_shape.rank)


def _constant_generator(value: ir.Value | tuple[ir.Value, ...]) -> ElementGenerator:
    assert not isinstance(value, tuple)
    return lambda b, index: value
