"""Typed helpers that create instructions and infer their result shapes, as XLA's XlaBuilder."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np

from aotc.hlo import shape_inference as si
from aotc.hlo.ir import (
    Attrs,
    CompareAttrs,
    ComparisonDirection,
    Computation,
    ConvAttrs,
    Dimensions,
    DotDims,
    DynamicSliceAttrs,
    FftAttrs,
    GatherAttrs,
    Instruction,
    IotaAttrs,
    Module,
    Opcode,
    PadAttrs,
    PadDim,
    ParameterAttrs,
    ReduceWindowAttrs,
    ScatterAttrs,
    SliceAttrs,
    SortAttrs,
    TopKAttrs,
    TupleIndex,
    WhileAttrs,
    Window,
)
from aotc.hlo.shape import AnyShape, PrimitiveType, Shape, TupleShape
from aotc.hlo.shape_inference import infer_dot_shape  # re-exported: part of this module's API


class NameUniquer:
    """Hands out module-unique names the way XLA does: ``add``, ``add.1``, ``add.2``."""

    def __init__(self) -> None:
        self._next: dict[str, int] = {}

    def get(self, base: str) -> str:
        base = base.replace("/", "_").replace(":", "_") or "x"
        count = self._next.get(base, 0)
        name = base if count == 0 else f"{base}.{count}"
        while name != base and name in self._next:  # someone literally named e.g. "add.1"
            count += 1
            name = f"{base}.{count}"
        self._next[base] = count + 1
        self._next.setdefault(name, 1)
        return name


class ComputationBuilder:
    """Appends instructions to one computation; every method returns the new instruction."""

    def __init__(self, name: str, names: NameUniquer | None = None):
        self.names = names or NameUniquer()
        self.name = name
        self.instructions: list[Instruction] = []

    def build(self, root: Instruction) -> Computation:
        return Computation(self.name, self.instructions, root)

    def add(self, inst: Instruction) -> Instruction:
        self.instructions.append(inst)
        return inst

    def _new(
        self,
        opcode: Opcode,
        shape: Shape | TupleShape,
        operands: Sequence[Instruction],
        attrs: Attrs = None,
        name: str | None = None,
        literal: np.ndarray | None = None,
        called: Sequence[Computation] = (),
    ) -> Instruction:
        unique = self.names.get(name or opcode.value)
        inst = Instruction(unique, opcode, shape, list(operands), attrs, literal, list(called))
        return self.add(inst)

    # ---- leaves ------------------------------------------------------------------------------

    def parameter(self, number: int, shape: AnyShape, name: str | None = None) -> Instruction:
        return self._new(Opcode.PARAMETER, shape, [], ParameterAttrs(number), name or "parameter")

    def constant(
        self, value: np.ndarray | float | int | bool, dtype: PrimitiveType | None = None
    ) -> Instruction:
        array = np.asarray(value) if dtype is None else np.asarray(value, dtype.numpy)
        ptype = PrimitiveType.from_numpy(array.dtype)
        if not _immutable(array):
            array = np.array(array, order="C")  # a private, contiguous copy (0-d stays 0-d)
            array.flags.writeable = False
        return self._new(Opcode.CONSTANT, Shape(ptype, array.shape), [], literal=array)

    def iota(self, shape: Shape, dimension: int) -> Instruction:
        return self._new(
            Opcode.IOTA, si.infer_iota_shape(shape, dimension), [], IotaAttrs(dimension)
        )

    # ---- elementwise -------------------------------------------------------------------------

    def unary(self, opcode: Opcode, x: Instruction) -> Instruction:
        return self._new(opcode, si.infer_unary_shape(opcode, x.array_shape), [x])

    def convert(self, x: Instruction, dtype: PrimitiveType) -> Instruction:
        return self._new(Opcode.CONVERT, si.infer_convert_shape(x.array_shape, dtype), [x])

    def bitcast_convert(self, x: Instruction, dtype: PrimitiveType) -> Instruction:
        shape = si.infer_bitcast_convert_shape(x.array_shape, dtype)
        return self._new(Opcode.BITCAST_CONVERT, shape, [x])

    def binary(self, opcode: Opcode, a: Instruction, b: Instruction) -> Instruction:
        shape = si.infer_binary_shape(opcode, _array(a), _array(b))
        return self._new(opcode, shape, [a, b])

    def compare(
        self, a: Instruction, b: Instruction, direction: ComparisonDirection
    ) -> Instruction:
        shape = si.infer_compare_shape(_array(a), _array(b))
        return self._new(Opcode.COMPARE, shape, [a, b], CompareAttrs(direction))

    def select(self, pred: Instruction, on_true: Instruction, on_false: Instruction) -> Instruction:
        shape = si.infer_select_shape(_array(pred), _array(on_true), _array(on_false))
        return self._new(Opcode.SELECT, shape, [pred, on_true, on_false])

    def clamp(self, low: Instruction, x: Instruction, high: Instruction) -> Instruction:
        shape = si.infer_clamp_shape(_array(low), _array(x), _array(high))
        return self._new(Opcode.CLAMP, shape, [low, x, high])

    # ---- data movement -----------------------------------------------------------------------

    def broadcast(
        self, x: Instruction, dims: Sequence[int], dimensions: Sequence[int]
    ) -> Instruction:
        shape = si.infer_broadcast_shape(x.array_shape, dims, dimensions)
        return self._new(Opcode.BROADCAST, shape, [x], Dimensions(tuple(dimensions)))

    def reshape(self, x: Instruction, dims: Sequence[int]) -> Instruction:
        return self._new(Opcode.RESHAPE, si.infer_reshape_shape(x.array_shape, dims), [x])

    def transpose(self, x: Instruction, permutation: Sequence[int]) -> Instruction:
        out = si.infer_transpose_shape(x.array_shape, permutation)
        return self._new(Opcode.TRANSPOSE, out, [x], Dimensions(tuple(permutation)))

    def slice(
        self,
        x: Instruction,
        starts: Sequence[int],
        limits: Sequence[int],
        strides: Sequence[int] | None = None,
    ) -> Instruction:
        src = x.array_shape
        strides = strides or [1] * src.rank
        out = si.infer_slice_shape(src, starts, limits, strides)
        attrs = SliceAttrs(tuple(starts), tuple(limits), tuple(strides))
        return self._new(Opcode.SLICE, out, [x], attrs)

    def concatenate(self, xs: Sequence[Instruction], dimension: int) -> Instruction:
        out = si.infer_concatenate_shape([_array(x) for x in xs], dimension)
        return self._new(Opcode.CONCATENATE, out, xs, Dimensions((dimension,)))

    def pad(self, x: Instruction, value: Instruction, dims: Sequence[PadDim]) -> Instruction:
        out = si.infer_pad_shape(x.array_shape, _array(value), dims)
        return self._new(Opcode.PAD, out, [x, value], PadAttrs(tuple(dims)))

    def reverse(self, x: Instruction, dimensions: Sequence[int]) -> Instruction:
        out = si.infer_reverse_shape(x.array_shape, dimensions)
        return self._new(Opcode.REVERSE, out, [x], Dimensions(tuple(dimensions)))

    def gather(self, operand: Instruction, indices: Instruction, attrs: GatherAttrs) -> Instruction:
        out = si.infer_gather_shape(operand.array_shape, indices.array_shape, attrs)
        return self._new(Opcode.GATHER, out, [operand, indices], attrs)

    def dynamic_slice(
        self, x: Instruction, starts: Sequence[Instruction], sizes: Sequence[int]
    ) -> Instruction:
        out = si.infer_dynamic_slice_shape(x.array_shape, [i.shape for i in starts], sizes)
        attrs = DynamicSliceAttrs(tuple(sizes))
        return self._new(Opcode.DYNAMIC_SLICE, out, [x, *starts], attrs)

    def dynamic_update_slice(
        self, x: Instruction, update: Instruction, starts: Sequence[Instruction]
    ) -> Instruction:
        indices = [i.shape for i in starts]
        out = si.infer_dynamic_update_slice_shape(x.array_shape, update.array_shape, indices)
        return self._new(Opcode.DYNAMIC_UPDATE_SLICE, out, [x, update, *starts])

    # ---- contractions and reductions ---------------------------------------------------------

    def dot(self, a: Instruction, b: Instruction, dims: DotDims) -> Instruction:
        return self._new(
            Opcode.DOT, infer_dot_shape(a.array_shape, b.array_shape, dims), [a, b], dims
        )

    def reduce(
        self,
        operands: Sequence[Instruction],
        inits: Sequence[Instruction],
        dimensions: Sequence[int],
        to_apply: Computation,
    ) -> Instruction:
        shape = si.infer_reduce_shape(
            [_array(x) for x in operands], [_array(i) for i in inits], dimensions
        )
        inst = self._new(
            Opcode.REDUCE, shape, [*operands, *inits], Dimensions(tuple(sorted(dimensions)))
        )
        inst.called = [to_apply]
        return inst

    def convolution(self, lhs: Instruction, rhs: Instruction, attrs: ConvAttrs) -> Instruction:
        shape = si.infer_convolution_shape(lhs.array_shape, rhs.array_shape, attrs)
        return self._new(Opcode.CONVOLUTION, shape, [lhs, rhs], attrs)

    def reduce_window(
        self,
        operands: Sequence[Instruction],
        inits: Sequence[Instruction],
        window: Window,
        to_apply: Computation,
    ) -> Instruction:
        shape = si.infer_reduce_window_shape(
            [_array(x) for x in operands], [_array(i) for i in inits], window
        )
        inst = self._new(
            Opcode.REDUCE_WINDOW, shape, [*operands, *inits], ReduceWindowAttrs(window)
        )
        inst.called = [to_apply]
        return inst

    # ---- sorting, selecting and scattering ----------------------------------------------------

    def sort(
        self, operands: Sequence[Instruction], attrs: SortAttrs, comparator: Computation
    ) -> Instruction:
        shape = si.infer_sort_shape([_array(x) for x in operands], attrs.dimension)
        return self._new(Opcode.SORT, shape, operands, attrs, called=[comparator])

    def fft(self, x: Instruction, attrs: FftAttrs) -> Instruction:
        return self._new(Opcode.FFT, si.infer_fft_shape(x.array_shape, attrs), [x], attrs)

    def topk(self, x: Instruction, k: int, largest: bool = True) -> Instruction:
        shape = si.infer_topk_shape(x.array_shape, k)
        return self._new(Opcode.TOPK, shape, [x], TopKAttrs(k, largest))

    def scatter(
        self,
        operands: Sequence[Instruction],
        indices: Instruction,
        updates: Sequence[Instruction],
        attrs: ScatterAttrs,
        to_apply: Computation,
    ) -> Instruction:
        arrays = [_array(x) for x in (*operands, indices, *updates)]
        n = len(operands)
        shape = si.infer_scatter_shape(arrays[:n], arrays[n], arrays[n + 1 :], attrs)
        inputs = [*operands, indices, *updates]
        return self._new(Opcode.SCATTER, shape, inputs, attrs, called=[to_apply])

    # ---- tuples ------------------------------------------------------------------------------

    def tuple(self, xs: Sequence[Instruction]) -> Instruction:
        return self._new(Opcode.TUPLE, si.infer_tuple_shape([x.shape for x in xs]), xs)

    def get_tuple_element(self, t: Instruction, index: int) -> Instruction:
        shape = si.infer_get_tuple_element_shape(t.shape, index)
        return self._new(Opcode.GET_TUPLE_ELEMENT, shape, [t], TupleIndex(index))

    # ---- control flow ------------------------------------------------------------------------

    def call(self, operands: Sequence[Instruction], to_apply: Computation) -> Instruction:
        shape = si.infer_call_shape([o.shape for o in operands], to_apply)
        return self._new(Opcode.CALL, shape, operands, called=[to_apply])

    def while_loop(
        self, carry: Instruction, condition: Computation, body: Computation
    ) -> Instruction:
        shape = si.infer_while_shape(carry.shape, condition, body)
        return self._new(Opcode.WHILE, shape, [carry], WhileAttrs(), called=[condition, body])

    def conditional(
        self,
        selector: Instruction,
        operands: Sequence[Instruction],
        branches: Sequence[Computation],
    ) -> Instruction:
        """Branch i on operand i; a pred selector picks branch 0 (true) or 1 (false)."""
        shape = si.infer_conditional_shape(selector.shape, [o.shape for o in operands], branches)
        return self._new(Opcode.CONDITIONAL, shape, [selector, *operands], called=branches)


class ModuleBuilder:
    """Builds a module: shares one name space and caches scalar reducer computations."""

    def __init__(self, name: str):
        self.name = name
        self.names = NameUniquer()
        self._computations: list[Computation] = []
        self._reducers: dict[tuple[Opcode, PrimitiveType], Computation] = {}
        self._cached: dict[Hashable, Computation] = {}

    def computation(self, name: str) -> ComputationBuilder:
        return ComputationBuilder(self.names.get(name), self.names)

    def reducer(self, opcode: Opcode, dtype: PrimitiveType) -> Computation:
        """``(a, b) -> opcode(a, b)`` over scalars, e.g. the ``to_apply`` of a sum."""
        key = (opcode, dtype)
        if key not in self._reducers:
            b = self.computation(f"{opcode.value}_{dtype.value}")
            x = b.parameter(0, Shape(dtype), "lhs")
            y = b.parameter(1, Shape(dtype), "rhs")
            comp = b.build(b.binary(opcode, x, y))
            self._reducers[key] = comp
            self._computations.append(comp)
        return self._reducers[key]

    def cached_computation(
        self, key: Hashable, name: str, make: Callable[[ComputationBuilder], Instruction]
    ) -> Computation:
        """A helper computation (e.g. a variadic reducer) built once per ``key``: ``make``
        adds its instructions to a fresh builder and returns the root."""
        if key not in self._cached:
            b = self.computation(name)
            comp = b.build(make(b))
            self._cached[key] = comp
            self._computations.append(comp)
        return self._cached[key]

    def add(self, comp: Computation, key: Hashable) -> Computation:
        """Add ``comp`` (a loop body, a branch: built by its own builder), found by ``key``
        from now on (``cached``)."""
        self._cached[key] = comp
        self._computations.append(comp)
        return comp

    def cached(self, key: Hashable) -> Computation | None:
        """The computation ``add`` or ``cached_computation`` made under ``key``, if any."""
        return self._cached.get(key)

    def build(self, entry: Computation) -> Module:
        return Module(self.name, entry, self._computations)


def _array(x: Instruction) -> Shape:
    return x.array_shape


def _immutable(array: np.ndarray) -> bool:
    """Whether ``array`` is a contiguous read-only view of ``bytes`` (a GraphDef tensor's
    content), which no one can change: a constant keeps it instead of copying it."""
    base: object = array
    while isinstance(base, np.ndarray):
        if base.flags.writeable:
            return False
        base = base.base
    return isinstance(base, bytes) and array.flags.c_contiguous
