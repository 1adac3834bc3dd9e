"""The reduce kernel: fold the reduced dimensions into accumulators, in vectorizable loops.

The reducer (``to_apply``) is inlined on register values, so any computation of scalars works,
including variadic reductions (N operands, N inits, a tuple-valued reducer). Two loop shapes,
chosen by where the reduced dimensions are:

* innermost dimension reduced: per output element, a scalar accumulator runs over the reduced
  dimensions. A float add/multiply reducer is emitted as ``fadd``/``fmul reassoc`` and a float
  max/min as ``llvm.maximum``/``llvm.minimum``, which LLVM's loop vectorizer turns into
  several independent target-width vector accumulators (``<16 x float>`` on AVX-512), a
  horizontal reduction and a scalar remainder loop; integer reducers vectorize as they are.
  Reassociation changes float sums by rounding only (the error bound of a pairwise-ish sum).
* innermost dimension kept (e.g. reducing the rows of a [K, N] array): the reduced dimensions
  are looped over *outside* a tile of the kept innermost dimension, whose accumulators live in
  a stack row; the tile loop is elementwise over contiguous memory, so it vectorizes with no
  reassociation at all (each output still folds its elements in order).

``llvm.maximum``/``llvm.minimum`` propagate NaN like XLA's maximum/minimum (and order -0 below
+0, which only decides the sign of a zero result). Where one accumulator folds a whole row
(``Accumulator``), a float max/min runs on order-preserving integer keys instead: the same
result bits (a NaN becomes the canonical quiet NaN), and on x86 an integer max is one op of
one cycle where ``llvm.maximum`` costs six ops and a long dependency chain per step, which
made softmax's row max of 64 a third of the kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from llvmlite import ir

from aotc.codegen.irtypes import F32, F64, call_intrinsic, i64, register_type, store_element
from aotc.codegen.kernels.base import ElementGenerator, KernelIO
from aotc.codegen.kernels.elemental import emit_scalar_computation
from aotc.codegen.kernels.window import Row
from aotc.codegen.loops import KEEP_LOOP, entry_alloca, for_range, loop_nest, mark_back_edges
from aotc.hlo.ir import Computation, Dimensions, Instruction, Opcode, parameter_number
from aotc.hlo.memory import output_shapes

# Accumulators per tile of the kept innermost dimension: 16 KiB of f32, well inside L1 with
# the operand rows streaming through, and a trip count long enough for the vectorizer.
ROW_TILE = 4096
# The tile of a split kernel with no outer loop (a global pool's [1, C]): a cache line of
# f32, so C = 32 already gives two tasks; such reductions stream their operand from memory.
SPLIT_TILE = 16

# Independent vector accumulators the loop vectorizer should keep in a reduction loop: enough
# to cover the add / max latency (4 cycles) at two per cycle without spilling.
INTERLEAVE = 4


# Reducers LLVM may reorder, and how each folds an element into a float accumulator.
_FLOAT_FOLDS = {
    Opcode.ADD: lambda b, acc, x: b.fadd(acc, x, flags=("reassoc",)),
    Opcode.MULTIPLY: lambda b, acc, x: b.fmul(acc, x, flags=("reassoc",)),
    Opcode.MAXIMUM: lambda b, acc, x: call_intrinsic(b, "maximum", [acc, x]),
    Opcode.MINIMUM: lambda b, acc, x: call_intrinsic(b, "minimum", [acc, x]),
}


class Accumulator:
    """The running value of a one-operand reduction folded in one loop: its type, how an
    element (or the init) enters it, how it folds one in, and the result it leaves."""

    def __init__(self, reducer: Computation, element: ir.Type):
        opcode = simple_reducer(reducer)
        self.reducer = reducer
        self.keyed = opcode in (Opcode.MAXIMUM, Opcode.MINIMUM) and element in (F32, F64)
        self.float = element
        self.type = ir.IntType(32 if element == F32 else 64) if self.keyed else element
        if self.keyed:
            width = self.type.width
            self.sign = ir.Constant(self.type, width - 1)
            self.magnitude = ir.Constant(self.type, (1 << (width - 1)) - 1)
            # a nan key beats every other: the largest key for a max, the smallest for a min
            self.nan = ir.Constant(self.type, (1 << (width - 1)) - (opcode is Opcode.MAXIMUM))
            self.combine = "smax" if opcode is Opcode.MAXIMUM else "smin"

    def enter(self, b: ir.IRBuilder, value: ir.Value) -> ir.Value:
        if not self.keyed:
            return value
        key = self._flip(b, b.bitcast(value, self.type))
        return b.select(b.fcmp_unordered("uno", value, value), self.nan, key)

    def fold(self, b: ir.IRBuilder, total: ir.Value, value: ir.Value) -> ir.Value:
        if not self.keyed:
            return fold(b, self.reducer, [total], [value])[0]
        return call_intrinsic(b, self.combine, [total, self.enter(b, value)])

    def leave(self, b: ir.IRBuilder, total: ir.Value) -> ir.Value:
        return b.bitcast(self._flip(b, total), self.float) if self.keyed else total

    def _flip(self, b: ir.IRBuilder, bits: ir.Value) -> ir.Value:
        """Sign-magnitude to two's complement order (its own inverse): -0 just below +0."""
        return b.xor(bits, b.and_(b.ashr(bits, self.sign), self.magnitude))


