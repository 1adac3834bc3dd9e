"""Result-shape inference per opcode family, following XLA's ``ShapeInference``.

Shared by the builder (which infers the shape of what it creates) and the verifier (which
re-infers every instruction's shape and compares). Every function raises ``ShapeError`` with a
message that says what does not fit; callers add where.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aotc.errors import ShapeError
from aotc.hlo.ir import (
    BINARY_ELEMENTWISE,
    UNARY_ELEMENTWISE,
    CompareAttrs,
    ComparisonType,
    Computation,
    ConvAttrs,
    Dimensions,
    DotDims,
    DynamicSliceAttrs,
    FftAttrs,
    FftType,
    GatherAttrs,
    Instruction,
    IotaAttrs,
    Opcode,
    PadAttrs,
    PadDim,
    ReducePrecisionAttrs,
    ReduceWindowAttrs,
    RngBitGeneratorAttrs,
    ScatterAttrs,
    SliceAttrs,
    SortAttrs,
    TopKAttrs,
    TupleIndex,
    Window,
)
from aotc.hlo.opcodes import ElementTypes
from aotc.hlo.shape import AnyShape, PrimitiveType, Shape, TupleShape
from aotc.registry import Registry


def check(ok: bool, message: str) -> None:
    if not ok:
        raise ShapeError(message)


def array(shape: AnyShape, what: str) -> Shape:
    """``shape`` as an array shape, or a ShapeError naming ``what`` wanted one."""
    if not isinstance(shape, Shape):
        raise ShapeError(f"{what} must be an array, got the tuple {shape}")
    return shape


def _check_same(opcode: Opcode, a: Shape, b: Shape) -> None:
    check(a == b, f"{opcode.value} operands differ: {a} vs {b}")


def _check_dims_in_range(dims: Sequence[int], rank: int, what: str) -> None:
    check(all(0 <= d < rank for d in dims), f"{what} {list(dims)} out of range for rank {rank}")
    check(len(set(dims)) == len(dims), f"{what} {list(dims)} repeat a dimension")


# ---- elementwise -----------------------------------------------------------------------------

#: Unary elementwise opcodes whose result element type is the instruction's, not the operand's.
_RETYPING = frozenset({Opcode.CONVERT, Opcode.BITCAST_CONVERT})


def _check_element_type(opcode: Opcode, x: Shape) -> None:
    """The operand types the opcode's row allows (``OpcodeInfo.operand_types``)."""
    types, dtype = opcode.info.operand_types, x.dtype
    if types is ElementTypes.FLOAT:
        check(dtype.is_float, f"{opcode.value} needs a floating-point operand, got {x}")
    elif types is ElementTypes.INEXACT:
        ok = dtype.is_float or dtype.is_complex
        check(ok, f"{opcode.value} needs a floating-point or complex operand, got {x}")
    elif types is ElementTypes.REAL_FLOAT:
        check(dtype.is_complex_part, f"{opcode.value} needs an f32 or f64 operand, got {x}")
    elif types is ElementTypes.NOT_FLOAT:
        check(not dtype.is_float, f"{opcode.value} needs integers or pred, got {x}")
    elif types is ElementTypes.NOT_PRED:
        check(dtype is not PrimitiveType.PRED, f"{opcode.value} is not defined for pred")
    elif types is ElementTypes.INTEGER:
        check(dtype.is_integral, f"{opcode.value} needs an integer operand, got {x}")


def infer_unary_shape(opcode: Opcode, x: Shape) -> Shape:
    check(
        opcode in UNARY_ELEMENTWISE - _RETYPING,
        f"{opcode.value} is not a unary elementwise op",
    )
    _check_element_type(opcode, x)
    if opcode is Opcode.IS_FINITE:
        return x.with_dtype(PrimitiveType.PRED)
    if opcode in _TO_COMPONENT:  # |z|, re z and im z of a complex z are real
        return x.with_dtype(x.dtype.component)
    return x


_TO_COMPONENT = frozenset({Opcode.ABS, Opcode.REAL, Opcode.IMAG})


def infer_convert_shape(x: Shape, dtype: PrimitiveType) -> Shape:
    return x.with_dtype(dtype)