def emit_reduce_kernel(b: ir.IRBuilder, io: KernelIO) -> None:
    """Emit a ``reduce`` (see the module docstring for the two loop shapes)."""
    inst = io.inst
    reduced = inst.attrs_as(Dimensions).dimensions
    rank = inst.operands[0].array_shape.rank
    if reduced and rank - 1 not in reduced:
        _emit_kept_inner(b, io)
    else:
        _emit_reduced_inner(b, io)


def simple_reducer(comp: Computation) -> Opcode | None:
    """The opcode of a reducer ``op(p0, p1)`` on one float type that may be reassociated."""
    root = comp.root
    if root.opcode not in _FLOAT_FOLDS or root.is_tuple or not root.array_shape.dtype.is_float:
        return None
    params = [op for op in root.operands if op.opcode is Opcode.PARAMETER]
    if len(params) != 2 or len(comp.parameters) != 2:
        return None
    return root.opcode if {parameter_number(p) for p in params} == {0, 1} else None


def fold(
    b: ir.IRBuilder, reducer: Computation, current: Sequence[ir.Value], elements: Sequence[ir.Value]
) -> list[ir.Value]:
    """Fold ``elements`` into the accumulators' ``current`` values with ``reducer``.

    Simple float reducers get reassociable ops (see the module docstring); the parameters of a
    commutative reducer may be swapped, which matters only for the sign of a zero max/min.
    """
    opcode = simple_reducer(reducer)
    if opcode is None:
        return emit_scalar_computation(b, reducer, [*current, *elements])
    return [_FLOAT_FOLDS[opcode](b, current[0], elements[0])]


@contextmanager
def interleaved(b: ir.IRBuilder, row: int, count: int = INTERLEAVE) -> Iterator[None]:
    """Mark the loops emitted inside with ``llvm.loop.interleave.count``, and with
    ``llvm.loop.unroll.disable`` when the innermost one runs ``row`` in ``KEEP_LOOP`` times.

    Left to itself the vectorizer often keeps a single vector accumulator (e.g. for a max over
    1000 elements), a serial chain of dependent ops; the hint asks for ``count`` of them.
    """
    function = b.function
    known = {id(block) for block in function.blocks}
    yield
    hint = _interleave_hint(b.module, count, row in KEEP_LOOP)
    mark_back_edges([block for block in function.blocks if id(block) not in known], hint)


def _interleave_hint(module: ir.Module, count: int, keep_loop: bool) -> ir.MDValue:
    """The loop ID ``!{self, !{"llvm.loop.interleave.count", count}[, unroll.disable]}``, one
    per module and kind."""
    options = [
        module.add_metadata(
            [
                ir.MetaDataString(module, "llvm.loop.interleave.count"),
                ir.Constant(ir.IntType(32), count),
            ]
        )
    ]
    if keep_loop:
        options.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")]))
    name = "aotc.loop.kept" if keep_loop else "aotc.loop"
    loop_id = module.add_metadata([ir.MetaDataString(module, name), *options])
    loop_id.operands = (loop_id, *options)  # loop IDs refer to themselves (add_metadata caches)
    return loop_id


# ---- innermost dimension reduced: one accumulator per output element ---------------------------


def _emit_reduced_inner(b: ir.IRBuilder, io: KernelIO) -> None:
    inst = io.inst
    reduced = inst.attrs_as(Dimensions).dimensions
    count = len(inst.operands) // 2
    inputs, inits = io.operands[:count], io.operands[count:]
    in_dims = inst.operands[0].array_shape.dims
    shapes = output_shapes(inst)
    if count == 1:
        _emit_reduced_inner_one(b, io)
        return
    accs = [entry_alloca(b, register_type(s.dtype), f"acc{i}") for i, s in enumerate(shapes)]
    with loop_nest(b, shapes[0].dims, "o", io.split) as out_index:
        for acc, init in zip(accs, inits, strict=True):
            b.store(init(b, []), acc)
        row = in_dims[reduced[-1]] if reduced else 1
        with interleaved(b, row), loop_nest(b, [in_dims[d] for d in reduced], "r") as r_index:
            index = _merge(len(in_dims), reduced, r_index, out_index)
            _fold_into(b, inst.called[0], accs, [g(b, index) for g in inputs])
        for acc, out, shape in zip(accs, io.outputs, shapes, strict=True):
            store_element(b, b.load(acc, typ=acc.allocated_type), out, shape, out_index)


def _emit_reduced_inner_one(b: ir.IRBuilder, io: KernelIO) -> None:
    """One operand: its ``Accumulator`` per output element."""
    inst, (data, init) = io.inst, io.operands
    reduced = inst.attrs_as(Dimensions).dimensions
    in_dims, shape = inst.operands[0].array_shape.dims, inst.array_shape
    with loop_nest(b, shape.dims, "o", io.split) as out_index:

        def element(b: ir.IRBuilder, r_index: Sequence[ir.Value]) -> ir.Value:
            return data(b, _merge(len(in_dims), reduced, r_index, out_index))

        value = fold_loop(b, inst, element, init(b, []), [in_dims[d] for d in reduced])
        store_element(b, value, io.outputs[0], shape, out_index)