def infer_bitcast_convert_shape(x: Shape, dtype: PrimitiveType) -> Shape:
    """The bits reinterpreted: same width elementwise; to a type ``n`` times narrower, each
    element becomes a new last dimension of ``n`` (least significant part first, as on
    XLA's little-endian CPU backend); to one ``n`` times wider, a last dimension of ``n``
    becomes one element (``passes/bitcast_width.py`` lowers both forms to integer ops)."""
    bits = {PrimitiveType.PRED} & {x.dtype, dtype}
    check(not bits, f"bitcast-convert is not defined for pred ({x} to {dtype.value})")
    src, dst = x.dtype.byte_size, dtype.byte_size
    if src > dst:
        return Shape(dtype, (*x.dims, src // dst))
    if src < dst:
        check(
            x.rank >= 1 and x.dims[-1] * src == dst,
            f"bitcast-convert from {x} to {dtype.value} needs a last dimension of {dst // src}",
        )
        return Shape(dtype, x.dims[:-1])
    return x.with_dtype(dtype)


def infer_rng_bit_generator_shape(
    state: Shape, out: AnyShape, attrs: RngBitGeneratorAttrs
) -> AnyShape:
    """``(state, bits)``: the state is u64[2] or u64[3] (u64[2] for ThreeFry), the bits an
    array of an unsigned integer type of any shape (the instruction's own)."""
    sizes = (2, 3) if attrs.philox else (2,)
    check(
        state.dtype is PrimitiveType.U64 and state.rank == 1 and state.dims[0] in sizes,
        f"rng-bit-generator {attrs.algorithm.value} needs a u64[{' or '.join(map(str, sizes))}] "
        f"state, got {state}",
    )
    check(
        isinstance(out, TupleShape) and len(out.elements) == 2,
        f"rng-bit-generator returns (state, bits), got {out}",
    )
    bits = array(out.elements[1], "rng-bit-generator bits")  # type: ignore[union-attr]
    check(bits.dtype.is_unsigned_int, f"rng-bit-generator bits must be unsigned, got {bits}")
    return TupleShape((state, bits))


def infer_binary_shape(opcode: Opcode, a: Shape, b: Shape) -> Shape:
    check(
        opcode in BINARY_ELEMENTWISE and opcode is not Opcode.COMPARE,
        f"{opcode.value} is not a binary elementwise op",
    )
    _check_same(opcode, a, b)
    _check_element_type(opcode, a)
    if opcode is Opcode.COMPLEX:
        return a.with_dtype(a.dtype.complex_type)
    return a


def infer_fft_shape(x: Shape, attrs: FftAttrs) -> Shape:
    """XLA's rule: the last ``len(fft_length)`` (1 to 3) dims are transformed; an RFFT's
    input has them equal to ``fft_length`` and its last output dim is ``n // 2 + 1``, an
    IRFFT's the reverse; FFT and IFFT keep the shape."""
    kind, lengths = attrs.fft_type, attrs.fft_length
    check(
        1 <= len(lengths) <= 3, f"fft transforms 1 to 3 dimensions, got fft_length {list(lengths)}"
    )
    check(len(lengths) <= x.rank, f"fft_length {list(lengths)} has more dimensions than {x}")
    check(all(n >= 1 for n in lengths), f"fft_length {list(lengths)} must be positive")
    if kind is FftType.RFFT:
        check(x.dtype.is_complex_part, f"RFFT needs an f32 or f64 operand, got {x}")
        check(
            x.dims[-len(lengths) :] == lengths, f"RFFT of {x} needs fft_length {list(lengths)} last"
        )
        return Shape(x.dtype.complex_type, (*x.dims[:-1], lengths[-1] // 2 + 1))
    check(x.dtype.is_complex, f"{kind.value} needs a complex operand, got {x}")
    inner = (*lengths[:-1], lengths[-1] // 2 + 1) if kind is FftType.IRFFT else lengths
    check(
        x.dims[-len(lengths) :] == inner, f"{kind.value} of {x} needs trailing dims {list(inner)}"
    )
    if kind is FftType.IRFFT:
        return Shape(x.dtype.component, (*x.dims[:-1], lengths[-1]))
    return x


def infer_compare_shape(a: Shape, b: Shape) -> Shape:
    _check_same(Opcode.COMPARE, a, b)
    return a.with_dtype(PrimitiveType.PRED)


def infer_select_shape(pred: Shape, on_true: Shape, on_false: Shape) -> Shape:
    _check_same(Opcode.SELECT, on_true, on_false)
    check(
        pred == on_true.with_dtype(PrimitiveType.PRED),
        f"select predicate {pred} does not match {on_true}",
    )
    return on_true


def infer_clamp_shape(low: Shape, x: Shape, high: Shape) -> Shape:
    """XLA allows scalar bounds: ``clamp(f32[] lo, f32[4] x, f32[] hi)``."""
    for bound in (low, high):
        check(
            bound == x or bound == Shape(x.dtype),
            f"clamp bound {bound} must be {x} or a {x.dtype.value}[] scalar",
        )
    return x


# ---- data movement ---------------------------------------------------------------------------


def infer_broadcast_shape(x: Shape, dims: Sequence[int], dimensions: Sequence[int]) -> Shape:
    check(len(dimensions) == x.rank, f"broadcast of {x} needs {x.rank} dimensions")
    check(len(set(dimensions)) == len(dimensions), f"broadcast dims {list(dimensions)} repeat")
    for operand_dim, out_dim in enumerate(dimensions):
        check(
            0 <= out_dim < len(dims) and dims[out_dim] == x.dims[operand_dim],
            f"broadcast of {x} to {list(dims)} via {list(dimensions)} is invalid",
        )
    return x.with_dims(tuple(dims))


def infer_reshape_shape(x: Shape, dims: Sequence[int]) -> Shape:
    out = x.with_dims(tuple(dims))
    check(out.size == x.size and all(d >= 0 for d in dims), f"cannot reshape {x} to {list(dims)}")
    return out


def infer_bitcast_shape(x: Shape, result: Shape) -> Shape:
    """Row-major layouts make a bitcast a reshape that may also reinterpret the element type."""
    check(
        x.byte_size == result.byte_size,
        f"bitcast of {x} ({x.byte_size} bytes) to {result} ({result.byte_size} bytes)",
    )
    return result


def infer_transpose_shape(x: Shape, permutation: Sequence[int]) -> Shape:
    check(
        sorted(permutation) == list(range(x.rank)),
        f"{list(permutation)} is not a permutation of {x}'s dimensions",
    )
    return x.with_dims(tuple(x.dims[p] for p in permutation))


def infer_reverse_shape(x: Shape, dimensions: Sequence[int]) -> Shape:
    _check_dims_in_range(dimensions, x.rank, "reverse dimensions")
    return x


def infer_slice_shape(
    x: Shape, starts: Sequence[int], limits: Sequence[int], strides: Sequence[int]
) -> Shape:
    check(len(starts) == len(limits) == len(strides) == x.rank, f"slice rank of {x}")
    for s, lim, st, n in zip(starts, limits, strides, x.dims, strict=True):
        check(0 <= s <= lim <= n and st > 0, f"slice [{s}:{lim}:{st}] out of range of {n}")
    spans = zip(starts, limits, strides, strict=True)
    dims = tuple((lim - s + st - 1) // st for s, lim, st in spans)
    return x.with_dims(dims)


def infer_concatenate_shape(xs: Sequence[Shape], dimension: int) -> Shape:
    check(len(xs) >= 1, "concatenate needs at least one operand")
    first = xs[0]
    check(0 <= dimension < first.rank, f"concatenate dimension {dimension} out of range of {first}")
    for other in xs[1:]:
        same = (
            other.dtype == first.dtype
            and other.rank == first.rank
            and all(other.dims[d] == n for d, n in enumerate(first.dims) if d != dimension)
        )
        check(same, f"cannot concatenate {first} and {other} along {dimension}")
    dims = list(first.dims)
    dims[dimension] = sum(x.dims[dimension] for x in xs)
    return first.with_dims(tuple(dims))


def infer_pad_shape(x: Shape, value: Shape, dims: Sequence[PadDim]) -> Shape:
    check(
        len(dims) == x.rank and value == Shape(x.dtype),
        f"pad of {x} needs {x.rank} dims and a {x.dtype.value}[] value",
    )
    check(all(p.interior >= 0 for p in dims), f"pad of {x}: interior padding must be >= 0")
    pairs = zip(dims, x.dims, strict=True)
    out = tuple(p.low + p.high + n + max(n - 1, 0) * p.interior for p, n in pairs)
    check(all(d >= 0 for d in out), f"pad of {x} gives negative dimensions {out}")
    return x.with_dims(out)


def infer_gather_shape(operand: Shape, indices: Shape, g: GatherAttrs) -> Shape:
    """XLA's gather: the indices' batch dims, with the slice dims inserted at ``offset_dims``."""
    check(indices.dtype.is_integral, f"gather indices must be integers, got {indices}")
    batch = _gather_batch_dims(indices, g)
    _check_gather_operand_dims(operand, g)
    for o, i in zip(g.operand_batching_dims, g.start_indices_batching_dims, strict=True):
        check(operand.dims[o] == indices.dims[i], f"gather batching dims {o} and {i} differ")
    offset_sizes = [
        n
        for d, n in enumerate(g.slice_sizes)
        if d not in g.collapsed_slice_dims and d not in g.operand_batching_dims
    ]
    rank = len(batch) + len(offset_sizes)
    check(
        list(g.offset_dims) == sorted(set(g.offset_dims))
        and len(g.offset_dims) == len(offset_sizes),
        f"gather offset_dims {list(g.offset_dims)} must be sorted, one per slice dim kept",
    )
    _check_dims_in_range(g.offset_dims, rank, "gather offset_dims")
    sizes, batch_iter = iter(offset_sizes), iter(batch)
    dims = tuple(next(sizes) if d in g.offset_dims else next(batch_iter) for d in range(rank))
    return operand.with_dims(dims)


def _gather_batch_dims(indices: Shape, g: GatherAttrs) -> list[int]:
    return _index_batch_dims(
        "gather", indices, g.index_vector_dim, ("start_index_map", g.start_index_map),
        g.start_indices_batching_dims,
    )  # fmt: skip


def _index_batch_dims(
    op: str,
    indices: Shape,
    ivd: int,
    index_map: tuple[str, Sequence[int]],
    batching: Sequence[int],
) -> list[int]:
    """The indices' dims without the index vector dim ``ivd`` (gather and scatter alike);
    checks the index vector's length against ``index_map`` and the batching dims."""
    check(0 <= ivd <= indices.rank, f"{op} index_vector_dim {ivd} out of range of {indices}")
    vector = indices.dims[ivd] if ivd < indices.rank else 1
    name, dims = index_map
    check(
        vector == len(dims),
        f"{op} index vectors of {indices} have {vector} elements, {name} {list(dims)} "
        f"needs {len(dims)}",
    )
    check(ivd not in batching, f"{op} indices batching dims include the index vector dim")
    _check_dims_in_range(batching, indices.rank, f"{op} indices batching dims")
    return [n for d, n in enumerate(indices.dims) if d != ivd]


def _check_gather_operand_dims(operand: Shape, g: GatherAttrs) -> None:
    check(len(g.slice_sizes) == operand.rank, f"gather slice_sizes of {operand}")
    for size, n in zip(g.slice_sizes, operand.dims, strict=True):
        check(0 <= size <= n, f"gather slice_sizes {list(g.slice_sizes)} exceed {operand}")
    collapsed, batching = g.collapsed_slice_dims, g.operand_batching_dims
    _check_dims_in_range(g.start_index_map, operand.rank, "gather start_index_map")
    _check_dims_in_range((*collapsed, *batching), operand.rank, "gather collapsed/batching dims")
    check(
        list(collapsed) == sorted(collapsed) and list(batching) == sorted(batching),
        "gather collapsed_slice_dims and operand_batching_dims must be sorted",
    )
    check(
        all(g.slice_sizes[d] == 1 for d in (*collapsed, *batching)),
        f"gather slice_sizes {list(g.slice_sizes)} must be 1 in collapsed and batching dims",
    )
    check(not set(batching) & set(g.start_index_map), "gather batching dims in start_index_map")
    check(
        len(batching) == len(g.start_indices_batching_dims),
        "gather needs one start_indices_batching_dim per operand_batching_dim",
    )


def _check_start_indices(opcode: Opcode, operand: Shape, indices: Sequence[AnyShape]) -> None:
    check(
        len(indices) == operand.rank,
        f"{opcode.value} of {operand} needs {operand.rank} start indices, got {len(indices)}",
    )
    for i, index in enumerate(indices):
        check(
            isinstance(index, Shape) and index.rank == 0 and index.dtype.is_integral,
            f"{opcode.value} start index {i} must be an integer scalar, got {index}",
        )
    check(len(set(indices)) <= 1, f"{opcode.value} start indices differ in type: {indices}")


def infer_dynamic_slice_shape(
    operand: Shape, indices: Sequence[AnyShape], sizes: Sequence[int]
) -> Shape:
    """A slice of ``sizes`` at run-time start indices (clamped, so sizes must fit)."""
    _check_start_indices(Opcode.DYNAMIC_SLICE, operand, indices)
    check(len(sizes) == operand.rank, f"dynamic-slice sizes {list(sizes)} for {operand}")
    fits = all(0 <= size <= n for size, n in zip(sizes, operand.dims, strict=True))
    check(fits, f"dynamic-slice sizes {list(sizes)} exceed {operand}")
    return operand.with_dims(tuple(sizes))


def infer_dynamic_update_slice_shape(
    operand: Shape, update: Shape, indices: Sequence[AnyShape]
) -> Shape:
    """``operand`` with ``update`` written at run-time start indices (clamped to fit)."""
    _check_start_indices(Opcode.DYNAMIC_UPDATE_SLICE, operand, indices)
    check(update.dtype == operand.dtype, f"dynamic-update-slice of {update} into {operand}")
    fits = update.rank == operand.rank and all(
        u <= n for u, n in zip(update.dims, operand.dims, strict=True)
    )
    check(fits, f"dynamic-update-slice update {update} does not fit in {operand}")
    return operand


def infer_iota_shape(shape: Shape, dimension: int) -> Shape:
    check(0 <= dimension < shape.rank, f"iota dimension {dimension} out of range for {shape}")
    return shape


# ---- contractions and reductions -------------------------------------------------------------


def infer_dot_shape(lhs: Shape, rhs: Shape, dims: DotDims) -> Shape:
    """XLA's dot result: batch dims, then lhs free dims, then rhs free dims."""
    check(lhs.dtype == rhs.dtype, f"dot of {lhs} and {rhs}: element types differ")
    check(
        len(dims.lhs_batch) == len(dims.rhs_batch)
        and len(dims.lhs_contracting) == len(dims.rhs_contracting),
        f"dot dims {dims}",
    )
    _check_dims_in_range((*dims.lhs_batch, *dims.lhs_contracting), lhs.rank, "dot lhs dims")
    _check_dims_in_range((*dims.rhs_batch, *dims.rhs_contracting), rhs.rank, "dot rhs dims")
    for a, b in [
        *zip(dims.lhs_batch, dims.rhs_batch, strict=True),
        *zip(dims.lhs_contracting, dims.rhs_contracting, strict=True),
    ]:
        check(
            lhs.dims[a] == rhs.dims[b], f"dot of {lhs} and {rhs}: dimension {a} does not match {b}"
        )
    batch = [lhs.dims[d] for d in dims.lhs_batch]
    lhs_free = [
        n
        for d, n in enumerate(lhs.dims)
        if d not in dims.lhs_batch and d not in dims.lhs_contracting
    ]
    rhs_free = [
        n
        for d, n in enumerate(rhs.dims)
        if d not in dims.rhs_batch and d not in dims.rhs_contracting
    ]
    return lhs.with_dims(tuple(batch + lhs_free + rhs_free))


def _check_variadic(opcode: Opcode, operands: Sequence[Shape], inits: Sequence[Shape]) -> None:
    check(len(operands) == len(inits) >= 1, f"{opcode.value} needs one init value per operand")
    for x, init in zip(operands, inits, strict=True):
        check(x.dims == operands[0].dims, f"{opcode.value} operands {x} and {operands[0]} differ")
        check(init == Shape(x.dtype), f"{opcode.value} init of {x} must be a scalar, got {init}")


def _variadic_result(shapes: Sequence[Shape]) -> Shape | TupleShape:
    return shapes[0] if len(shapes) == 1 else TupleShape(tuple(shapes))


def infer_reduce_shape(
    operands: Sequence[Shape], inits: Sequence[Shape], dimensions: Sequence[int]
) -> Shape | TupleShape:
    _check_variadic(Opcode.REDUCE, operands, inits)
    _check_dims_in_range(dimensions, operands[0].rank, "reduce dimensions")
    kept = tuple(n for d, n in enumerate(operands[0].dims) if d not in dimensions)
    return _variadic_result([x.with_dims(kept) for x in operands])


def window_output_size(
    n: int,
    wd: int,
    size: int,
    stride: int,
    pad_low: int,
    pad_high: int,
    lhs_dilation: int,
    rhs_dilation: int,
) -> int:
    """Valid window placements along one dimension (``wd`` names it in messages)."""
    check(
        size > 0 and stride > 0 and lhs_dilation > 0 and rhs_dilation > 0,
        f"window dimension {wd}: size, stride and dilations must be positive",
    )
    padded = pad_low + pad_high + (max(n - 1, 0) * lhs_dilation + 1 if n else 0)
    span = (size - 1) * rhs_dilation + 1
    return 0 if padded < span else (padded - span) // stride + 1


def _window_dims(dims: Sequence[int], window: Window) -> tuple[int, ...]:
    check(len(window.dims) == len(dims), f"window of rank {len(window.dims)} for {list(dims)}")
    return tuple(
        window_output_size(
            n, i, w.size, w.stride, w.pad_low, w.pad_high, w.lhs_dilation, w.rhs_dilation
        )
        for i, (n, w) in enumerate(zip(dims, window.dims, strict=True))
    )


def infer_reduce_window_shape(
    operands: Sequence[Shape], inits: Sequence[Shape], window: Window
) -> Shape | TupleShape:
    _check_variadic(Opcode.REDUCE_WINDOW, operands, inits)
    out = _window_dims(operands[0].dims, window)
    return _variadic_result([x.with_dims(out) for x in operands])


def infer_convolution_shape(lhs: Shape, rhs: Shape, attrs: ConvAttrs) -> Shape:
    d, n = attrs.dims, len(attrs.window.dims)
    check(lhs.dtype == rhs.dtype, f"convolution of {lhs} and {rhs}: element types differ")
    check(lhs.rank == rhs.rank == n + 2, f"convolution of {lhs} and {rhs} with a {n}-d window")
    for labels, rank, what in [
        ((d.input_batch, d.input_feature, *d.input_spatial), lhs.rank, "input"),
        ((d.kernel_input_feature, d.kernel_output_feature, *d.kernel_spatial), rhs.rank, "kernel"),
        ((d.output_batch, d.output_feature, *d.output_spatial), n + 2, "output"),
    ]:
        check(sorted(labels) == list(range(rank)), f"convolution {what} dims {labels} invalid")
    groups, batch_groups = attrs.feature_group_count, attrs.batch_group_count
    in_features, out_features = lhs.dims[d.input_feature], rhs.dims[d.kernel_output_feature]
    check(groups >= 1 and batch_groups >= 1, "convolution group counts must be >= 1")
    check(
        in_features == rhs.dims[d.kernel_input_feature] * groups,
        f"convolution input features {in_features} != kernel input features "
        f"{rhs.dims[d.kernel_input_feature]} * feature_group_count {groups}",
    )
    check(
        out_features % (groups * batch_groups) == 0,
        f"convolution output features {out_features} not divisible by the group counts",
    )
    check(
        lhs.dims[d.input_batch] % batch_groups == 0,
        f"convolution batch {lhs.dims[d.input_batch]} not divisible by {batch_groups}",
    )
    sizes = [rhs.dims[k] for k in d.kernel_spatial]
    check(
        sizes == [w.size for w in attrs.window.dims],
        f"convolution window sizes do not match kernel spatial dims {sizes}",
    )
    spatial = _window_dims([lhs.dims[s] for s in d.input_spatial], attrs.window)
    out = [0] * (n + 2)
    out[d.output_batch] = lhs.dims[d.input_batch] // batch_groups
    out[d.output_feature] = out_features
    for dim, size in zip(d.output_spatial, spatial, strict=True):
        out[dim] = size
    return lhs.with_dims(tuple(out))


# ---- sorting, selecting and scattering ------------------------------------------------------


def infer_sort_shape(operands: Sequence[Shape], dimension: int) -> Shape | TupleShape:
    """Operands of one shape (any element types), sorted together along ``dimension``."""
    check(len(operands) >= 1, "sort needs at least one operand")
    first = operands[0]
    for x in operands[1:]:
        check(x.dims == first.dims, f"sort operands {first} and {x} differ in dimensions")
    check(0 <= dimension < first.rank, f"sort dimension {dimension} out of range of {first}")
    return _variadic_result(list(operands))


def infer_topk_shape(x: Shape, k: int) -> TupleShape:
    """The values and s32 indices of the ``k`` first of the last dimension."""
    check(x.rank >= 1, f"topk of the scalar {x}")
    check(0 <= k <= x.dims[-1], f"topk k={k} out of range for the last dimension of {x}")
    out = (*x.dims[:-1], k)
    return TupleShape((x.with_dims(out), Shape(PrimitiveType.S32, out)))


def infer_scatter_shape(
    operands: Sequence[Shape], indices: Shape, updates: Sequence[Shape], s: ScatterAttrs
) -> Shape | TupleShape:
    """XLA's scatter: the operands' shapes; checks the dimension numbers against all three."""
    check(len(operands) == len(updates) >= 1, "scatter needs one update per operand")
    check(indices.dtype.is_integral, f"scatter indices must be integers, got {indices}")
    for x, u in zip(operands, updates, strict=True):
        check(x.dims == operands[0].dims, f"scatter operands {operands[0]} and {x} differ")
        check(u.dims == updates[0].dims, f"scatter updates {updates[0]} and {u} differ")
        check(u.dtype == x.dtype, f"scatter update {u} does not match the operand {x}")
    batch = _scatter_batch_dims(indices, s)
    _check_scatter_window(operands[0], updates[0], s)
    scattered = [n for d, n in enumerate(updates[0].dims) if d not in s.update_window_dims]
    check(
        scattered == batch,
        f"scatter updates {updates[0]} must have the indices' dims {batch} besides the window",
    )
    for o, i in zip(s.input_batching_dims, s.scatter_indices_batching_dims, strict=True):
        check(operands[0].dims[o] == indices.dims[i], f"scatter batching dims {o} and {i} differ")
    return _variadic_result(list(operands))


def _scatter_batch_dims(indices: Shape, s: ScatterAttrs) -> list[int]:
    return _index_batch_dims(
        "scatter", indices, s.index_vector_dim,
        ("scatter_dims_to_operand_dims", s.scatter_dims_to_operand_dims),
        s.scatter_indices_batching_dims,
    )  # fmt: skip


def scatter_window_operand_dims(rank: int, s: ScatterAttrs) -> list[int]:
    """The operand dims the update window dims fill, in order."""
    dropped = {*s.inserted_window_dims, *s.input_batching_dims}
    return [d for d in range(rank) if d not in dropped]


def _check_scatter_window(operand: Shape, update: Shape, s: ScatterAttrs) -> None:
    inserted, batching, window = s.inserted_window_dims, s.input_batching_dims, s.update_window_dims
    _check_dims_in_range(window, update.rank, "scatter update_window_dims")
    _check_dims_in_range((*inserted, *batching), operand.rank, "scatter inserted/batching dims")
    _check_dims_in_range(
        s.scatter_dims_to_operand_dims, operand.rank, "scatter_dims_to_operand_dims"
    )
    for what, dims in (("update_window_dims", window), ("inserted_window_dims", inserted)):
        check(list(dims) == sorted(dims), f"scatter {what} {list(dims)} must be sorted")
    check(list(batching) == sorted(batching), "scatter input_batching_dims must be sorted")
    check(
        not set(batching) & set(s.scatter_dims_to_operand_dims), "scatter batching dims scattered"
    )
    check(len(batching) == len(s.scatter_indices_batching_dims), "scatter batching dims differ")
    check(
        operand.rank == len(window) + len(inserted) + len(batching),
        f"scatter into {operand}: {len(window)} window, {len(inserted)} inserted and "
        f"{len(batching)} batching dims must make its rank",
    )
    targets = scatter_window_operand_dims(operand.rank, s)
    for u, o in zip(window, targets, strict=True):
        check(
            update.dims[u] <= operand.dims[o],
            f"scatter update window dim {u} of {update} exceeds operand dim {o} of {operand}",
        )


# ---- tuples ----------------------------------------------------------------------------------


def infer_tuple_shape(xs: Sequence[AnyShape]) -> TupleShape:
    return TupleShape(tuple(xs))


def infer_get_tuple_element_shape(t: AnyShape, index: int) -> AnyShape:
    if not isinstance(t, TupleShape):
        raise ShapeError(f"get-tuple-element of the array {t}")
    check(0 <= index < len(t.elements), f"tuple index {index} out of range of {t}")
    return t.elements[index]


# ---- control flow ----------------------------------------------------------------------------


def _check_takes(comp: Computation, shapes: Sequence[AnyShape], what: str) -> None:
    params = [p.shape for p in comp.parameters]
    takes = f"{what} {comp.name} takes {_shapes(params)}"
    check(params == list(shapes), f"{takes}, must take {_shapes(shapes)}")


def _check_returns(comp: Computation, shape: AnyShape, what: str) -> None:
    returns = f"{what} {comp.name} returns {comp.root.shape}"
    check(comp.root.shape == shape, f"{returns}, must return {shape}")


def _shapes(shapes: Sequence[AnyShape]) -> str:
    return "(" + ", ".join(map(str, shapes)) + ")"


def infer_call_shape(operands: Sequence[AnyShape], to_apply: Computation) -> AnyShape:
    _check_takes(to_apply, operands, "called computation")
    return to_apply.root.shape


def infer_while_shape(carry: AnyShape, condition: Computation, body: Computation) -> AnyShape:
    """The carry's shape: the condition maps it to ``pred[]``, the body to itself."""
    _check_takes(condition, [carry], "while condition")
    _check_returns(condition, Shape(PrimitiveType.PRED), "while condition")
    _check_takes(body, [carry], "while body")
    _check_returns(body, carry, "while body")
    return carry


def infer_conditional_shape(
    selector: AnyShape, operands: Sequence[AnyShape], branches: Sequence[Computation]
) -> AnyShape:
    """Branch i takes operand i; all branches return the same shape, the result's."""
    pred, index = Shape(PrimitiveType.PRED), Shape(PrimitiveType.S32)
    check(selector in (pred, index), f"conditional selector must be pred[] or s32[]: {selector}")
    check(selector != pred or len(branches) == 2, "a conditional on a pred has two branches")
    check(len(branches) >= 1, "a conditional needs at least one branch")
    check(
        len(operands) == len(branches),
        f"a conditional of {len(branches)} branches takes {len(branches)} branch operands, "
        f"got {len(operands)}",
    )
    result = branches[0].root.shape
    for i, (operand, branch) in enumerate(zip(operands, branches, strict=True)):
        _check_takes(branch, [operand], f"branch {i}")
        _check_returns(branch, result, f"branch {i}")
    return result


# ---- per instruction: the verifier's entry point ---------------------------------------------

_InstRule = Callable[[Instruction], AnyShape]
#: Per opcode: the rule that infers an instruction's shape (every opcode has one).
SHAPE_RULES: Registry[Opcode, _InstRule] = Registry("shape rule")
_rule = SHAPE_RULES.register


def infer_instruction_shape(inst: Instruction) -> AnyShape:
    """Re-infer ``inst``'s shape from its operands, attributes and called computations.

    Opcodes whose result dims are not implied by the operands (reshape, broadcast, iota,
    bitcast, convert's element type) take them from ``inst.shape`` and check they fit.
    Assumes operand counts and attribute types were checked already.
    """
    return SHAPE_RULES[inst.opcode](inst)


def _operand(inst: Instruction, i: int) -> Shape:
    return array(inst.operands[i].shape, f"{inst.opcode.value} operand {i}")


def _operands(inst: Instruction) -> list[Shape]:
    return [_operand(inst, i) for i in range(len(inst.operands))]


@_rule(Opcode.PARAMETER)
def _parameter_rule(inst: Instruction) -> AnyShape:
    return inst.shape


@_rule(Opcode.CONSTANT)
def _constant_rule(inst: Instruction) -> AnyShape:
    if inst.literal is None:
        raise ShapeError("constant has no literal")
    return Shape(PrimitiveType.from_numpy(inst.literal.dtype), tuple(inst.literal.shape))


@_rule(Opcode.IOTA)
def _iota_rule(inst: Instruction) -> AnyShape:
    attrs = inst.attrs_as(IotaAttrs)
    return infer_iota_shape(array(inst.shape, "iota result"), attrs.iota_dimension)


@_rule(*(UNARY_ELEMENTWISE - _RETYPING - {Opcode.REDUCE_PRECISION}))
def _unary_rule(inst: Instruction) -> AnyShape:
    return infer_unary_shape(inst.opcode, _operand(inst, 0))


@_rule(Opcode.REDUCE_PRECISION)
def _reduce_precision_rule(inst: Instruction) -> AnyShape:
    attrs = inst.attrs_as(ReducePrecisionAttrs)
    check(
        attrs.exponent_bits >= 1 and attrs.mantissa_bits >= 0,
        f"reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0, got {attrs}",
    )
    return infer_unary_shape(Opcode.REDUCE_PRECISION, _operand(inst, 0))


@_rule(Opcode.CONVERT)
def _convert_rule(inst: Instruction) -> AnyShape:
    return infer_convert_shape(_operand(inst, 0), array(inst.shape, "convert result").dtype)


@_rule(Opcode.BITCAST_CONVERT)
def _bitcast_convert_rule(inst: Instruction) -> AnyShape:
    dtype = array(inst.shape, "bitcast-convert result").dtype
    return infer_bitcast_convert_shape(_operand(inst, 0), dtype)


@_rule(*(BINARY_ELEMENTWISE - {Opcode.COMPARE}))
def _binary_rule(inst: Instruction) -> AnyShape:
    return infer_binary_shape(inst.opcode, *_operands(inst))


@_rule(Opcode.COMPARE)
def _compare_rule(inst: Instruction) -> AnyShape:
    a, b = _operands(inst)
    _check_comparison_type(inst.attrs_as(CompareAttrs).type, a)
    return infer_compare_shape(a, b)


def _check_comparison_type(kind: ComparisonType | None, x: Shape) -> None:
    """XLA's rule: FLOAT and TOTALORDER compare floats, SIGNED and UNSIGNED integers."""
    if kind is None:
        return
    dtype = x.dtype
    fits = {
        ComparisonType.FLOAT: dtype.is_float,
        ComparisonType.TOTALORDER: dtype.is_float,
        ComparisonType.SIGNED: dtype.is_signed_int,
        ComparisonType.UNSIGNED: not dtype.is_float and not dtype.is_signed_int,
    }[kind]
    check(fits, f"compare type={kind.value} does not apply to {x}")


@_rule(Opcode.SELECT)
def _select_rule(inst: Instruction) -> AnyShape:
    return infer_select_shape(*_operands(inst))


@_rule(Opcode.CLAMP)
def _clamp_rule(inst: Instruction) -> AnyShape:
    return infer_clamp_shape(*_operands(inst))


@_rule(Opcode.BROADCAST)
def _broadcast_rule(inst: Instruction) -> AnyShape:
    attrs = inst.attrs_as(Dimensions)
    result = array(inst.shape, "broadcast result")
    check(result.dtype == _operand(inst, 0).dtype, "broadcast changes the element type")
    return infer_broadcast_shape(_operand(inst, 0), result.dims, attrs.dimensions)


@_rule(Opcode.RESHAPE)
def _reshape_rule(inst: Instruction) -> AnyShape:
    return infer_reshape_shape(_operand(inst, 0), array(inst.shape, "reshape result").dims)


@_rule(Opcode.BITCAST)
def _bitcast_rule(inst: Instruction) -> AnyShape:
    return infer_bitcast_shape(_operand(inst, 0), array(inst.shape, "bitcast result"))


@_rule(Opcode.TRANSPOSE)
def _transpose_rule(inst: Instruction) -> AnyShape:
    attrs = inst.attrs_as(Dimensions)
    return infer_transpose_shape(_operand(inst, 0), attrs.dimensions)


@_rule(Opcode.REVERSE)
def _reverse_rule(inst: Instruction) -> AnyShape:
    attrs = inst.attrs_as(Dimensions)
    return infer_reverse_shape(_operand(inst, 0), attrs.dimensions)


@_rule(Opcode.SLICE)
def _slice_rule(inst: Instruction) -> AnyShape:
    a = inst.attrs_as(SliceAttrs)
    return infer_slice_shape(_operand(inst, 0), a.starts, a.limits, a.strides)


@_rule(Opcode.CONCATENATE)
def _concatenate_rule(inst: Instruction) -> AnyShape:
    attrs = inst.attrs_as(Dimensions)
    check(len(attrs.dimensions) == 1, "concatenate takes exactly one dimension")
    return infer_concatenate_shape(_operands(inst), attrs.dimensions[0])


@_rule(Opcode.PAD)
def _pad_rule(inst: Instruction) -> AnyShape:
    attrs = inst.attrs_as(PadAttrs)
    return infer_pad_shape(_operand(inst, 0), _operand(inst, 1), attrs.dims)


@_rule(Opcode.GATHER)
def _gather_rule(inst: Instruction) -> AnyShape:
    attrs = inst.attrs_as(GatherAttrs)
    return infer_gather_shape(_operand(inst, 0), _operand(inst, 1), attrs)


@_rule(Opcode.DYNAMIC_SLICE)
def _dynamic_slice_rule(inst: Instruction) -> AnyShape:
    sizes = inst.attrs_as(DynamicSliceAttrs).sizes
    indices = [o.shape for o in inst.operands[1:]]
    return infer_dynamic_slice_shape(_operand(inst, 0), indices, sizes)


@_rule(Opcode.DYNAMIC_UPDATE_SLICE)
def _dynamic_update_slice_rule(inst: Instruction) -> AnyShape:
    indices = [o.shape for o in inst.operands[2:]]
    return infer_dynamic_update_slice_shape(_operand(inst, 0), _operand(inst, 1), indices)


@_rule(Opcode.DOT)
def _dot_rule(inst: Instruction) -> AnyShape:
    attrs = inst.attrs_as(DotDims)
    return infer_dot_shape(_operand(inst, 0), _operand(inst, 1), attrs)


@_rule(Opcode.CONVOLUTION)
def _convolution_rule(inst: Instruction) -> AnyShape:
    attrs = inst.attrs_as(ConvAttrs)
    return infer_convolution_shape(_operand(inst, 0), _operand(inst, 1), attrs)


def _split_variadic(inst: Instruction) -> tuple[list[Shape], list[Shape]]:
    shapes = _operands(inst)
    check(len(shapes) % 2 == 0, f"{inst.opcode.value} needs N operands and N init values")
    half = len(shapes) // 2
    return shapes[:half], shapes[half:]


@_rule(Opcode.REDUCE)
def _reduce_rule(inst: Instruction) -> AnyShape:
    attrs = inst.attrs_as(Dimensions)
    return infer_reduce_shape(*_split_variadic(inst), attrs.dimensions)


@_rule(Opcode.REDUCE_WINDOW)
def _reduce_window_rule(inst: Instruction) -> AnyShape:
    attrs = inst.attrs_as(ReduceWindowAttrs)
    return infer_reduce_window_shape(*_split_variadic(inst), attrs.window)


@_rule(Opcode.RNG_BIT_GENERATOR)
def _rng_bit_generator_rule(inst: Instruction) -> AnyShape:
    attrs = inst.attrs_as(RngBitGeneratorAttrs)
    return infer_rng_bit_generator_shape(_operand(inst, 0), inst.shape, attrs)


@_rule(Opcode.SORT)
def _sort_rule(inst: Instruction) -> AnyShape:
    return infer_sort_shape(_operands(inst), inst.attrs_as(SortAttrs).dimension)


@_rule(Opcode.FFT)
def _fft_rule(inst: Instruction) -> AnyShape:
    return infer_fft_shape(_operand(inst, 0), inst.attrs_as(FftAttrs))


@_rule(Opcode.TOPK)
def _topk_rule(inst: Instruction) -> AnyShape:
    return infer_topk_shape(_operand(inst, 0), inst.attrs_as(TopKAttrs).k)


@_rule(Opcode.SCATTER)
def _scatter_rule(inst: Instruction) -> AnyShape:
    shapes = _operands(inst)
    check(len(shapes) % 2 == 1, "scatter takes N operands, the indices and N updates")
    n = len(shapes) // 2
    return infer_scatter_shape(shapes[:n], shapes[n], shapes[n + 1 :], inst.attrs_as(ScatterAttrs))


@_rule(Opcode.FUSION)
def _fusion_rule(inst: Instruction) -> AnyShape:
    check(len(inst.called) == 1, "fusion must call exactly one computation")
    return inst.called[0].root.shape


@_rule(Opcode.TUPLE)
def _tuple_rule(inst: Instruction) -> AnyShape:
    return infer_tuple_shape([o.shape for o in inst.operands])


@_rule(Opcode.GET_TUPLE_ELEMENT)
def _get_tuple_element_rule(inst: Instruction) -> AnyShape:
    attrs = inst.attrs_as(TupleIndex)
    return infer_get_tuple_element_shape(inst.operands[0].shape, attrs.index)


@_rule(Opcode.CALL)
def _call_rule(inst: Instruction) -> AnyShape:
    return infer_call_shape([o.shape for o in inst.operands], inst.called[0])


@_rule(Opcode.WHILE)
def _while_rule(inst: Instruction) -> AnyShape:
    return infer_while_shape(inst.operands[0].shape, *inst.called)


@_rule(Opcode.CONDITIONAL)
def _conditional_rule(inst: Instruction) -> AnyShape:
    selector, *operands = (o.shape for o in inst.operands)
    return infer_conditional_shape(selector, operands, inst.called)