def fold_loop(
    b: ir.IRBuilder,
    reduce: Instruction,
    element: Callable[[ir.IRBuilder, Sequence[ir.Value]], ir.Value],
    init: ir.Value,
    dims: Sequence[int],
) -> ir.Value:
    """Fold ``element`` over a loop nest of ``dims`` into one ``Accumulator`` from ``init``."""
    form = Accumulator(reduce.called[0], register_type(reduce.array_shape.dtype))
    acc = entry_alloca(b, form.type, "acc")
    b.store(form.enter(b, init), acc)
    with interleaved(b, dims[-1] if dims else 1), loop_nest(b, dims, "r") as r:
        value = element(b, r)
        b.store(form.fold(b, b.load(acc, typ=form.type), value), acc)
    return form.leave(b, b.load(acc, typ=form.type))


def _fold_into(
    b: ir.IRBuilder, reducer: Computation, accs: Sequence[ir.AllocaInstr], elements: list[ir.Value]
) -> None:
    current = [b.load(acc, typ=acc.allocated_type) for acc in accs]
    for acc, value in zip(accs, fold(b, reducer, current, elements), strict=True):
        b.store(value, acc)


def _merge(
    rank: int, reduced: Sequence[int], r_index: Sequence[ir.Value], kept_index: Sequence[ir.Value]
) -> list[ir.Value]:
    """The operand index: reduced dimensions from ``r_index``, the rest from ``kept_index``."""
    placed = dict(zip(reduced, r_index, strict=True))
    kept = iter(kept_index)
    return [placed[d] if d in placed else next(kept) for d in range(rank)]


# ---- innermost dimension kept: a row of accumulators per tile -------------------------------


def _emit_kept_inner(b: ir.IRBuilder, io: KernelIO) -> None:
    """Outer kept dims, then tiles of the innermost; reduced dims loop outside each tile."""
    shapes = output_shapes(io.inst)
    out_dims = shapes[0].dims
    inner = out_dims[-1]
    tile = min(inner, ROW_TILE)
    # a split takes the outer kept dims' range or, where they are all 1 (a global pool's
    # [1, C]), a range of tiles of SPLIT_TILE: each output element is still folded by one
    # task in the same order, whatever the tile
    outer_split = io.split if any(d > 1 for d in out_dims[:-1]) else None
    if io.split is not None and outer_split is None:
        tile = min(inner, SPLIT_TILE)
    rows = [Row(b, s.dtype, tile, f"acc{i}") for i, s in enumerate(shapes)]
    tiles = -(-inner // tile)
    lo, hi = (0, tiles) if io.split is None or outer_split else io.split.claim(tiles)
    with loop_nest(b, out_dims[:-1], "o", outer_split) as outer, for_range(b, hi, "t", lo) as t:
        start = b.mul(t, i64(tile))
        left = b.sub(i64(inner), start)
        width = b.select(b.icmp_signed("<", left, i64(tile)), left, i64(tile))
        _reduce_tile(b, io, rows, outer, start, width)


def _reduce_tile(
    b: ir.IRBuilder,
    io: KernelIO,
    rows: list[Row],
    outer: list[ir.Value],
    start: ir.Value,
    width: ir.Value,
) -> None:
    """Initialize the rows, fold every reduced position into them, store them."""
    inst = io.inst
    reduced = inst.attrs_as(Dimensions).dimensions
    count = len(inst.operands) // 2
    inits = [init(b, []) for init in io.operands[count:]]
    with for_range(b, width, "c") as c:
        for row, init in zip(rows, inits, strict=True):
            row.store(b, init, c)
    in_dims = inst.operands[0].array_shape.dims
    with loop_nest(b, [in_dims[d] for d in reduced], "r") as r_index:
        _fold_tile(b, io, rows, r_index, outer, start, width)
    with for_range(b, width, "s") as c:
        index = [*outer, b.add(start, c)]
        for row, out, shape in zip(rows, io.outputs, output_shapes(inst), strict=True):
            store_element(b, row.load(b, c), out, shape, index)


def _fold_tile(
    b: ir.IRBuilder,
    io: KernelIO,
    rows: list[Row],
    r_index: list[ir.Value],
    outer: list[ir.Value],
    start: ir.Value,
    width: ir.Value,
) -> None:
    """One reduced position: an elementwise loop over the tile, contiguous in the operand."""
    inst = io.inst
    inputs: list[ElementGenerator] = io.operands[: len(rows)]
    rank, reduced = inst.operands[0].array_shape.rank, inst.attrs_as(Dimensions).dimensions
    with for_range(b, width, "k") as c:
        index = _merge(rank, reduced, r_index, [*outer, b.add(start, c)])
        current = [row.load(b, c) for row in rows]
        folded = fold(b, inst.called[0], current, [g(b, index) for g in inputs])
        for row, value in zip(rows, folded, strict=True):
            row.store(b, value, c)
